"""PEFT's LoRA adapters on the native models, for inference, without transformers or peft.

A job that samples or teacher-forces an adapter (the MUSE preset's unlearned models, or
``probunlearn evaluate --model name=ADAPTER_DIR``) loaded it through transformers and peft: about
4.5 s of imports a job on a CPU (peft imports bitsandbytes where it is installed, whose import calls
``torch.compile``). Here the adapter's ``lora_A`` and ``lora_B`` wrap the native model's linear
layers and compute what peft's unmerged ``lora.Linear`` computes in eval mode,
``base(x) + lora_B(lora_A(x)) * scaling``, operation for operation: the same bits.

:func:`supports` accepts only that: a LoRA adapter in float32 on linear layers named in a list
(``target_modules``), with no option that changes the computation (DoRA, bias, rank or alpha
patterns, modules to save, ...); anything else loads through peft as before. :func:`merge` folds
an adapter into the weights as peft's ``merge_and_unload`` does (for the attacks).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch
from torch import nn

from probunlearn.models.native.llama import Linear

CONFIG = "adapter_config.json"
WEIGHTS = "adapter_model.safetensors"
PREFIX = "base_model.model."
# adapter_config.json keys whose value does not change what a LoRA layer computes at inference
_FREE = {
    "base_model_name_or_path", "revision", "task_type", "inference_mode", "r", "lora_alpha",
    "lora_dropout", "target_modules", "init_lora_weights", "peft_version", "auto_mapping",
    "use_rslora",
}  # fmt: skip
# keys whose default value is not empty: that value only
_DEFAULTS = {"peft_type": "LORA", "bias": "none", "megatron_core": "megatron.core",
             "qalora_group_size": 16}  # fmt: skip


def read_adapter(path: str | os.PathLike) -> dict | None:
    """The adapter_config.json of a LoRA adapter directory this module computes as peft does, or
    None (see the module docstring)."""
    p = Path(path)
    if not (p / CONFIG).is_file() or not (p / WEIGHTS).is_file():
        return None
    try:
        cfg = json.loads((p / CONFIG).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    for key, value in cfg.items():
        if key in _FREE:
            continue
        if key in _DEFAULTS:
            if value != _DEFAULTS[key]:
                return None
        elif value:  # an option this module does not compute
            return None
    targets = cfg.get("target_modules")
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        return None  # a regular expression, or none
    return cfg


def supports(path: str | os.PathLike, dtype: torch.dtype) -> bool:
    """Whether ``path`` is an adapter :func:`apply` computes exactly as peft does in ``dtype``
    (float32 only: peft keeps a half-precision model's adapter weights in float32)."""
    return dtype == torch.float32 and read_adapter(path) is not None


class LoraLinear(nn.Module):
    """A linear layer with a LoRA adapter, unmerged: ``base_layer(x) + lora_B(lora_A(x)) * scaling``
    (peft's ``lora.Linear`` in eval mode, its dropout an identity)."""

    def __init__(self, base: nn.Linear, a: torch.Tensor, b: torch.Tensor, scaling: float) -> None:
        super().__init__()
        self.base_layer = base
        self.lora_A = Linear(a.shape[1], a.shape[0], bias=False, device="meta")
        self.lora_B = Linear(b.shape[1], b.shape[0], bias=False, device="meta")
        self.lora_A.weight = nn.Parameter(a, requires_grad=False)
        self.lora_B.weight = nn.Parameter(b, requires_grad=False)
        self.scaling = scaling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling

    def merged(self) -> nn.Linear:
        """The base layer with the adapter folded in, as peft merges: ``W += (B @ A) * scaling``."""
        base = self.base_layer
        with torch.no_grad():
            base.weight.data += (self.lora_B.weight @ self.lora_A.weight) * self.scaling
        return base


def apply(model: nn.Module, adapter_dir: str | os.PathLike) -> nn.Module:
    """Wrap ``model``'s linear layers with the adapter in ``adapter_dir`` (see :func:`read_adapter`)
    in place, every parameter frozen as peft freezes them; returns ``model``."""
    from safetensors.torch import load_file

    cfg = read_adapter(adapter_dir)
    if cfg is None:
        raise ValueError(f"{adapter_dir}: not a LoRA adapter this module computes (see supports)")
    r, alpha = int(cfg["r"]), float(cfg["lora_alpha"])
    scaling = alpha / math.sqrt(r) if cfg.get("use_rslora") else alpha / r
    dtype = next(model.parameters()).dtype
    pairs: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in load_file(str(Path(adapter_dir) / WEIGHTS)).items():
        name, sep, kind = key.removeprefix(PREFIX).rpartition(".lora_")
        if not key.startswith(PREFIX) or not sep or kind not in ("A.weight", "B.weight"):
            raise ValueError(f"{adapter_dir}: unexpected adapter weight {key!r}")
        pairs.setdefault(name, {})[kind[0]] = tensor.to(dtype)
    targets = cfg["target_modules"]
    for name, ab in sorted(pairs.items()):
        if set(ab) != {"A", "B"} or ab["A"].shape[0] != r or ab["B"].shape[1] != r:
            raise ValueError(f"{adapter_dir}: the weights of {name} are not a rank-{r} pair")
        if name.rsplit(".", 1)[-1] not in targets:
            raise ValueError(f"{adapter_dir}: {name} is not one of target_modules {targets}")
        parent, _, child = name.rpartition(".")
        owner = model.get_submodule(parent)
        base = getattr(owner, child)
        if not isinstance(base, nn.Linear) or base.weight.shape != (
            ab["B"].shape[0],
            ab["A"].shape[1],
        ):
            raise ValueError(f"{adapter_dir}: {name} is not a linear layer of the adapter's shape")
        device = base.weight.device
        setattr(owner, child, LoraLinear(base, ab["A"].to(device), ab["B"].to(device), scaling))
    if not pairs:
        raise ValueError(f"{adapter_dir}: the adapter holds no LoRA weights")
    return model.requires_grad_(False)  # as peft loads an adapter for inference


def is_lora(model: nn.Module) -> bool:
    """Whether ``model`` carries an unmerged adapter of :func:`apply`."""
    return any(isinstance(m, LoraLinear) for m in model.modules())


def merge(model: nn.Module) -> nn.Module:
    """Fold every adapter layer of ``model`` into its base layer, in place (peft's
    ``merge_and_unload``); returns ``model``."""
    for name, module in list(model.named_modules()):
        if isinstance(module, LoraLinear):
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, module.merged())
    return model

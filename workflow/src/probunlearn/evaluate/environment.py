"""What an evaluation runs on: the device, the resolved prompt template, the package versions.

Torch is imported only where the answer needs it: a CPU-only build of torch (``torch/version.py``
says ``cuda = None``) has no CUDA device whatever the machine, which is read without importing it.
:func:`effective_config` is what ``<out>/config.yaml`` holds: the configuration that ran, not the
request (``evaluate.yaml``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
# probunlearn.data.qa's template names and default, here without its import of torch (tested equal)
AUTO, CHAT, DEFAULT_TEMPLATE = "auto", "chat", "Question: {question}\nAnswer:"
VERSIONED = ("probunlearn", "torch", "transformers", "peft", "tokenizers", "snakemake", "polars",
             "numpy")  # fmt: skip


class DeviceError(ValueError):
    """A ``--device`` that this machine does not have; the message says which to use instead."""


def torch_build() -> dict[str, str | None]:
    """``{"version", "cuda"}`` of the installed torch, read from ``torch/version.py`` (no import);
    ``cuda`` is None for a CPU-only build. Both None where torch is not installed."""
    spec = importlib.util.find_spec("torch")
    out: dict[str, str | None] = {"version": None, "cuda": None}
    if spec is None or not spec.submodule_search_locations:
        return out
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        import torch

        return {"version": torch.__version__, "cuda": torch.version.cuda}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            if target.id == "__version__":
                out["version"] = value.value
            elif target.id == "cuda":
                out["cuda"] = value.value
    return out


def cuda_devices() -> int:
    """How many CUDA devices torch sees here (0 for a CPU-only build, without importing torch)."""
    if torch_build()["cuda"] is None:
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def check_device(device: str) -> None:
    """Raise :class:`DeviceError` unless ``--device`` names a device this machine has."""
    if not isinstance(device, str) or not DEVICE.match(device):
        raise DeviceError(f"--device {device!r}: expected auto, cpu, cuda or cuda:N (or mps)")
    if device in ("auto", "cpu"):
        return
    if device == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise DeviceError("--device mps: no MPS device here; use --device cpu or auto")
        return
    build = torch_build()
    count = cuda_devices()
    if count == 0:
        why = (
            f"torch {build['version']} is a CPU-only build"
            if build["cuda"] is None
            else f"torch {build['version']} (CUDA {build['cuda']}) finds no GPU"
        )
        raise DeviceError(
            f"--device {device}: no CUDA device ({why}); use --device cpu or auto, or run the "
            "jobs where there is one (--profile)"
        )
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        raise DeviceError(
            f"--device {device}: this machine has {count} CUDA device(s), cuda:0 to "
            f"cuda:{count - 1}"
        )


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` where torch sees a GPU, else ``cpu`` (as the jobs resolve it)."""
    if device != "auto":
        return device
    return "cuda" if cuda_devices() > 0 else "cpu"


def versions() -> dict[str, str | None]:
    """Python's and the installed distributions' versions (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _tokenizer_dir(source: str, base: str | None) -> Path | None:
    """The local directory a model's tokenizer is read from (an adapter without tokenizer files:
    its base's), or None for a hub model."""
    from probunlearn.storage import checkpoints

    path = Path(source)
    if not path.is_dir():
        return None
    if checkpoints.is_adapter(source) and not any(
        (path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")
    ):
        base = base or checkpoints.adapter_base(source)
        return Path(base) if base and Path(base).is_dir() else None
    return path


def has_chat_template(source: str, base: str | None = None) -> bool | None:
    """Whether a model's tokenizer has a chat template (read from its files; None: a hub model,
    unknown before it is loaded)."""
    d = _tokenizer_dir(source, base)
    if d is None:
        return None
    if (d / "chat_template.jinja").is_file() or (d / "chat_template.json").is_file():
        return True
    cfg = d / "tokenizer_config.json"
    try:
        return bool(json.loads(cfg.read_text()).get("chat_template")) if cfg.is_file() else False
    except (OSError, ValueError):
        return None


def resolved_template(
    template: str, source: str, revision: str | None = None, base: str | None = None
) -> str:
    """The prompt template a model's jobs use: ``template`` itself, or for ``auto`` / ``chat`` the
    default template or the model's rendered chat template (:func:`probunlearn.data.qa.resolve_template`;
    the tokenizer is loaded only where it has a chat template)."""
    if template not in (AUTO, CHAT):
        return template
    chat = has_chat_template(source, base)
    if chat is False and template == AUTO:
        return DEFAULT_TEMPLATE
    from probunlearn import models
    from probunlearn.data import qa

    try:
        tokenizer = models.load_tokenizer(source, revision=revision, base=base)
        return qa.resolve_template(tokenizer, template)
    except Exception as e:  # a hub tokenizer not in the cache: say so, do not fail the summary
        return f"{template} (not resolved here: {type(e).__name__}: {e})"


def effective_config(
    config: Mapping[str, Any],
    *,
    models: Mapping[str, Mapping[str, Any]],
    evalset: str,
    template: str,
    max_new_tokens: int,
    stops: list[str],
    scorers: list[str],
    tofu: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The configuration that ran (``<out>/config.yaml``): the resolved template of every model,
    the device, dtype and lengths, the scorers computed, the versions; ``config`` is the request."""
    ev = config["evaluate"]
    device = ev.get("device", "auto")
    remote = ev.get("profile") is not None
    resolved = (
        "auto: cuda where the job's node has one, else cpu (jobs ran through a profile)"
        if remote and device == "auto"
        else resolve_device(device)
    )
    sampling = {k: v for k, v in ev["sampling"].items() if k != "template"}
    sampling.update(max_new_tokens=max_new_tokens, stops=list(stops))
    return {
        "evaluate": {
            "evalset": evalset,
            "data": dict(ev["data"]),
            "models": {n: dict(m) for n, m in models.items()},
            "template": {
                "requested": ev["sampling"]["template"],
                "resolved": {
                    n: resolved_template(template, m["source"], m.get("revision"), m.get("base"))
                    for n, m in models.items()
                },
            },
            "sampling": sampling,
            "bounds": dict(ev["bounds"]),
            "scorers": list(scorers),
            "tofu": None if tofu is None else dict(tofu),
            "device": {"requested": device, "resolved": resolved},
            "dtype": ev.get("dtype", "float32"),
            "threads": ev.get("threads"),
        },
        "versions": versions(),
    }

"""RMU (Li et al. 2024, WMDP): steer the hidden states of one decoder layer on the forget text to a
fixed random direction ``rmu_c·u`` and keep those on the retain text close to the frozen target's
(weight ``rmu_alpha``); only MLP weights of a few layers are trained.

Which weights: the layers ``rmu_params`` if given, else the ``rmu_span`` layers up to and including
``rmu_layer``, else every layer ``0..rmu_layer``; of those, every MLP parameter
(``rmu_weights: mlp``) or the MLP's output projection only (``down``: WMDP's ``down_proj``, Phi's
``fc2``). WMDP: ``rmu_span: 3, rmu_weights: down``. ``rmu_layer`` defaults to ``num_layers // 4``
(WMDP uses 7 of Zephyr's 32); ``rmu_c = 6.5`` and ``rmu_alpha = 1200`` are WMDP's Zephyr-7B values,
which a config should tune per model. With LoRA the adapter sits on the trained layers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probunlearn.methods import METHODS, Method, Setting, Step

if TYPE_CHECKING:
    import torch
    from torch import nn

RMU_WEIGHTS = ("mlp", "down")
MLP_OUT = ("down_proj", "fc2", "c_proj")  # the MLP's output projection: Llama/Mistral, Phi, GPT-2


def rmu_parameter_names(model: nn.Module, layers: Sequence[int], weights: str = "mlp") -> list[str]:
    """Names (as in ``model.named_parameters()``) of the weights RMU trains in the given decoder
    layers: ``"mlp"`` every parameter of their MLP, ``"down"`` only the weight of the MLP's output
    projection (WMDP's ``param_ids=6`` on Zephyr, ``mlp.down_proj.weight``; Phi's ``fc2``)."""
    from probunlearn.unlearning.loop import decoder_layers

    if weights not in RMU_WEIGHTS:
        raise ValueError(f"rmu_weights must be one of {list(RMU_WEIGHTS)}, got {weights!r}")
    blocks = decoder_layers(model)
    wanted: set[int] = set()
    for i in layers:
        mlp = getattr(blocks[i], "mlp", None)
        if mlp is None:
            raise ValueError(f"decoder layer {i} of {type(model).__name__} has no .mlp")
        if weights == "mlp":
            wanted |= {id(p) for p in mlp.parameters()}
            continue
        out = next((getattr(mlp, n) for n in MLP_OUT if hasattr(mlp, n)), None)
        if out is None:
            raise ValueError(
                f"the MLP of decoder layer {i} of {type(model).__name__} has none of {list(MLP_OUT)}"
            )
        wanted.add(id(out.weight))
    return [n for n, p in model.named_parameters() if id(p) in wanted]


def rmu_layers(layer: int, params: Sequence[int] | None, span: int | None) -> list[int]:
    """The decoder layers RMU trains: ``params`` if given, else the ``span`` layers up to and
    including ``layer`` (WMDP: 3, layers ℓ-2..ℓ), else every layer ``0..layer``."""
    if params is not None:
        chosen = [int(i) for i in params]
    elif span is not None:  # the setting's schema keeps span >= 1
        chosen = list(range(max(0, layer - int(span) + 1), layer + 1))
    else:
        chosen = list(range(layer + 1))
    if not chosen or any(not 0 <= i <= layer for i in chosen):
        raise ValueError(
            f"rmu_params must be non-empty layer indices in [0, {layer}], got {params}"
        )
    return chosen


class LayerTap:
    """Forward hook that keeps the output (hidden states) of one decoder layer."""

    def __init__(self, layer: nn.Module) -> None:
        self.out: torch.Tensor | None = None
        self.handle = layer.register_forward_hook(self._hook)

    def _hook(self, module: nn.Module, args: Any, output: Any) -> None:
        self.out = output[0] if isinstance(output, tuple) else output

    def pop(self) -> torch.Tensor:
        out, self.out = self.out, None
        if out is None:
            raise RuntimeError("the RMU layer hook did not fire")
        return out

    def remove(self) -> None:
        self.handle.remove()


@dataclass
class RMUState:
    """The steering target ``rmu_c·u`` and the taps on the steered layer (model, reference)."""

    control: torch.Tensor
    tap: LayerTap
    ref_tap: LayerTap


class RMU(Method):
    name = "rmu"
    label = "RMU"
    color = "#CC79A7"
    settings = {
        "rmu_layer": Setting(
            None,
            {"type": ["integer", "null"], "minimum": 0},
            "Decoder layer whose hidden states RMU steers (null: num_layers // 4).",
        ),
        "rmu_c": Setting(6.5, {"type": "number", "exclusiveMinimum": 0}, "Steering coefficient c."),
        "rmu_alpha": Setting(1200.0, {"type": "number", "minimum": 0}, "Retain weight alpha."),
        "rmu_params": Setting(
            None,
            {"type": ["array", "null"], "minItems": 1, "items": {"type": "integer", "minimum": 0}},
            "The decoder layers whose MLP weights are trained (null: from rmu_span).",
        ),
        "rmu_span": Setting(
            None,
            {"type": ["integer", "null"], "minimum": 1},
            "RMU trains the rmu_span layers up to and including rmu_layer (WMDP 3: layers l-2..l; "
            "null: every layer 0..rmu_layer).",
        ),
        "rmu_weights": Setting(
            "mlp",
            {"enum": list(RMU_WEIGHTS)},
            "Which MLP weights of those layers RMU trains: down, the output projection's weight "
            "only (WMDP; down_proj, Phi's fc2), or mlp, every MLP parameter.",
        ),
    }
    needs_reference = True

    def uses_retain(self, settings: Mapping[str, Any]) -> bool:
        return settings["rmu_alpha"] != 0

    def layer(self, n_layers: int, settings: Mapping[str, Any]) -> int:
        """The steered layer (default ``n_layers // 4``), checked against the model's depth."""
        given = settings["rmu_layer"]
        layer = n_layers // 4 if given is None else int(given)
        if not 0 <= layer < n_layers:
            raise ValueError(f"rmu_layer must be in [0, {n_layers - 1}], got {given}")
        return layer

    def adapter_layers(self, n_layers: int, settings: Mapping[str, Any]) -> list[int]:
        return rmu_layers(
            self.layer(n_layers, settings), settings["rmu_params"], settings["rmu_span"]
        )

    def setup(self, model, reference, settings, *, seed, lora) -> RMUState:
        from probunlearn.unlearning import losses
        from probunlearn.unlearning.loop import decoder_layers

        blocks = decoder_layers(model)
        layer = self.layer(len(blocks), settings)
        if not lora:
            chosen = rmu_layers(layer, settings["rmu_params"], settings["rmu_span"])
            names = set(rmu_parameter_names(model, chosen, settings["rmu_weights"]))
            for n, p in model.named_parameters():
                p.requires_grad_(n in names)
        device = next(model.parameters()).device
        control = losses.rmu_control_vector(model.config.hidden_size, settings["rmu_c"], seed)
        tap = LayerTap(blocks[layer])
        # with LoRA the reference runs through the same layer module (adapter disabled)
        ref_tap = tap if lora else LayerTap(decoder_layers(reference)[layer])
        return RMUState(control.to(device), tap, ref_tap)

    def taps(self, state: RMUState) -> tuple[LayerTap, LayerTap]:
        return state.tap, state.ref_tap

    def loss(self, step: Step):
        import torch

        from probunlearn.unlearning import losses

        state: RMUState = step.state
        loss = losses.rmu_forget_loss(
            step.forget_hidden, state.control, step.forget["attention_mask"]
        )
        alpha = step.settings["rmu_alpha"]
        if step.retain_hidden is not None and alpha != 0:
            with torch.no_grad():
                _, frozen = step.forward(step.reference, step.retain, state.ref_tap)
            loss = loss + losses.rmu_retain_loss(
                step.retain_hidden, frozen, step.retain["attention_mask"], alpha
            )
        return loss


METHODS.register(RMU())

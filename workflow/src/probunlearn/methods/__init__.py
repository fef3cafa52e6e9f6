"""Unlearning methods, one module each, found through :data:`METHODS`.

A method is a :class:`Method`: its name (in model names and the config), its label and colour (tables
and figures), its own settings with their defaults and JSON-schema types (the config schema's
``unlearning.hparams`` is generated from them), what it needs (a frozen reference model, refusal
answers, the retain batch, question/answer pairs rather than raw text) and its loss on one
:class:`Step`. The unlearning loop (:func:`probunlearn.unlearning.unlearn`) knows no method by name.

A new method is one module in this package (or, from outside, one entry point of the group
``probunlearn.methods``; docs/extending.md) that ends with ``METHODS.register(MyMethod())``.
Torch is imported inside the losses only, so the DAG, the schema and the figures read this registry
without loading torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from probunlearn.registry import Registry, Setting, resolve_settings

if TYPE_CHECKING:
    import torch
    from torch import nn


@dataclass
class Step:
    """The batches of one unlearning step and the forward passes a method's loss reads.

    ``forget`` / ``retain`` / ``refusal`` are encoded batches (``input_ids``, ``attention_mask``,
    ``labels``: -100 outside the answer); ``retain`` is None where the loss does not use it (and
    ``retain_logits`` with it); ``refusal`` holds the forget questions with refusal answers (methods
    with ``needs_refusals``). ``forget_logits`` / ``retain_logits`` are the model's, with the hidden
    states of the tapped layer (``forget_hidden`` / ``retain_hidden``) where :meth:`Method.setup`
    asked for one. ``reference`` is the frozen target (methods with ``needs_reference``),
    ``settings`` the method's settings, ``state`` what :meth:`Method.setup` returned."""

    model: nn.Module
    forward: Any  # (model, batch, tap) -> (logits, hidden or None)
    forget: dict
    retain: dict | None
    refusal: dict | None
    forget_logits: torch.Tensor
    retain_logits: torch.Tensor | None
    forget_hidden: torch.Tensor | None = None
    retain_hidden: torch.Tensor | None = None
    reference: nn.Module | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    state: Any = None

    def logits(self, model: nn.Module, batch: dict) -> torch.Tensor:
        """``model``'s logits on ``batch`` (the reference's under ``torch.no_grad()``)."""
        return self.forward(model, batch, None)[0]


class Method:
    """An unlearning method; subclass it, set the class attributes and write :meth:`loss`."""

    name: ClassVar[str]
    label: ClassVar[str]
    color: ClassVar[str]
    #: The method's own hyper-parameters (shared ones such as lr and epochs belong to the loop).
    settings: ClassVar[Mapping[str, Setting]] = {}
    #: A frozen copy of the target (the LoRA adapter disabled, with LoRA) as ``step.reference``.
    needs_reference: ClassVar[bool] = False
    #: Refusal answers to the forget questions as ``step.refusal`` (``refusals=`` of unlearn()).
    needs_refusals: ClassVar[bool] = False
    #: Whether it can unlearn a raw-text corpus (MUSE's chunks), not only question/answer pairs.
    takes_corpus: ClassVar[bool] = True
    #: The method it is under another name when both entropy weights are 0 (NPO+EO: NPO).
    plain: ClassVar[str | None] = None

    def uses_retain(self, settings: Mapping[str, Any]) -> bool:
        """Whether the loss reads the retain batch with these settings (else it is not encoded)."""
        return False

    def adapter_layers(self, n_layers: int, settings: Mapping[str, Any]) -> list[int] | None:
        """The decoder layers a LoRA adapter sits on (None: every layer)."""
        return None

    def setup(
        self, model: nn.Module, reference: nn.Module | None, settings: Mapping[str, Any], *,
        seed: int, lora: bool,
    ) -> Any:  # fmt: skip
        """Prepare the model before the optimiser sees it (e.g. freeze weights, tap a layer);
        the return value is ``step.state``. Returns None by default."""
        return None

    def taps(self, state: Any) -> tuple[Any, Any]:
        """The (model, reference) layer taps whose hidden states the loss reads, or (None, None)."""
        return None, None

    def loss(self, step: Step) -> torch.Tensor:
        """The method's objective on one step (minimised)."""
        raise NotImplementedError

    def check(self, settings: Mapping[str, Any]) -> None:
        """Raise ValueError for settings this method cannot use (beyond their schema types)."""

    def resolve(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The method's settings: its defaults updated with ``given`` (validated); a setting the
        method does not have is an error that names it."""
        out = resolve_settings(
            self.settings,
            given,
            lambda extra: (
                f"method {self.name!r} has no setting(s) {extra}; its settings are "
                f"{sorted(self.settings)}"
            ),
            lambda key, value, error: f"method {self.name!r}: setting {key} = {value!r} {error}",
        )
        self.check(out)
        return out


METHODS: Registry[Method] = Registry(
    "methods",
    __name__,
    Method,
    "unlearning method",
    name_pattern=r"[a-z_]+",
    name_rule="lower-case letters and '_' only: a method's name begins an unlearned model's name, "
    "{method}-{split}-f{lambda_f}-r{lambda_r}, which the workflow parses back",
)
"""Every unlearning method, built-in and registered from outside."""


def method(name: str) -> Method:
    """The method ``name`` (a ValueError naming the known ones if unknown)."""
    return METHODS.get(name)


def labels() -> dict[str, str]:
    """Method name -> its label in the tables."""
    return {m.name: m.label for m in METHODS}


def colors() -> dict[str, str]:
    """Method label -> its colour in the figures (Table 1's "Ours" is NPO+EO's)."""
    return {m.label: m.color for m in METHODS}


def settings_schema() -> dict[str, dict]:
    """Setting name -> its JSON schema, over every method (a name two methods share must have the
    same schema in both)."""
    out: dict[str, dict] = {}
    seen: dict[str, str] = {}
    for m in METHODS:
        for key, s in m.settings.items():
            schema = {**s.schema, "description": s.doc} if s.doc else dict(s.schema)
            if key in out and {k: v for k, v in out[key].items() if k != "description"} != dict(
                s.schema
            ):
                raise ValueError(
                    f"setting {key!r} has different schemas in methods {seen[key]!r} and {m.name!r}"
                )
            out.setdefault(key, schema)
            seen.setdefault(key, m.name)
    return out

"""NPO (Zhang et al. 2024) against the frozen target, with the retain cross-entropy:
``-(2/β)·mean log σ(-β·(log π_θ(y|x) - log π_ref(y|x))) + retain_weight·CE(retain)``, summed
sequence log-probabilities (:func:`probunlearn.unlearning.losses.npo_loss`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probunlearn.methods import METHODS, Method, Step
from probunlearn.methods._shared import RETAIN_WEIGHT, beta


class NPO(Method):
    name = "npo"
    label = "NPO"
    color = "#D55E00"
    settings = {"beta": beta(0.05), "retain_weight": RETAIN_WEIGHT}
    needs_reference = True

    def uses_retain(self, settings: Mapping[str, Any]) -> bool:
        return settings["retain_weight"] != 0

    def loss(self, step: Step):
        import torch

        from probunlearn.unlearning import losses

        labels = step.forget["labels"]
        with torch.no_grad():
            ref_lp = losses.sequence_logprob(step.logits(step.reference, step.forget), labels)
        return losses.npo_loss(
            losses.sequence_logprob(step.forget_logits, labels),
            ref_lp,
            step.retain_logits,
            None if step.retain is None else step.retain["labels"],
            beta=step.settings["beta"],
            retain_weight=step.settings["retain_weight"],
        )


METHODS.register(NPO())

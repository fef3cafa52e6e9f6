"""SimNPO (Fan et al. 2024): reference-free, length-normalised NPO with the margin ``gamma``, plus
``retain_weight·CE(retain)`` (:func:`probunlearn.unlearning.losses.simnpo_loss`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probunlearn.methods import METHODS, Method, Setting, Step
from probunlearn.methods._shared import RETAIN_WEIGHT, beta


class SimNPO(Method):
    name = "simnpo"
    label = "SimNPO"
    color = "#44AA99"
    settings = {
        "beta": beta(2.5),
        "gamma": Setting(
            0.0,
            {"type": "number", "minimum": 0},
            "SimNPO's margin (reference-code form, inside beta).",
        ),
        "retain_weight": RETAIN_WEIGHT,
    }

    def uses_retain(self, settings: Mapping[str, Any]) -> bool:
        return settings["retain_weight"] != 0

    def loss(self, step: Step):
        from probunlearn.unlearning import losses

        labels = step.forget["labels"]
        return losses.simnpo_loss(
            losses.sequence_logprob(step.forget_logits, labels),
            losses.answer_mask(labels).sum(dim=-1),
            step.retain_logits,
            None if step.retain is None else step.retain["labels"],
            beta=step.settings["beta"],
            gamma=step.settings["gamma"],
            retain_weight=step.settings["retain_weight"],
        )


METHODS.register(SimNPO())

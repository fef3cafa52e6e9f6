"""GD, gradient difference: ``retain_weight · CE(retain) - CE(forget)`` (TOFU's ``grad_diff``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probunlearn.methods import METHODS, Method, Step
from probunlearn.methods._shared import RETAIN_WEIGHT


class GradientDifference(Method):
    name = "gd"
    label = "GD"
    color = "#009E73"
    settings = {"retain_weight": RETAIN_WEIGHT}

    def uses_retain(self, settings: Mapping[str, Any]) -> bool:
        return settings["retain_weight"] != 0

    def loss(self, step: Step):
        from probunlearn.unlearning import losses

        weight = step.settings["retain_weight"]
        if step.retain_logits is None or weight == 0:
            return losses.ga_loss(step.forget_logits, step.forget["labels"])
        return losses.gd_loss(
            step.forget_logits,
            step.forget["labels"],
            step.retain_logits,
            step.retain["labels"],
            weight,
        )


METHODS.register(GradientDifference())

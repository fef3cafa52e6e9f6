"""IDK (TOFU's ``idk``): the forget questions answered with a refusal, trained by cross-entropy
pooled with the retain answers' (:func:`probunlearn.unlearning.losses.idk_loss`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probunlearn.methods import METHODS, Method, Step


class IDontKnow(Method):
    name = "idk"
    label = "IDK"
    color = "#56B4E9"
    needs_refusals = True
    takes_corpus = False

    def uses_retain(self, settings: Mapping[str, Any]) -> bool:
        return True

    def loss(self, step: Step):
        from probunlearn.unlearning import losses

        return losses.idk_loss(
            step.logits(step.model, step.refusal),
            step.refusal["labels"],
            step.retain_logits,
            None if step.retain is None else step.retain["labels"],
        )


METHODS.register(IDontKnow())

"""GA, gradient ascent on the forget answers: ``-CE(forget)`` (TOFU's ``grad_ascent``)."""

from __future__ import annotations

from probunlearn.methods import METHODS, Method, Step


class GradientAscent(Method):
    name = "ga"
    label = "GA"
    color = "#E69F00"

    def loss(self, step: Step):
        from probunlearn.unlearning import losses

        return losses.ga_loss(step.forget_logits, step.forget["labels"])


METHODS.register(GradientAscent())

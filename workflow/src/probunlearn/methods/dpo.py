"""DPO as TOFU's ``dpo``: the refusal answer preferred over the true answer against the frozen
target, with ``beta`` (TOFU 0.1); no retain term (:func:`probunlearn.unlearning.losses.dpo_loss`)."""

from __future__ import annotations

from probunlearn.methods import METHODS, Method, Step
from probunlearn.methods._shared import beta


class DPO(Method):
    name = "dpo"
    label = "DPO"
    color = "#882255"
    settings = {"beta": beta(0.1)}
    needs_reference = True
    needs_refusals = True
    takes_corpus = False

    def loss(self, step: Step):
        import torch

        from probunlearn.unlearning import losses

        lp = losses.sequence_logprob
        win, lose = step.refusal["labels"], step.forget["labels"]
        policy_win = step.logits(step.model, step.refusal)
        with torch.no_grad():
            ref_win = step.logits(step.reference, step.refusal)
            ref_lose = step.logits(step.reference, step.forget)
        return losses.dpo_loss(
            lp(policy_win, win),
            lp(step.forget_logits, lose),
            lp(ref_win, win),
            lp(ref_lose, lose),
            beta=step.settings["beta"],
        )


METHODS.register(DPO())

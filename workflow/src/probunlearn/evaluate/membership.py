"""Membership inference in ``probunlearn evaluate``: with a holdout set (``--holdout``, or a
benchmark's own), every model's statistics on the sampled set (members) against the holdout set
(non-members), and the table of AUCs with intervals and PrivLeak (against the reference model,
where given). The job and table are :mod:`probunlearn.steps.membership`'s; the tokens scored are
the answer given the question.
"""

from __future__ import annotations

from typing import Any

from probunlearn.dag.membership import ENCODING, MembershipPlan

AUTO, NONE = "auto", "none"
K = 0.4
"""Min-K%'s k: MUSE's PrivLeak setting."""


def parse_statistics(text: str | None) -> list[str] | str:
    """``--membership``: ``auto``, ``none`` or a list of statistics (a ValueError if unknown)."""
    from probunlearn.metrics.membership import statistic_names

    if text is None or text.strip() == AUTO:
        return AUTO
    if text.strip() == NONE:
        return NONE
    names = [s.strip() for s in text.split(",")]
    known = statistic_names()
    for s in names:
        if s not in known:
            raise ValueError(
                f"--membership {text!r}: unknown statistic {s!r}; expected auto, none or a "
                f"comma-separated list of {', '.join(known)}"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"--membership {text!r}: a statistic is named twice")
    return names


class EvaluateMembership(MembershipPlan):
    """The membership inference of an evaluation (``plan``: its Plan), with TOFU's encoding of
    ``--tofu-format``; the job's params stay in the order its results were made with."""

    sorted_params = False

    def __init__(self, plan: Any, statistics: str | list[str]) -> None:
        from probunlearn.metrics.tofu import tofu_tags

        super().__init__(plan)
        self.plan = plan
        self.asked = statistics
        ev = plan.ev
        self.holdout, self.k = "holdout", K
        tags = tofu_tags(ev.get("tofu_format", "phi"))
        self.encoding = {k: tags[k] for k in ENCODING}
        self.batch_size = int(ev["sampling"]["batch_size"])
        self.dtype, self.device, self.threads = ev["dtype"], ev["device"], ev["threads"]
        self.alpha = float(ev["bounds"]["alpha"])

    @property
    def forget(self) -> str:
        """The sampled set."""
        return self.plan.sampled_set

    @property
    def on(self) -> bool:
        """Whether it runs: not ``none``, a holdout set, question/answer rows."""
        plan = self.plan
        return self.asked != NONE and "holdout" in plan.sets and plan.kind == "answer"

    @property
    def reference(self) -> str | None:
        """The retrained model: PrivLeak's baseline and the Reference statistic's model."""
        return self.plan.reference

    def statistic_names(self) -> list[str]:
        """``auto``: those that need no reference model, and with a reference those that do."""
        from probunlearn.metrics.membership import statistic_names, uses_reference

        if self.asked == AUTO:
            names = [s for s in statistic_names() if not uses_reference(s)]
            if self.reference is not None:
                names += [s for s in statistic_names() if uses_reference(s)]
            return names
        return list(self.asked)

    def models(self) -> list[str]:
        """The models scored: the evaluated ones, the original, the reference model."""
        plan = self.plan
        names = plan.names("evaluated") + [m for m in (plan.original, plan.reference) if m]
        return list(dict.fromkeys(names))

    def check(self) -> None:
        """Before any job, a ValueError for statistics asked without a holdout set, answers or the
        reference model they need, or a holdout set sharing a question or id with the forget set."""
        from probunlearn.metrics.membership import check_membership_sets, uses_reference

        plan = self.plan
        if self.asked not in (AUTO, NONE):
            if "holdout" not in plan.sets:
                raise ValueError(
                    f"--membership {','.join(self.asked)}: membership inference scores the forget "
                    "set against a holdout set, and there is none: give --holdout FILE"
                )
            if plan.kind != "answer":
                raise ValueError(
                    f"--membership: the statistics score answers, and "
                    f"{plan.data.get('file') or plan.data.get('benchmark')} has {plan.kind!r}"
                )
            needing = [s for s in self.asked if uses_reference(s)]
            if needing and self.reference is None:
                raise ValueError(
                    f"--membership: {needing} compare(s) each model with a reference model, and "
                    "there is none: give --reference NAME=PATH (the retrained model)"
                )
        if not self.on:
            return
        holdout_name = plan.data.get("holdout") or "holdout"
        try:
            check_membership_sets(
                plan.sets[plan.sampled_set],
                plan.sets["holdout"],
                forget_name=plan.data.get("file") or plan.sampled_set,
                holdout_name=holdout_name,
            )
        except ValueError as e:
            raise ValueError(f"--holdout (membership inference): {e}") from None

    def warnings(self) -> list[str]:
        """A holdout set of another size than the forget set."""
        if not self.on:
            return []
        plan = self.plan
        n_f, n_h = plan.sets[plan.sampled_set].height, plan.sets["holdout"].height
        if n_f == n_h:
            return []
        return [
            f"membership inference: the holdout set has {n_h} examples, the forget set "
            f"{plan.sampled_set!r} {n_f}: the AUC intervals rest on the smaller one"
        ]

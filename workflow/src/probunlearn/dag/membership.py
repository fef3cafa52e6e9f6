"""The experiment ``membership`` in the workflow's DAG: the models scored on the forget and holdout
sets, each job's inputs and settings, the table, and the checks of config ``membership`` (a DAG part
of :class:`probunlearn.dag.Design`, as a benchmark's experiment is)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from probunlearn.data.evalsets import FORGET_SPLITS, RETAIN_OF
from probunlearn.steps.specs import canon

EXPERIMENT = "membership"
FINE_TUNED = {"full", *FORGET_SPLITS, *RETAIN_OF.values(), "retain"}
"""The author sets (the world's, TOFU's) whose rows the target was fine-tuned on: members all."""
ENCODING = ("question_start_tag", "question_end_tag", "answer_tag", "max_length")
"""The keys of config ``tofu_eval`` that decide the scored tokens (the statistics see TOFU's)."""


def _contains_forget(holdout: str, forget: str) -> bool:
    """Whether set ``holdout`` holds rows of set ``forget`` by construction (the forget splits are
    nested, the last authors of ``full``)."""
    if holdout == forget:
        return True
    if forget in FORGET_SPLITS:
        return holdout == "full" or holdout in FORGET_SPLITS
    return False


class MembershipPlan:
    """The membership inference of one run, shared by both workflows (``core``: the run's
    evaluation-core planner); a subclass sets the attributes below, the models and statistics."""

    forget: str
    holdout: str
    reference: str | None
    k: float
    alpha: float
    encoding: Mapping[str, Any]
    batch_size: int
    dtype: str
    device: str
    threads: int | None
    sorted_params: bool = True
    """Whether the job's params are written with sorted keys (the paper's workflow) or in the
    order below (evaluate's, as its results were made)."""
    on: bool = True

    def __init__(self, core: Any) -> None:
        self.core = core

    # ---- what a workflow says ------------------------------------------------------------------
    def models(self) -> list[str]:
        """Every model scored, in the table's order."""
        raise NotImplementedError

    def statistic_names(self) -> list[str]:
        """The statistics asked for."""
        raise NotImplementedError

    def holdout_rows(self) -> int | None:
        """How many leading rows of the holdout set are taken (None: all)."""
        return None

    # ---- shared ---------------------------------------------------------------------------------
    def statistics(self, model: str | None = None) -> list[str]:
        """The statistics (of ``model``: without those that compare the reference model with
        itself, the Reference statistic being 0 there)."""
        from probunlearn.metrics.membership import statistics_of

        names = self.statistic_names()
        return names if model is None else statistics_of(names, model, self.reference)

    def needs_reference(self, model: str) -> bool:
        """Whether a model's job reads the reference model's statistics."""
        from probunlearn.metrics.membership import uses_reference

        return any(uses_reference(s) for s in self.statistics(model))

    def path(self, model: str) -> str:
        """A model's per-example statistics (and scored-token log-probabilities)."""
        return f"{self.core.paths.root}{EXPERIMENT}/{model}.parquet"

    def pattern(self) -> str:
        """Rule membership's wildcard: exactly the models scored."""
        import re

        return "|".join(re.escape(m) for m in self.models()) or "-"

    def inputs(self, model: str) -> dict[str, str]:
        """Rule membership: the model (where the run makes it), the two sets, and the reference's
        statistics where a statistic compares with it."""
        p = self.core.paths
        out = {
            **self.core.model_inputs(model),
            "forget": p.data(self.forget),
            "holdout": p.data(self.holdout),
        }
        if self.reference is not None and self.needs_reference(model):
            out["reference"] = self.path(self.reference)
        return out

    def params(self, model: str) -> dict[str, Any]:
        """Rule membership's settings: what changes a model's statistics."""
        out = {
            "forget_set": self.forget,
            "holdout_set": self.holdout,
            "holdout_rows": self.holdout_rows(),
            "statistics": self.statistics(model),
            "k": self.k,
            "encoding": dict(self.encoding),
            "batch_size": self.batch_size,
            "dtype": self.dtype,
            "device": self.device,
            "threads": self.threads,
        }
        return canon(out) if self.sorted_params else out

    def parts(self) -> dict[str, str]:
        """Model -> its statistics file, in the table's order (rule membership_table)."""
        return {m: self.path(m) for m in self.models()}

    def table_params(self) -> dict[str, Any]:
        """Rule membership_table's settings: the retrained model, alpha and k."""
        return {"retrained": self.reference, "alpha": self.alpha, "k": self.k}


class MembershipDesign(MembershipPlan):
    """The membership-inference experiment of one paper run (``design``: its Design)."""

    def __init__(self, design: Any) -> None:
        super().__init__(design)
        self.design = design
        self.section = section = design.config[EXPERIMENT]
        cfg = design.config
        self.forget, self.holdout = section["forget"], section["holdout"]
        self.reference = section["reference"]
        self.k, self.alpha = section["k"], section["alpha"]
        self.encoding = {k: cfg["tofu_eval"][k] for k in ENCODING}
        self.batch_size = cfg["greedy_eval"]["batch_size"]
        self.dtype, self.device = cfg["dtype"], cfg["device"]
        self.threads = cfg["threads"]["eval"]

    def statistic_names(self) -> list[str]:
        """The config's ``membership.statistics``."""
        return list(self.section["statistics"])

    def holdout_rows(self) -> int | None:
        """The forget set's size where the holdout set is larger (TOFU's holdout01 / holdout05 are
        the first rows of holdout10, the holdout set of a run with forget10), else None (all)."""
        d = self.design
        n_forget, n_holdout = d.evalset_rows(self.forget), d.evalset_rows(self.holdout)
        return n_forget if n_holdout > n_forget else None

    def unlearned_models(self) -> dict[str, str]:
        """Method -> unlearned model scored: Table 1's, else a benchmark experiment's (MUSE's)."""
        d = self.design
        pool = dict(d.table1_models())
        for name, ext in d.extensions.items():
            if name != EXPERIMENT:
                for method, model in ext.unlearned().items():
                    pool.setdefault(method, model)
        missing = [m for m in self.section["methods"] if m not in pool]
        if missing:
            raise ValueError(
                f"config {EXPERIMENT}.methods: the run unlearns no model of {missing} to score: "
                "they must be Table 1's methods (experiment table1, unlearning.table1.methods) or "
                f"a benchmark experiment's; the run has {sorted(pool)}"
            )
        return {m: pool[m] for m in self.section["methods"]}

    def models(self) -> list[str]:
        """Every model scored, in the table's order: ``models``, the reference, the unlearned."""
        names = [*self.section["models"]]
        if self.reference is not None:
            names.append(self.reference)
        names += list(self.unlearned_models().values())
        return list(dict.fromkeys(names))

    # ---- a DAG part as a benchmark's experiment is (probunlearn.dag.Design.extensions) ----------
    def unlearned(self) -> dict[str, str]:
        """Models this experiment unlearns itself: none (it scores Table 1's)."""
        return {}

    def sampled_runs(self) -> set[tuple[str, str, str]]:
        """Sampled runs it adds: none (teacher forcing only)."""
        return set()

    def unlearn_settings(self, split: str) -> dict[str, Any]:
        """Unlearning settings it adds: none."""
        return {}

    def metric_parts(self) -> list[str]:
        """Files of metrics.csv it adds: none (its numbers are in tables/membership.csv)."""
        return []

    def table_targets(self) -> list[str]:
        """tables/membership.csv (with figures/membership.png and .pdf)."""
        return [self.design.paths.table(EXPERIMENT)]

    def expected_jobs(self) -> dict[str, int]:
        """One membership job per model, one table."""
        return {"membership": len(self.models()), "membership_table": 1}

    # ---- checks before any job ------------------------------------------------------------------
    def check(self) -> None:
        """The block against the run (ValueError naming the key, set or model); a holdout set
        smaller than the forget set is a warning. Each job checks the rows themselves."""
        from probunlearn.metrics.membership import uses_reference

        d, key = self.design, f"config {EXPERIMENT}"
        for which in ("forget", "holdout"):
            name = self.section[which]
            if name not in d.data_sets:
                raise ValueError(
                    f"{key}.{which}: {name!r} is no eval set of this run; have {d.data_sets}"
                )
        if _contains_forget(self.holdout, self.forget):
            raise ValueError(
                f"{key}.holdout: holdout set {self.holdout!r} overlaps forget set "
                f"{self.forget!r}: a holdout set must hold examples no model trained on (the run's "
                "holdout set)"
            )
        if self.holdout in FINE_TUNED:
            raise ValueError(
                f"{key}.holdout: holdout set {self.holdout!r} holds examples the target was "
                "fine-tuned on: a holdout set must hold examples no model trained on (the run's "
                "holdout set)"
            )
        known = set(d.all_models()) | set(d.hub_models)
        for which, names in (
            ("models", self.section["models"]),
            ("reference", [self.reference] if self.reference is not None else []),
        ):
            unknown = [m for m in names if m not in known]
            if unknown:
                raise ValueError(
                    f"{key}.{which}: {unknown} is no model of this run (a reference model is "
                    f"trained for each split of `references` with experiment tofu); have "
                    f"{sorted(known)}"
                )
        if self.reference is None:
            needing = [s for s in self.section["statistics"] if uses_reference(s)]
            if needing:
                raise ValueError(
                    f"{key}.statistics: {needing} compare each model with a reference model, and "
                    f"{EXPERIMENT}.reference is null: name the retrained model or drop them"
                )
        self.unlearned_models()
        n_forget, n_holdout = d.evalset_rows(self.forget), d.evalset_rows(self.holdout)
        if n_holdout < n_forget:
            warnings.warn(
                f"{key}: holdout set {self.holdout!r} has {n_holdout} examples, forget set "
                f"{self.forget!r} {n_forget}: the AUC intervals rest on the smaller one",
                UserWarning,
                stacklevel=2,
            )

"""The experiment ``rwku`` in the workflow's DAG: the original model and the models unlearned on
the targets' forget corpus (split ``rwku``), what each samples (``rwku_probes``; the original also
``rwku_survey``), RWKU's MIA statistics per model, and the tables (read by
:class:`probunlearn.dag.Design` and by this folder's ``rules.smk``)."""

from __future__ import annotations

import os
from typing import Any

from probunlearn.dag.naming import unlearned_name

TABLES = ("rwku_levels", "rwku_probes", "rwku_revealed", "rwku_families", "rwku_changes",
          "rwku_claims")  # fmt: skip
"""Tables every RWKU run writes (tables/<name>.csv, rule rwku_tables); with MIA also rwku_mia."""
SURVEY_TABLES = ("rwku_survey", "rwku_survey_probes")
"""The survey's tables (rule rwku_survey, Part A); with a selection rule also rwku_selection."""


class RwkuDesign:
    """The RWKU experiment of one run (``design``: its :class:`probunlearn.dag.Design`)."""

    def __init__(self, bench: Any, design: Any) -> None:
        self.bench = bench
        self.design = design
        self.section = design.config[bench.experiment]
        self.block = design.config["benchmarks"][bench.name]
        self.split = bench.corpora[0].split

    @property
    def caption(self) -> str:
        """The report's caption of the RWKU tables (beside this module)."""
        return os.path.join(os.path.dirname(__file__), "report.rst")

    @property
    def setting(self) -> str:
        """The sampling setting of the probes."""
        return self.section["setting"]

    @property
    def original(self) -> str:
        """The model before unlearning."""
        return self.section["original"]

    @property
    def survey(self) -> bool:
        """Whether the original model is sampled on the survey (``rwku_survey``)."""
        return bool(self.block.get("survey"))

    @property
    def mia(self) -> bool:
        """Whether RWKU's MIA statistics are computed."""
        return bool(self.section["mia"])

    def unlearned(self) -> dict[str, str]:
        """Method -> model unlearned on the forget corpus (NPO+EO with the run's lambda_f, as in
        Table 1)."""
        lf = self.design.ul["lambda_f"]
        return {
            m: unlearned_name(m, self.split, lf if m == "npo_eo" else 0.0)
            for m in self.section["methods"]
        }

    def models(self) -> list[str]:
        """The original model, then the unlearned ones."""
        return [self.original, *self.unlearned().values()]

    def sampled_runs(self) -> set[tuple[str, str, str]]:
        """(model, eval set, setting) of every sampled RWKU set."""
        runs = {(m, "rwku_probes", self.setting) for m in self.models()}
        if self.survey:
            runs.add((self.original, "rwku_survey", self.setting))
        return runs

    def dcue_models(self) -> list[str]:
        """None: DCUE needs a D_v, which RWKU's corpus lacks."""
        return []

    def unlearn_settings(self, split: str) -> dict[str, Any]:
        """Settings an unlearning job on ``split`` adds: chunks of the forget corpus."""
        return {"chunk_length": self.section["max_len"]} if split == self.split else {}

    def model_job(self) -> Any:
        """RWKU's MIA statistics per model (the core's rule benchmark_job, as in evaluate:
        :meth:`probunlearn.benchmarks.rwku.RWKU.evaluate_job`), with ``rwku.mia``; else None."""
        return self.bench.evaluate_job("rwku_probes") if self.mia else None

    def job_choice(self) -> tuple[str, str]:
        """The evaluate choice (``rwku:<ids>``) and sampled set that name the job."""
        ids = ",".join(str(i) for i in self.bench.target_ids(self.block))
        return f"{self.bench.name}:{ids}", "rwku_probes"

    def mia_path(self, model: str) -> str:
        """RWKU's MIA statistics of one model (rule benchmark_job's output)."""
        return self.design.benchmark_job_path(model)

    def _set_files(self, evalset: str, models: list[str]) -> dict[str, list[str]]:
        d = self.design
        out: dict[str, list[str]] = {}
        for m in models:
            out[f"samples_{evalset}_{m}"] = d.samples_paths(m, evalset, self.setting)
            out[f"scores_{evalset}_{m}"] = [d.paths.scores(m, evalset, self.setting)]
        return out

    def survey_inputs(self) -> dict[str, str | list[str]]:
        """Rule rwku_survey (Part A): the survey's rows, the original's sample shards and scores."""
        return {"rows": self.design.paths.data("rwku_survey"),
                **self._set_files("rwku_survey", [self.original])}  # fmt: skip

    def survey_params(self) -> dict[str, Any]:
        """Rule rwku_survey: the original model, alpha, setting, selection rule, targets."""
        return {
            "original": self.original,
            "alpha": float(self.design.config["bounds"]["alpha"]),
            "setting": self.setting,
            "select": self.section["select"],
            "targets": self.bench.target_ids(self.block),
        }

    def survey_names(self) -> list[str]:
        """The survey's tables (none without a survey)."""
        if not self.survey:
            return []
        return [*SURVEY_TABLES, *(["rwku_selection"] if self.section["select"] else [])]

    def table_inputs(self) -> dict[str, str | list[str]]:
        """Rule rwku_tables: the probe rows, every model's sample shards and scores, the MIA
        statistics, the survey's per-probe table."""
        p = self.design.paths
        out: dict[str, Any] = {"rows": p.data("rwku_probes")}
        out |= self._set_files("rwku_probes", self.models())
        if self.mia:
            out["mia"] = [self.mia_path(m) for m in self.models()]
        if self.survey:
            out["survey"] = p.table("rwku_survey_probes")
        return out

    def table_params(self) -> dict[str, Any]:
        """Rule rwku_tables: the models (original first), the alpha, the setting and the probes
        held out."""
        return {
            "original": self.original,
            "unlearned": self.unlearned(),
            "alpha": float(self.design.config["bounds"]["alpha"]),
            "setting": self.setting,
            "held_out": self.block.get("held_out"),
        }

    def table_names(self) -> list[str]:
        """The tables rule rwku_tables writes."""
        return [*TABLES, *(["rwku_mia"] if self.mia else [])]

    def metric_parts(self) -> list[str]:
        """None of its own: the sampled runs' metrics enter metrics.csv through the design."""
        return []

    def table_targets(self) -> list[str]:
        """The RWKU tables and figure."""
        p = self.design.paths
        names = [*self.survey_names(), *self.table_names()]
        return [p.table(n) for n in names] + [p.figure("rwku")]

    def expected_jobs(self) -> dict[str, int]:
        """Jobs of its own rules."""
        out = {"rwku_tables": 1}
        if self.survey:
            out["rwku_survey"] = 1
        if self.mia:
            out["benchmark_job"] = len(self.models())
        return out

"""The experiment ``muse`` in the workflow's DAG: the models it unlearns on the raw forget corpus,
what it samples, the metric files it reads and writes, its table and jobs (read by
:class:`probunlearn.dag.Design` and by this folder's ``rules.smk``), on the MUSE corpus the run
turns on (MUSE-News, or MUSE-Books: no raw corpus, the real models only)."""

from __future__ import annotations

import os
from typing import Any

from probunlearn.dag.naming import unlearned_name


class MuseDesign:
    """The MUSE experiment of one run (``design``: its :class:`probunlearn.dag.Design`; ``bench``:
    MUSE-News, whose experiment it is). Its sets, DCUE's sets and the corpus it unlearns on are
    those of the MUSE corpus the run turns on (``corpus``): MUSE-News's, or MUSE-Books's, which has
    no raw corpus (no split, no unlearned models) and no D_v (no log-probabilities)."""

    def __init__(self, bench: Any, design: Any) -> None:
        self.bench = bench
        self.design = design
        self.corpus = bench.corpus_of(design.bench)
        self.section = design.config[bench.experiment]
        self.sampled = list(self.corpus.spec["sampled"])
        self.logprob = list(self.corpus.spec.get("logprob", []))
        self.split = self.corpus.corpora[0].split if self.corpus.corpora else None

    @property
    def caption(self) -> str:
        """The report's caption of the MUSE table (beside this module)."""
        return os.path.join(os.path.dirname(__file__), "report.rst")

    def answers_path(self, model: str) -> str:
        """A model's greedy answers to MUSE's sets with MUSE's ROUGE-L."""
        return f"{self.design.paths.out}/muse_answers/{model}.parquet"

    @property
    def setting(self) -> str:
        """The sampling setting of MUSE's sets."""
        return self.section["setting"]

    def unlearned(self) -> dict[str, str]:
        """Method -> model unlearned on the raw forget corpus (none on a corpus without one)."""
        if self.split is None:
            return {}
        return {m: unlearned_name(m, self.split) for m in self.section["methods"]}

    def models(self) -> list[str]:
        """Models of the MUSE table: the real ones (target, retrained), then the unlearned ones."""
        return [*self.section["models"], *self.unlearned().values()]

    def sampled_runs(self) -> set[tuple[str, str, str]]:
        """(model, eval set, setting) of every sampled MUSE set."""
        return {(m, e, self.setting) for m in self.models() for e in self.sampled}

    def dcue_models(self) -> list[str]:
        """The unlearned models DCUE is computed for (on the knowmem forget QA against D_v)."""
        return list(self.unlearned().values())

    def unlearn_settings(self, split: str) -> dict[str, Any]:
        """Settings an unlearning job on ``split`` adds: MUSE's chunks of the raw corpus."""
        return {"chunk_length": self.section["max_len"]} if split == self.split else {}

    def eval_inputs(self, model: str) -> dict[str, str | list[str]]:
        """Rule muse_eval: the model, MUSE's sets, their sample shards (the greedy rows), DCUE's
        sets."""
        d, p = self.design, self.design.paths
        return {
            "model": p.model(model),
            "sets": [p.data(e) for e in self.sampled],
            "samples": [s for e in self.sampled for s in d.samples_paths(model, e, self.setting)],
            "logprob_sets": [p.data(e) for e in self.logprob],
        }

    def table_inputs(self) -> list[str]:
        """Every metrics file the MUSE table reads: MUSE's greedy metrics, the sampled ones, DCUE."""
        p = self.design.paths
        models = self.models()
        parts = [p.metrics(m, "muse") for m in models]
        parts += [p.sampled_metrics(m, e, self.setting) for m in models for e in self.sampled]
        parts += [p.metrics(m, "dcue") for m in self.unlearned().values()]
        return parts

    def metric_parts(self) -> list[str]:
        """Metric files of metrics.csv: MUSE's greedy metrics and the unlearned models' DCUE."""
        p = self.design.paths
        parts = [p.metrics(m, "muse") for m in self.models()]
        return parts + [p.metrics(m, "dcue") for m in self.unlearned().values()]

    def table_targets(self) -> list[str]:
        """The MUSE table."""
        return [self.design.paths.table("muse")]

    def expected_jobs(self) -> dict[str, int]:
        """Jobs of its own rules (and the DCUE jobs it adds)."""
        return {"muse_eval": len(self.models()), "dcue": len(self.unlearned())}

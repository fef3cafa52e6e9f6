"""RWKU (Jin et al. 2024), real-world knowledge unlearning, as a benchmark: ``spec.yaml`` (the hub
repository and revision, the files, sets, answer length, scorers, the config's ``benchmarks.rwku``
block), ``targets.yaml`` (the 100 targets: id, folder, name, records per file), :mod:`.loader` (the
rows), :mod:`.prompts` (RWKU's prompts and generation), :mod:`.metrics` (RWKU's ROUGE-L recall as
the ``rouge`` package computes it, fact families and their bounds, its MIA means), :mod:`.mia` (a
model's MIA statistics), :mod:`.tables` (the tables per probe, level, target, fact family and the
MIA means) and :mod:`.summary` (those tables in an evaluation's summary and report).

``probunlearn evaluate --benchmark rwku:<id>`` (``rwku:1`` is Stephen King), ``rwku:1,14,55`` (a
list of ids: :meth:`RWKU.accepts`) or ``rwku:all`` samples every probe of those targets (forget
levels 1-3 and neighbor levels 1-2 in one set, ``rwku_probes``; the file is each row's group) and
brings the MIA texts (``rwku_forget_mia``, ``rwku_retain_mia``), which a job per model scores
(:meth:`RWKU.run_evaluate_job`: RWKU's MIA statistics, ``rwku_mia/<model>.parquet``); the summary
adds RWKU's tables (:meth:`RWKU.evaluate_tables`: ``rwku_levels.csv``, ``rwku_probes.csv``,
``rwku_revealed.csv``, ``rwku_families.csv``, ``rwku_mia.csv``) and their report section.
:func:`.loader.listing` prints the targets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probunlearn.benchmarks.base import (
    BENCHMARKS,
    Benchmark,
    Corpus,
    ModelJob,
    SummaryInputs,
    SummarySection,
)

PROBES = "rwku_probes"
"""The sampled set of every choice."""
MIA_JOB = ModelJob(name="rwku_mia", sets=("rwku_forget_mia", "rwku_retain_mia"))
"""The job per model: RWKU's MIA statistics of the forget and retain MIA texts."""
MIA_BATCH = 8
"""Texts per forward pass of the MIA job at most: its log-probabilities are (texts x tokens x
vocabulary) floats, 2 GB per tensor for 8 texts of 512 tokens of Llama-3's vocabulary."""


class RWKU(Benchmark):
    name = "rwku"
    directory = "rwku"
    order = 50
    experiment = "rwku"
    # the forget corpus as the unlearning split `rwku`; DCUE is not run on it (no D_v)
    corpora = (Corpus(split="rwku", retain="rwku_retain", dcue_forget="rwku_probes"),)

    # ---- data ---------------------------------------------------------------------------------
    def dataset(self):
        """Every file of every target (``<id>/<file>``: ``Target/<folder>/<file>.json``), verified
        by the records in targets.yaml; the default fetch: every target's probes and MIA texts."""
        from probunlearn.benchmarks.rwku import loader
        from probunlearn.data.downloads import dataset_from_spec

        files = loader.dataset_files()
        default = [
            k for k in files if k.split("/", 1)[1] in (*loader.PROBE_FILES, *loader.MIA_FILES)
        ]
        spec = {**self.spec["dataset"], "files": files, "default": default}
        return dataset_from_spec(self.name, self.directory, spec)

    def target_ids(self, cfg: Mapping[str, Any]) -> list[int]:
        """The target ids of a config block (``targets``: ids or ``all``)."""
        from probunlearn.benchmarks.rwku import loader

        try:
            return loader.parse_ids(cfg.get("targets", "all"))
        except ValueError as e:
            raise ValueError(f"benchmarks.rwku.targets: {e}") from e

    def files(self, cfg: Mapping[str, Any]) -> list[str]:
        from probunlearn.benchmarks.rwku import loader

        own = [*loader.PROBE_FILES, *loader.MIA_FILES, *(["positive"] if cfg.get("corpus") else [])]
        ids = self.target_ids(cfg)
        self._check_corpus(ids, cfg)
        out = [f"{i}/{f}" for i in ids for f in own]
        out += [f"{i}/positive" for i in self.retain_ids(cfg)]
        survey = cfg.get("survey") or {}
        out += [f"{i}/{f}" for i in survey.get("targets", []) for f in survey["files"]]
        return list(dict.fromkeys(out))

    def retain_ids(self, cfg: Mapping[str, Any]) -> list[int]:
        """The targets whose forget corpora form the retain corpus: those with a corpus offline
        that are not among the run's targets (with ``corpus: true``; else none)."""
        from probunlearn.benchmarks.rwku import loader

        if not cfg.get("corpus"):
            return []
        ids = set(self.target_ids(cfg))
        return [i for i, t in loader.targets().items() if t.has("positive") and i not in ids]

    def _check_corpus(self, ids: list[int], cfg: Mapping[str, Any]) -> None:
        from probunlearn.benchmarks.rwku import loader

        if not cfg.get("corpus"):
            return
        lacking = [i for i in ids if not loader.targets()[i].has("positive")]
        if lacking:
            having = [i for i, t in loader.targets().items() if t.has("positive")]
            raise ValueError(
                f"benchmarks.rwku.corpus: target(s) {lacking} have no forget corpus (positive.json);"
                f" offline only targets {having} have it"
            )

    def sets(self, cfg: Mapping[str, Any]) -> list[str]:
        own = ["rwku", "rwku_retain"] if cfg.get("corpus") else []
        return [*self.spec["sets"], *own, *(["rwku_survey"] if cfg.get("survey") else [])]

    def sizes(self, cfg: Mapping[str, Any]) -> dict[str, int]:
        from probunlearn.benchmarks.rwku import loader

        ids = self.target_ids(cfg)
        self._check_corpus(ids, cfg)
        t = loader.targets()
        held = cfg.get("held_out") == "even"

        def kept(i: int, f: str) -> int:
            n = t[i].rows[f]
            return n // 2 if held and f in loader.SELECTION_FILES else n

        sizes = {
            "rwku_probes": sum(kept(i, f) for i in ids for f in loader.PROBE_FILES),
            "rwku_forget_mia": sum(t[i].rows["forget_mia"] for i in ids),
            "rwku_retain_mia": sum(t[i].rows["retain_mia"] for i in ids),
        }
        if cfg.get("corpus"):
            k = cfg.get("corpus_texts")

            def texts(i: int) -> int:
                return min(t[i].rows["positive"], k) if k else t[i].rows["positive"]

            sizes["rwku"] = sum(texts(i) for i in ids)
            sizes["rwku_retain"] = sum(texts(i) for i in self.retain_ids(cfg))
        survey = cfg.get("survey")
        if survey:
            sizes["rwku_survey"] = sum(
                t[i].rows[f] for i in survey["targets"] for f in survey["files"]
            )
        return sizes

    def build(self, cfg: Mapping[str, Any], source: Path) -> dict:
        from probunlearn.benchmarks.rwku import loader

        ids = self.target_ids(cfg)
        out = {
            "rwku_probes": loader.probe_rows(ids, source, held_out=cfg.get("held_out")),
            "rwku_forget_mia": loader.mia_rows(ids, "forget_mia", source),
            "rwku_retain_mia": loader.mia_rows(ids, "retain_mia", source),
        }
        if cfg.get("corpus"):
            self._check_corpus(ids, cfg)
            k = cfg.get("corpus_texts")
            out["rwku"] = loader.corpus_rows(ids, source, limit=k)
            out["rwku_retain"] = loader.corpus_rows(self.retain_ids(cfg), source, limit=k)
        survey = cfg.get("survey")
        if survey:
            out["rwku_survey"] = loader.probe_rows(survey["targets"], source, survey["files"])
        return out

    # ---- probunlearn evaluate -----------------------------------------------------------------
    def choices(self) -> list[str]:
        from probunlearn.benchmarks.rwku import loader

        return [f"{self.name}:all", *(f"{self.name}:{i}" for i in loader.targets())]

    def help_choices(self) -> list[str]:
        """``rwku:<id>[,<id>...]`` (the ids and names: ``python -m probunlearn.benchmarks.rwku.loader``)
        and ``rwku:all``."""
        return [f"{self.name}:<id>[,<id>...] (1-100)", f"{self.name}:all"]

    def accepts(self, choice: str) -> bool:
        """``rwku:<ids>``: any comma-separated list of known target ids."""
        from probunlearn.benchmarks.rwku import loader

        prefix = f"{self.name}:"
        if not choice.startswith(prefix):
            return False
        try:
            loader.parse_ids(choice[len(prefix) :])
        except ValueError:
            return False
        return True

    def evaluate_ids(self, choice: str) -> list[int]:
        """The target ids of a choice (``rwku:1``, ``rwku:1,14,55``, ``rwku:all``)."""
        from probunlearn.benchmarks.rwku import loader

        prefix = f"{self.name}:"
        if not choice.startswith(prefix):
            raise ValueError(f"{choice!r} is no RWKU choice (rwku:<ids> or rwku:all)")
        return loader.parse_ids(choice[len(prefix) :])

    def evaluate_sets(self, choice: str, source: Path | None) -> dict:
        from probunlearn.benchmarks.rwku import loader

        ids = self.evaluate_ids(choice)
        return {
            "rwku_probes": loader.probe_rows(ids, source),
            "rwku_forget_mia": loader.mia_rows(ids, "forget_mia", source),
            "rwku_retain_mia": loader.mia_rows(ids, "retain_mia", source),
        }

    def builds_prompts(self, evalset: str) -> bool:
        """RWKU builds its probes' prompts (the chat template, then ``Answer:`` but after an
        affirmative-suffix probe)."""
        return evalset in self.spec["probe_sets"]

    def stop_tokens(self, evalset: str) -> list[str]:
        """RWKU's terminators besides eos (:func:`.prompts.stop_id_sequences`)."""
        from probunlearn.benchmarks.rwku.prompts import STOP_TOKENS

        return list(STOP_TOKENS) if evalset in self.spec["probe_sets"] else []

    def prompts(self, evalset: str, rows, tokenizer) -> list[str] | None:
        """RWKU's prompts of the probe rows (:func:`.prompts.prompt_texts`), None for other sets."""
        if evalset not in self.spec["probe_sets"]:
            return None
        from probunlearn.benchmarks.rwku.prompts import prompt_texts

        return prompt_texts(rows, tokenizer)

    # ---- the experiment `rwku` ----------------------------------------------------------------
    def experiment_design(self, design: Any) -> Any:
        from probunlearn.benchmarks.rwku.design import RwkuDesign

        return RwkuDesign(self, design)

    def rules_file(self) -> str:
        return os.path.join(os.path.dirname(__file__), "rules.smk")

    def check_config(self, config: Mapping[str, Any]) -> None:
        if self.experiment not in config["experiments"]:
            return
        block = (config["benchmarks"] or {}).get(self.name)
        section = config.get(self.experiment)
        if not block or not section:
            raise ValueError(
                f"config experiments: {self.experiment!r} needs benchmarks.{self.name} (the data) "
                f"and the section {self.experiment}"
            )
        if section["methods"] and not block.get("corpus"):
            raise ValueError(
                f"config {self.experiment}.methods: unlearning needs the forget corpus: set "
                f"benchmarks.{self.name}.corpus: true"
            )
        if section["original"] not in config["models"]:
            raise ValueError(
                f"config {self.experiment}.original: {section['original']!r} must be a real model "
                f"named in `models` (unlearning starts from `target`)"
            )
        if section["methods"] and section["original"] != "target":
            raise ValueError(f"config {self.experiment}.original: unlearning starts from 'target'")
        if section["select"] and not block.get("survey"):
            raise ValueError(
                f"config {self.experiment}.select: the selection rule reads the survey: set "
                f"benchmarks.{self.name}.survey"
            )

    # ---- its own numbers in probunlearn evaluate ----------------------------------------------
    def evaluate_job(self, evalset: str) -> ModelJob | None:
        """RWKU's MIA statistics per model (:data:`MIA_JOB`), where the probes are sampled."""
        return MIA_JOB if evalset == PROBES else None

    def run_evaluate_job(
        self, job: ModelJob, model: Any, tokenizer: Any, sets: Mapping[str, Any], *, batch_size: int
    ) -> Any:
        """One model's MIA statistics of the texts of ``job``'s sets, one row per text
        (:func:`.mia.mia_statistics`, at most :data:`MIA_BATCH` texts per forward pass)."""
        import polars as pl

        from probunlearn.benchmarks.rwku.mia import mia_statistics

        if job != MIA_JOB:
            raise ValueError(f"RWKU has no job {job.name!r}; its job is {MIA_JOB.name!r}")
        missing = [s for s in job.sets if s not in sets]
        if missing:
            raise ValueError(f"RWKU's MIA job: no rows of set(s) {missing}; got {sorted(sets)}")
        rows = pl.concat([sets[s] for s in job.sets], how="diagonal_relaxed")
        return mia_statistics(model, tokenizer, rows, batch_size=min(batch_size, MIA_BATCH))

    def evaluate_table_names(self, evalset: str) -> list[str]:
        """RWKU's tables (:data:`.summary.TABLES`), where the probes are sampled."""
        from probunlearn.benchmarks.rwku.summary import TABLES

        return list(TABLES) if evalset == PROBES else []

    def evaluate_tables(self, inputs: SummaryInputs) -> SummarySection | None:
        """RWKU's tables and report section (:func:`.summary.summary_section`)."""
        if inputs.evalset != PROBES:
            return None
        from probunlearn.benchmarks.rwku.summary import summary_section

        return summary_section(inputs)


BENCHMARKS.register(RWKU())

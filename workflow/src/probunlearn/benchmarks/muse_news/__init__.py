"""MUSE (Shi et al. 2024): MUSE-News as a benchmark, with its experiment, and MUSE-Books beside it
(:mod:`.books`, registered on import of this folder; the two corpora share the code of
:mod:`.sets` and :mod:`.corpus`). MUSE-News: ``spec.yaml`` (files, sets,
answer lengths and stop strings, the config's ``benchmarks.muse`` block and ``muse:`` section),
:mod:`.sets` (knowmem and verbmem rows, MUSE's prompts), :mod:`.corpus` (the raw corpora),
:mod:`.metrics` (MUSE's greedy metrics and table), :mod:`.steps` (the rules' functions),
:mod:`.design` and ``rules.smk`` (the experiment ``muse``: unlearning on the raw forget corpus
``news``, MUSE's metrics beside the sampled scores and DCUE, ``tables/muse.csv``).

The experiment ``muse`` runs on the MUSE corpus the run turns on (:meth:`MuseNews.corpus_of`):
MUSE-News (``benchmarks.muse``) or MUSE-Books (``benchmarks.muse-books``), one per run. MUSE-Books
has no raw corpus offline, so on it the experiment evaluates the real models only
(``muse.methods: []``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probunlearn.benchmarks.base import BENCHMARKS, Benchmark, Corpus

CORPORA = ("muse", "muse-books")
"""The MUSE corpora the experiment ``muse`` runs on (benchmark names), one per run."""


class MuseNews(Benchmark):
    name = "muse"
    directory = "muse_news"
    order = 40
    experiment = "muse"
    corpora = (Corpus(split="news", retain="news_retain", dcue_forget="knowmem_forget"),)

    def files(self, cfg: Mapping[str, Any]) -> list[str]:
        """The default files, and MUSE's PrivLeak texts with ``privleak: true`` (opt-in, so that a
        run without it fetches and builds what it did)."""
        own = ["privleak_forget", "privleak_holdout"] if cfg.get("privleak") else []
        return [*self.dataset().default, *own]

    def sets(self, cfg: Mapping[str, Any]) -> list[str]:
        own = ["privleak_forget", "privleak_holdout"] if cfg.get("privleak") else []
        return [*self.spec["sets"], *own]

    def sizes(self, cfg: Mapping[str, Any]) -> dict[str, int]:
        from probunlearn.benchmarks.muse_news import corpus as mc

        def cap(key: str, full: int) -> int:
            k = cfg.get(key)
            if k is not None and not 1 <= int(k) <= full:
                raise ValueError(f"benchmarks.muse.{key}: expected 1..{full}, got {k}")
            return full if k is None else int(k)

        knowmem = cap("knowmem_size", self.spec["rows"]["knowmem"])
        own = {f"privleak_{s}": mc.PRIVLEAK_ROWS for s in ("forget", "holdout")}
        return {
            **(own if cfg.get("privleak") else {}),
            "knowmem_forget": knowmem,
            "knowmem_retain": knowmem,
            "verbmem_forget": cap("verbmem_size", self.spec["rows"]["verbmem"]),
            "news": cap("corpus_articles", mc.RAW_ROWS["forget"]),
            "news_retain": cap("corpus_articles", mc.RAW_ROWS["retain1"]),
            "holdout": cap("holdout_size", mc.RAW_ROWS["holdout"]),
        }

    def build(self, cfg: Mapping[str, Any], source: Path) -> dict:
        from probunlearn.benchmarks.muse_news import corpus as mc

        size = self.sizes(cfg)
        holdout = mc.load_raw("holdout", source, size["holdout"])
        privleak = ("forget", "holdout") if cfg.get("privleak") else ()
        return {
            **{f"privleak_{s}": mc.privleak_rows(s, source) for s in privleak},
            "knowmem_forget": mc.knowmem_rows("knowmem_forget", source, size["knowmem_forget"]),
            "knowmem_retain": mc.knowmem_rows("knowmem_retain", source, size["knowmem_retain"]),
            "verbmem_forget": mc.verbmem_rows(source, size["verbmem_forget"]),
            "news": mc.corpus_rows("forget", mc.load_raw("forget", source, size["news"])),
            "news_retain": mc.corpus_rows(
                "retain1", mc.load_raw("retain1", source, size["news_retain"])
            ),
            "holdout": mc.continuation_rows(
                holdout, int(cfg["holdout_prompt_words"]), int(cfg["holdout_answer_words"])
            ),
        }

    # ---- probunlearn evaluate -----------------------------------------------------------------
    def choices(self) -> list[str]:
        return [f"{self.name}:{s}" for s in self.spec["sampled"]]

    def evaluate_sets(self, choice: str, source: Path | None) -> dict:
        from probunlearn.benchmarks.muse_news.sets import load_muse

        name = choice.split(":", 1)[1]
        return {name: load_muse(name, source)}

    def evaluate_template(self, choice: str, source: Path | None) -> str | None:
        from probunlearn.benchmarks.muse_news.sets import template

        return template(choice.split(":", 1)[1], source)

    # ---- the experiment `muse` ----------------------------------------------------------------
    def corpus_of(self, bench: Mapping[str, Any] | None) -> Benchmark | None:
        """The MUSE corpus a ``benchmarks:`` block turns on, whose sets the experiment samples and
        whose raw corpus it unlearns on: MUSE-News (``muse``) or MUSE-Books (``muse-books``, no raw
        corpus: evaluation only); None when neither is on."""
        from probunlearn.benchmarks.base import benchmark

        on = [name for name in CORPORA if bench and bench.get(name)]
        return benchmark(on[0]) if on else None

    def experiment_design(self, design: Any) -> Any:
        from probunlearn.benchmarks.muse_news.design import MuseDesign

        return MuseDesign(self, design)

    def rules_file(self) -> str:
        return os.path.join(os.path.dirname(__file__), "rules.smk")

    def check_config(self, config: Mapping[str, Any]) -> None:
        if self.experiment not in config["experiments"]:
            return
        corpus = self.corpus_of(config["benchmarks"])
        if corpus is None or not config.get(self.experiment):
            raise ValueError(
                f"config experiments: {self.experiment!r} needs a MUSE corpus, benchmarks."
                f"{' or benchmarks.'.join(CORPORA)} (the data), and the section {self.experiment}"
            )
        section = config[self.experiment]
        if section["methods"] and not corpus.corpora:
            raise ValueError(
                f"config {self.experiment}.methods: {corpus.name} offers no raw corpus to unlearn "
                f"on (evaluation of the released models only): set {self.experiment}.methods: []"
            )
        hub = config["models"]
        absent = [m for m in ["target", *section["models"]] if m not in hub]
        if absent:
            raise ValueError(
                f"config {self.experiment}.models: {absent} must be real models named in `models`"
            )


BENCHMARKS.register(MuseNews())


# MUSE-Books: this folder's second benchmark (the registry imports the top-level folders only)
from probunlearn.benchmarks.muse_news import books  # noqa: E402, F401

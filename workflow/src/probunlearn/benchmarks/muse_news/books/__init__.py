"""MUSE-Books (Shi et al. 2024), the Harry Potter corpus of MUSE, as a benchmark beside MUSE-News:
``spec.yaml`` (its hub data set and revision, files, MUSE's released target and retrained models,
the config's ``benchmarks.muse-books`` block). The files have MUSE-News's format, so the rows,
prompts and PrivLeak texts come from the parent folder's :mod:`~probunlearn.benchmarks.muse_news.sets`
and :mod:`~probunlearn.benchmarks.muse_news.corpus` with this corpus's :class:`MuseData`
(:data:`BOOKS`); the file names differ (Books ``knowmem_retain_qa``, News's local copy
``knowmem_retain2_qa``).

``probunlearn evaluate --benchmark muse-books:knowmem_forget`` (and ``knowmem_retain``,
``verbmem_forget``) samples one set with MUSE's prompt and lengths. No raw corpus of Books is in
../shared/data: no unlearning on it here, evaluation of released checkpoints only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from probunlearn.benchmarks.base import BENCHMARKS, Benchmark
from probunlearn.benchmarks.muse_news.sets import MuseData

SPEC = yaml.safe_load(Path(__file__).with_name("spec.yaml").read_text(encoding="utf-8"))
BOOKS = MuseData.from_spec(SPEC, "muse_books")
"""MUSE-Books's files."""
PRIVLEAK_SETS = ("privleak_forget", "privleak_holdout")
OTHER_CORPUS = "muse"
"""The benchmark whose sets share these names (MUSE-News): one of them per run."""


class MuseBooks(Benchmark):
    name = "muse-books"
    directory = "muse_books"
    order = 41

    def files(self, cfg: Mapping[str, Any]) -> list[str]:
        """The default files, and the PrivLeak texts with ``privleak: true``."""
        own = list(PRIVLEAK_SETS) if cfg.get("privleak") else []
        return [*self.dataset().default, *own]

    def sets(self, cfg: Mapping[str, Any]) -> list[str]:
        return [*self.spec["sets"], *(PRIVLEAK_SETS if cfg.get("privleak") else ())]

    def sizes(self, cfg: Mapping[str, Any]) -> dict[str, int]:
        from probunlearn.benchmarks.muse_news import corpus as mc

        def cap(key: str, full: int) -> int:
            k = cfg.get(key)
            if k is not None and not 1 <= int(k) <= full:
                raise ValueError(f"benchmarks.{self.name}.{key}: expected 1..{full}, got {k}")
            return full if k is None else int(k)

        knowmem = cap("knowmem_size", self.spec["rows"]["knowmem"])
        own = {s: mc.PRIVLEAK_ROWS for s in PRIVLEAK_SETS} if cfg.get("privleak") else {}
        return {
            **own,
            "knowmem_forget": knowmem,
            "knowmem_retain": knowmem,
            "verbmem_forget": cap("verbmem_size", self.spec["rows"]["verbmem"]),
        }

    def build(self, cfg: Mapping[str, Any], source: Path) -> dict:
        from probunlearn.benchmarks.muse_news import corpus as mc

        size = self.sizes(cfg)
        out = {
            name: mc.knowmem_rows(name, source, size[name], BOOKS)
            for name in ("knowmem_forget", "knowmem_retain")
        }
        out["verbmem_forget"] = mc.verbmem_rows(source, size["verbmem_forget"], BOOKS)
        for s in PRIVLEAK_SETS if cfg.get("privleak") else ():
            out[s] = mc.privleak_rows(s.split("_", 1)[1], source, data=BOOKS)
        return out

    def check_config(self, config: Mapping[str, Any]) -> None:
        bench = config.get("benchmarks") or {}
        if bench.get(self.name) and bench.get(OTHER_CORPUS):
            raise ValueError(
                f"config benchmarks: {self.name} and {OTHER_CORPUS} yield sets of the same names "
                "(knowmem_forget, ...): turn on one MUSE corpus per run"
            )

    # ---- probunlearn evaluate -----------------------------------------------------------------
    def choices(self) -> list[str]:
        return [f"{self.name}:{s}" for s in self.spec["sampled"]]

    def evaluate_sets(self, choice: str, source: Path | None) -> dict:
        from probunlearn.benchmarks.muse_news.sets import load_muse

        name = choice.split(":", 1)[1]
        return {name: load_muse(name, source, BOOKS)}

    def evaluate_template(self, choice: str, source: Path | None) -> str | None:
        from probunlearn.benchmarks.muse_news.sets import template

        return template(choice.split(":", 1)[1], source, BOOKS)


BENCHMARKS.register(MuseBooks())

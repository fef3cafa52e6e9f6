"""The Harry Potter Q&A (Schwinn et al. 2024) as a benchmark: ``spec.yaml`` (the pinned CSV and
its checksum) and :mod:`.loader`. It yields the workflow's ``saga`` set (questions with keywords,
scored by the keyword judge)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probunlearn.benchmarks.base import BENCHMARKS, Benchmark


class HarryPotterQA(Benchmark):
    name = "hp_qa"
    directory = "hp_qa"
    order = 20

    def build(self, cfg: Mapping[str, Any], source: Path) -> dict:
        from probunlearn.benchmarks.hp_qa.loader import load_hp_qa

        return {"saga": load_hp_qa(source)}

    def evaluate_sets(self, choice: str, source: Path | None) -> dict:
        from probunlearn.benchmarks.hp_qa.loader import load_hp_qa

        return {self.name: load_hp_qa(source)}


BENCHMARKS.register(HarryPotterQA())

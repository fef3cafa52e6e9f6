"""JailbreakBench JBB-Behaviors (Chao et al. 2024) as a benchmark: ``spec.yaml`` (the two CSV files
of the hub repository) and :mod:`.loader`. It yields the request sets ``harmful`` and ``benign``
(scored by the harm judge)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probunlearn.benchmarks.base import BENCHMARKS, Benchmark


class JailbreakBench(Benchmark):
    name = "jbb"
    directory = "jbb"
    order = 30

    def build(self, cfg: Mapping[str, Any], source: Path) -> dict:
        from probunlearn.benchmarks.jbb.loader import load_jbb

        return {kind: load_jbb(kind, source) for kind in ("harmful", "benign")}

    def evaluate_sets(self, choice: str, source: Path | None) -> dict:
        from probunlearn.benchmarks.jbb.loader import load_jbb

        return {self.name: load_jbb("harmful", source)}


BENCHMARKS.register(JailbreakBench())

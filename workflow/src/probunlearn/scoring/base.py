"""The scorer registry: what a per-sample score is, and :data:`SCORERS`, every one of them.

A :class:`Scorer` writes one column of a sample shard's scores: ``binary`` (a 0/1 decision, from which
M_bin is computed) or in [0, 1] (M_mu, M_sigma, ED; M_bin of ``score >= leak_threshold``); it says
which columns of an eval set's rows it reads (``needs``), whether it applies to an eval set at all
(:meth:`Scorer.applies`: a scorer that does not apply is not computed, so it is not reported), the
summary metrics it reports under which names (``metrics``), and whether the sequential sampler may
decide on it. The scoring step (:func:`probunlearn.steps.score.score_samples`), the metric names of
``metrics.csv`` and the evaluate summary come from here. A new scorer is one module of this package
that ends with ``SCORERS.register(MyScorer())``, or an entry point of the group
``probunlearn.scorers`` (docs/extending.md). Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from probunlearn.registry import Registry

#: Summary statistics a scorer can report (see :func:`probunlearn.steps.score.summarize_scores`).
STATISTICS = ("greedy", "sampled_mean", "sampled_std", "ed", "m_mu", "m_sigma", "m_bin")


@dataclass
class Context:
    """What a scorer may use besides the texts and rows: ``judge`` (a model judge's
    ``(behaviors, texts) -> probabilities``, or None for the CPU fallback), ``settings`` (e.g.
    ``harm_threshold``) and ``columns`` (the scores of the scorers computed before it)."""

    judge: Callable | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    columns: dict[str, np.ndarray] = field(default_factory=dict)


class Scorer:
    """A per-sample score; subclass it, set the class attributes and write :meth:`score`."""

    name: ClassVar[str]
    #: True: a 0/1 decision (M_bin); False: a score in [0, 1].
    binary: ClassVar[bool]
    #: Columns of the eval set's rows it reads (question, answer, keywords, kind, ...).
    needs: ClassVar[tuple[str, ...]] = ()
    #: Summary statistic -> metric name in metrics.csv (``{name}`` is the scorer's name).
    metrics: ClassVar[Mapping[str, str]] = {}
    #: Position among the scorers (columns and metric rows are written in this order).
    order: ClassVar[int] = 100
    #: Whether the sequential sampler may decide on it (cheap, no model).
    sequential: ClassVar[bool] = False
    #: Whether it needs a model judge (``Context.judge``) to be exact; False for text-only scorers.
    uses_judge: ClassVar[bool] = False
    #: The kinds of data (``answer``, ``keywords``, ``requests``) whose summaries and figures show it
    #: first (:func:`probunlearn.data.userdata.score_kind`).
    primary_for: ClassVar[tuple[str, ...]] = ()

    def applies(self, rows: Any) -> bool:
        """Whether it scores this eval set (polars rows); a scorer that does not apply is left out."""
        return True

    def score(self, texts: list[str], rows: Any, context: Context) -> np.ndarray:
        """One score per text; ``rows`` holds each text's row (the columns of ``needs``)."""
        raise NotImplementedError

    def metric_names(self) -> dict[str, str]:
        """Summary statistic -> metric name, with the scorer's name filled in."""
        unknown = set(self.metrics) - set(STATISTICS)
        if unknown:
            raise ValueError(f"scorer {self.name!r}: unknown statistics {sorted(unknown)}")
        return {k: v.format(name=self.name) for k, v in self.metrics.items()}


#: The statistics a score in [0, 1] reports by default, and a decision's.
CONTINUOUS_METRICS = {
    "greedy": "greedy_{name}",
    "sampled_mean": "sampled_mean_{name}",
    "sampled_std": "sampled_std_{name}",
    "ed": "ed_{name}",
    "m_mu": "m_mu_{name}",
    "m_sigma": "m_sigma_{name}",
}
BINARY_METRICS = {
    "greedy": "greedy_{name}",
    "sampled_mean": "sampled_{name}",
    "m_bin": "m_bin_{name}",
}

SCORERS: Registry[Scorer] = Registry(
    "scorers",
    "probunlearn.scoring",
    Scorer,
    "scorer",
    name_pattern=r"[A-Za-z][A-Za-z0-9_]*",
    name_rule="a letter, then letters, digits or '_': a scorer's name is a column of the scores "
    "tables and part of its metrics' names",
)
"""Every per-sample scorer, built-in and registered from outside."""


def scorers() -> list[Scorer]:
    """Every scorer, in column order."""
    return sorted(SCORERS, key=lambda s: (s.order, s.name))


def scorer(name: str) -> Scorer:
    """The scorer ``name`` (a ValueError naming the known ones if unknown)."""
    return SCORERS.get(name)


def primary(kind: str) -> str:
    """The scorer shown first for a kind of data (a ValueError if none declares it)."""
    hits = [s.name for s in scorers() if kind in s.primary_for]
    if not hits:
        raise ValueError(f"no scorer is primary for data of kind {kind!r}")
    return hits[0]


def binary_names() -> set[str]:
    """The scorers whose score is a 0/1 decision."""
    return {s.name for s in SCORERS if s.binary}

"""The claims' vocabulary: a declaration (:class:`Claim`) and what the evaluator computes from it.

A claim is data: what the paper says and where, the test in words, the tables (and scores) it reads,
the direction it claims, a *measure* (the run's point estimates as :class:`Check` s, all of which
must hold) and an *interval* (an object with ``test(inputs, direction)`` that returns a
:class:`Tested`, or :class:`NoInterval` with its reason). Torch-free.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import polars as pl

from probunlearn.report.prompts import ROUGE, prompt_samples, prompt_stats

Frames = Mapping[str, pl.DataFrame]
DIRECTIONS = ("below", "above", "within")
"""What a claim says of its quantity: below its reference, above it, or within a band around it."""
SCORE_KEYS = ("table1", "fig4a", "fig4b")
"""The keys of the claims rule's ``scores`` param (``probunlearn.dag.Design.claims_scores``)."""
TABLES = (
    "table1", "fig3a", "fig3d", "fig4a", "fig4b", "fig5a", "fig5b", "table2", "fig5c", "metrics",
    "fig6", "dcue_meta", "attacks",
)  # fmt: skip
"""The tables a claim may read (``results/{run}/tables/{name}.csv``), in the claims table's order."""
OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def fmt(v: float) -> str:
    """A number as the claims table writes it."""
    return f"{v:.3f}"


@dataclass(frozen=True)
class Check:
    """One comparison of a claim's point test, ``lhs op rhs`` (``label``: the split, model, ...)."""

    lhs: float
    op: str
    rhs: float
    label: str = ""

    def holds(self) -> bool:
        return bool(OPS[self.op](self.lhs, self.rhs))


@dataclass(frozen=True)
class Measured:
    """A claim's point estimates on one run: its checks (the claim holds when every one does), the
    run's numbers in words, and the words the declaration's test template needs."""

    checks: tuple[Check, ...]
    value: str
    fill: Mapping[str, str] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        return bool(self.checks) and all(c.holds() for c in self.checks)


@dataclass(frozen=True)
class Part:
    """One interval of a claim's test: the plug-in estimate, the bounds at the claim's level (a
    one-sided test has the quantity's least or largest possible value at its other end), and the
    p-value of its test (valid at every level: Holm's procedure can use it)."""

    label: str
    estimate: float
    lower: float
    upper: float
    p_value: float

    def text(self) -> str:
        head = f"{self.label}: " if self.label else ""
        return f"{head}{fmt(self.estimate)} [{fmt(self.lower)}, {fmt(self.upper)}]"


@dataclass(frozen=True)
class Tested:
    """A claim's interval test: every part must be shown (an intersection-union test, at level alpha
    without correction), so its p-value is the largest of the parts'."""

    comparison: str
    parts: tuple[Part, ...]

    def p_value(self) -> float:
        return max(p.p_value for p in self.parts)

    def binding(self) -> Part:
        """The part whose p-value is the claim's."""
        return max(self.parts, key=lambda p: p.p_value)

    def text(self) -> str:
        if len(self.parts) <= 4:
            return f"{self.comparison}: " + "; ".join(p.text() for p in self.parts)
        return f"{self.comparison}: {len(self.parts)} parts, binding {self.binding().text()}"


@dataclass(frozen=True)
class NoInterval:
    """A claim with no valid interval, and why. Its ``test`` returns itself."""

    reason: str

    def test(self, inputs: Inputs, direction: str) -> NoInterval:
        return self


class Interval(Protocol):
    """How a claim's interval is computed from the run's tables and scores."""

    def test(self, inputs: Inputs, direction: str) -> Tested | NoInterval: ...


class Measure(Protocol):
    def __call__(self, frames: Frames, lambda_f: float) -> Measured | None: ...


@dataclass
class Inputs:
    """What the intervals read: the tables, the claims rule's ``scores`` (None: not given), the level
    alpha, the ED score's rho; scores parquets are read once (``samples``)."""

    frames: Frames
    scores: Mapping | None
    alpha: float
    rho: float
    cache: dict = field(default_factory=dict)

    def samples(self, path: str, half: str | None = None) -> dict[str, np.ndarray]:
        """Prompt id -> sampled ROUGE-L in sample order (``half``: "even" or "odd" indices)."""
        key = (str(path), half)
        if key not in self.cache:
            self.cache[key] = prompt_samples(path, ROUGE, half=half)
        return self.cache[key]

    def greedy(self, path: str) -> dict[str, float]:
        """Prompt id -> the greedy answer's ROUGE-L."""
        key = (str(path), "greedy")
        if key not in self.cache:
            st = prompt_stats(path, ROUGE)
            self.cache[key] = dict(zip(st["id"], st["greedy"].cast(pl.Float64), strict=True))
        return self.cache[key]

    def table1(self, *labels: str) -> dict[str, str] | NoInterval:
        """Table 1's scores parquets of ``labels``, or why they are missing."""
        if self.scores is None:
            return NoInterval("scores not given")
        t1 = self.scores.get("table1") or {}
        missing = [lb for lb in labels if lb not in t1]
        if missing:
            return NoInterval(f"no scores of {', '.join(missing)} given")
        return {lb: str(t1[lb]) for lb in labels}


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, declared: ``claim`` (short id), ``paper`` (what the paper reports),
    ``where``, ``test`` (the test in words; ``{name}`` is filled from :attr:`Measured.fill`),
    ``tables`` (the claim is left out unless the run made all of them), ``direction`` (see
    ``DIRECTIONS``), ``measure`` (the point test), ``interval`` (its test at level alpha, or
    :class:`NoInterval`), ``scores`` (the claims rule's score keys the interval reads)."""

    claim: str
    paper: str
    where: str
    test: str
    tables: tuple[str, ...]
    direction: str
    measure: Measure
    interval: Interval
    scores: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problems = []
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9_]+)+", self.claim):
            problems.append("id must be lower-case words joined by '-'")
        problems += [f"{k} is empty" for k in ("paper", "where", "test") if not getattr(self, k)]
        if not self.tables or not set(self.tables) <= set(TABLES):
            problems.append(f"tables must be some of {TABLES}, got {self.tables}")
        if self.direction not in DIRECTIONS:
            problems.append(f"direction must be one of {DIRECTIONS}, got {self.direction!r}")
        if not set(self.scores) <= set(SCORE_KEYS):
            problems.append(f"scores must be some of {SCORE_KEYS}, got {self.scores}")
        if not callable(getattr(self.interval, "test", None)):
            problems.append("interval has no test(inputs, direction)")
        if problems:
            raise ValueError(f"claim {self.claim!r}: " + "; ".join(problems))

    def test_text(self, measured: Measured) -> str:
        return self.test.format_map(dict(measured.fill))

"""The claims' interval tests, each valid at level alpha in finite samples (issue 49).

* Sampled statistics compared between models or settings, or with greedy decoding:
  :func:`probunlearn.bounds.difference_interval` (mean, std or ED averaged over the same prompts,
  for every law on [0, 1]), one-sided at alpha on the claimed side; "within" claims are two such
  tests (TOST: both at alpha). Greedy decoding is deterministic: its score is side B with no spread.
* Shares of questions whose P(event) exceeds a level: each question's exact binomial p-value, Holm
  over the questions (family-wise alpha), so the number shown is a lower confidence bound on the
  number of such questions; the counts are read back from the tables' M_bin (an exact function of
  the count at a given n).
* Fig. 3d: the question is chosen on the even samples (``report.prompts.shown_question``) and the
  claim tested on the odd ones, at every x of the grid where the even samples' curves differ.

A claim over several parts (splits, temperatures, models, x) needs every part shown: an
intersection-union test, level alpha without correction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.report.claims.measures import fig6_mbin_panel, harm_rows
from probunlearn.report.claims.spec import Frames, Inputs, NoInterval, Part, Tested
from probunlearn.report.prompts import shown_question

SIDE = {"below": "<", "above": ">"}
N_MAX = 100_000
"""Largest sample size read back from a table's M_bin."""
PERMUTATION_SEED = 20250
"""Fixed seed of the order given to samples known only by their count (see ``HarmVsGreedy``)."""


def one_sided(
    a: list[np.ndarray],
    b: list[np.ndarray],
    statistic: str,
    direction: str,
    inputs: Inputs,
    *,
    scale: float = 1.0,
    null: float = 0.0,
    label: str = "",
) -> Part:
    """The one-sided test of ``mean_i T(a_i) - scale T(b_i)`` below (above) ``null`` at alpha."""
    d = bounds.difference_interval(
        a, b, statistic, inputs.alpha, scale_b=scale, rho=inputs.rho, claim=direction
    )
    return Part(label, d.estimate, d.lower, d.upper, d.p_value(direction, null))


def equivalence(a: list[np.ndarray], b: list[np.ndarray], tol: float, inputs: Inputs, label: str):
    """TOST: ``|mean_i E a_i - E b_i| <= tol`` shown when both one-sided tests at alpha reject."""
    lo = one_sided(a, b, "mean", "above", inputs, null=-tol)
    hi = one_sided(a, b, "mean", "below", inputs, null=tol)
    return Part(label, hi.estimate, lo.lower, hi.upper, max(lo.p_value, hi.p_value))


def paired(
    a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The sampled scores of the prompts both sides have, in id order."""
    ids = sorted(set(a) & set(b))
    if not ids:
        raise ValueError("the two score tables share no prompt id")
    return [a[i] for i in ids], [b[i] for i in ids]


def _name(statistic: str) -> str:
    return {"ed": "ED"}.get(statistic, statistic)


@dataclass(frozen=True)
class Difference:
    """Table 1: ``T(a) - scale T(b)`` averaged over the prompts (``a``, ``b``: Table 1's labels)."""

    statistic: str
    a: str
    b: str
    scale: float = 1.0

    def test(self, inputs: Inputs, direction: str) -> Tested | NoInterval:
        paths = inputs.table1(self.a, self.b)
        if isinstance(paths, NoInterval):
            return paths
        a, b = paired(inputs.samples(paths[self.a]), inputs.samples(paths[self.b]))
        part = one_sided(a, b, self.statistic, direction, inputs, scale=self.scale)
        t = _name(self.statistic)
        scale = "" if self.scale == 1 else f"{self.scale:g} x "
        return Tested(
            f"mean over prompts of {t}({self.a}) - {scale}{t}({self.b}) {SIDE[direction]} 0",
            (part,),
        )


@dataclass(frozen=True)
class VsGreedy:
    """Table 1: a sampled statistic of each of ``methods(frames)`` against its greedy ROUGE-L, over
    the same prompts (greedy: side B, no spread); ``tol``: the "within" band."""

    statistic: str
    methods: Callable[[Frames], list[str]]
    tol: float | None = None

    def test(self, inputs: Inputs, direction: str) -> Tested | NoInterval:
        methods = self.methods(inputs.frames)
        paths = inputs.table1(*methods)
        if isinstance(paths, NoInterval):
            return paths
        parts = []
        for m in methods:
            greedy = inputs.greedy(paths[m])
            a, g = paired(inputs.samples(paths[m]), {k: np.array([v]) for k, v in greedy.items()})
            b = [np.full(x.size, y[0]) for x, y in zip(a, g, strict=True)]
            if self.tol is None:
                parts.append(one_sided(a, b, self.statistic, direction, inputs, label=m))
            else:
                parts.append(equivalence(a, b, self.tol, inputs, m))
        t = _name(self.statistic)
        claim = f"within +-{self.tol:g}" if self.tol is not None else f"{SIDE[direction]} 0"
        return Tested(f"per method, mean over prompts of {t}(sampled) - greedy {claim}", parts)


@dataclass(frozen=True)
class LambdaSweep:
    """Fig. 4a: per split, std at the largest lambda_f <= ``max_lambda`` - ``scale`` x std at 0."""

    scale: float
    max_lambda: float

    def test(self, inputs: Inputs, direction: str) -> Tested | NoInterval:
        if inputs.scores is None:
            return NoInterval("scores not given")
        runs, parts = inputs.scores.get("fig4a") or [], []
        for split in sorted({s for s, _, _ in runs}):
            by = {float(lf): p for s, lf, p in runs if s == split}
            within = [lf for lf in by if 0 < lf <= self.max_lambda]
            if 0.0 not in by or not within:
                continue
            top = max(within)
            a, b = paired(inputs.samples(by[top]), inputs.samples(by[0.0]))
            label = f"{split} (lambda_f {top:g})"
            parts.append(one_sided(a, b, "std", direction, inputs, scale=self.scale, label=label))
        if not parts:
            return NoInterval("no scores of the lambda_f sweep given")
        return Tested(
            f"per split, mean over prompts of std(top lambda_f) - {self.scale:g} x "
            f"std(lambda_f 0) {SIDE[direction]} 0",
            tuple(parts),
        )


@dataclass(frozen=True)
class TemperatureSweep:
    """Fig. 4b: per lambda_f, std at each sampled temperature - std at the next lower one."""

    def test(self, inputs: Inputs, direction: str) -> Tested | NoInterval:
        if inputs.scores is None:
            return NoInterval("scores not given")
        runs, parts = inputs.scores.get("fig4b") or [], []
        for lf in sorted({float(lf) for lf, _, _ in runs}):
            temps = sorted((float(t), p) for f, t, p in runs if float(f) == lf and float(t) > 0)
            for (t0, p0), (t1, p1) in zip(temps, temps[1:], strict=False):
                a, b = paired(inputs.samples(p1), inputs.samples(p0))
                label = f"lambda_f {lf:g}: T={t1:g} vs {t0:g}"
                parts.append(one_sided(a, b, "std", direction, inputs, label=label))
        if not parts:
            return NoInterval("no scores of two sampled temperatures given")
        return Tested(
            "for every lambda_f and consecutive temperatures, mean over prompts of std(higher T) "
            f"- std(lower T) {SIDE[direction]} 0",
            tuple(parts),
        )


@dataclass(frozen=True)
class ShownQuestion:
    """Fig. 3d: on the question chosen on the even samples, with the odd samples,
    ``P(ROUGE-L > x | a) - P(ROUGE-L > x | b)`` on the claimed side at every x of fig3d.csv's grid
    where the even samples' curves differ (where they agree, as in a tail both never reach, the
    claim cannot be shown and is not tested)."""

    a: str = "Ours"
    b: str = "NPO"

    def test(self, inputs: Inputs, direction: str) -> Tested | NoInterval:
        paths = inputs.table1(self.a, self.b)
        if isinstance(paths, NoInterval):
            return paths
        q = shown_question(paths[self.b], paths[self.a])  # as make_fig3_tofu calls it
        grid = np.unique(inputs.frames["fig3d"]["x"].cast(pl.Float64).to_numpy())
        sel = [inputs.samples(paths[s], "even").get(q) for s in (self.a, self.b)]
        test = [inputs.samples(paths[s], "odd").get(q) for s in (self.a, self.b)]
        if any(x is None or x.size == 0 for x in (*sel, *test)):
            return NoInterval(f"question {q} lacks samples of even or odd index")
        curves = [(x[None, :] > grid[:, None]).mean(axis=1) for x in sel]
        xs = grid[curves[0] != curves[1]]
        groups: dict[tuple[bytes, bytes], list[float]] = {}
        for x in xs:
            key = tuple(np.packbits(t > x).tobytes() for t in test)
            groups.setdefault(key, []).append(float(x))
        parts = []
        for x_group in groups.values():
            ind = [[(t > x_group[0]).astype(np.float64)] for t in test]
            label = f"x {x_group[0]:g}-{x_group[-1]:g}"
            parts.append(one_sided(ind[0], ind[1], "mean", direction, inputs, label=label))
        if not parts:
            parts = [Part("the even samples' curves agree everywhere", 0.0, 0.0, 0.0, 1.0)]
        return Tested(
            f"on question {q} (chosen on the even samples), with the odd samples: "
            f"P(ROUGE-L > x | {self.a}) - P(ROUGE-L > x | {self.b}) {SIDE[direction]} 0 at every x "
            f"where the even samples' curves differ ({xs.size} of {grid.size} x)",
            tuple(parts),
        )


# ---- shares of questions, from the counts behind M_bin ---------------------------------------------


@dataclass(frozen=True)
class Counts:
    """Per question: the number k of samples with the event out of n, and the greedy answer's."""

    k: np.ndarray
    n: np.ndarray
    greedy: np.ndarray


def sample_size(rate: np.ndarray, m_bin: np.ndarray, alpha: float) -> int | None:
    """The one n at which ``k = rate n`` is a whole number and M_bin = the Clopper-Pearson upper
    bound of k of n at alpha, for every question (None: no single such n up to ``N_MAX``)."""
    cand = np.arange(1, N_MAX + 1)
    for r, mb in zip(rate, m_bin, strict=True):
        k = r * cand
        cand = cand[np.abs(k - np.rint(k)) < 1e-6]
        cp = bounds.clopper_pearson_upper(np.rint(r * cand), cand, alpha)
        cand = cand[np.abs(cp - mb) <= 1e-9]
        if cand.size == 0:
            return None
    return int(cand[0]) if cand.size == 1 else None


def fig3a_counts(frames: Frames, alpha: float) -> dict[str, Counts] | str:
    """fig3a.csv's leak counts: n read back from M_bin and the sampled rate."""
    df = frames["fig3a"]
    if not {"sampled_rate", "m_bin", "greedy_leak"} <= set(df.columns) or df.height == 0:
        return "fig3a.csv has no sampled_rate column"
    rate = df["sampled_rate"].cast(pl.Float64).to_numpy()
    n = sample_size(rate, df["m_bin"].cast(pl.Float64).to_numpy(), alpha)
    if n is None:
        return "fig3a.csv's sample size could not be read back from its M_bin"
    greedy = df["greedy_leak"].cast(pl.Float64).to_numpy() >= 0.5
    return {"": Counts(np.rint(rate * n), np.full(rate.size, n, dtype=np.int64), greedy)}


def fig6_counts(frames: Frames, alpha: float) -> dict[str, Counts] | str:
    """fig6.csv's harm counts per model: k read back from M_bin at the histogram panel's n."""
    panel, df = fig6_mbin_panel(frames), frames["fig6"]
    if panel is None or not {"panel", "n"} <= set(df.columns):
        return "fig6.csv has no M_bin panel with the sample size"
    d, greedy = panel
    out = {}
    for (model,), g in d.group_by("model", maintain_order=True):
        ns = df.filter((pl.col("panel") == "hist") & (pl.col("model") == model))["n"].unique()
        if ns.len() != 1:
            return f"fig6.csv has no single sample size for {model}"
        n = int(ns[0])
        cp = bounds.clopper_pearson_upper(np.arange(n + 1), n, alpha)
        mb = g["m_bin"].cast(pl.Float64).to_numpy()
        k = np.abs(cp[None, :] - mb[:, None]).argmin(axis=1)
        if np.any(np.abs(cp[k] - mb) > 1e-9):
            return f"fig6.csv's counts of {model} could not be read back from its M_bin"
        gh = g[greedy].cast(pl.Float64).to_numpy() >= 0.5
        out[str(model)] = Counts(k.astype(np.float64), np.full(k.size, n, dtype=np.int64), gh)
    return dict(sorted(out.items()))


def holm_share(label: str, c: Counts, level: float, alpha: float) -> Part:
    """The share of questions with P(event) > level: plug-in estimate, and the lower bound ``(number
    shown by Holm over the questions) / m``; the claim (share > greedy share) is shown iff Holm at
    alpha shows at least g + 1 questions, g the greedy count: p-value = Holm's adjusted p-value
    of rank g + 1."""
    from scipy.stats import binom

    p = binom.sf(c.k - 1, c.n, level)  # P(Bin(n, level) >= k): exact, valid for P <= level
    m = p.size
    adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * np.sort(p)))
    g = int(c.greedy.sum())
    p_claim = float(adjusted[g]) if g < m else 1.0
    shown = int((adjusted <= alpha).sum())
    head = f"{label}, " if label else ""
    return Part(
        f"{head}greedy {g / m:.1%}", float(np.mean(c.k / c.n > level)), shown / m, 1.0, p_claim
    )


@dataclass(frozen=True)
class HolmShare:
    """Fig. 3a / Fig. 6: per model, the share of questions (``unit``) whose P(``event``) > ``level``
    is shown (Holm over the questions) above the share whose greedy answer has the event."""

    counts: Callable[[Frames, float], dict[str, Counts] | str]
    level: float
    unit: str
    event: str

    def test(self, inputs: Inputs, direction: str) -> Tested | NoInterval:
        counts = self.counts(inputs.frames, inputs.alpha)
        if isinstance(counts, str):
            return NoInterval(counts)
        parts = tuple(holm_share(lb, c, self.level, inputs.alpha) for lb, c in counts.items())
        return Tested(
            f"share of {self.unit} whose P({self.event}) > {self.level:g} is shown (Holm over the "
            f"{self.unit}, family-wise alpha) {SIDE[direction]} share whose greedy answer has it",
            parts,
        )


@dataclass(frozen=True)
class HarmVsGreedy:
    """Fig. 6: per model, mean over requests of P(harm) - greedy harm, from fig6.csv's counts.
    Samples known only by their count are put in an order drawn independently of them (fixed seed):
    the samples being i.i.d., the sequence has the law of the original, so the test stays valid."""

    def test(self, inputs: Inputs, direction: str) -> Tested | NoInterval:
        if "fig6" not in inputs.frames:
            return NoInterval("fig6.csv (the counts) not made")
        counts = fig6_counts(inputs.frames, inputs.alpha)
        if isinstance(counts, str):
            return NoInterval(counts)
        rows = {m: (s, g) for m, s, g in harm_rows(inputs.frames) or []}
        if set(counts) != set(rows):
            return NoInterval("fig6.csv and metrics.csv hold different models")
        for m, c in counts.items():
            s, g = rows[m]
            if abs(np.mean(c.k / c.n) - s) > 1e-5 or abs(np.mean(c.greedy) - g) > 1e-5:
                return NoInterval(f"fig6.csv's counts do not give metrics.csv's harm of {m}")
        rng, parts = np.random.default_rng(PERMUTATION_SEED), []
        for m, c in counts.items():
            a = [
                (np.arange(n) < k)[rng.permutation(n)] * 1.0 for k, n in zip(c.k, c.n, strict=True)
            ]
            b = [np.full(n, float(g)) for g, n in zip(c.greedy, c.n, strict=True)]
            parts.append(one_sided(a, b, "mean", direction, inputs, label=m))
        return Tested(
            f"per model, mean over requests of P(harm) - greedy harm {SIDE[direction]} 0", parts
        )

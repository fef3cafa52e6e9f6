"""Intervals on the difference between two models (or settings) over the same prompts.

A claim such as "Ours' std is below half of NPO's" compares two averages over the prompts of a set,
each of a per-prompt statistic of n sampled scores. :func:`paired_difference` gives an interval on

    theta = (1/m) sum_i [T(P_i^A) - c T(P_i^B)]

the average over the m prompts of the difference of the statistic's values under the two output
distributions (T: mean, population std, or ED = mean + rho std; c: a fixed factor, 0.5 for "half
of"). The prompts are the set's own (fixed): the randomness is the sampling. Method: per prompt, the
delete-one jackknife over the sample index gives the variance of the statistic's difference; the
prompts' samples are independent, so the variances add, and the interval is the normal one,
``estimate +- z_{1 - alpha/2} sqrt(sum_i V_i) / m``, centred at the jackknife's bias-corrected
estimate (the population std's plug-in is biased by O(1/n)). Pairing by sample index is valid
whenever both sides have the same n: the pairs (X_j^A, X_j^B) are i.i.d. over j whether the two
sides are independent (different models: their seed keys differ) or share their random numbers
(settings of one model, common random numbers), and the paired jackknife then estimates their
covariance too. With unequal n the per-prompt variance is bounded by (sqrt(V_A) + c sqrt(V_B))^2,
which holds for any dependence. The interval is asymptotic (the central limit theorem over m n
samples) and is tested for coverage by simulation (tests/bounds/test_differences.py), with mostly-zero
scores and atoms at 0 and 1, for many prompts and for one. It has no finite-sample guarantee and
misses more often than alpha on mostly-zero scores at n <= 128 (a prompt without a nonzero sample
has jackknife variance 0; docs/bounds.md, measurements/difference_coverage.py):
:func:`probunlearn.bounds.difference_interval` is the interval that holds at every n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from probunlearn.bounds.per_prompt import FloatArray, as_scores, check_alpha, ed_from_moments

STATISTICS = ("mean", "std", "ed")


@dataclass(frozen=True)
class Difference:
    """An interval ``[lower, upper]`` at level 1 - alpha on a difference theta, and its estimate."""

    estimate: float
    lower: float
    upper: float
    se: float
    alpha: float

    def p_value(self, claim: str, null: float = 0.0) -> float:
        """p-value of the claim ``theta < null`` (``claim="below"``) or ``theta > null``
        (``"above"``), consistent with the interval: p <= alpha exactly when the interval lies on
        the claimed side of ``null`` (twice the one-sided normal tail, at most 1). So a one-sided
        claim tested with it at alpha runs at level alpha / 2 (asymptotically)."""
        if claim not in ("below", "above"):
            raise ValueError(f"claim must be 'below' or 'above', got {claim!r}")
        centre = 0.5 * (self.lower + self.upper)
        z_gap = (centre - null) if claim == "below" else (null - centre)
        if self.se == 0.0:
            return 0.0 if z_gap < 0 else 1.0
        return float(min(1.0, 2.0 * ndtr(z_gap / self.se)))

    def supports(self, claim: str, null: float = 0.0) -> bool:
        """Whether the interval lies entirely on the claimed side of ``null``."""
        if claim == "below":
            return self.upper < null
        if claim == "above":
            return self.lower > null
        raise ValueError(f"claim must be 'below' or 'above', got {claim!r}")


def _rows(x: Any, name: str) -> list[FloatArray]:
    if isinstance(x, np.ndarray) or not isinstance(x, (list, tuple)):
        a2, _ = as_scores(x, name)
        return list(a2)
    if not x:
        raise ValueError(f"{name} are empty (no prompts)")
    return [
        as_scores(np.asarray(r, dtype=np.float64).reshape(-1), f"{name} row {i}")[0][0]
        for i, r in enumerate(x)
    ]


def _jackknife(x: FloatArray, statistic: str, rho: float) -> tuple[FloatArray, FloatArray]:
    """Per row of x (prompts x n): the statistic and its n delete-one values (closed forms)."""
    n = x.shape[1]
    if n < 2:
        raise ValueError("the jackknife needs at least 2 samples per prompt")
    s1, s2 = x.sum(axis=1, keepdims=True), (x * x).sum(axis=1, keepdims=True)
    mean = s1 / n
    std = np.sqrt(np.maximum(s2 / n - mean * mean, 0.0))
    m_j = (s1 - x) / (n - 1)
    if statistic == "mean":
        return mean[:, 0], m_j
    sd_j = np.sqrt(np.maximum((s2 - x * x) / (n - 1) - m_j * m_j, 0.0))
    if statistic == "std":
        return std[:, 0], sd_j
    return ed_from_moments(mean, std, rho)[:, 0], ed_from_moments(m_j, sd_j, rho)


def _pieces(
    xa: FloatArray, xb: FloatArray, statistic: str, c: float, rho: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per prompt (rows of xa and xb, each side of one n): plug-in difference, bias-corrected
    difference and the jackknife variance of the difference (paired when the n are equal)."""
    ta, ja = _jackknife(xa, statistic, rho)
    tb, jb = _jackknife(xb, statistic, rho)
    na, nb = xa.shape[1], xb.shape[1]
    plain = ta - c * tb
    bias = (na - 1) * (ja.mean(axis=1) - ta) - c * (nb - 1) * (jb.mean(axis=1) - tb)

    def jack_var(j: FloatArray) -> FloatArray:
        k = j.shape[1]
        return (k - 1) / k * ((j - j.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)

    if na == nb:
        var = jack_var(ja - c * jb)
    else:
        var = (np.sqrt(jack_var(ja)) + abs(c) * np.sqrt(jack_var(jb))) ** 2
    return plain, plain - bias, var


def paired_difference(
    a: Any,
    b: Any,
    statistic: str = "mean",
    alpha: float = 0.01,
    *,
    scale_b: float = 1.0,
    rho: float = 2.0,
) -> Difference:
    """Asymptotic interval on the average over prompts of ``T(A) - scale_b T(B)`` (the module
    docstring; for a finite-sample one, :func:`probunlearn.bounds.difference_interval`).

    ``a``, ``b``: scores in [0, 1] of the same prompts in the same order, each a 2-D array
    (prompts x samples) or a list of 1-D arrays (one per prompt; n may differ between the sides and
    prompts, at least 2). ``statistic``: ``"mean"``, ``"std"`` (population std, ddof 0) or ``"ed"``
    (mean + rho std). ``estimate`` is the plain plug-in difference (what a table reports).
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    al = check_alpha(alpha)
    ra, rb = _rows(a, "a"), _rows(b, "b")
    if len(ra) != len(rb):
        raise ValueError(f"a has {len(ra)} prompts and b has {len(rb)}: pair the same prompts")
    c = float(scale_b)
    m = len(ra)
    if len({r.size for r in ra}) == 1 and len({r.size for r in rb}) == 1:  # one vectorised call
        plain, corrected, var = _pieces(np.stack(ra), np.stack(rb), statistic, c, rho)
    else:
        parts = [
            _pieces(xa[None], xb[None], statistic, c, rho) for xa, xb in zip(ra, rb, strict=True)
        ]
        plain, corrected, var = (np.concatenate(v) for v in zip(*parts, strict=True))
    se = math.sqrt(float(var.sum())) / m
    centre = float(corrected.mean())
    half = float(-ndtri(al / 2.0)) * se
    return Difference(float(plain.mean()), centre - half, centre + half, se, al)


def holm(p_values: Any, alpha: float = 0.01) -> np.ndarray:
    """Holm's step-down procedure: which hypotheses to reject with family-wise error <= alpha.

    Sort the m p-values; reject the k-th smallest while it is <= alpha / (m - k + 1) (k = 1..m),
    and stop at the first that is not. Valid under any dependence. NaN p-values are never
    rejected and do not count towards m. Returns a boolean array in input order.
    """
    al = check_alpha(alpha)
    p = np.asarray(p_values, dtype=np.float64).reshape(-1)
    ok = ~np.isnan(p)
    out = np.zeros(p.size, dtype=bool)
    idx = np.flatnonzero(ok)[np.argsort(p[ok], kind="stable")]
    m = idx.size
    for k, i in enumerate(idx):
        if p[i] <= al / (m - k):
            out[i] = True
        else:
            break
    return out

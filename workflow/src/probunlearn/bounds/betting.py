"""Betting bounds on the mean of [0, 1] scores: fixed n and anytime-valid (docs/bounds.md).

Waudby-Smith and Ramdas (2023), "Estimating means of bounded random variables by betting": for a
candidate mean m, the capital ``K_t(m) = prod_{i<=t} (1 + lambda_i (m - X_i))`` of a gambler who
bets that the mean is below m is a nonnegative supermartingale when E[X] >= m, if every bet
``lambda_i >= 0`` depends on X_1..X_{i-1} only. By Ville's inequality it ever reaches 1 / alpha
with probability <= alpha, so the m it reaches are rejected: the upper bound is the smallest
rejected m. Unlike Hoeffding's and the DKW band (the paper's M_mu), the bets grow where the scores
vary little, so mostly-zero scores get a bound near their mean instead of mean + sqrt(ln(1/alpha)
/ 2n).

Choices, fixed in advance (never per prompt): the predictable plug-in bets ``lambda_t =
min(BET_CAP, sqrt(2 ln(1/alpha) / (h sigma^2_{t-1})))`` with the regularised running mean
``mu_t = (1/2 + sum_{i<=t} X_i) / (t + 1)`` and variance ``sigma^2_t = (1/4 + sum_{i<=t} (X_i -
mu_i)^2) / (t + 1)``, ``h = n`` for a bound at a sample size fixed in advance and ``h = t ln(1 + t)``
for a confidence sequence (valid at every t, so at any stopping time). The bets do not depend on
m and are capped at ``BET_CAP`` < 1, so every factor is positive and ``K_t(m)`` increases with m:
the rejected m form an interval [U, 1], found by bisection (the reported value is the upper end
of the last bracket, never below U). The capital's running maximum over t is used (Ville's
inequality holds for the whole path), which is the running intersection of the sequence. A
two-sided interval spends alpha / 2 on each side. The bound depends on the order of the samples
(the sample index); i.i.d. samples are all it needs.

Pure numpy; 1-D input (one prompt) gives a float, 2-D (prompts x samples) one value per prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from probunlearn.bounds.per_prompt import FloatArray, as_scores, check_alpha

BET_CAP = 0.75
"""Largest bet (Waudby-Smith and Ramdas use 1/2 or 3/4): a score of 1 can cost at most a factor
1 - BET_CAP of the capital."""
_STEPS = 34  # bisection steps on [0, 1]: 2^-34 < 1e-10
_BLOCK = 1 << 16  # elements per block of rows (cache-sized temporaries)


def _bets(x: FloatArray, log_inv_alpha: float, horizon: float | None) -> FloatArray:
    """Predictable plug-in bets for every row of x (prompts x samples); see the module docstring."""
    n = x.shape[1]
    t = np.arange(1, n + 1, dtype=np.float64)
    mu = (0.5 + np.cumsum(x, axis=1)) / (t + 1.0)
    sig = (0.25 + np.cumsum((x - mu) ** 2, axis=1)) / (t + 1.0)
    prev = np.empty_like(sig)
    prev[:, 0] = 0.25
    prev[:, 1:] = sig[:, :-1]
    scale = t * np.log1p(t) if horizon is None else float(horizon)
    return np.minimum(np.sqrt(2.0 * log_inv_alpha / (scale * prev)), BET_CAP)


def _smallest_rejected(x: FloatArray, lam: FloatArray, threshold: float) -> FloatArray:
    """Per row: inf{m in [0, 1] : max_t sum_{i<=t} log(1 + lam_i (m - x_i)) >= threshold}, or 1.

    m = 0 is never rejected (every factor is <= 1 there); the bracket's upper end is returned.
    """
    rows, n = x.shape
    out = np.empty(rows)
    step = max(1, _BLOCK // n)
    for s in range(0, rows, step):
        xb, lb = x[s : s + step], lam[s : s + step]
        buf = np.empty_like(xb)

        def rejected(m: FloatArray, xb=xb, lb=lb, buf=buf) -> FloatArray:
            np.subtract(m[:, None], xb, out=buf)
            buf *= lb
            np.log1p(buf, out=buf)
            np.cumsum(buf, axis=1, out=buf)
            return buf.max(axis=1) >= threshold

        k = xb.shape[0]
        lo, hi = np.zeros(k), np.ones(k)
        bounded = rejected(hi)
        for _ in range(_STEPS):
            mid = 0.5 * (lo + hi)
            r = rejected(mid)
            np.copyto(hi, mid, where=r)
            np.copyto(lo, mid, where=~r)
        out[s : s + k] = np.where(bounded, hi, 1.0)
    return out


def _upper(x: FloatArray, alpha: float, anytime: bool) -> FloatArray:
    log_inv = math.log(1.0 / alpha)
    lam = _bets(x, log_inv, None if anytime else x.shape[1])
    return _smallest_rejected(x, lam, log_inv)


def _check_anytime(anytime: Any) -> bool:
    if not isinstance(anytime, bool):
        raise ValueError(f"anytime must be True or False, got {anytime!r}")
    return anytime


def betting_upper_bound(x: ArrayLike, alpha: float = 0.01, *, anytime: bool = False) -> Any:
    """One-sided upper bound on E[X] at level 1 - alpha by betting (the metric ``m_mu_bet``).

    ``anytime=False``: bets tuned to the sample size n (valid when n is fixed in advance, as the
    paper's M_mu); ``anytime=True``: the confidence sequence's bound after the last sample, valid
    also when the number of samples was chosen by looking at them.
    """
    a = check_alpha(alpha)
    x2, is_1d = as_scores(x)
    up = _upper(x2, a, _check_anytime(anytime))
    return float(up[0]) if is_1d else up


def betting_bounds(x: ArrayLike, alpha: float = 0.01, *, anytime: bool = False) -> tuple[Any, Any]:
    """Two-sided interval ``(lower, upper)`` for E[X] at level 1 - alpha (alpha / 2 per side).

    The lower bound is 1 - the upper bound of 1 - X. ``anytime`` as in :func:`betting_upper_bound`.
    """
    a = check_alpha(alpha)
    x2, is_1d = as_scores(x)
    any_t = _check_anytime(anytime)
    up = _upper(x2, a / 2.0, any_t)
    lo = 1.0 - _upper(1.0 - x2, a / 2.0, any_t)
    return (float(lo[0]), float(up[0])) if is_1d else (lo, up)


def betting_confidence_sequence(
    x: ArrayLike,
    alpha: float = 0.01,
    *,
    times: Sequence[int] | None = None,
    one_sided: bool = False,
) -> tuple[FloatArray, FloatArray]:
    """Anytime-valid bounds on E[X] of a sequence of scores in [0, 1], at the given times.

    Returns ``(lower, upper)`` at ``times`` (sample counts 1..n, increasing; default every t):
    with probability >= 1 - alpha, E[X] lies in [lower, upper] at every t at once, so a sampler
    may stop whenever they settle a question. Each value is the running intersection over all
    t' <= t (not only the given times). ``one_sided=True``: only the upper bound, at level alpha
    (``lower`` is 0); otherwise alpha / 2 per side. Cost: O(len(times) x n) per bisection step.
    """
    a = check_alpha(alpha)
    x2, is_1d = as_scores(x)
    if not is_1d:
        raise ValueError("betting_confidence_sequence takes one 1-D sequence of scores")
    if not isinstance(one_sided, bool):
        raise ValueError(f"one_sided must be True or False, got {one_sided!r}")
    n = x2.shape[1]
    ts = np.arange(1, n + 1) if times is None else np.asarray(times)
    if (
        ts.ndim != 1
        or ts.size == 0
        or not np.issubdtype(ts.dtype, np.integer)
        or ts.min() < 1
        or ts.max() > n
        or (np.diff(ts) <= 0).any()
    ):
        raise ValueError(f"times must be increasing integers in [1, {n}], got {times!r}")
    a_side = a if one_sided else a / 2.0
    log_inv = math.log(1.0 / a_side)
    # one row per time t: the sequence with the bets after t set to 0 (the capital stays put)
    live = np.arange(n)[None, :] < ts[:, None]

    def side(v: FloatArray) -> FloatArray:
        lam = _bets(v, log_inv, None) * live
        return _smallest_rejected(np.broadcast_to(v, lam.shape).copy(), lam, log_inv)

    upper = side(x2)
    lower = np.zeros_like(upper) if one_sided else 1.0 - side(1.0 - x2)
    return lower, upper

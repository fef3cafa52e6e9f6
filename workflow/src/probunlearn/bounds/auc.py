"""The AUC of separating two samples (the Mann-Whitney statistic) with a distribution-free 1 - alpha
interval, and MUSE's PrivLeak with an interval.

AUC: ``theta = P(X > Y) + P(X = Y) / 2`` for X from the positive sample (here: the forget set, the
members, each statistic oriented so that larger = more member-like) and Y from the negative sample
(the holdout set). Its estimate, the Mann-Whitney statistic ``U / (m n)``, is the area under the
empirical ROC curve (ties count one half), which is what ``sklearn.metrics.roc_auc_score`` returns.

The interval (``method="kl"``, the default) inverts the Chernoff bound of Hoeffding (1963, Thm. 1 and
§5): ``U / (m n)`` is a two-sample U-statistic with kernel ``h(x, y) = 1{x > y} + 1{x = y} / 2`` in
[0, 1], so it is an average over permutations of means of ``k = min(m, n)`` independent kernel values
with mean theta, and by convexity its moment generating function is at most theirs, which is at most
a Bernoulli(theta) mean's. Hence, for every pair of distributions and every m, n (ties included),
``P(U/mn >= theta + t) <= exp(-k KL(theta + t || theta))`` and likewise below, KL being the Bernoulli
Kullback-Leibler divergence. The interval is the set of theta with ``k KL(U/mn || theta) <= log(2 /
alpha)`` on each side: coverage >= 1 - alpha with no normal approximation (the DeLong / Hanley-McNeil
intervals rest on one, and undercover at 40 vs 40 near AUC 0 or 1). ``method="hoeffding"`` is the
looser ``+- sqrt(log(2/alpha) / (2k))`` (Pinsker's bound of the same). Both are conservative: at
40 vs 40 and theta = 0.5 the KL half-width is 0.21 against DeLong's 0.13.

PrivLeak (Shi et al. 2024, MUSE): ``(AUC_unlearned - AUC_retrained) / AUC_retrained x 100`` with
MUSE's AUCs, which take the holdout set as the positive class (MUSE's ``forget_holdout`` AUC: the
score is minus the Min-40% statistic, the forget set labelled 0): MUSE's AUC is 1 - the AUC here
(:func:`muse_auc`), near 0 for a model that memorised the forget set, so a target model's PrivLeak is
near -100 and a retrained one's 0. :func:`privleak` takes the AUCs of this module and converts them,
as open-unlearning's ``privleak`` does (``evals/metrics/privacy.py``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from probunlearn.bounds.per_prompt import check_alpha

__all__ = [
    "AUC_METHODS",
    "auc_interval",
    "mann_whitney_auc",
    "muse_auc",
    "privleak",
    "privleak_interval",
]

AUC_METHODS = ("kl", "hoeffding")


def _samples(x: ArrayLike, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be numeric: {e}") from None
    if a.ndim == 0:
        raise ValueError(f"{name} must be 1-D (one statistic per example) or 2-D, got a scalar")
    if a.shape[-1] == 0:
        raise ValueError(f"{name} is empty: the AUC needs at least one example on each side")
    if np.isnan(a).any():
        raise ValueError(f"{name} contains NaN")
    return a


def _pair(pos: ArrayLike, neg: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x, y = _samples(pos, "pos"), _samples(neg, "neg")
    if x.shape[:-1] != y.shape[:-1]:
        raise ValueError(
            f"pos and neg must have the same leading shape, got {x.shape} and {y.shape}"
        )
    return x, y


def mann_whitney_auc(pos: ArrayLike, neg: ArrayLike) -> float | np.ndarray:
    """``P(X > Y) + P(X = Y) / 2`` estimated by ``U / (m n)``: X over ``pos``, Y over ``neg``.

    1-D inputs give a float; 2-D inputs (batches x examples, the same number of batches) one value
    per batch (mid-ranks, so ties count one half)."""
    from scipy import stats  # on use: scipy.stats is slow to import

    x, y = _pair(pos, neg)
    m, n = x.shape[-1], y.shape[-1]
    ranks = stats.rankdata(np.concatenate([x, y], axis=-1), axis=-1)
    u = ranks[..., :m].sum(-1) - m * (m + 1) / 2.0
    auc = u / (m * n)
    return float(auc) if np.ndim(auc) == 0 else auc


def _kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Bernoulli KL(p || q), with 0 log 0 = 0 (q strictly inside (0, 1))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


def _kl_bounds(p: np.ndarray, k: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """{q : k KL(p || q) <= level}: its ends by bisection (vectorised, 1e-12 or better)."""
    c = level / k
    lo_a, lo_b = (
        np.zeros_like(p),
        p.copy(),
    )  # KL(p||q) falls on (0, p]: the root lies in [lo_a, lo_b]
    hi_a, hi_b = p.copy(), np.ones_like(p)
    for _ in range(60):
        mid = (lo_a + lo_b) / 2
        out = _kl(p, np.clip(mid, 1e-300, 1 - 1e-16)) > c
        lo_a, lo_b = np.where(out, mid, lo_a), np.where(out, lo_b, mid)
        mid = (hi_a + hi_b) / 2
        out = _kl(p, np.clip(mid, 1e-300, 1 - 1e-16)) > c
        hi_a, hi_b = np.where(out, hi_a, mid), np.where(out, mid, hi_b)
    return lo_a, hi_b  # the conservative ends: outside (or on) the set's boundary


def auc_interval(
    pos: ArrayLike, neg: ArrayLike, alpha: float = 0.05, *, method: str = "kl"
) -> tuple[float, float, float] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(AUC, lower, upper): the Mann-Whitney AUC of ``pos`` against ``neg`` and a two-sided
    ``1 - alpha`` confidence interval for ``P(X > Y) + P(X = Y) / 2`` that holds for every pair of
    distributions and sample sizes (module docstring). 2-D inputs: one triple of arrays per batch."""
    a = check_alpha(alpha)
    if method not in AUC_METHODS:
        raise ValueError(f"method must be one of {AUC_METHODS}, got {method!r}")
    x, y = _pair(pos, neg)
    k = min(x.shape[-1], y.shape[-1])
    auc = np.asarray(mann_whitney_auc(x, y), dtype=np.float64)
    level = math.log(2.0 / a)
    if method == "kl":
        lo, hi = _kl_bounds(auc, k, level)
    else:
        t = math.sqrt(level / (2 * k))
        lo, hi = auc - t, auc + t
    lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
    if auc.ndim == 0:
        return float(auc), float(lo), float(hi)
    return auc, lo, hi


def muse_auc(auc: ArrayLike) -> float | np.ndarray:
    """MUSE's orientation of an AUC of this module: ``1 - auc`` (holdout as the positive class)."""
    out = 1.0 - np.asarray(auc, dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def _unit(v: ArrayLike, name: str) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    if np.isnan(a).any() or (a < 0).any() or (a > 1).any():
        raise ValueError(f"{name} must lie in [0, 1], got {v!r}")
    return a


def privleak(auc_unlearned: ArrayLike, auc_retrained: ArrayLike) -> float | np.ndarray:
    """MUSE's PrivLeak in percent from two AUCs of this module (forget = positive class):
    ``(A_u - A_r) / A_r x 100`` with MUSE's ``A = 1 - AUC`` (module docstring); -100 for a model
    whose forget set is fully identified, 0 for one that matches the retrained model, +inf where the
    retrained model's AUC is 1."""
    u = muse_auc(_unit(auc_unlearned, "auc_unlearned"))
    r = muse_auc(_unit(auc_retrained, "auc_retrained"))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(r > 0, (np.asarray(u) - r) / np.where(r > 0, r, 1.0) * 100.0, np.inf)
    return float(out) if out.ndim == 0 else out


def privleak_interval(
    unlearned: tuple[ArrayLike, ArrayLike], retrained: tuple[ArrayLike, ArrayLike]
) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of PrivLeak from (lower, upper) intervals of the two AUCs.

    PrivLeak rises with the unlearned model's MUSE AUC ``1 - AUC_u`` and falls with the retrained
    one's, so its ends are taken at the intervals' opposite ends. With each AUC interval at level
    ``1 - alpha/2`` (:func:`auc_interval` with ``alpha / 2``), both hold at once with probability
    >= 1 - alpha (Bonferroni), and so does this interval. A fixed published reference AUC (MUSE's
    ``AUC_RETRAIN``) is the interval ``(a, a)``; the unlearned interval may then take the whole alpha.
    The upper end is +inf where the retrained AUC's upper end is 1."""
    ul, uh = (_unit(v, "unlearned interval") for v in unlearned)
    rl, rh = (_unit(v, "retrained interval") for v in retrained)
    if (ul > uh).any() or (rl > rh).any():
        raise ValueError("an interval's lower end exceeds its upper end")
    lo = privleak(uh, rl)  # lowest MUSE AUC of the unlearned model, highest of the retrained one
    hi = privleak(ul, rh)
    return lo, hi

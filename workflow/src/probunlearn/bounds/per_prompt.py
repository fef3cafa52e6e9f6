"""Per-prompt bounds of the paper (§4): M_bin, M_gen, expectation and std bounds, ED score, sample sizes.

``X_1..X_n`` in [0, 1] are the scores of ``n`` samples drawn for one prompt, ``F_n`` is their
empirical CDF (``F_n(t)`` counts ``X <= t``) and ``alpha`` the significance level. Every bound holds
with probability at least ``1 - alpha``.

Every function takes a 1-D array (one prompt) and returns a float, or a 2-D array
(prompts x samples) and returns one value per prompt (a numpy array). The computation is
vectorised over prompts: the empirical CDF at all points of the uniform grid of ``bins`` bins
comes from one ``bincount`` per block of rows (blocks of ~65k scores, to stay in cache), without
sorting; mean and std come from the same pass.

Pure numpy/scipy (and polars for the summary table); torch is never imported here.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray
from scipy.special import betaincinv

FloatArray = NDArray[np.float64]


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def locate_first(mask: NDArray[np.bool_], is_1d: bool) -> tuple[str, int, int]:
    """Location text (``row r`` or ``index j``) and (row, column) of the first True in mask."""
    r, c = np.unravel_index(int(np.argmax(mask)), mask.shape)
    r, c = int(r), int(c)
    return (f"index {c}" if is_1d else f"row {r} (sample {c})"), r, c


def as_scores(x: ArrayLike, name: str = "scores", check: bool = True) -> tuple[FloatArray, bool]:
    """Scores as a C-contiguous 2-D float64 array and a 1-D flag.

    With ``check=False`` the values are not range-checked here: the caller passes the array
    through :func:`_scan`, which checks each block while it is in cache.
    """
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {type(x).__name__}: {exc}") from None
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"{name} must be 1-D (samples) or 2-D (prompts x samples), got {arr.ndim}-D"
        )
    if arr.size == 0:
        raise ValueError(f"{name} are empty (shape {arr.shape})")
    is_1d = arr.ndim == 1
    a2 = np.ascontiguousarray(arr.reshape(1, -1) if is_1d else arr)
    # (a >= 0) is False for NaN, so one pass per side catches NaN, inf and out-of-range values.
    if check and not ((a2 >= 0.0).all() and (a2 <= 1.0).all()):
        _raise_bad_scores(a2, is_1d, name)
    return a2, is_1d


def _raise_bad_scores(a2: FloatArray, is_1d: bool, name: str = "scores") -> None:
    """Raise the ValueError that names the first NaN, else the first value outside [0, 1]."""
    nan = np.isnan(a2)
    if nan.any():
        where, _, _ = locate_first(nan, is_1d)
        raise ValueError(f"{name} contain NaN at {where}")
    bad = (a2 < 0.0) | (a2 > 1.0)
    if bad.any():
        where, r, c = locate_first(bad, is_1d)
        raise ValueError(f"{name} must lie in [0, 1]; got {float(a2[r, c])!r} at {where}")


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float, or ValueError unless it is a number in (0, 0.5]."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise ValueError(f"alpha must be a number in (0, 0.5], got {alpha!r}")
    a = float(alpha)
    if not (0.0 < a <= 0.5):
        raise ValueError(f"alpha must be in (0, 0.5], got {alpha!r}")
    return a


def _check_bins(bins: int) -> int:
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral):
        raise ValueError(f"bins must be an integer >= 1, got {bins!r}")
    if bins < 1:
        raise ValueError(f"bins must be an integer >= 1, got {bins!r}")
    return int(bins)


def _check_rho(rho: float) -> float:
    if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not math.isfinite(rho):
        raise ValueError(f"rho must be a finite number >= 0, got {rho!r}")
    if rho < 0:
        raise ValueError(f"rho must be >= 0, got {rho!r}")
    return float(rho)


def check_thresholds(thresholds: ArrayLike) -> tuple[FloatArray, bool]:
    """Thresholds as a 1-D float array and a scalar flag, or ValueError (empty, 2-D, not finite)."""
    try:
        t = np.asarray(thresholds, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"thresholds must be numeric: {exc}") from None
    if t.ndim > 1:
        raise ValueError(f"thresholds must be a scalar or 1-D, got {t.ndim}-D")
    if t.size == 0:
        raise ValueError("thresholds are empty")
    if not np.isfinite(t).all():
        raise ValueError(f"thresholds must be finite, got {t.tolist()!r}")
    return t.reshape(-1), t.ndim == 0


def _out(values: FloatArray, is_1d: bool) -> Any:
    """A float for one prompt, the array for many."""
    return float(values[0]) if is_1d else values


# --------------------------------------------------------------------------------------------
# building blocks
# --------------------------------------------------------------------------------------------


def dkw_epsilon(n: int, alpha: float, two_sided: bool = False) -> float:
    """DKW band half-width: sqrt(ln(1/alpha) / 2n), or sqrt(ln(2/alpha) / 2n) two-sided."""
    return math.sqrt(math.log((2.0 if two_sided else 1.0) / alpha) / (2.0 * n))


def grid(bins: int = 100) -> FloatArray:
    """The uniform grid ``tau_i = i / bins``, i = 0..bins (``tau_0 = 0``, ``tau_K = 1`` exactly)."""
    k = _check_bins(bins)
    return np.arange(k + 1, dtype=np.float64) / k


def default_thresholds() -> FloatArray:
    """Thresholds 0.0, 0.1, ..., 1.0, built as ``k / 10`` so that they lie exactly on the grid."""
    return np.arange(11, dtype=np.float64) / 10


def threshold_key(t: float) -> str:
    """Column name of M_gen at threshold t: ``m_gen_0.5``, ``m_gen_1.0``, ``m_gen_0.125``."""
    return "m_gen_" + np.format_float_positional(float(t), trim="0")


def leak_key(t: float) -> str:
    """Column name of M_bin of the decision ``score >= t`` (a leak at the *leak threshold* t):
    ``m_bin_ge_0.5``, ``m_bin_ge_1.0``."""
    return "m_bin_ge_" + np.format_float_positional(float(t), trim="0")


def _check_leak_threshold(t: float | None) -> float | None:
    if t is None:
        return None
    if isinstance(t, bool) or not isinstance(t, numbers.Real) or not (0.0 < float(t) <= 1.0):
        raise ValueError(f"leak_threshold must be None or a number in (0, 1], got {t!r}")
    return float(t)


_CHUNK_ELEMENTS = 1 << 16  # rows are processed in blocks of about this many scores (cache-sized)


def _scan(
    x: FloatArray, bins: int, moments: bool = False, check: tuple[bool, str] | None = None
) -> tuple[Any, Any, Any, Any]:
    """One pass over the scores: grid counts and, with ``moments``, mean, std and #{x == 1}.

    ``counts[r, i]`` = #{j : x[r, j] <= tau_i}, ``tau_i = i / bins``, for every row. Each score
    gets the index of the grid cell ``(tau_{i-1}, tau_i]`` holding it (cell 0 is the point 0),
    computed as ``j = rint(x K)`` plus one where ``x > j / K``: both ``j / K`` and the grid are
    the correctly rounded quotient, so a score exactly equal to a grid point (0.3, 0.5, 1/3 with
    K = 3, ...) is counted at that point, which a bare ``ceil(x K)`` gets wrong
    (``0.3 * 100 = 30.000000000000004``). One ``bincount`` with row offsets then counts all
    rows of a block at once; the blocks (a loop over groups of rows, not over prompts) keep the
    temporaries in cache. ``check`` (``(is_1d, name)``) range-checks each block first.
    ``bins = 0`` skips the counts (returned as None).
    """
    k = bins
    m, n = x.shape
    counts = np.empty((m, k + 1), dtype=np.int64) if k else None
    mean = np.empty(m) if moments else None
    std = np.empty(m) if moments else None
    ones = np.empty(m, dtype=np.int64) if moments else None
    step = max(1, _CHUNK_ELEMENTS // n)
    offsets = np.arange(step, dtype=np.float64) * (k + 1)
    for s in range(0, m, step):
        xc = x[s : s + step]
        mc = xc.shape[0]
        if check is not None and not (xc.min() >= 0.0 and xc.max() <= 1.0):  # NaN fails too
            _raise_bad_scores(x, *check)
        y = xc * k
        if k:
            np.rint(y, out=y)
            y += xc > y / k
            y += offsets[:mc, None]
            hist = np.bincount(y.astype(np.intp).ravel(), minlength=mc * (k + 1))
            np.cumsum(hist.reshape(mc, k + 1), axis=1, out=counts[s : s + mc])
        if moments:
            mu = xc.mean(axis=1)
            np.subtract(xc, mu[:, None], out=y)
            mean[s : s + mc] = mu
            std[s : s + mc] = np.sqrt(np.einsum("ij,ij->i", y, y) / n)
            ones[s : s + mc] = np.count_nonzero(xc == 1.0, axis=1)
    return counts, mean, std, ones


def _grid_counts(x: FloatArray, bins: int) -> NDArray[np.int64]:
    """``counts[r, i]`` = #{j : x[r, j] <= i / bins} for i = 0..bins (see :func:`_scan`)."""
    return _scan(x, bins)[0]


def counts_le(x: FloatArray, points: FloatArray) -> NDArray[np.int64]:
    """``counts[r, p]`` = #{j : x[r, j] <= points[p]} for arbitrary points (any order).

    Each score gets the number of points below it (by comparisons for a few points, a binary
    search for many), and one ``bincount`` per block of rows counts them.
    """
    m, n = x.shape
    pts = np.asarray(points, dtype=np.float64)
    order = np.argsort(pts, kind="stable")
    srt = pts[order]
    p = srt.size
    counts = np.empty((m, p), dtype=np.int64)
    step = max(1, _CHUNK_ELEMENTS // n)
    offsets = np.arange(step, dtype=np.intp) * (p + 1)
    for s in range(0, m, step):
        xc = x[s : s + step]
        mc = xc.shape[0]
        if p <= 32:
            below = np.zeros(xc.shape, dtype=np.int16)
            for v in srt:
                np.add(below, xc > v, out=below)
            idx = below.astype(np.intp)
        else:
            idx = np.searchsorted(srt, xc, side="left")
        idx += offsets[:mc, None]
        hist = np.bincount(idx.ravel(), minlength=mc * (p + 1)).reshape(mc, p + 1)
        np.cumsum(hist[:, :p], axis=1, out=counts[s : s + mc])
    out = np.empty_like(counts)
    out[:, order] = counts
    return out


def _common_grid(t: FloatArray, max_bins: int = 1000) -> int | None:
    """The smallest K <= max_bins with every threshold exactly a grid point i / K, else None."""
    if not ((t >= 0).all() and (t <= 1).all()):
        return None
    ks = np.arange(1, max_bins + 1, dtype=np.float64)[:, None]
    ok = (np.rint(t * ks) / ks == t).all(axis=1)
    return int(np.argmax(ok)) + 1 if ok.any() else None


def _anderson_upper(cdf: FloatArray, eps: float) -> FloatArray:
    """1 - sum_{i<K} delta_i max(0, F_n(tau_i) - eps) on the uniform grid (left Riemann sum)."""
    k = cdf.shape[1] - 1
    lo = np.maximum(cdf[:, :k] - eps, 0.0)
    return np.clip(1.0 - lo.sum(axis=1) / k, 0.0, 1.0)


def _anderson_lower(cdf: FloatArray, eps: float) -> FloatArray:
    """1 - sum_{i>=1} delta_{i-1} min(1, F_n(tau_i) + eps) on the uniform grid (right sum)."""
    k = cdf.shape[1] - 1
    hi = np.minimum(cdf[:, 1:] + eps, 1.0)
    return np.clip(1.0 - hi.sum(axis=1) / k, 0.0, 1.0)


def _variance_bin_bound(
    cdf: FloatArray, eps: float, mu_lo: FloatArray, mu_hi: FloatArray
) -> FloatArray:
    """sum_i eta_i P(X in bin i), maximised coefficient-wise over the DKW band (uniform grid).

    Bins are ``[tau_0, tau_1]`` (closed: it holds the atom at 0) and ``(tau_i, tau_{i+1}]``, so
    with ``F(tau_0^-) = 0`` and ``F(tau_K) = 1`` the sum telescopes to
    ``eta_{K-1} + sum_{i=1}^{K-1} (eta_{i-1} - eta_i) F(tau_i)``: there is no ``F(tau_0)`` term.
    """
    k = cdf.shape[1] - 1
    taus = np.arange(k + 1, dtype=np.float64) / k
    # (kappa - a)^2 is convex in kappa and in a, so its max over bin x [mu_lo, mu_hi] is at a
    # corner: max |kappa - a| = max(tau_{i+1} - mu_lo, mu_hi - tau_i), at least one >= 0.
    eta = np.maximum(taus[1:] - mu_lo[:, None], mu_hi[:, None] - taus[:-1])
    eta *= eta
    if k == 1:
        return eta[:, 0]
    coef = eta[:, :-1] - eta[:, 1:]  # coefficient of F(tau_i), i = 1..K-1
    # F(tau_i) <= min(1, F_n + eps) where coef > 0, F(tau_i) >= max(0, F_n - eps) where coef < 0
    f_bound = cdf[:, 1:k] + np.copysign(eps, coef)
    np.clip(f_bound, 0.0, 1.0, out=f_bound)
    return eta[:, -1] + np.einsum("ij,ij->i", coef, f_bound)


def _bhatia_davis(mu_lo: FloatArray, mu_hi: FloatArray) -> FloatArray:
    """max of a(1 - a) over a in [mu_lo, mu_hi]: Var[X] <= mu(1 - mu) for X in [0, 1]."""
    a = np.clip(0.5, mu_lo, mu_hi)
    return a * (1.0 - a)


def _std_from_cdf(cdf: FloatArray, n: int, alpha: float) -> tuple[FloatArray, FloatArray]:
    """M_sigma and the two-sided mean interval that it uses (one DKW band for both)."""
    eps2 = dkw_epsilon(n, alpha, two_sided=True)
    mu_lo = _anderson_lower(cdf, eps2)
    mu_hi = _anderson_upper(cdf, eps2)
    var = np.minimum(_variance_bin_bound(cdf, eps2, mu_lo, mu_hi), _bhatia_davis(mu_lo, mu_hi))
    return np.sqrt(np.clip(var, 0.0, 0.25)), np.stack([mu_lo, mu_hi])


def clopper_pearson_upper(successes: NDArray[np.int64], n: int, alpha: float) -> FloatArray:
    """One-sided Clopper-Pearson upper bound on p for ``successes`` of ``n`` trials, at level 1 - alpha."""
    s = np.asarray(successes, dtype=np.float64)
    b = np.maximum(n - s, 1.0)  # betaincinv needs b > 0; S = n is set to 1 below
    q = betaincinv(s + 1.0, b, 1.0 - alpha)
    return np.where(s >= n, 1.0, q)


# --------------------------------------------------------------------------------------------
# public metrics
# --------------------------------------------------------------------------------------------


def binary_leakage_bound(x: ArrayLike, alpha: float = 0.01) -> Any:
    """M_bin: one-sided Clopper-Pearson upper bound on P(X = 1) for binary scores.

    ``B(1 - alpha; S + 1, n - S)`` with ``S`` the number of ones, and exactly 1.0 when ``S = n``.
    Raises ValueError when a score is not 0 or 1.
    """
    a = check_alpha(alpha)
    x2, is_1d = as_scores(x)
    ones = x2 == 1.0
    not_binary = ~(ones | (x2 == 0.0))
    if not_binary.any():
        where, r, c = locate_first(not_binary, is_1d)
        raise ValueError(
            f"binary_leakage_bound needs binary scores (0 or 1); got {float(x2[r, c])!r} at {where}"
        )
    return _out(clopper_pearson_upper(ones.sum(axis=1), x2.shape[1], a), is_1d)


def general_leakage_bound(x: ArrayLike, thresholds: ArrayLike, alpha: float = 0.01) -> Any:
    """M_gen(t) = min(1, 1 - F_n(t) + eps), eps = sqrt(ln(1/alpha) / 2n) (one-sided DKW).

    Upper-bounds P(X > t) simultaneously for all t. Output shape: ``x.shape[:-1] +
    shape(thresholds)`` (a float for 1-D x and a scalar threshold).
    """
    a = check_alpha(alpha)
    t, scalar_t = check_thresholds(thresholds)
    x2, is_1d = as_scores(x, check=False)
    n = x2.shape[1]
    k = _common_grid(t)
    if k is not None:  # e.g. 0, 0.1, ..., 1: one binned pass on that grid
        counts = _scan(x2, k, check=(is_1d, "scores"))[0]
        cdf = counts[:, np.rint(t * k).astype(np.intp)] / n
    else:
        if not ((x2 >= 0.0).all() and (x2 <= 1.0).all()):
            _raise_bad_scores(x2, is_1d)
        cdf = counts_le(x2, t) / n
    m = np.minimum(1.0 - cdf + dkw_epsilon(n, a), 1.0)
    if is_1d:
        return float(m[0, 0]) if scalar_t else m[0]
    return m[:, 0] if scalar_t else m


def expectation_bounds(x: ArrayLike, alpha: float = 0.01, bins: int = 100) -> tuple[Any, Any]:
    """Two-sided Anderson interval ``(lower, upper)`` for E[X], eps = sqrt(ln(2/alpha) / 2n).

    On the grid ``tau_i = i / bins``: upper = 1 - sum_{i<K} delta_i max(0, F_n(tau_i) - eps),
    lower = 1 - sum_{i>=1} delta_{i-1} min(1, F_n(tau_i) + eps); both clipped to [0, 1].
    """
    a = check_alpha(alpha)
    k = _check_bins(bins)
    x2, is_1d = as_scores(x, check=False)
    n = x2.shape[1]
    cdf = _scan(x2, k, check=(is_1d, "scores"))[0] / n
    eps = dkw_epsilon(n, a, two_sided=True)
    return _out(_anderson_lower(cdf, eps), is_1d), _out(_anderson_upper(cdf, eps), is_1d)


def expectation_upper_bound(x: ArrayLike, alpha: float = 0.01, bins: int = 100) -> Any:
    """M_mu: one-sided Anderson upper bound on E[X] with eps = sqrt(ln(1/alpha) / 2n)."""
    a = check_alpha(alpha)
    k = _check_bins(bins)
    x2, is_1d = as_scores(x, check=False)
    n = x2.shape[1]
    cdf = _scan(x2, k, check=(is_1d, "scores"))[0] / n
    return _out(_anderson_upper(cdf, dkw_epsilon(n, a)), is_1d)


def std_upper_bound(x: ArrayLike, alpha: float = 0.01, bins: int = 100) -> Any:
    """M_sigma: upper bound on the standard deviation of X.

    One two-sided DKW band (eps = sqrt(ln(2/alpha) / 2n)) gives the Anderson interval
    ``[mu_lo, mu_hi]`` for E[X] and the CDF bounds ``max(0, F_n - eps) <= F <= min(1, F_n + eps)``.
    Then ``Var[X] <= sum_i eta_i P(X in bin i)``, ``eta_i`` the max of ``(kappa - a)^2`` over the
    corners ``kappa in {tau_i, tau_{i+1}}``, ``a in {mu_lo, mu_hi}``. The first bin is
    ``[0, tau_1]``: it holds the atom at 0, whose mass the paper's formula and the reference code
    (``conbo``) drop. The telescoped sum bounds each ``F(tau_i)`` from above where its coefficient
    is positive and from below where it is negative. On the same event
    ``Var[X] <= max_{a in [mu_lo, mu_hi]} a (1 - a)`` (Bhatia-Davis; <= 1/4), and the smaller of
    the two bounds is used. Returns its square root.
    """
    a = check_alpha(alpha)
    k = _check_bins(bins)
    x2, is_1d = as_scores(x, check=False)
    n = x2.shape[1]
    cdf = _scan(x2, k, check=(is_1d, "scores"))[0] / n
    std, _ = _std_from_cdf(cdf, n, a)
    return _out(std, is_1d)


def ed_score(x: ArrayLike, rho: float = 2.0) -> Any:
    """ED score: sample mean + rho * sample standard deviation (population std, ddof = 0)."""
    r = _check_rho(rho)
    x2, is_1d = as_scores(x, check=False)
    _, mean, std, _ = _scan(x2, 0, moments=True, check=(is_1d, "scores"))
    return _out(ed_from_moments(mean, std, r), is_1d)


def ed_from_moments(mean: Any, std: Any, rho: float = 2.0) -> Any:
    """The ED score from a sample's mean and (population) standard deviation: ``mean + rho * std``,
    elementwise (the one formula behind :func:`ed_score` and every table of it)."""
    return mean + _check_rho(rho) * std


def samples_needed(epsilon: float, alpha: float = 0.01, two_sided: bool = False) -> int:
    """Samples n needed for a DKW band of half-width epsilon at level alpha.

    ``ceil(ln(1/alpha) / (2 eps^2))`` one-sided (``exp(-2 n eps^2) <= alpha``) and
    ``ceil(ln(2/alpha) / (2 eps^2))`` two-sided (``2 exp(-2 n eps^2) <= alpha``). The paper's
    appendix C writes ``alpha = 2 exp(-n eps^2) <=> n = ln(sqrt(1/alpha)) / eps^2``: the left side
    drops the factor 2 in the exponent and the right side does not follow from it (it is the
    one-sided formula).
    """
    a = check_alpha(alpha)
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise ValueError(f"epsilon must be a number in (0, 1), got {epsilon!r}")
    e = float(epsilon)
    if not (0.0 < e < 1.0):
        raise ValueError(f"epsilon must be in (0, 1), got {epsilon!r}")
    return int(math.ceil(math.log((2.0 if two_sided else 1.0) / a) / (2.0 * e * e)))


# --------------------------------------------------------------------------------------------
# every metric at once
# --------------------------------------------------------------------------------------------


def _threshold_keys(thresholds: ArrayLike | None) -> tuple[FloatArray, list[str]]:
    """The checked thresholds (default 0.0, 0.1, ..., 1.0) and their column keys; duplicates are
    an error."""
    t, _ = check_thresholds(default_thresholds() if thresholds is None else thresholds)
    keys = [threshold_key(v) for v in t]
    if len(set(keys)) != len(keys):
        raise ValueError(f"thresholds contain duplicates: {t.tolist()!r}")
    return t, keys


def _greedy_scores(greedy: ArrayLike, m: int) -> FloatArray:
    """The greedy scores, one per prompt, checked."""
    g2, _ = as_scores(np.ravel(np.asarray(greedy)), name="greedy scores")
    g = g2[0]
    if g.size != m:
        raise ValueError(f"greedy has {g.size} values for {m} prompt(s)")
    return g


def _raise_not_binary(x2: FloatArray, is_1d: bool, name: str) -> None:
    """The error of an M_bin asked for on scores that are not 0 or 1, naming the first such."""
    where, i, j = locate_first((x2 != 0.0) & (x2 != 1.0), is_1d)
    raise ValueError(
        f"M_bin of {name!r} needs binary scores (0 or 1) or a leak threshold: {name!r} has "
        f"{float(x2[i, j])!r} at {where}. Set a leak threshold T, so that a leak is a "
        "score >= T (leak_threshold=T; `probunlearn bounds --leak-threshold T`; config "
        "bounds.leak_threshold)"
    )


def _cdf_at(t: FloatArray, cdf: FloatArray, x2: FloatArray, bins: int) -> FloatArray:
    """F_n at the thresholds ``t`` (prompts x thresholds): read off the grid of ``bins`` bins
    (``cdf``) where a threshold is a grid point, counted in the scores ``x2`` otherwise."""
    n = x2.shape[1]
    pos = np.clip(np.rint(t * bins).astype(np.intp), 0, bins)
    on_grid = (np.arange(bins + 1, dtype=np.float64) / bins)[pos] == t
    f_t = np.empty((x2.shape[0], t.size))
    f_t[:, on_grid] = cdf[:, pos[on_grid]]
    if not on_grid.all():
        f_t[:, ~on_grid] = counts_le(x2, t[~on_grid]) / n
    return f_t


def summarize(
    x: ArrayLike,
    greedy: ArrayLike | None = None,
    alpha: float = 0.01,
    bins: int = 100,
    rho: float = 2.0,
    thresholds: ArrayLike | None = None,
    *,
    leak_threshold: float | None = None,
    m_bin: bool | None = None,
    name: str = "scores",
) -> dict[str, float] | pl.DataFrame:
    """Every metric for one prompt (1-D x: a dict) or for many (2-D x: a polars DataFrame).

    Keys / columns, in order: ``n``, ``mean``, ``std`` (ddof = 0), ``ed`` (mean + rho std),
    ``greedy`` (only when given: the score of the greedy answer), ``m_bin`` (binary scores only,
    see below), ``m_bin_ge_<T>`` (only with a ``leak_threshold`` T: M_bin of the decision
    ``score >= T``, see :func:`leak_key`), ``m_mu`` (one-sided), ``mu_lower`` and ``mu_upper``
    (two-sided interval), ``m_sigma``, then ``m_gen_<t>`` for each threshold t (see
    :func:`threshold_key`; default 0.0, 0.1, ..., 1.0). The DataFrame has one row per prompt, in
    input order.

    M_bin needs a decision per sample. ``m_bin=None`` (default) gives the ``m_bin`` column where
    every score (of every prompt) is 0 or 1 and leaves it out otherwise, never a NaN; ``False``
    leaves it out; ``True`` asks for an M_bin and raises a ValueError naming ``name`` where the
    scores are not binary and no leak threshold is given.
    """
    a = check_alpha(alpha)
    k = _check_bins(bins)
    r = _check_rho(rho)
    leak_t = _check_leak_threshold(leak_threshold)
    t, keys = _threshold_keys(thresholds)
    x2, is_1d = as_scores(x, check=False)
    m, n = x2.shape
    g = None if greedy is None else _greedy_scores(greedy, m)

    counts, mean, std, ones = _scan(x2, k, moments=True, check=(is_1d, "scores"))
    cdf = counts / n
    binary = bool((counts[:, 0] + ones == n).all())  # counts[:, 0] is #{x == 0}
    if m_bin and not binary and leak_t is None:
        _raise_not_binary(x2, is_1d, name)
    m_sigma, (mu_lo, mu_hi) = _std_from_cdf(cdf, n, a)
    m_gen = np.minimum(1.0 - _cdf_at(t, cdf, x2, k) + dkw_epsilon(n, a), 1.0)

    cols: dict[str, Any] = {
        "n": np.full(m, n, dtype=np.int64),
        "mean": mean,
        "std": std,
        "ed": ed_from_moments(mean, std, r),
    }
    if g is not None:
        cols["greedy"] = g
    if binary and m_bin is not False:
        cols["m_bin"] = clopper_pearson_upper(ones, n, a)
    if leak_t is not None:
        cols[leak_key(leak_t)] = clopper_pearson_upper((x2 >= leak_t).sum(axis=1), n, a)
    cols["m_mu"] = _anderson_upper(cdf, dkw_epsilon(n, a))
    cols["mu_lower"] = mu_lo
    cols["mu_upper"] = mu_hi
    cols["m_sigma"] = m_sigma
    for j, key in enumerate(keys):
        cols[key] = m_gen[:, j]
    if is_1d:
        return {key: (int(v[0]) if key == "n" else float(v[0])) for key, v in cols.items()}
    return pl.DataFrame(cols)

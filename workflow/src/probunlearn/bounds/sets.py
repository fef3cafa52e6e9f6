"""Beyond the paper: set-level, simultaneous and anytime-valid bounds, and leak@k (docs/bounds.md)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betaincinv, betaln

from probunlearn.bounds.betting import betting_upper_bound
from probunlearn.bounds.per_prompt import (
    FloatArray,
    as_scores,
    check_alpha,
    clopper_pearson_upper,
    expectation_upper_bound,
    locate_first,
)

# --------------------------------------------------------------------------------------------
# beyond the paper: set-level, simultaneous and anytime-valid bounds (docs/bounds.md)
# --------------------------------------------------------------------------------------------


def _prompt_rows(x: Any, binary: bool, name: str = "scores") -> list[FloatArray]:
    """Scores of a set of prompts as a list of 1-D float64 arrays (a 2-D array or a list of 1-D).

    Each row must be non-empty with values in [0, 1]; with ``binary`` every value must be 0 or 1.
    Errors name the prompt (row) and sample.
    """
    if isinstance(x, np.ndarray) or not isinstance(x, (list, tuple)):
        a2, is_1d = as_scores(x, name)
        if is_1d:
            raise ValueError(
                f"{name} must be 2-D (prompts x samples) or a list of 1-D arrays (one per prompt), "
                "got one 1-D array"
            )
        rows = list(a2)
    else:
        if not x:
            raise ValueError(f"{name} are empty (no prompts)")
        rows = []
        for i, r in enumerate(x):
            a = np.asarray(r, dtype=np.float64)
            if a.ndim != 1:
                raise ValueError(f"{name}: prompt {i} must be 1-D (samples), got {a.ndim}-D")
            if a.size == 0:
                raise ValueError(f"{name}: prompt {i} has no samples")
            if not ((a >= 0.0).all() and (a <= 1.0).all()):
                bad = int(np.argmax(~((a >= 0.0) & (a <= 1.0))))
                raise ValueError(
                    f"{name} must lie in [0, 1]; got {float(a[bad])!r} at row {i} (sample {bad})"
                )
            rows.append(a)
    if binary:
        for i, r in enumerate(rows):
            nb = (r != 0.0) & (r != 1.0)
            if nb.any():
                j = int(np.argmax(nb))
                raise ValueError(
                    f"binary=True needs scores 0 or 1; got {float(r[j])!r} at row {i} (sample {j}). "
                    "Pass "
                    "binary=False for scores in [0, 1], or threshold them first (leak = score >= T)"
                )
    return rows


def set_level_upper_bound(x: Any, alpha: float = 0.01, *, binary: bool) -> float:
    """Upper bound, at level 1 - alpha, on the average over prompts of E[X] (all samples pooled).

    ``x``: 2-D array (prompts x samples) or a list of 1-D arrays (one per prompt, any n). Valid
    however the prompts' distributions differ; samples must be independent.

    ``binary=True`` (scores 0/1: the average leak probability p_bar) with equal n: the pooled
    count S over N = m n samples is Poisson-binomial with mean N p_bar, and Hoeffding (1956,
    Theorem 4) bounds its lower tail by the binomial's, P(S <= b) <= P(Bin(N, p_bar) <= b), for
    b <= N p_bar - 1. The bound is ``max(CP(S; N, alpha), (S + 1) / N)``, with CP the one-sided
    Clopper-Pearson upper bound: the floor (S + 1) / N makes every count at which the bound falls
    below p_bar satisfy the theorem's condition, so the bound holds for every alpha (plain pooled
    Clopper-Pearson does not; see docs/bounds.md). Otherwise (``binary=False``, or unequal n):
    Hoeffding's inequality for the weighted mean ``(1/m) sum_i mean(x_i)``, whose samples have
    ranges 1 / (m n_i): ``mean + sqrt(ln(1/alpha) sum_i 1/n_i / (2 m^2))``. Whether the scores are
    binary is the caller's choice; it is never inferred from the values.
    """
    if not isinstance(binary, bool):
        raise ValueError(f"binary must be True or False, got {binary!r}")
    a = check_alpha(alpha)
    rows = _prompt_rows(x, binary)
    m = len(rows)
    sizes = np.array([r.size for r in rows], dtype=np.float64)
    if binary and (sizes == sizes[0]).all():
        n_all = int(sizes.sum())
        s = int(sum(int(r.sum()) for r in rows))
        cp = float(clopper_pearson_upper(np.array([s]), n_all, a)[0])
        return min(1.0, max(cp, (s + 1) / n_all))
    mean = float(np.mean([r.mean() for r in rows]))
    eps = math.sqrt(math.log(1.0 / a) * float(np.sum(1.0 / sizes)) / (2.0 * m * m))
    return min(1.0, mean + eps)


def simultaneous_level(alpha: float, m: int, correction: str = "bonferroni") -> float:
    """The level of each of m statements so that all hold together with probability >= 1 - alpha.

    ``"bonferroni"``: alpha / m, valid however the statements depend on each other (the union
    bound). ``"sidak"``: 1 - (1 - alpha)^(1/m), valid for *independent* statements (each holds with
    probability >= 1 - a, so all hold with probability >= (1 - a)^m = 1 - alpha); slightly larger,
    so each bound is slightly tighter. Bounds of different prompts are independent: their samples
    are drawn independently (each sample has its own key, DESIGN.md).
    """
    a = check_alpha(alpha)
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 1:
        raise ValueError(f"m (the number of statements) must be an integer >= 1, got {m!r}")
    if correction == "bonferroni":
        return a / int(m)
    if correction == "sidak":
        return -math.expm1(math.log1p(-a) / int(m))
    raise ValueError(f"correction must be 'bonferroni' or 'sidak', got {correction!r}")


def simultaneous_upper_bounds(
    x: Any,
    alpha: float = 0.01,
    metric: str = "m_bin",
    *,
    bins: int = 100,
    correction: str = "bonferroni",
) -> FloatArray:
    """Per-prompt upper bounds that hold for all prompts at once with probability >= 1 - alpha.

    Each prompt's bound at the level :func:`simultaneous_level` gives for m prompts: alpha / m
    (Bonferroni, the union bound; the default) or ``correction="sidak"``, 1 - (1 - alpha)^(1/m),
    valid because the prompts' samples are independent. ``metric``: ``"m_bin"`` (Clopper-Pearson
    on 0/1 scores: P(leak)) or ``"m_mu"`` (Anderson's bound on E[X] on a grid of ``bins`` bins).
    ``x``: 2-D array or a list of 1-D arrays. The largest value is a set-level statement: no
    prompt of the set has P(leak) (or E[X]) above it.
    """
    if metric not in ("m_bin", "m_mu"):
        raise ValueError(f"metric must be 'm_bin' or 'm_mu', got {metric!r}")
    a = check_alpha(alpha)
    rows = _prompt_rows(x, binary=metric == "m_bin")
    a_each = simultaneous_level(a, len(rows), correction)
    if len({r.size for r in rows}) == 1:  # equal n: one vectorised call
        mat = np.stack(rows)
        if metric == "m_bin":
            return clopper_pearson_upper(mat.sum(axis=1), mat.shape[1], a_each)
        return np.asarray(expectation_upper_bound(mat, a_each, bins))
    if metric == "m_bin":
        return np.array(
            [clopper_pearson_upper(np.array([r.sum()]), r.size, a_each)[0] for r in rows]
        )
    return np.array([expectation_upper_bound(r, a_each, bins) for r in rows])


def _check_ks(k: Any) -> tuple[NDArray[np.int64], bool]:
    ks = np.asarray(k)
    if ks.ndim > 1 or ks.size == 0 or not np.issubdtype(ks.dtype, np.integer):
        raise ValueError(f"k must be an integer >= 1 or a non-empty list of them, got {k!r}")
    if (ks < 1).any():
        raise ValueError(f"k must be >= 1, got {k!r}")
    return ks.reshape(-1).astype(np.int64), ks.ndim == 0


def leak_at_k(x: ArrayLike, k: Any, alpha: float = 0.01) -> tuple[Any, Any]:
    """leak@k: P(at least one of k sampled answers leaks), its unbiased estimate and upper bound.

    ``x``: 0/1 scores, 1-D (one prompt) or 2-D (prompts x samples), n samples per prompt.
    Estimate: ``1 - C(n - c, k) / C(n, k)`` with c leaks (the unbiased pass@k estimator of Chen et
    al. 2021), for k <= n; for k > n it is NaN: no unbiased estimator exists (the expectation of any
    function of n samples is a polynomial of degree <= n in p, and leak@k has degree k). Upper
    bound: ``1 - (1 - M_bin)^k``, a monotone transform of the Clopper-Pearson bound on p = P(leak),
    valid at the same level for every k (also k > n) because leak@k = 1 - (1 - p)^k. 1-D x and an
    int k give floats; 2-D x gives arrays of shape (prompts,); a list of k adds a last axis.
    """
    a = check_alpha(alpha)
    ks, scalar_k = _check_ks(k)
    x2, is_1d = as_scores(x)
    not_binary = (x2 != 0.0) & (x2 != 1.0)
    if not_binary.any():
        where, r, c = locate_first(not_binary, is_1d)
        raise ValueError(f"leak_at_k needs 0/1 scores; got {float(x2[r, c])!r} at {where}")
    n = x2.shape[1]
    c = x2.sum(axis=1).astype(np.int64)
    m_bin = clopper_pearson_upper(c, n, a)
    est = np.empty((x2.shape[0], ks.size))
    up = np.empty_like(est)
    i = np.arange(1, n + 1, dtype=np.float64)
    sure = m_bin >= 1.0
    log_miss = np.log1p(-np.where(sure, 0.0, m_bin))  # log(1 - M_bin), where M_bin < 1
    for j, kk in enumerate(ks):
        # log C(n-c, k)/C(n, k) = sum_{i=n-c+1}^{n} log(1 - k/i), defined where n - c >= k
        terms = np.where(i > kk, np.log1p(-kk / np.maximum(i, kk + 1.0)), 0.0)
        cum = np.concatenate([[0.0], np.cumsum(terms)])
        ok = n - c >= kk
        log_ratio = cum[n] - cum[np.where(ok, n - c, n)]
        est[:, j] = np.nan if kk > n else np.where(ok, 0.0 - np.expm1(log_ratio), 1.0)
        up[:, j] = np.where(sure, 1.0, 0.0 - np.expm1(kk * log_miss))
    if scalar_k:
        est, up = est[:, 0], up[:, 0]
    if is_1d:
        return (float(est[0]), float(up[0])) if scalar_k else (est[0], up[0])
    return est, up


def _log_likelihood(
    s: FloatArray, f: FloatArray, no_s: NDArray[np.bool_], no_f: NDArray[np.bool_], p: FloatArray
) -> FloatArray:
    """log p^s (1 - p)^f, with 0 log 0 = 0 (``no_s``, ``no_f``: where s, f are 0); the operations of
    ``where(s > 0, s log p, 0) + where(f > 0, f log1p(-p), 0)`` without temporaries, for the 92
    bisection steps below (call it under ``np.errstate(divide="ignore", invalid="ignore")``)."""
    a = np.log(p)
    a *= s
    a[no_s] = 0.0
    b = np.log1p(-p)
    b *= f
    b[no_f] = 0.0
    a += b
    return a


def binary_confidence_sequence(x: ArrayLike, alpha: float = 0.01) -> tuple[FloatArray, FloatArray]:
    """Anytime-valid bounds on p = P(X = 1) after each sample of a 0/1 sequence.

    Returns ``(lower, upper)``, arrays of len(x): with probability >= 1 - alpha, p lies in
    [lower[t], upper[t]] for every t at once, so the sequence may be checked after every sample
    and sampling stopped at any data-dependent time. Method: the Beta(1/2, 1/2) mixture of the
    likelihood ratios ``prod p'^x (1 - p')^(1 - x) / (p^x (1 - p)^(1 - x))`` is a nonnegative
    martingale with mean 1 under p, so by Ville's inequality it exceeds 1 / alpha at some t with
    probability <= alpha (Robbins 1970; Howard et al. 2021). The set {p : ratio < 1 / alpha} is an
    interval (the log ratio is convex in p), found by bisection; the running intersection over t
    keeps the bounds monotone and stays valid.
    """
    a = check_alpha(alpha)
    x2, is_1d = as_scores(x)
    if not is_1d:
        raise ValueError("binary_confidence_sequence takes one 1-D sequence of 0/1 scores")
    v = x2[0]
    nb = (v != 0.0) & (v != 1.0)
    if nb.any():
        j = int(np.argmax(nb))
        raise ValueError(
            f"binary_confidence_sequence needs 0/1 scores; got {float(v[j])!r} at index {j}"
        )
    t = np.arange(1, v.size + 1, dtype=np.float64)
    s = np.cumsum(v)
    f = t - s
    phat = s / t
    # log ratio(p) = log B(1/2 + s, 1/2 + f) - log B(1/2, 1/2) - log p^s (1 - p)^f >= log(1/alpha)
    # <=> log p^s (1 - p)^f <= cut
    cut = betaln(0.5 + s, 0.5 + f) - betaln(0.5, 0.5) - math.log(1.0 / a)
    # lower end in [0, phat], upper in [phat, 1]: the ratio is monotone on each side and is
    # <= 1 < 1/alpha at phat
    no_s, no_f = s <= 0, f <= 0

    def outer_end(outer: FloatArray, inner: FloatArray) -> FloatArray:
        # bisection between outer (log-likelihood <= cut) and inner (> cut); the boundary lies
        # between them: report the outer end
        for _ in range(46):  # 2^-46 < 1.5e-14
            mid = 0.5 * (outer + inner)
            out = _log_likelihood(s, f, no_s, no_f, mid) <= cut
            np.copyto(outer, mid, where=out)
            np.copyto(inner, mid, where=~out)
        return outer

    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(no_s, 0.0, outer_end(np.zeros_like(phat), phat.copy()))
        upper = np.where(no_f, 1.0, outer_end(np.ones_like(phat), phat.copy()))
    return np.maximum.accumulate(lower), np.minimum.accumulate(upper)


ONE_SIDED_NODES = 32
"""Nodes of the fixed mixing distribution of :func:`binary_upper_confidence_sequence`."""
_ONE_SIDED_STEPS = 36  # bisection steps on [0, 1]: 2^-36 < 2e-11
_ONE_SIDED_BLOCK = 1 << 21  # elements of the (sequences x samples x nodes) temporaries


def _check_binary_1d(x: ArrayLike, name: str) -> FloatArray:
    x2, is_1d = as_scores(x)
    if not is_1d:
        raise ValueError(f"{name} takes one 1-D sequence of 0/1 scores")
    v = x2[0]
    nb = (v != 0.0) & (v != 1.0)
    if nb.any():
        j = int(np.argmax(nb))
        raise ValueError(f"{name} needs 0/1 scores; got {float(v[j])!r} at index {j}")
    return v


def _binary_upper_final(seqs: list[FloatArray], alpha: float) -> FloatArray:
    """The one-sided mixture bound after the last sample of each 0/1 sequence (running
    intersection over all its t), vectorised over sequences; see
    :func:`binary_upper_confidence_sequence`."""
    k = ONE_SIDED_NODES
    u = betaincinv(0.5, 0.5, (np.arange(k) + 0.5) / k)  # the Beta(1/2, 1/2) quantiles
    log_u = np.log(u)
    thr = math.log(1.0 / alpha) + math.log(k)  # the equal weights 1/k moved to the threshold
    longest = max(r.size for r in seqs)
    out = np.empty(len(seqs))
    step = max(1, _ONE_SIDED_BLOCK // (longest * k))
    for b0 in range(0, len(seqs), step):
        block = seqs[b0 : b0 + step]
        r = len(block)
        # counts after each sample, the last ones repeated past a sequence's end (same maximum)
        s = np.empty((r, longest))
        f = np.empty((r, longest))
        for i, v in enumerate(block):
            c = np.cumsum(v)
            s[i, : v.size], s[i, v.size :] = c, c[-1]
            f[i, : v.size] = np.arange(1, v.size + 1) - c
            f[i, v.size :] = v.size - c[-1]
        base = s[:, :, None] * log_u[None, None, :]
        lo, hi = np.zeros(r), np.ones(r)

        def rejected(p: FloatArray, f=f, base=base) -> NDArray[np.bool_]:
            a = np.log1p(-p[:, None] * u[None, :]) - np.log1p(-p)[:, None]  # (r, k)
            a = base + f[:, :, None] * a[:, None, :]
            top = a.max(axis=2, keepdims=True)
            lse = np.log(np.exp(a - top).sum(axis=2)) + top[:, :, 0]
            return lse.max(axis=1) >= thr

        for _ in range(_ONE_SIDED_STEPS):
            mid = 0.5 * (lo + hi)
            rej = rejected(mid)
            np.copyto(hi, mid, where=rej)
            np.copyto(lo, mid, where=~rej)
        only_ones = f[:, -1] == 0  # M_t(p) < 1 for every p: nothing is rejected
        out[b0 : b0 + r] = np.where(only_ones, 1.0, hi)
    return out


def binary_upper_confidence_sequence(
    x: ArrayLike, alpha: float = 0.01, *, times: Any = None
) -> FloatArray:
    """One-sided anytime-valid upper bounds on p = P(X = 1) of a 0/1 sequence, at the given times.

    With probability >= 1 - alpha, p <= upper[t] at every t at once (all of alpha on the upper
    side, where :func:`binary_confidence_sequence` spends it on both). ``times``: increasing sample
    counts in [1, n] (default every t); each value is the running intersection over all t' <= t.

    Method: for each u in (0, 1), the likelihood ratio of Bernoulli(p u) to Bernoulli(p),
    ``prod_i u^{x_i} ((1 - p u) / (1 - p))^{1 - x_i}``, is a nonnegative martingale with mean 1
    under p, and so is its mixture over a fixed distribution of u: here Beta(1/2, 1/2) taken at
    ``ONE_SIDED_NODES`` equal-weight quantiles (a discrete mixing distribution, exactly valid).
    Ville's inequality bounds the chance that it ever reaches 1 / alpha. Each ratio grows with p
    (``(1 - p u) / (1 - p)`` does), so the rejected p form an interval [U_t, 1], found by
    bisection (the upper end of the last bracket is reported). Mixing over alternatives below p
    only (p u < p) makes it one-sided.
    """
    a = check_alpha(alpha)
    v = _check_binary_1d(x, "binary_upper_confidence_sequence")
    n = v.size
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
    return np.minimum.accumulate(_binary_upper_final([v[:t] for t in ts], a))


MEAN_CS_RHO_SAMPLES = 128
"""The sample size at which :func:`mean_confidence_sequence` is tightest by default."""


def normal_mixture_rho(t_opt: float, alpha: float) -> float:
    """The mixture weight rho that makes the two-sided normal-mixture boundary tightest near
    ``t_opt`` samples of [0, 1] scores (variance factor V = t / 4).

    Howard et al. (2021)'s approximate optimum: rho = V / (2 ln(1/alpha) + ln(1 + 2 ln(1/alpha)))
    at V = t_opt / 4 (about 4.0 at alpha = .05 and 2.8 at .01 for t_opt = 128).
    """
    a = check_alpha(alpha)
    if isinstance(t_opt, bool) or not isinstance(t_opt, numbers.Real) or not t_opt > 0:
        raise ValueError(f"t_opt must be a number > 0 (a sample size), got {t_opt!r}")
    log_inv = 2.0 * math.log(1.0 / a)
    return (float(t_opt) / 4.0) / (log_inv + math.log1p(log_inv))


def mean_confidence_sequence(
    x: ArrayLike, alpha: float = 0.01, *, t_opt: float = MEAN_CS_RHO_SAMPLES
) -> tuple[FloatArray, FloatArray]:
    """Anytime-valid bounds on E[X] after each sample of a sequence of scores in [0, 1].

    Returns ``(lower, upper)``, arrays of len(x), holding for every t at once with probability
    >= 1 - alpha. Method: a score in [0, 1] is sub-Gaussian with variance factor 1/4 (Hoeffding's
    lemma), so the normal mixture ``sqrt(rho / (V + rho)) exp(S^2 / (2 (V + rho)))`` with
    ``S = sum (X_i - mu)`` and ``V = t / 4`` is a nonnegative supermartingale; Ville's inequality
    gives ``|S| < sqrt((V + rho) ln((V + rho) / (rho alpha^2)))`` for all t (Robbins 1970; Howard et
    al. 2021, eq. 14). ``rho = normal_mixture_rho(t_opt, alpha)`` makes the boundary tightest
    relative to a fixed-n Hoeffding interval near ``t_opt`` samples (128 by default: there it is
    1.10x Hoeffding's width at alpha = .01). Running intersection over t. It uses the worst-case
    variance 1/4; :func:`probunlearn.bounds.betting_confidence_sequence` adapts to the variance.
    """
    a = check_alpha(alpha)
    rho = normal_mixture_rho(t_opt, a)
    x2, is_1d = as_scores(x)
    if not is_1d:
        raise ValueError("mean_confidence_sequence takes one 1-D sequence of scores")
    t = np.arange(1, x2.shape[1] + 1, dtype=np.float64)
    mean = np.cumsum(x2[0]) / t
    v = t / 4.0
    half = np.sqrt((v + rho) * np.log((v + rho) / (rho * a * a))) / t
    lower = np.maximum.accumulate(np.clip(mean - half, 0.0, 1.0))
    upper = np.minimum.accumulate(np.clip(mean + half, 0.0, 1.0))
    return lower, upper


def anytime_set_level_upper_bound(
    x: Any,
    alpha: float = 0.01,
    *,
    binary: bool,
    method: str = "two_sided",
    correction: str = "bonferroni",
) -> float:
    """Set-level upper bound on the average of E[X] over prompts, valid under optional stopping.

    For prompts sampled sequentially (each prompt's n chosen by looking at its samples): each
    prompt's anytime-valid upper bound at its last sample, at the level
    :func:`simultaneous_level` gives for m prompts, averaged. All m bounds hold at every t together
    with probability >= 1 - alpha, so their average bounds the average of E[X] at whatever times
    the prompts stopped. ``x``: 2-D array or list of 1-D arrays.

    ``method="two_sided"`` (the default, as before): the two-sided confidence sequences
    (``binary_confidence_sequence`` for 0/1 scores, ``mean_confidence_sequence`` otherwise) at
    alpha / m, whose upper ends are spent on a one-sided claim. ``method="one_sided"``: one-sided
    sequences, all of alpha / m on the upper side: :func:`binary_upper_confidence_sequence` for
    0/1 scores, the one-sided betting sequence (:func:`probunlearn.bounds.betting_upper_bound`,
    ``anytime=True``) otherwise. ``correction="sidak"``: 1 - (1 - alpha)^(1/m) per prompt instead
    of alpha / m (the prompts' samples are independent, and so are the events that their
    sequences cover).
    """
    if not isinstance(binary, bool):
        raise ValueError(f"binary must be True or False, got {binary!r}")
    if method not in ("two_sided", "one_sided"):
        raise ValueError(f"method must be 'two_sided' or 'one_sided', got {method!r}")
    a = check_alpha(alpha)
    rows = _prompt_rows(x, binary)
    a_each = simultaneous_level(a, len(rows), correction)
    if method == "one_sided" and binary:
        return float(np.mean(_binary_upper_final(rows, a_each)))
    if method == "one_sided":
        return float(np.mean([betting_upper_bound(r, a_each, anytime=True) for r in rows]))
    cs = binary_confidence_sequence if binary else mean_confidence_sequence
    return float(np.mean([cs(r, a_each)[1][-1] for r in rows]))


def set_leak_at_k_upper(x: Any, k: Any, alpha: float = 0.01) -> Any:
    """Upper bound on the average over prompts of leak@k = 1 - (1 - p_i)^k, at level 1 - alpha.

    leak@k is concave and increasing in p, so the average over prompts of 1 - (1 - p_i)^k is at
    most 1 - (1 - p_bar)^k (Jensen), and on the event p_bar <= U of the set-level bound
    (:func:`set_level_upper_bound`, binary) at most ``1 - (1 - U)^k``. ``x``: 0/1 scores, 2-D or a
    list of 1-D arrays. An int k gives a float, a list of k an array.
    """
    ks, scalar_k = _check_ks(k)
    u = set_level_upper_bound(x, alpha, binary=True)
    up = 1.0 if u >= 1.0 else -np.expm1(ks * math.log1p(-u))
    up = np.broadcast_to(np.asarray(up, dtype=np.float64), ks.shape).copy()
    return float(up[0]) if scalar_k else up

"""A finite-sample interval on the difference of two models over the same prompts (issue 49).

The quantity is that of :func:`probunlearn.bounds.paired_difference`,

    theta = (1/m) sum_i [T(P_i^A) - c T(P_i^B)],

the average over m fixed prompts of a statistic T (mean, population std sigma, or ED = mean + rho
sigma) of side A's output distribution minus c (``scale_b`` >= 0) times side B's, each prompt and
side seen through n scores in [0, 1]. :func:`difference_interval` covers theta with probability
>= 1 - alpha for *every* law on [0, 1] and every n (the jackknife's normal interval,
``paired_difference``, is asymptotic and misses more often than alpha on mostly-zero scores).

**Rounds.** Round r takes from every prompt the r-th sample (mean), the r-th disjoint pair of
samples (std, ED) or the r-th disjoint quadruple (the sigma^4 bound below), at the same sample
indices on both sides. Rounds are independent of each other whether the sides are independent
(two models) or share their random numbers (two settings of one model: common random numbers), and
prompts are independent of each other; within a prompt the samples are i.i.d.

**Empirical Bernstein (EB) bound on an average of kernels.** Per prompt i and round r a kernel
value Y_{r,i} whose mean given the earlier rounds, tau_{r,i}, is >= a target g_i (upper bound; <=
for a lower bound). The empirical-Bernstein supermartingale (Howard et al. 2021, from Fan, Grama
and Liu 2015's inequality; the predictable plug-in bets of Waudby-Smith and Ramdas 2023, whose
bound holds for the bet-weighted average of the conditional means): for xi = (Yhat - Y) / B >= -1
and lambda in [0, 1), ``exp(lambda xi - psi(lambda) xi^2) <= 1 + lambda xi`` with psi(l) = -ln(1 -
l) - l, so ``E exp(lambda (tau - Y) / B - psi(lambda) xi^2) <= 1`` whenever Yhat, B, lambda are
fixed by earlier rounds (predictable) and Y - Yhat <= B. The product over all steps is a
nonnegative supermartingale M; by Ville's inequality, with probability >= 1 - alpha, at every round
end t at once, ``sum_{r<=t} sum_i W_r tau_{r,i} < sum W_r Y_{r,i} + sum psi(lambda) xi^2 +
ln(1/alpha)``, where lambda_{r,i} = W_r B_{r,i}. The round's weight W_r is the same for every
prompt, so the left side is >= m sum W_r mean_i g_i: the bound on mean_i g_i is ``min_t (sum W Y
+ sum psi xi^2 + ln(1/alpha)) / (m sum W)`` (a lower bound likewise, on -Y). Predictable choices:
Yhat the kernel's value at the prompt's running estimates, B the room above Yhat (below, for a
lower bound), ``W_r = min(EB_CAP / max_i B, sqrt(2 ln(1/alpha) / (R sum_i Vhat_i)))`` (R rounds,
Vhat_i a running mean of (Y - Yhat)^2). Samples of different prompts are not identically
distributed: it is the equal weight within a round that makes the weighted average of the
conditional means the plain average over prompts.

**Bounds** (each component EB bound at alpha / k for k components: union bound):

* mean (k = 1): Y = a - c b, one sample of each side per round: tau = theta_i.
* std from above: the tangent kernel ``s/2 + h/(2 s)``, h = (x1 - x2)^2 / 2 (E h = sigma^2), for
  any s > 0 has mean >= sigma (the concave root lies under its tangents: sqrt(v) <= s/2 + v/(2 s),
  equality at v = s^2). The tangent points s_i are the prompts' std estimates from earlier rounds,
  shrunk towards their average by their noise (when the prompts look alike this is Jensen's
  ``mean sigma <= sqrt(mean sigma^2)``), floored at a level common to the prompts.
* std from below (Hoelder): for any sigma_i >= 0, ``sum sigma_i >= (sum sigma_i^2)^{3/2} / (sum
  sigma_i^4)^{1/2}`` (Hoelder with exponents 3/2 and 3 on sigma^{2/3} sigma^{4/3}; equality when
  the nonzero sigma_i are equal), and ``sigma >= 2 sigma^2`` (sigma <= 1/2). Two EB bounds: a lower
  one on mean sigma^2 (kernel h) and an upper one on mean sigma^4 (kernel: the mean over the three
  ways of splitting a quadruple into two pairs of h(pair) h(other pair), unbiased, in [0, 1/4]).
  Loose for rare atoms at small n (sigma^4 is a fourth-order quantity: at P(X = 1) = p it is
  about p^2), exact in the limit when the prompts' stds are equal.
* theta's upper bound (claim "below"): EB upper on A's kernel (std: tangent; ED: mean of the pair +
  rho tangent, minus c times B's pair mean), minus c (rho for ED) times Hoelder's lower bound on
  B's average std: k = 3 (k = 1 when c = 0 or, for ED, rho = 0). Lower bound: the mirror image
  (Hoelder on A, tangent on B).

**Levels.** With ``claim=None`` the interval ``[lower, upper]`` holds with probability >= 1 - alpha:
each end is a one-sided bound at alpha / 2 (so a one-sided claim read off the interval runs at
alpha / 2). ``claim="below"`` (theta < null) computes only the upper bound, at level alpha, with
bets tuned to alpha (``lower`` is theta's least possible value); ``"above"`` likewise.
:meth:`DifferenceInterval.p_value` is the smallest level at which the one-sided bound (same bets)
excludes null: valid because the bounds are nested in alpha (for k = 1 it is ``min(1, 1 / max_t
M_t(null))``, Ville); use it in Holm's procedure (:func:`probunlearn.bounds.holm`).
:meth:`DifferenceInterval.supports` is the one-sided test at alpha (``p_value <= alpha``).

Unequal n (between prompts or sides): every prompt and side uses its first min n samples (every
prompt must take part in every round for the weights to be equal). Pure numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from probunlearn.bounds.per_prompt import FloatArray, as_scores, check_alpha, ed_from_moments

STATISTICS = ("mean", "std", "ed")
CLAIMS = ("below", "above")
EB_CAP = 0.75
"""Largest bet lambda_{r,i}, in [0, 1) (psi(lambda) = -ln(1 - lambda) - lambda grows fast near 1)."""
_GRID = np.geomspace(0.004, 0.5, 16)  # candidate common floors of the tangent points s
_TINY = 1e-12
_BISECT = 60  # bisection steps on ln(alpha) for the p-value of a combined bound


# --------------------------------------------------------------------------------------------
# one empirical-Bernstein bound on the average over prompts of a per-round kernel
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Capital:
    """A one-sided bound's cumulative sums at every round end (last axis): ``weight`` = m sum W,
    ``centre`` = sum W sum_i Y, ``penalty`` = sum psi(lambda) xi^2; ``upper`` its direction."""

    weight: FloatArray
    centre: FloatArray
    penalty: FloatArray
    upper: bool

    def bound(self, alpha: float) -> Any:
        """The bound at level alpha: min over round ends of U_t (max of L_t), unclipped."""
        log_inv = math.log(1.0 / alpha)
        w = np.where(self.weight > 0, self.weight, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.upper:
                u = (self.centre + self.penalty + log_inv) / w
                return np.min(np.where(np.isnan(u), np.inf, u), axis=-1, initial=np.inf)
            lo = (self.centre - self.penalty - log_inv) / w
            return np.max(np.where(np.isnan(lo), -np.inf, lo), axis=-1, initial=-np.inf)

    def log_capital(self, null: float) -> Any:
        """max over round ends of ln M_t(null): the supermartingale with theta = null."""
        if self.upper:
            lm = self.weight * null - self.centre - self.penalty
        else:
            lm = self.centre - self.penalty - self.weight * null
        return np.max(lm, axis=-1, initial=0.0)


class _Running:
    """Per-prompt sums of one side's earlier rounds, shape (..., m)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.pairs = 0
        self.nx = 0
        self.sx = np.zeros(shape)  # scores
        self.sh = np.zeros(shape)  # h = (x1 - x2)^2 / 2, one per pair
        self.sh2 = np.zeros(shape)  # h^2

    def add(self, x: FloatArray) -> None:
        self.sx += x
        self.nx += 1

    def add_pair(self, x1: FloatArray, x2: FloatArray) -> None:
        self.add(x1)
        self.add(x2)
        h = 0.5 * (x1 - x2) ** 2
        self.sh += h
        self.sh2 += h * h
        self.pairs += 1

    def mean(self) -> FloatArray:
        return (0.5 + self.sx) / (1.0 + self.nx)

    def var(self) -> FloatArray:
        return self.sh / max(self.pairs, 1)

    def var_of_h(self) -> FloatArray:
        k = max(self.pairs, 1)
        return np.maximum(self.sh2 / k - (self.sh / k) ** 2, 0.0) + 1.0 / (16.0 * (k + 1))


def _tangent_points(run: _Running, coef: float, log_inv: float, rounds: int) -> FloatArray:
    """Tangent points s_i for this round, from earlier rounds only: each prompt's variance
    estimate shrunk towards the prompts' average by its noise (empirical Bayes: a prompt with few
    pairs, or prompts that do not differ, take the average: Jensen's bound), then floored at a
    level S common to the prompts, the grid value with the smallest predicted bound (tangent bias +
    the noise of a kernel whose range is 1 / (4 S))."""
    k = max(run.pairs, 1)
    v = run.var()
    noise = run.var_of_h() / k
    centre = v.mean(axis=-1, keepdims=True)
    spread = np.maximum(v.var(axis=-1, keepdims=True) - noise.mean(axis=-1, keepdims=True), 0.0)
    shrunk = centre + spread / (spread + noise) * (v - centre)
    m = v.shape[-1]
    vs = shrunk[..., None, :]  # (..., 1, m)
    s = np.maximum(np.sqrt(vs), _GRID[:, None])  # (..., G, m)
    bias = (0.5 * s + vs / (2.0 * s)).mean(axis=-1)
    var = (run.var_of_h()[..., None, :] / (4.0 * s * s)).sum(axis=-1) * coef * coef + _TINY
    w = np.minimum(EB_CAP * 4.0 * _GRID / coef, np.sqrt(2.0 * log_inv / (rounds * var)))
    cost = (log_inv / (rounds * w) + w * var / 2.0) / (m * coef)
    floor = _GRID[np.argmin(bias + cost, axis=-1)]
    return np.maximum(np.sqrt(shrunk), floor[..., None])


class _Kernel:
    """Per-round kernel values of one bound. ``value(r)`` gives (Y, Yhat, lo, hi) of round r from
    the round's samples and earlier rounds; ``update(r)`` then records the round."""

    rounds: int
    shape: tuple[int, ...]  # (..., prompts)
    prior: float  # Vhat's prior: a guess of E (Y - Yhat)^2 per prompt, one pseudo-round

    def value(self, r: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        raise NotImplementedError

    def update(self, r: int) -> None:
        raise NotImplementedError


class _MeanKernel(_Kernel):
    """Y = a_r - c b_r, one sample of each side per round (mean = theta_i exactly)."""

    def __init__(self, xa: FloatArray, xb: FloatArray, c: float) -> None:
        self.xa, self.xb, self.c = xa, xb, c
        self.rounds, self.shape = xa.shape[-1], xa.shape[:-1]
        self.ra, self.rb = _Running(xa.shape[:-1]), _Running(xb.shape[:-1])
        self.prior = 0.25 * (1.0 + c) ** 2

    def value(self, r: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        y = self.xa[..., r] - self.c * self.xb[..., r]
        yhat = self.ra.mean() - self.c * self.rb.mean()
        return y, yhat, np.full_like(y, -self.c), np.ones_like(y)

    def update(self, r: int) -> None:
        self.ra.add(self.xa[..., r])
        self.rb.add(self.xb[..., r])


class _PairKernel(_Kernel):
    """A linear combination, over the two sides, of per-pair kernels: ``"mean"`` (x1 + x2) / 2,
    ``"tangent"`` s/2 + h/(2 s) (mean >= sigma), ``"var"`` h (mean sigma^2); h = (x1 - x2)^2 / 2.
    ``terms``: (side 0 for A or 1 for B, kind, coefficient)."""

    PRIOR = {"mean": 0.25, "tangent": 0.125, "var": 0.0625}

    def __init__(
        self, x: tuple[FloatArray, FloatArray], terms: list[tuple[int, str, float]], log_inv: float
    ) -> None:
        self.x, self.terms, self.log_inv = x, terms, log_inv
        self.rounds, self.shape = x[0].shape[-1] // 2, x[0].shape[:-1]
        self.run = (_Running(x[0].shape[:-1]), _Running(x[1].shape[:-1]))
        self.prior = sum(k * k * self.PRIOR[kind] for _, kind, k in terms)
        self.points: dict[int, FloatArray] = {}

    def value(self, r: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        y = yhat = lo = hi = 0.0
        for side, kind, k in self.terms:
            run = self.run[side]
            x1, x2 = self.x[side][..., 2 * r], self.x[side][..., 2 * r + 1]
            h = 0.5 * (x1 - x2) ** 2
            if kind == "mean":
                v, p, a, b = 0.5 * (x1 + x2), run.mean(), 0.0, 1.0
            elif kind == "var":
                v, p, a, b = h, run.var(), 0.0, 0.5
            else:
                if r < 4 or r % 4 == 0 or side not in self.points:  # refreshed every 4 rounds
                    self.points[side] = _tangent_points(run, abs(k), self.log_inv, self.rounds)
                s = self.points[side]
                v, p, a, b = 0.5 * s + h / (2.0 * s), 0.5 * s + run.var() / (2.0 * s), 0.5 * s, None
                b = 0.5 * s + 0.25 / s
            y = y + k * v
            yhat = yhat + k * p
            lo = lo + k * (a if k > 0 else b)
            hi = hi + k * (b if k > 0 else a)
        shape = np.shape(y)
        return (
            np.asarray(y),
            np.broadcast_to(yhat, shape),
            np.broadcast_to(lo, shape),
            np.broadcast_to(hi, shape),
        )

    def update(self, r: int) -> None:
        for side in {t[0] for t in self.terms}:
            self.run[side].add_pair(self.x[side][..., 2 * r], self.x[side][..., 2 * r + 1])


def _fourth(q: FloatArray) -> FloatArray:
    """The mean over the 3 ways of splitting 4 samples into 2 pairs of h(pair) h(other pair):
    unbiased for sigma^4 (the pairs are independent), in [0, 1/4]."""
    a, b, c, d = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    s = (a - b) ** 2 * (c - d) ** 2 + (a - c) ** 2 * (b - d) ** 2 + (a - d) ** 2 * (b - c) ** 2
    return s / 12.0


class _SquareKernel(_Kernel):
    """Y = :func:`_fourth` of disjoint quadruples of one side's samples (mean sigma^4)."""

    def __init__(self, x: FloatArray) -> None:
        self.x = x
        self.rounds, self.shape = x.shape[-1] // 4, x.shape[:-1]
        self.sum = np.zeros(x.shape[:-1])
        self.prior = 1.0 / 256.0

    def value(self, r: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        y = _fourth(self.x[..., 4 * r : 4 * r + 4])
        return y, self.sum / max(r, 1), np.zeros_like(y), np.full_like(y, 0.25)

    def update(self, r: int) -> None:
        self.sum += _fourth(self.x[..., 4 * r : 4 * r + 4])


def _psi(lam: FloatArray) -> FloatArray:
    """psi(l) = -ln(1 - l) - l, never below its exact value: below l = 1e-3 by its series bounded
    above, l^2/2 + l^3/3 + l^4 / (4 (1 - l)) (the difference of logs loses digits there)."""
    small = lam < 1e-3
    series = lam * lam * (0.5 + lam / 3.0 + lam * lam / (4.0 * (1.0 - lam)))
    with np.errstate(invalid="ignore"):
        return np.where(small, series, -np.log1p(-lam) - lam)


def _eb(kernel: _Kernel, alpha: float, upper: bool, trace: list | None = None) -> _Capital:
    """The empirical-Bernstein sums of one bound (module docstring), vectorised over leading axes.

    Round r's weight W_r (one for every prompt) and each prompt's Yhat and room B (above Yhat for
    an upper bound, below it for a lower one) come from rounds < r; the bet is lambda = W_r B.
    ``trace``: a list to which (W_r, Yhat, B) of every round is appended (tests)."""
    log_inv = math.log(1.0 / alpha)
    rounds = kernel.rounds
    *batch, m = kernel.shape
    out = [np.empty((*batch, rounds)) for _ in range(3)]
    wsum, csum, psum = np.zeros(batch), np.zeros(batch), np.zeros(batch)
    vsum = np.zeros(kernel.shape)
    for r in range(rounds):
        y, yhat, lo, hi = kernel.value(r)
        yhat = np.clip(yhat, lo, hi)
        room = (hi - yhat) if upper else (yhat - lo)
        room = np.maximum(room, 1e-9 * (hi - lo) + _TINY)
        vhat = (kernel.prior + vsum) / (1.0 + r)
        w = np.minimum(
            EB_CAP / room.max(axis=-1), np.sqrt(2.0 * log_inv / (rounds * vhat.sum(axis=-1)))
        )
        if trace is not None:
            trace.append((w.copy(), yhat.copy(), room.copy()))
        lam = w[..., None] * room
        xi = ((yhat - y) if upper else (y - yhat)) / room
        psum = psum + (_psi(lam) * xi * xi).sum(axis=-1)
        wsum = wsum + m * w
        csum = csum + w * y.sum(axis=-1)
        out[0][..., r], out[1][..., r], out[2][..., r] = wsum, csum, psum
        vsum += (y - yhat) ** 2
        kernel.update(r)
    return _Capital(out[0], out[1], out[2], upper)


# --------------------------------------------------------------------------------------------
# the bounds on theta: one or three EB bounds, combined
# --------------------------------------------------------------------------------------------


def _holder(lower_var: Any, upper_square: Any) -> Any:
    """A lower bound on the average std from bounds on the averages of sigma^2 and sigma^4:
    ``max(2 L, L^1.5 / sqrt(U))`` (module docstring), at most 1/2."""
    lv = np.maximum(lower_var, 0.0)
    us = np.maximum(upper_square, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(us > 0, lv**1.5 / np.sqrt(us), 0.0)
    return np.minimum(np.maximum(2.0 * lv, h), 0.5)


@dataclass(frozen=True)
class _Side:
    """One direction of the interval: its k EB bounds, each spent alpha / k (union bound), and how
    they combine into a bound on theta (``upper``: an upper bound, for the claim "below")."""

    capitals: tuple[_Capital, ...]
    combine: Callable[[list[Any]], Any]
    upper: bool
    lo: float
    hi: float

    def bound(self, alpha: float) -> Any:
        k = len(self.capitals)
        return np.clip(self.combine([c.bound(alpha / k) for c in self.capitals]), self.lo, self.hi)

    def p_value(self, null: float) -> float:
        """The smallest alpha at which the bound excludes null: valid, as the bounds are nested in
        alpha. One bound: ``min(1, 1 / max_t M_t(null))`` exactly; else bisection on ln alpha
        (the upper end of the last bracket, never below the exact value)."""
        if len(self.capitals) == 1:
            return float(min(1.0, math.exp(-float(self.capitals[0].log_capital(null)))))

        def excludes(log_a: float) -> bool:
            b = float(self.bound(math.exp(log_a)))
            return b < null if self.upper else b > null

        lo, hi = -700.0, 0.0
        if not excludes(hi):
            return 1.0
        if excludes(lo):
            return math.exp(lo)
        for _ in range(_BISECT):
            mid = 0.5 * (lo + hi)
            if excludes(mid):
                hi = mid
            else:
                lo = mid
        return math.exp(hi)


def _theta_range(statistic: str, c: float, rho: float) -> tuple[float, float]:
    """theta's least and largest possible values (T in [0, t_max] on both sides; ED's largest is
    max_p p + rho sqrt(p (1 - p)), at a two-point law on {0, 1})."""
    t_max = {"mean": 1.0, "std": 0.5, "ed": 0.5 * (1.0 + math.sqrt(1.0 + rho * rho))}[statistic]
    return -c * t_max, t_max


def _side(
    xa: FloatArray, xb: FloatArray, statistic: str, c: float, rho: float, alpha: float, upper: bool
) -> _Side:
    """The bounds of one direction at level alpha (module docstring, "Bounds")."""
    lo, hi = _theta_range(statistic, c, rho)
    if statistic == "mean":
        cap = _eb(_MeanKernel(xa, xb, c), alpha, upper)
        return _Side((cap,), lambda b: b[0], upper, lo, hi)
    x = (xa, xb)
    std = statistic == "std"
    k_sd = 1.0 if std else rho  # the std's coefficient in T
    # the side whose std is bounded from below (Hoelder) and the one bounded from above (tangent)
    low_side = 1 if upper else 0
    low_coef = (c if upper else 1.0) * k_sd  # its weight in theta (with a minus sign if B)
    terms: list[tuple[int, str, float]] = []
    if not std:
        terms += [(0, "mean", 1.0)] + ([(1, "mean", -c)] if c > 0 else [])
    tan_side, tan_coef = (0, k_sd) if upper else (1, -c * k_sd)
    if tan_coef != 0:
        terms.append((tan_side, "tangent", tan_coef))
    k = (1 if terms else 0) + (2 if low_coef > 0 else 0)
    level = alpha / max(k, 1)
    caps: list[_Capital] = []
    if terms:
        caps.append(_eb(_PairKernel(x, terms, math.log(1.0 / level)), level, upper))
    if low_coef > 0:
        caps.append(
            _eb(_PairKernel(x, [(low_side, "var", 1.0)], math.log(1.0 / level)), level, False)
        )
        caps.append(_eb(_SquareKernel(x[low_side]), level, True))
    sign = -1.0 if upper else 1.0  # B's std lowers theta's upper bound; A's raises the lower one
    n_lin = 1 if terms else 0

    def combine(b: list[Any]) -> Any:
        out = b[0] if n_lin else 0.0
        if low_coef > 0:
            out = out + sign * low_coef * _holder(b[n_lin], b[n_lin + 1])
        return out

    return _Side(tuple(caps), combine, upper, lo, hi)


# --------------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DifferenceInterval:
    """A finite-sample interval on theta (module docstring) and its one-sided tests.

    ``lower``, ``upper``: with ``claim=None`` a two-sided interval at 1 - alpha, each end a
    one-sided bound at alpha / 2; with ``claim="below"`` the upper bound at alpha and ``lower``
    theta's least possible value (``"above"``: the reverse). ``estimate``: the plug-in difference
    (what a table reports). ``n_used``: samples per prompt and side that entered the bounds."""

    statistic: str
    estimate: float
    lower: float
    upper: float
    alpha: float
    claim: str | None
    n_used: int
    prompts: int
    sides: dict[str, _Side] = field(repr=False, compare=False)

    def _get(self, claim: str) -> _Side:
        if claim not in CLAIMS:
            raise ValueError(f"claim must be 'below' or 'above', got {claim!r}")
        if claim not in self.sides:
            raise ValueError(
                f"this interval was computed for claim={self.claim!r}: it has no {claim!r} side"
            )
        return self.sides[claim]

    def p_value(self, claim: str, null: float = 0.0) -> float:
        """p-value of ``theta < null`` (``"below"``) or ``theta > null`` (``"above"``), valid at
        every level: the smallest alpha at which the one-sided bound (these bets) excludes null.
        For Holm's procedure (:func:`probunlearn.bounds.holm`)."""
        return self._get(claim).p_value(float(null))

    def supports(self, claim: str, null: float = 0.0) -> bool:
        """The one-sided test of the claim at level alpha: ``p_value(claim, null) <= alpha``.
        With ``claim=None`` the interval spends alpha / 2 per side, so it can contain null while
        this test, at alpha, rejects."""
        return self.p_value(claim, null) <= self.alpha

    def bound(self, claim: str, alpha: float) -> float:
        """The one-sided bound for ``claim`` at level ``alpha`` with these bets: the upper bound
        for ``"below"``, the lower one for ``"above"``; smaller alpha, wider bound."""
        return float(self._get(claim).bound(check_alpha(alpha)))


def _check(statistic: Any, scale_b: Any, rho: Any, claim: Any) -> tuple[float, float]:
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if claim is not None and claim not in CLAIMS:
        raise ValueError(f"claim must be None, 'below' or 'above', got {claim!r}")
    out = []
    for name, v in (("scale_b", scale_b), ("rho", rho)):
        ok = not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))
        if not ok or not math.isfinite(float(v)) or float(v) < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        out.append(float(v))
    return out[0], out[1]


def _rows(x: Any, name: str) -> list[FloatArray]:
    if isinstance(x, np.ndarray) or not isinstance(x, (list, tuple)):
        a2, is_1d = as_scores(x, name)
        if is_1d:
            raise ValueError(
                f"{name} must be 2-D (prompts x samples) or a list of 1-D arrays, got one 1-D array"
            )
        return list(a2)
    if not x:
        raise ValueError(f"{name} are empty (no prompts)")
    return [
        as_scores(np.asarray(r, dtype=np.float64).reshape(-1), f"{name} row {i}")[0][0]
        for i, r in enumerate(x)
    ]


def _plug_in(rows: list[FloatArray], statistic: str, rho: float) -> FloatArray:
    mean = np.array([r.mean() for r in rows])
    std = np.array([r.std() for r in rows])
    return {"mean": mean, "std": std, "ed": ed_from_moments(mean, std, rho)}[statistic]


def _need(statistic: str) -> int:
    return 1 if statistic == "mean" else 2


def difference_bounds(
    a: Any,
    b: Any,
    statistic: str = "mean",
    alpha: float = 0.01,
    *,
    scale_b: float = 1.0,
    rho: float = 2.0,
    claim: str | None = None,
) -> tuple[FloatArray, FloatArray]:
    """The bounds of :func:`difference_interval`, vectorised over leading axes (for simulations).

    ``a``, ``b``: arrays of one shape (..., prompts, samples), scores in [0, 1]. Returns
    ``(lower, upper)``, arrays of the leading shape; with a claim the other end is theta's least
    or largest possible value."""
    c, r = _check(statistic, scale_b, rho, claim)
    al = check_alpha(alpha)
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape or xa.ndim < 2:
        raise ValueError(
            f"a and b must have one shape (..., prompts, samples), got {xa.shape} and {xb.shape}"
        )
    for name, x in (("a", xa), ("b", xb)):
        if not ((x >= 0.0).all() and (x <= 1.0).all()):
            raise ValueError(f"{name} must lie in [0, 1] (no NaN)")
    if xa.shape[-1] < _need(statistic):
        raise ValueError(f"{statistic} needs at least {_need(statistic)} samples per prompt")
    lo, hi = _theta_range(statistic, c, r)
    level = al if claim else al / 2.0
    lower = np.full(xa.shape[:-2], lo)
    upper = np.full(xa.shape[:-2], hi)
    if claim in (None, "below"):
        upper = np.asarray(_side(xa, xb, statistic, c, r, level, True).bound(level))
    if claim in (None, "above"):
        lower = np.asarray(_side(xa, xb, statistic, c, r, level, False).bound(level))
    return lower, upper


def difference_interval(
    a: Any,
    b: Any,
    statistic: str = "mean",
    alpha: float = 0.01,
    *,
    scale_b: float = 1.0,
    rho: float = 2.0,
    claim: str | None = None,
) -> DifferenceInterval:
    """Finite-sample interval on the average over prompts of ``T(A) - scale_b T(B)``.

    ``a``, ``b``: scores in [0, 1] of the same prompts in the same order, each a 2-D array
    (prompts x samples) or a list of 1-D arrays (one per prompt); every prompt and side uses its
    first min n samples (at least 1 for the mean, 2 for std and ED; 4 or more for a useful lower
    bound on a std). ``statistic``: ``"mean"``, ``"std"`` (population std) or ``"ed"`` (mean +
    rho std); ``scale_b`` >= 0. ``claim``: None (two-sided, alpha / 2 per side), ``"below"``
    (only the upper bound, at alpha, for the claim theta < null) or ``"above"`` (the lower bound).
    Coverage >= 1 - alpha for every law on [0, 1] and every n, whether the sides are independent
    or share their random numbers (module docstring). One-sided verdict at alpha:
    ``.supports(claim, null)``; a p-value for Holm's procedure: ``.p_value(claim, null)``.
    """
    c, r = _check(statistic, scale_b, rho, claim)
    al = check_alpha(alpha)
    ra, rb = _rows(a, "a"), _rows(b, "b")
    if len(ra) != len(rb):
        raise ValueError(f"a has {len(ra)} prompts and b has {len(rb)}: pair the same prompts")
    n = min(min(x.size for x in ra), min(x.size for x in rb))
    if n < _need(statistic):
        raise ValueError(
            f"{statistic} needs at least {_need(statistic)} samples per prompt and side, got {n}"
        )
    xa, xb = np.stack([x[:n] for x in ra]), np.stack([x[:n] for x in rb])
    lo, hi = _theta_range(statistic, c, r)
    level = al if claim else al / 2.0
    sides: dict[str, _Side] = {}
    lower, upper = lo, hi
    if claim in (None, "below"):
        sides["below"] = _side(xa, xb, statistic, c, r, level, True)
        upper = float(sides["below"].bound(level))
    if claim in (None, "above"):
        sides["above"] = _side(xa, xb, statistic, c, r, level, False)
        lower = float(sides["above"].bound(level))
    estimate = float(np.mean(_plug_in(ra, statistic, r) - c * _plug_in(rb, statistic, r)))
    used = n if statistic == "mean" else n - n % 2
    return DifferenceInterval(statistic, estimate, lower, upper, al, claim, used, len(ra), sides)

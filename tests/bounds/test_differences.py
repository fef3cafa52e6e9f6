"""Intervals on the difference of two models over the same prompts, and Holm's procedure (issue 42).

Coverage by fixed-seed simulation at alpha = 0.1: per-prompt laws with atoms at 0 and 1 and a
uniform middle (mostly zero), independent sides (different models) and common random numbers (one
model's settings), many prompts and one, equal and unequal n."""

from __future__ import annotations

import math

import numpy as np
import pytest

from probunlearn import bounds

ALPHA = 0.1


def slack(reps: int) -> float:
    return ALPHA + 3.0 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


def law(rng, m: int, zero: tuple[float, float]):
    a0 = rng.uniform(*zero, size=m)
    a1 = rng.uniform(0.0, 1.0 - a0) * 0.5
    return a0, a1


def draw(u, mid, a0, a1):
    return np.where(u < a0[:, None], 0.0, np.where(u < (a0 + a1)[:, None], 1.0, mid))


def truth(a0, a1, statistic: str, rho: float = 2.0):
    middle = 1.0 - a0 - a1  # uniform(0, 1) there
    mean = a1 + middle / 2
    std = np.sqrt(a1 + middle / 3 - mean**2)
    return {"mean": mean, "std": std, "ed": mean + rho * std}[statistic]


CASES = [  # (prompts, n of A, n of B, share at zero, common random numbers)
    (40, 128, 128, (0.5, 0.95), False),
    (40, 128, 128, (0.5, 0.95), True),
    (20, 96, 64, (0.8, 0.97), False),
    (1, 384, 384, (0.6, 0.9), True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"m{c[0]}-n{c[1]}/{c[2]}-crn{c[4]}")
@pytest.mark.parametrize("statistic", ["mean", "std", "ed"])
def test_paired_difference_covers(case, statistic):
    m, na, nb, zero, crn = case
    rng = np.random.default_rng(10 * CASES.index(case) + ["mean", "std", "ed"].index(statistic))
    la, lb = law(rng, m, zero), law(rng, m, zero)
    theta = float(np.mean(truth(*la, statistic) - 0.5 * truth(*lb, statistic)))
    reps, misses, widths = 250, 0, []
    for _ in range(reps):
        u, mid = rng.random((m, na)), rng.random((m, na))
        xa = draw(u, mid, *la)
        if crn:
            xb = draw(u[:, :nb], mid[:, :nb], *lb)
        else:
            xb = draw(rng.random((m, nb)), rng.random((m, nb)), *lb)
        d = bounds.paired_difference(xa, xb, statistic, ALPHA, scale_b=0.5)
        misses += not (d.lower <= theta <= d.upper)
        widths.append(d.upper - d.lower)
    assert misses / reps <= slack(reps)
    assert np.mean(widths) < (0.2 if m > 1 else 0.45)  # informative


def test_common_random_numbers_sharpen_the_difference_of_two_settings():
    rng = np.random.default_rng(3)
    a0, a1 = law(rng, 30, (0.6, 0.9))
    u, mid = rng.random((30, 128)), rng.random((30, 128))
    x1 = draw(u, mid, a0, a1)
    x2 = draw(u, mid, a0 * 0.95, a1)  # a slightly different setting, same random numbers
    x2_indep = draw(rng.random((30, 128)), rng.random((30, 128)), a0 * 0.95, a1)
    same = bounds.paired_difference(x2, x1, "mean", 0.05)
    indep = bounds.paired_difference(x2_indep, x1, "mean", 0.05)
    assert same.se < 0.5 * indep.se


def test_p_value_agrees_with_the_interval_and_lists_of_prompts_work():
    rng = np.random.default_rng(4)
    xa = (rng.random((20, 64)) < 0.3).astype(float)
    xb = (rng.random((20, 64)) < 0.4).astype(float)
    d = bounds.paired_difference(xa, xb, "mean", 0.05)
    assert d.lower < d.estimate < d.upper
    for null in (d.lower - 0.01, d.upper + 0.01, 0.5 * (d.lower + d.upper)):
        assert d.supports("below", null) == (d.p_value("below", null) < 0.05)
        assert d.supports("above", null) == (d.p_value("above", null) < 0.05)
    as_list = bounds.paired_difference(list(xa), list(xb), "mean", 0.05)
    assert as_list == d
    with pytest.raises(ValueError, match="pair the same prompts"):
        bounds.paired_difference(xa, xb[:3])
    with pytest.raises(ValueError, match="statistic must be"):
        bounds.paired_difference(xa, xb, "median")
    with pytest.raises(ValueError, match="claim must be"):
        d.p_value("equal")


def test_holm_controls_the_family_wise_error_and_steps_down():
    p = np.array([0.001, 0.04, 0.012, 0.3, np.nan])
    # sorted: .001 <= .05/4, .012 <= .05/3, .04 > .05/2: stop
    assert bounds.holm(p, 0.05).tolist() == [True, False, True, False, False]
    rng = np.random.default_rng(5)
    nulls = rng.random((4000, 10))  # ten true null hypotheses, uniform p-values
    rejected_any = np.array([bounds.holm(row, ALPHA).any() for row in nulls])
    assert rejected_any.mean() <= slack(4000)
    assert bounds.holm([], 0.05).size == 0


# ---- issue 49: a finite-sample interval (bounds.difference_interval) ----------------------------

HARD = {  # per prompt an atom p0 at 0, p1 at 1 and a uniform middle; (A, B, c, common randoms)
    "zero-rare": (lambda p: (np.ones_like(p), np.zeros_like(p)), 0.5, False),
    "rare-rare": (lambda p: (1.0 - p[::-1], p[::-1]), 1.0, False),
    "atoms-crn": (None, 1.0, True),
}


def hard_case(name: str, m: int, rng):
    """(law of A, law of B, c, crn): B rare atoms P(X = 1) ~ U(.01, .05), or atoms and a middle."""
    law_a, c, crn = HARD[name]
    p = rng.uniform(0.01, 0.05, m)
    if law_a is None:  # two settings of one model: B's share at 0 is A's times .95
        a0 = rng.uniform(0.5, 0.95, m)
        a1 = rng.uniform(0.0, 1.0 - a0) * 0.5
        return (a0, a1), (a0 * 0.95, a1), c, crn
    return law_a(p), (1.0 - p, p), c, crn


def hard_draws(la, lb, crn, reps, m, n, rng):
    u, mid = rng.random((reps, m, n)), rng.random((reps, m, n))
    xa = draw(u, mid, *la)
    xb = draw(u, mid, *lb) if crn else draw(rng.random((reps, m, n)), rng.random((reps, m, n)), *lb)
    return xa, xb


def truth_law(law, statistic):
    p0, p1 = law
    return truth(p0, p1, statistic)


@pytest.mark.parametrize(
    "name, m, n", [("zero-rare", 40, 64), ("rare-rare", 1, 128), ("atoms-crn", 40, 32)]
)
@pytest.mark.parametrize("statistic", ["mean", "std", "ed"])
def test_difference_interval_covers_mostly_zero_laws(name, m, n, statistic):
    # two-sided and each one-sided bound: miss rate <= alpha with 3 binomial sd of slack at 300
    # repetitions (.152 at alpha = .1: a miss rate of 2 alpha would fail)
    rng = np.random.default_rng(49 + 7 * list(HARD).index(name) + len(statistic))
    la, lb, c, crn = hard_case(name, m, rng)
    theta = float(np.mean(truth_law(la, statistic) - c * truth_law(lb, statistic)))
    reps = 300
    xa, xb = hard_draws(la, lb, crn, reps, m, n, rng)
    lo, up = bounds.difference_bounds(xa, xb, statistic, ALPHA, scale_b=c)
    assert ((lo > theta) | (up < theta)).mean() <= slack(reps)
    _, up1 = bounds.difference_bounds(xa, xb, statistic, ALPHA, scale_b=c, claim="below")
    lo1, _ = bounds.difference_bounds(xa, xb, statistic, ALPHA, scale_b=c, claim="above")
    assert (up1 < theta).mean() <= slack(reps) and (lo1 > theta).mean() <= slack(reps)
    assert up1.mean() <= up.mean() and lo1.mean() >= lo.mean()  # at alpha, not alpha / 2


def test_the_jackknife_misses_where_the_new_interval_holds():
    # A all zero, B rare atoms, 40 prompts x 16 samples: the jackknife's std interval misses
    # about half the time at alpha = .1 (a prompt without a nonzero sample has variance 0)
    rng = np.random.default_rng(50)
    la, lb, c, crn = hard_case("zero-rare", 40, rng)
    theta = float(np.mean(truth_law(la, "std") - c * truth_law(lb, "std")))
    xa, xb = hard_draws(la, lb, crn, 200, 40, 16, rng)
    jk = [
        bounds.paired_difference(a, b, "std", ALPHA, scale_b=c) for a, b in zip(xa, xb, strict=True)
    ]
    assert np.mean([not (d.lower <= theta <= d.upper) for d in jk]) > 2 * ALPHA
    lo, up = bounds.difference_bounds(xa, xb, "std", ALPHA, scale_b=c)
    assert ((lo > theta) | (up < theta)).mean() <= slack(200)


def test_difference_interval_is_informative_where_the_data_are():
    # many prompts and samples: narrow for the mean, and "A's std below half of B's" is shown
    # when A is all zero and B has a std of about .3; not shown when B is rare atoms at n = 16
    rng = np.random.default_rng(51)
    xb = (rng.random((40, 384)) < 0.15).astype(float)
    xa = np.zeros((40, 384))
    d = bounds.difference_interval(xa, xb, "mean", 0.01)
    assert d.upper - d.lower < 0.03 and d.lower <= -0.15 + 0.03
    s = bounds.difference_interval(xa, xb, "std", 0.01, scale_b=0.5, claim="below")
    assert s.supports("below") and s.upper < -0.05
    few = bounds.difference_interval(xa[:, :16], (xb[:, :16] * (rng.random((40, 16)) < 0.2)), "std",
                                     0.01, scale_b=0.5, claim="below")  # fmt: skip
    assert not few.supports("below")  # honest: not shown


def test_p_value_is_the_smallest_level_at_which_the_bound_excludes_the_null():
    rng = np.random.default_rng(52)
    xa = (rng.random((20, 64)) < 0.05).astype(float)
    xb = rng.random((20, 64)) * (rng.random((20, 64)) < 0.6)
    for statistic in ("mean", "std", "ed"):
        d = bounds.difference_interval(xa, xb, statistic, 0.05, scale_b=0.5)
        for claim in ("below", "above"):
            for a in (0.01, 0.05, 0.2):
                b = d.bound(claim, a)
                for null in (b - 0.02, b + 0.02):
                    excluded = b < null if claim == "below" else b > null
                    assert (d.p_value(claim, null) <= a) == excluded, (statistic, claim, a, null)
            p = d.p_value(claim, d.estimate)
            assert 0.0 < p <= 1.0 and d.supports(claim, d.estimate) == (p <= 0.05)
        assert d.bound("below", 0.025) == pytest.approx(d.upper)  # the interval's ends: alpha / 2
        assert d.bound("above", 0.025) == pytest.approx(d.lower)
        assert d.bound("below", 0.01) >= d.bound("below", 0.05)  # nested in alpha
    one = bounds.difference_interval(xa, xb, "std", 0.05, claim="below")
    assert one.lower == -0.5 and one.upper < 0.5
    with pytest.raises(ValueError, match="no 'above' side"):
        one.p_value("above")
    assert bounds.holm([one.p_value("below", 0.3), 0.5], 0.05).tolist() == [True, False]


def test_difference_interval_inputs():
    rng = np.random.default_rng(53)
    xa, xb = rng.random((5, 12)), rng.random((5, 12))
    d = bounds.difference_interval(xa, xb, "ed", 0.1, scale_b=0.5)
    jk = bounds.paired_difference(xa, xb, "ed", 0.1, scale_b=0.5)
    assert d.estimate == pytest.approx(jk.estimate) and d.n_used == 12 and d.prompts == 5
    as_list = bounds.difference_interval(list(xa), list(xb), "ed", 0.1, scale_b=0.5)
    assert (as_list.lower, as_list.upper) == (d.lower, d.upper)
    ragged = bounds.difference_interval([xa[0], xa[1, :9]], [xb[0, :11], xb[1]], "std", 0.1)
    assert ragged.n_used == 8  # the first min n = 9 samples, in pairs
    assert bounds.difference_interval(xa[:, :1], xb[:, :1], "mean").n_used == 1
    with pytest.raises(ValueError, match="pair the same prompts"):
        bounds.difference_interval(xa, xb[:3])
    with pytest.raises(ValueError, match="std needs at least 2 samples"):
        bounds.difference_interval(xa[:, :1], xb, "std")
    with pytest.raises(ValueError, match="scale_b must be a finite number >= 0"):
        bounds.difference_interval(xa, xb, scale_b=-1.0)
    with pytest.raises(ValueError, match="claim must be"):
        bounds.difference_interval(xa, xb, claim="equal")
    with pytest.raises(ValueError, match="statistic must be"):
        bounds.difference_bounds(xa, xb, "median")
    with pytest.raises(ValueError, match=r"a row 1 must lie in \[0, 1\]"):
        bounds.difference_interval([xa[0], xa[1] + 1.0], list(xb))


def test_difference_interval_bets_are_predictable():
    # round r's weight, predictions and room depend on rounds < r only: changing round r's samples
    # leaves them (and everything before) unchanged, and changes what comes after
    from probunlearn.bounds.eb_difference import _eb, _PairKernel, _SquareKernel

    rng = np.random.default_rng(54)
    xa = (rng.random((6, 40)) < 0.3).astype(float)
    xb = rng.random((6, 40))
    r = 7
    ya, yb = xa.copy(), xb.copy()
    ya[:, 2 * r : 2 * r + 2] = 1.0 - ya[:, 2 * r : 2 * r + 2]
    yb[:, 2 * r : 2 * r + 2] = 1.0 - yb[:, 2 * r : 2 * r + 2]
    terms = [(0, "mean", 1.0), (0, "tangent", 2.0), (1, "mean", -0.5), (1, "var", -1.0)]
    for upper in (True, False):
        t0, t1 = [], []
        _eb(_PairKernel((xa, xb), terms, 3.0), 0.05, upper, t0)
        _eb(_PairKernel((ya, yb), terms, 3.0), 0.05, upper, t1)
        for k in range(r + 1):
            for u, v in zip(t0[k], t1[k], strict=True):
                np.testing.assert_array_equal(u, v)
        assert any(not np.array_equal(u, v) for u, v in zip(t0[r + 1], t1[r + 1], strict=True))
    t0, t1 = [], []
    za = xa.copy()
    za[:, 4 * 3 : 4 * 3 + 4] = 1.0 - za[:, 4 * 3 : 4 * 3 + 4]
    _eb(_SquareKernel(xa), 0.05, True, t0)
    _eb(_SquareKernel(za), 0.05, True, t1)
    for k in range(4):
        for u, v in zip(t0[k], t1[k], strict=True):
            np.testing.assert_array_equal(u, v)


def test_the_inequalities_behind_the_interval():
    from itertools import product

    from probunlearn.bounds.eb_difference import _fourth, _holder

    # Fan, Grama and Liu: exp(l xi - psi(l) xi^2) <= 1 + l xi for xi >= -1, l in [0, 1)
    lam = np.linspace(0.0, 0.999, 300)[:, None]
    xi = np.r_[np.linspace(-1.0, 3.0, 400), np.linspace(3.0, 60.0, 200)][None, :]
    psi = -np.log1p(-lam) - lam
    assert (np.exp(lam * xi - psi * xi**2) <= 1.0 + lam * xi + 1e-12).all()
    # Hoelder and sigma >= 2 sigma^2, for stds in [0, 1/2]; the tangents of the root
    rng = np.random.default_rng(55)
    sd = rng.uniform(0.0, 0.5, (500, 7)) * (rng.random((500, 7)) < 0.6)
    v = (sd**2).mean(axis=1)
    assert (_holder(v, (sd**4).mean(axis=1)) <= sd.mean(axis=1) + 1e-12).all()
    s = rng.uniform(0.01, 0.5, 500)
    assert (np.sqrt(v) <= s / 2 + v / (2 * s) + 1e-12).all()
    # the sigma^4 kernel is unbiased: exact expectation over a three-point law
    vals, prob = np.array([0.0, 0.3, 1.0]), np.array([0.5, 0.2, 0.3])
    mean = prob @ vals
    var = prob @ vals**2 - mean**2
    expect = sum(
        np.prod(prob[list(i)]) * _fourth(vals[list(i)][None, :])[0]
        for i in product(range(3), repeat=4)
    )
    assert expect == pytest.approx(var**2, rel=1e-12)

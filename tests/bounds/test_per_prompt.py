"""Exact values, hand cases, input validation and vectorisation of probunlearn.bounds."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from scipy import stats

from probunlearn import bounds as B
from probunlearn.bounds import per_prompt as BP

ALPHAS = [0.01, 0.05, 0.1, 0.5]


# ------------------------------------------------------------------------------------------
# M_bin
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize(
    "s,n", [(0, 1), (1, 1), (0, 10), (3, 10), (9, 10), (10, 10), (17, 64), (500, 1024)]
)
def test_m_bin_matches_beta_quantile(s: int, n: int, alpha: float) -> None:
    x = np.r_[np.ones(s), np.zeros(n - s)]
    expected = 1.0 if s == n else stats.beta.ppf(1 - alpha, s + 1, n - s)
    assert B.binary_leakage_bound(x, alpha) == pytest.approx(expected, rel=1e-10, abs=1e-14)


@pytest.mark.parametrize("n", [1, 2, 10, 1024])
def test_m_bin_all_zeros_and_all_ones(n: int) -> None:
    assert B.binary_leakage_bound(np.zeros(n), 0.01) == pytest.approx(1 - 0.01 ** (1 / n))
    assert B.binary_leakage_bound(np.ones(n), 0.01) == 1.0
    assert B.binary_leakage_bound([True] * n) == 1.0


def test_m_bin_is_monotone_in_successes() -> None:
    n = 50
    x = np.tril(np.ones((n + 1, n)), -1)  # row s has s ones
    m = B.binary_leakage_bound(x, 0.05)
    assert np.all(np.diff(m) > 0) and m[-1] == 1.0
    assert np.all(m >= x.mean(axis=1))


# ------------------------------------------------------------------------------------------
# M_gen
# ------------------------------------------------------------------------------------------


def test_m_gen_hand_values() -> None:
    x = [0.0, 0.25, 0.5, 1.0]
    eps = math.sqrt(math.log(1 / 0.5) / 8)
    got = B.general_leakage_bound(x, [0.0, 0.25, 0.3, 0.5, 0.99, 1.0], alpha=0.5)
    want = [min(1.0, 0.75 + eps), 0.5 + eps, 0.5 + eps, 0.25 + eps, 0.25 + eps, eps]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert B.general_leakage_bound(x, 0.5, alpha=0.5) == pytest.approx(0.25 + eps)
    assert isinstance(B.general_leakage_bound(x, 0.5, alpha=0.5), float)


def test_m_gen_shapes() -> None:
    x = np.random.default_rng(0).random((5, 20))
    assert B.general_leakage_bound(x, [0.2, 0.7]).shape == (5, 2)
    assert B.general_leakage_bound(x, 0.2).shape == (5,)
    assert B.general_leakage_bound(x[0], [0.2, 0.7]).shape == (2,)


@pytest.mark.parametrize("value", [0.1, 0.3, 0.5, 0.7, 1 / 3, 0.29, 0.57])
def test_scores_on_grid_points_count_at_the_point(value: float) -> None:
    """F_n(t) counts X <= t: a score equal to a threshold / grid point is not 'above' it."""
    n = 32
    x = np.full(n, value)
    eps = math.sqrt(math.log(100) / (2 * n))
    # few thresholds (direct comparison), many thresholds (binned search), summarize (grid)
    assert B.general_leakage_bound(x, value) == pytest.approx(eps)
    many = B.general_leakage_bound(x, np.r_[value, np.linspace(0, 1, 20)])
    assert many[0] == pytest.approx(eps)
    s = B.summarize(x, thresholds=[value, 0.95])
    assert s[B.threshold_key(value)] == pytest.approx(eps)
    # the grid: F_n(tau_i) for a constant x jumps exactly at tau_i == x
    for k in (3, 7, 10, 100):
        counts = BP._grid_counts(x[None, :], k)[0]
        taus = B.grid(k)
        np.testing.assert_array_equal(counts, np.where(x[0] <= taus, n, 0))


def test_grid_counts_match_direct_comparison() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((40, 200))
    x[:, :60] = rng.integers(0, 11, (40, 60)) / 10  # ROUGE-like, many exact grid values
    x[:, 60:80] = rng.integers(0, 101, (40, 20)) / 100
    x[:, 80:90] = np.nextafter(rng.integers(0, 101, (40, 10)) / 100, 1.0)
    x[:, 90:100] = np.nextafter(rng.integers(1, 101, (40, 10)) / 100, 0.0)
    x[:, 100:105] = 0.0
    x[:, 105:110] = 1.0
    for k in (1, 2, 3, 10, 64, 100, 1000):
        taus = B.grid(k)
        want = np.stack([(x <= t).sum(axis=1) for t in taus], axis=1)
        np.testing.assert_array_equal(BP._grid_counts(x, k), want)
    pts = np.r_[np.linspace(0, 1, 13), 0.3, 0.55]
    want = np.stack([(x <= t).sum(axis=1) for t in pts], axis=1)
    np.testing.assert_array_equal(BP.counts_le(x, pts), want)
    np.testing.assert_array_equal(BP.counts_le(x, pts[:4]), want[:, :4])
    many = np.r_[pts, rng.random(40), pts[:5]]  # > 32 points (binary search), duplicates
    want = np.stack([(x <= t).sum(axis=1) for t in many], axis=1)
    np.testing.assert_array_equal(BP.counts_le(x, many), want)


# ------------------------------------------------------------------------------------------
# expectation bounds
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bins", [1, 10, 100])
def test_expectation_bounds_all_zeros_all_ones(bins: int) -> None:
    n, alpha = 400, 0.05
    e2 = math.sqrt(math.log(2 / alpha) / (2 * n))
    e1 = math.sqrt(math.log(1 / alpha) / (2 * n))
    lo, hi = B.expectation_bounds(np.zeros(n), alpha, bins)
    assert lo == 0.0 and hi == pytest.approx(e2)
    assert B.expectation_upper_bound(np.zeros(n), alpha, bins) == pytest.approx(e1)
    lo, hi = B.expectation_bounds(np.ones(n), alpha, bins)
    assert hi == 1.0
    assert lo == pytest.approx(1 - (bins - 1) / bins * e2 - 1 / bins)
    assert B.expectation_upper_bound(np.ones(n), alpha, bins) == 1.0


def test_expectation_bounds_single_sample_is_vacuous() -> None:
    # n = 1: eps = sqrt(ln(200) / 2) > 1, so the band is [0, 1] everywhere.
    assert B.expectation_bounds([0.5]) == (0.0, 1.0)
    assert B.expectation_upper_bound([0.0]) == 1.0
    assert B.std_upper_bound([0.3]) == 0.5


def test_expectation_bounds_hand_value() -> None:
    # x = (0, 0.5, 0.5, 1), K = 2, alpha = 0.5 -> eps2 = sqrt(ln 4 / 8)
    e = math.sqrt(math.log(4) / 8)
    lo, hi = B.expectation_bounds([0.0, 0.5, 0.5, 1.0], alpha=0.5, bins=2)
    # F_n(0) = 1/4, F_n(0.5) = 3/4, F_n(1) = 1
    assert hi == pytest.approx(1 - 0.5 * (max(0, 0.25 - e) + (0.75 - e)))
    assert lo == pytest.approx(1 - 0.5 * (min(1, 0.75 + e) + 1))


def test_expectation_interval_contains_sample_mean() -> None:
    x = np.random.default_rng(1).beta(0.5, 0.7, (200, 50))
    lo, hi = B.expectation_bounds(x, 0.05, 37)
    m = x.mean(axis=1)
    assert np.all(lo <= m) and np.all(m <= hi)
    assert np.all(B.expectation_upper_bound(x, 0.05, 37) <= hi)


# ------------------------------------------------------------------------------------------
# M_sigma
# ------------------------------------------------------------------------------------------


def _std_reference(x: np.ndarray, alpha: float, bins: int) -> float:
    """Loop implementation of M_sigma, written from the definition (one row)."""
    n = len(x)
    eps = math.sqrt(math.log(2 / alpha) / (2 * n))
    taus = [i / bins for i in range(bins + 1)]
    f = [sum(v <= t for v in x) / n for t in taus]
    f_lo = [max(0.0, v - eps) for v in f]
    f_hi = [min(1.0, v + eps) for v in f]
    mu_hi = 1 - sum((taus[i + 1] - taus[i]) * f_lo[i] for i in range(bins))
    mu_lo = 1 - sum((taus[i] - taus[i - 1]) * f_hi[i] for i in range(1, bins + 1))
    eta = [
        max((kap - a) ** 2 for kap in (taus[i], taus[i + 1]) for a in (mu_lo, mu_hi))
        for i in range(bins)
    ]
    # sum_i eta_i (G_{i+1} - G_i) with G_0 := F(0^-) = 0 and G_bins = F(1) = 1: coefficients
    coef = [0.0] * (bins + 1)
    for i in range(bins):
        coef[i + 1] += eta[i]
        if i > 0:
            coef[i] -= eta[i]
    var = coef[bins] * 1.0
    for i in range(1, bins):
        var += coef[i] * (f_hi[i] if coef[i] > 0 else f_lo[i])
    bd = max(a * (1 - a) for a in (mu_lo, mu_hi, min(max(0.5, mu_lo), mu_hi)))
    return math.sqrt(min(max(0.0, min(var, bd)), 0.25))


@pytest.mark.parametrize("bins", [1, 2, 5, 10, 100])
@pytest.mark.parametrize("alpha", [0.01, 0.1, 0.5])
def test_std_bound_matches_loop_reference(bins: int, alpha: float) -> None:
    rng = np.random.default_rng(bins)
    rows = [
        np.zeros(30),
        np.ones(30),
        (rng.random(30) < 0.5).astype(float),
        (rng.random(30) < 0.05).astype(float),
        rng.integers(0, 11, 30) / 10,
        rng.beta(2, 5, 30),
        np.where(rng.random(30) < 0.6, 0.0, rng.random(30)),
        np.full(30, 0.5),
    ]
    x = np.stack(rows)
    got = B.std_upper_bound(x, alpha, bins)
    want = [_std_reference(r, alpha, bins) for r in rows]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_std_bound_constant_scores() -> None:
    # n large, all scores 0: mean interval [0, eps2], so the std bound is small but positive.
    n, alpha = 4096, 0.01
    e2 = math.sqrt(math.log(2 / alpha) / (2 * n))
    m = B.std_upper_bound(np.zeros(n), alpha)
    assert 0 < m <= math.sqrt(e2 * (1 - e2)) + 1e-12
    # all ones: the grid adds 1/K to the width of the mean interval, [1 - 0.99 eps2 - 0.01, 1]
    mu_lo = 1 - 0.99 * e2 - 0.01
    assert 0 < B.std_upper_bound(np.ones(n), alpha) <= math.sqrt(mu_lo * (1 - mu_lo)) + 1e-12


def test_std_bound_keeps_atom_at_zero() -> None:
    """Bernoulli(0.5): the reference code drops the mass at X = 0 and reports < 0.5."""
    x = np.r_[np.zeros(512), np.ones(512)]
    assert B.std_upper_bound(x, 0.01) == 0.5
    # the bin bound alone (without the Bhatia-Davis cap) is also above 1/4
    cdf = BP._grid_counts(x[None, :], 100) / x.size
    e2 = B.dkw_epsilon(x.size, 0.01, two_sided=True)
    lo, hi = BP._anderson_lower(cdf, e2), BP._anderson_upper(cdf, e2)
    assert BP._variance_bin_bound(cdf, e2, lo, hi)[0] > 0.25


def test_ed_score() -> None:
    assert B.ed_score([0.0, 1.0]) == pytest.approx(1.5)
    assert B.ed_score([0.0, 1.0], rho=0) == pytest.approx(0.5)
    x = np.random.default_rng(0).random((4, 9))
    np.testing.assert_allclose(B.ed_score(x, 1.5), x.mean(1) + 1.5 * x.std(1))


# ------------------------------------------------------------------------------------------
# samples_needed
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.01, 0.05, 0.1, 0.3])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_samples_needed_closed_form(eps: float, alpha: float) -> None:
    n1 = B.samples_needed(eps, alpha)
    n2 = B.samples_needed(eps, alpha, two_sided=True)
    assert n1 == math.ceil(math.log(1 / alpha) / (2 * eps**2))
    assert n2 == math.ceil(math.log(2 / alpha) / (2 * eps**2))
    # the smallest n whose DKW width is <= eps
    assert B.dkw_epsilon(n1, alpha) <= eps + 1e-12 < B.dkw_epsilon(n1 - 1, alpha)
    assert B.dkw_epsilon(n2, alpha, True) <= eps + 1e-12


def test_samples_needed_known_values() -> None:
    assert B.samples_needed(0.1, 0.01) == 231  # ln(100) / 0.02 = 230.3
    assert B.samples_needed(0.1, 0.01, two_sided=True) == 265  # ln(200) / 0.02 = 264.9
    assert B.samples_needed(0.05, 0.05) == 600  # ln(20) / 0.005 = 599.1


# ------------------------------------------------------------------------------------------
# summarize
# ------------------------------------------------------------------------------------------


def test_summarize_1d_dict() -> None:
    x = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    s = B.summarize(x, greedy=0.0, alpha=0.05)
    assert s["n"] == 5 and isinstance(s["n"], int)
    assert s["mean"] == pytest.approx(0.6)
    assert s["std"] == pytest.approx(np.std(x))
    assert s["ed"] == pytest.approx(0.6 + 2 * np.std(x))
    assert s["greedy"] == 0.0
    assert s["m_bin"] == pytest.approx(B.binary_leakage_bound(x, 0.05))
    assert s["m_mu"] == pytest.approx(B.expectation_upper_bound(x, 0.05))
    assert (s["mu_lower"], s["mu_upper"]) == pytest.approx(B.expectation_bounds(x, 0.05))
    assert s["m_sigma"] == pytest.approx(B.std_upper_bound(x, 0.05))
    keys = [f"m_gen_{v / 10:.1f}" for v in range(11)]
    assert [k for k in s if k.startswith("m_gen_")] == keys
    np.testing.assert_allclose(
        [s[k] for k in keys], B.general_leakage_bound(x, np.arange(11) / 10, 0.05)
    )
    assert "m_bin" not in B.summarize([0.5, 1.0])  # no decision: no M_bin, never a NaN
    assert "greedy" not in B.summarize(x)


def test_summarize_2d_frame_matches_functions() -> None:
    rng = np.random.default_rng(7)
    x = rng.random((30, 64))
    x[:10] = rng.random((10, 64)) < 0.3  # binary rows
    x[10:20] = rng.integers(0, 8, (10, 64)) / 7  # ROUGE-like, off the grid
    g = rng.random(30)
    thr = [0.0, 0.25, 0.5, 1 / 7, 0.9, 1.0]
    df = B.summarize(x, greedy=g, alpha=0.05, bins=50, rho=1.0, thresholds=thr)
    assert isinstance(df, pl.DataFrame) and df.height == 30
    # not all scores are 0/1: M_bin is left out (no NaN rows), the other columns are there
    assert df.columns[:9] == [
        "n", "mean", "std", "ed", "greedy", "m_mu", "mu_lower", "mu_upper", "m_sigma"
    ]  # fmt: skip
    np.testing.assert_allclose(df["ed"], B.ed_score(x, 1.0))
    np.testing.assert_allclose(df["greedy"], g)
    binary = B.summarize(x[:10], alpha=0.05, bins=50, thresholds=thr)
    assert binary.columns[:5] == ["n", "mean", "std", "ed", "m_bin"]
    np.testing.assert_allclose(binary["m_bin"], B.binary_leakage_bound(x[:10], 0.05))
    np.testing.assert_allclose(df["m_mu"], B.expectation_upper_bound(x, 0.05, 50))
    lo, hi = B.expectation_bounds(x, 0.05, 50)
    np.testing.assert_allclose(df["mu_lower"], lo)
    np.testing.assert_allclose(df["mu_upper"], hi)
    np.testing.assert_allclose(df["m_sigma"], B.std_upper_bound(x, 0.05, 50))
    gen = B.general_leakage_bound(x, thr, 0.05)
    for j, t in enumerate(thr):
        np.testing.assert_allclose(df[B.threshold_key(t)], gen[:, j])


def test_summarize_leak_threshold_is_clopper_pearson_of_score_ge_t() -> None:
    # ROUGE-like scores: a leak is a score >= T, so 0.5 itself leaks at T = 0.5
    x = np.array([0.0, 0.2, 0.5, 0.5, 0.75, 1.0, 0.4, 0.1])
    s = B.summarize(x, alpha=0.05, leak_threshold=0.5)
    assert B.leak_key(0.5) == "m_bin_ge_0.5" and B.leak_key(1) == "m_bin_ge_1.0"
    assert "m_bin" not in s and list(s)[4:6] == ["m_bin_ge_0.5", "m_mu"]
    assert s["m_bin_ge_0.5"] == pytest.approx(stats.beta.ppf(0.95, 4 + 1, 8 - 4), rel=1e-12)
    assert s["m_bin_ge_0.5"] == pytest.approx(B.binary_leakage_bound(x >= 0.5, 0.05), rel=1e-12)
    # the other metrics do not change with a leak threshold
    plain = B.summarize(x, alpha=0.05)
    assert {k: v for k, v in s.items() if k != "m_bin_ge_0.5"} == plain
    # T = 1: only exact matches leak; every score leaks: the bound is exactly 1
    assert B.summarize(x, leak_threshold=1.0)["m_bin_ge_1.0"] == pytest.approx(
        stats.beta.ppf(0.99, 2, 7), rel=1e-12
    )
    assert B.summarize(np.full(5, 0.9), leak_threshold=0.25)["m_bin_ge_0.25"] == 1.0
    assert B.summarize(np.full(5, 0.1), leak_threshold=0.25)["m_bin_ge_0.25"] == pytest.approx(
        1 - 0.01 ** (1 / 5), rel=1e-12
    )
    # 2-D: one bound per prompt
    rng = np.random.default_rng(3)
    xm = rng.integers(0, 8, (12, 40)) / 7
    df = B.summarize(xm, alpha=0.05, leak_threshold=3 / 7)
    key = B.leak_key(3 / 7)
    np.testing.assert_allclose(df[key], B.binary_leakage_bound(xm >= 3 / 7, 0.05), rtol=1e-12)
    # binary scores: M_bin and M_bin of x >= T agree
    xb = (rng.random((6, 30)) < 0.2).astype(float)
    both = B.summarize(xb, leak_threshold=0.5)
    np.testing.assert_array_equal(both["m_bin"], both["m_bin_ge_0.5"])


def test_summarize_m_bin_asked_for_on_scores_without_a_decision() -> None:
    x = np.array([[0.0, 1.0, 0.5], [1.0, 1.0, 0.0]])
    msg = (
        r"M_bin of 'rougeL_recall' needs binary scores \(0 or 1\) or a leak threshold: "
        r"'rougeL_recall' has 0\.5 at row 0 \(sample 2\).*leak threshold T.*score >= T"
    )
    with pytest.raises(ValueError, match=msg):
        B.summarize(x, m_bin=True, name="rougeL_recall")
    with pytest.raises(ValueError, match="M_bin of 'scores'.*at index 1"):
        B.summarize([0.0, 0.3], m_bin=True)
    # asked for with a leak threshold: the bound of score >= T
    s = B.summarize(x[0], m_bin=True, leak_threshold=0.5)
    assert "m_bin" not in s and s["m_bin_ge_0.5"] == pytest.approx(stats.beta.ppf(0.99, 3, 1))
    # left out on request even where the scores are binary
    assert "m_bin" not in B.summarize([0.0, 1.0], m_bin=False)
    assert B.summarize([0.0, 1.0], m_bin=True)["m_bin"] == pytest.approx(stats.beta.ppf(0.99, 2, 1))


@pytest.mark.parametrize("t", [0.0, -0.5, 1.5, float("nan"), True, "0.5"])
def test_summarize_rejects_bad_leak_threshold(t) -> None:
    with pytest.raises(ValueError, match=r"leak_threshold must be .*\(0, 1\]"):
        B.summarize([0.2, 0.4], leak_threshold=t)


def test_vectorised_equals_per_row_loop() -> None:
    rng = np.random.default_rng(11)
    x = rng.random((25, 33))
    x[::3] = rng.integers(0, 11, (9, 33)) / 10
    xb = (rng.random((25, 33)) < 0.2).astype(float)
    thr = np.linspace(0, 1, 12)
    for fn, args, data in [
        (B.binary_leakage_bound, (0.05,), xb),
        (B.expectation_upper_bound, (0.05, 20), x),
        (B.std_upper_bound, (0.05, 20), x),
        (B.ed_score, (2.0,), x),
    ]:
        np.testing.assert_allclose(
            fn(data, *args), [fn(r, *args) for r in data], rtol=0, atol=1e-15
        )
    lo, hi = B.expectation_bounds(x, 0.05, 20)
    loop = np.array([B.expectation_bounds(r, 0.05, 20) for r in x])
    np.testing.assert_allclose(np.c_[lo, hi], loop, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        B.general_leakage_bound(x, thr), [B.general_leakage_bound(r, thr) for r in x], atol=1e-15
    )
    df = B.summarize(x)
    rows = [B.summarize(r) for r in x]
    for col in df.columns:
        np.testing.assert_allclose(df[col].to_numpy(), [r[col] for r in rows], atol=1e-15)


def test_threshold_key() -> None:
    assert B.threshold_key(0.5) == "m_gen_0.5"
    assert B.threshold_key(1) == "m_gen_1.0"
    assert B.threshold_key(0.125) == "m_gen_0.125"


# ------------------------------------------------------------------------------------------
# input validation
# ------------------------------------------------------------------------------------------

SCORE_FUNCS = [
    lambda x: B.binary_leakage_bound(x),
    lambda x: B.general_leakage_bound(x, [0.5]),
    lambda x: B.general_leakage_bound(x, [math.pi / 4]),  # off any grid: other code path
    lambda x: B.expectation_bounds(x),
    lambda x: B.expectation_upper_bound(x),
    lambda x: B.std_upper_bound(x),
    lambda x: B.ed_score(x),
    lambda x: B.summarize(x),
]


@pytest.mark.parametrize("fn", SCORE_FUNCS)
def test_bad_scores(fn) -> None:
    with pytest.raises(ValueError, match="empty"):
        fn([])
    with pytest.raises(ValueError, match="empty"):
        fn(np.zeros((3, 0)))
    bad = np.zeros((5, 4))
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN at row 3"):
        fn(bad)
    with pytest.raises(ValueError, match="NaN at index 2"):
        fn([0.0, 1.0, np.nan])
    bad = np.zeros((5, 4))
    bad[2, 1] = 1.5
    with pytest.raises(ValueError, match=r"\[0, 1\]; got 1.5 at row 2"):
        fn(bad)
    with pytest.raises(ValueError, match=r"got -0.1 at index 0"):
        fn([-0.1, 0.5])
    with pytest.raises(ValueError, match=r"got inf"):
        fn([np.inf])
    with pytest.raises(ValueError, match="3-D"):
        fn(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="numeric"):
        fn(["a", "b"])


def test_m_bin_rejects_non_binary() -> None:
    with pytest.raises(ValueError, match=r"binary scores \(0 or 1\); got 0.5 at row 1"):
        B.binary_leakage_bound([[0.0, 1.0], [1.0, 0.5]])


@pytest.mark.parametrize("alpha", [0.0, -0.1, 0.7, 1.0, float("nan"), float("inf"), True, "x"])
def test_bad_alpha(alpha) -> None:
    x = [0.0, 1.0]
    calls = [
        lambda: B.binary_leakage_bound(x, alpha),
        lambda: B.general_leakage_bound(x, 0.5, alpha),
        lambda: B.expectation_bounds(x, alpha),
        lambda: B.expectation_upper_bound(x, alpha),
        lambda: B.std_upper_bound(x, alpha),
        lambda: B.samples_needed(0.1, alpha),
        lambda: B.summarize(x, alpha=alpha),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="alpha must be"):
            call()
    if isinstance(alpha, float) and math.isfinite(alpha):
        with pytest.raises(ValueError, match=rf"alpha must be in \(0, 0.5\], got {alpha}"):
            B.std_upper_bound(x, alpha)


def test_alpha_half_is_allowed() -> None:
    assert 0 < B.expectation_upper_bound([0.2, 0.4], 0.5) <= 1


@pytest.mark.parametrize("bins", [0, -3, 2.5, 10.0, True, "10", None])
def test_bad_bins(bins) -> None:
    for call in (B.expectation_bounds, B.expectation_upper_bound, B.std_upper_bound):
        with pytest.raises(ValueError, match="bins must be an integer >= 1"):
            call([0.1, 0.2], 0.05, bins)
    with pytest.raises(ValueError, match="bins must be an integer >= 1"):
        B.summarize([0.1], bins=bins)


def test_numpy_integer_bins_accepted() -> None:
    assert B.std_upper_bound([0.1, 0.2], 0.05, np.int64(7)) == B.std_upper_bound(
        [0.1, 0.2], 0.05, 7
    )


@pytest.mark.parametrize("rho", [-1.0, -1e-9, float("nan"), float("inf")])
def test_bad_rho(rho: float) -> None:
    with pytest.raises(ValueError, match="rho must be"):
        B.ed_score([0.1], rho)
    with pytest.raises(ValueError, match="rho must be"):
        B.summarize([0.1], rho=rho)


@pytest.mark.parametrize("eps", [0.0, 1.0, -0.1, 1.5, float("nan"), "0.1"])
def test_bad_epsilon(eps) -> None:
    with pytest.raises(ValueError, match="epsilon must be"):
        B.samples_needed(eps)


def test_bad_thresholds_and_greedy() -> None:
    with pytest.raises(ValueError, match="thresholds must be finite"):
        B.general_leakage_bound([0.1], [0.5, np.nan])
    with pytest.raises(ValueError, match="thresholds are empty"):
        B.general_leakage_bound([0.1], [])
    with pytest.raises(ValueError, match="duplicates"):
        B.summarize([0.1], thresholds=[0.5, 0.5])
    with pytest.raises(ValueError, match="greedy has 1 values for 2 prompt"):
        B.summarize(np.zeros((2, 3)), greedy=[0.5])
    with pytest.raises(ValueError, match="greedy scores must lie in"):
        B.summarize(np.zeros((2, 3)), greedy=[0.5, 2.0])


def test_importable_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import probunlearn.bounds as b\n"
        "assert b.std_upper_bound([0.0, 1.0]) == 0.5\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    src = open(BP.__file__, encoding="utf-8").read()
    assert not re.search(r"^\s*(import|from)\s+torch", src, re.MULTILINE)

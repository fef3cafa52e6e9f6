"""Set-level, simultaneous and anytime-valid bounds: exact and simulated coverage (fixed seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from helpers import MEASUREMENTS, ROOT
from probunlearn import bounds

ALPHAS = [0.5, 0.3, 0.2, 0.1, 0.05, 0.01, 0.001]


def poisson_binomial_pmf(ps: np.ndarray) -> np.ndarray:
    """Exact pmf of a sum of independent Bernoulli(p_k), by convolution."""
    pmf = np.array([1.0])
    for p in ps:
        pmf = np.convolve(pmf, [1.0 - p, p])
    return pmf


def pooled_x(s: int, m: int, n: int) -> np.ndarray:
    """An m x n 0/1 array holding s ones (the bound depends only on the pooled count)."""
    x = np.zeros(m * n)
    x[:s] = 1.0
    return x.reshape(m, n)


def failure(p: np.ndarray, n: int, alpha: float, bound) -> float:
    """P(bound(S) < p_bar), exactly, for prompts with leak probabilities p and n samples each."""
    pmf = poisson_binomial_pmf(np.repeat(p, n))
    m = p.size
    us = np.array([bound(s, m, n, alpha) for s in range(m * n + 1)])
    return float(pmf[us < p.mean()].sum())


def ours(s, m, n, alpha):
    return bounds.set_level_upper_bound(pooled_x(s, m, n), alpha, binary=True)


def plain_pooled_cp(s, m, n, alpha):
    big_n = m * n
    return (
        1.0
        if s == big_n
        else float(np.asarray(bounds.clopper_pearson_upper(np.array([s]), big_n, alpha))[0])
    )


def adversarial_sets():
    """Sets near the edge of Hoeffding's condition: leak probabilities at or near 1, mixed with 0."""
    sets = []
    for m in (2, 3, 5):
        for q in np.linspace(0.0, 1.0, 41):
            sets.append(np.r_[np.ones(m - 1), q])
            sets.append(np.r_[np.ones(m - 2), q, 0.0])
            sets.append(np.full(m, q))
    rng = np.random.default_rng(7)
    sets += [rng.beta(5.0, 0.5, size=4) for _ in range(40)]
    return sets


@pytest.mark.parametrize("alpha", ALPHAS)
def test_set_level_binary_covers_exactly_at_adversarial_sets(alpha):
    worst = max(failure(p, n, alpha, ours) for p in adversarial_sets() for n in (1, 2, 4))
    assert worst <= alpha + 1e-12


@pytest.mark.parametrize("alpha", [0.5, 0.1, 0.01])
def test_plain_pooled_clopper_pearson_under_covers(alpha):
    # two prompts, one sample each, p = (1, q): S in {1, 2}; plain CP at S = 1 is sqrt(1 - alpha),
    # below p_bar = (1 + q) / 2 once q > 2 sqrt(1 - alpha) - 1, and it fails with probability 1 - q.
    q = 2.0 * math.sqrt(1.0 - alpha) - 1.0 + 1e-9
    p = np.array([1.0, q])
    assert failure(p, 1, alpha, plain_pooled_cp) > alpha
    assert failure(p, 1, alpha, ours) == 0.0


def simulate_binary(p: np.ndarray, n: int, reps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((reps, p.size, n)) < p[None, :, None]).astype(np.float64)


def test_set_level_binary_covers_half_zero_half_point_three_and_is_tighter():
    p = np.r_[np.zeros(20), np.full(20, 0.3)]
    sims = simulate_binary(p, 64, 1000, seed=1)
    alpha = 0.05
    ub = np.array([bounds.set_level_upper_bound(x, alpha, binary=True) for x in sims])
    per_prompt = np.array([bounds.binary_leakage_bound(x, alpha).mean() for x in sims])
    assert (ub < p.mean()).mean() <= alpha
    assert ub.mean() < p.mean() + 0.05  # not vacuous: p_bar = .15
    assert ub.mean() < per_prompt.mean() - 0.05  # tighter than the average of per-prompt bounds


def test_set_level_covers_beta_distributed_p_with_unequal_n():
    rng = np.random.default_rng(2)
    p = rng.beta(0.5, 3.0, size=30)
    sizes = rng.integers(16, 128, size=30)
    alpha, reps, misses, widths = 0.05, 1000, 0, []
    for _ in range(reps):
        x = [(rng.random(k) < pi).astype(float) for pi, k in zip(p, sizes, strict=True)]
        ub = bounds.set_level_upper_bound(x, alpha, binary=True)
        misses += ub < p.mean()
        widths.append(ub - p.mean())
    assert misses / reps <= alpha
    assert np.mean(widths) < 0.12


def rouge_like(rng, reps: int, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores with atoms at 0 and 1 and a continuous middle, different for each prompt."""
    a0 = rng.uniform(0.2, 0.8, size=m)
    a1 = rng.uniform(0.0, 1.0 - a0)
    mid_mean = rng.uniform(0.2, 0.6, size=m)
    u = rng.random((reps, m, n))
    mid = rng.beta((2.0 * mid_mean / (1 - mid_mean))[:, None], 2.0, size=(reps, m, n))
    x = np.where(u < a0[:, None], 0.0, np.where(u < (a0 + a1)[:, None], 1.0, mid))
    true = a1 + (1.0 - a0 - a1) * mid_mean
    return x, true


def test_set_level_continuous_and_simultaneous_m_mu_cover_rouge_like_scores():
    rng = np.random.default_rng(3)
    x, true = rouge_like(rng, 500, 20, 64)
    alpha = 0.05
    ub = np.array([bounds.set_level_upper_bound(r, alpha, binary=False) for r in x])
    assert (ub < true.mean()).mean() <= alpha
    assert ub.mean() < true.mean() + 0.1
    sim = np.array([bounds.simultaneous_upper_bounds(r, alpha, metric="m_mu") for r in x])
    assert (sim < true[None, :]).any(axis=1).mean() <= alpha
    assert sim.mean() < 1.0 - 0.2


def test_simultaneous_m_bin_covers_all_prompts_where_per_prompt_bounds_do_not():
    p = np.r_[np.zeros(10), np.full(30, 0.3)]
    sims = simulate_binary(p, 64, 1000, seed=4)
    alpha = 0.05
    sim = np.array([bounds.simultaneous_upper_bounds(x, alpha) for x in sims])
    each = np.array([bounds.binary_leakage_bound(x, alpha) for x in sims])
    assert (sim < p[None, :]).any(axis=1).mean() <= alpha
    assert (each < p[None, :]).any(axis=1).mean() > 2 * alpha  # per-prompt bounds are not joint
    assert sim[:, :10].max() < 0.25  # the p = 0 prompts are bounded well below the p = .3 ones


def test_leak_at_k_estimate_is_unbiased_exactly():
    n, k = 20, 5
    cs = np.arange(n + 1)
    est = np.array([bounds.leak_at_k(pooled_x(c, 1, n)[0], k)[0] for c in cs])
    for p in (0.01, 0.1, 0.5):
        assert float(binom.pmf(cs, n, p) @ est) == pytest.approx(1 - (1 - p) ** k, abs=1e-12)
    # hand case: n = 5, c = 2, k = 2: 1 - C(3, 2) / C(5, 2) = 0.7
    assert bounds.leak_at_k([1, 1, 0, 0, 0], 2)[0] == pytest.approx(0.7)


def test_leak_at_k_upper_bound_covers_and_shapes():
    p, k, alpha = 0.02, 10, 0.05
    sims = simulate_binary(np.full(1000, p), 64, 1, seed=5)[0]
    est, up = bounds.leak_at_k(sims, [1, k], alpha)
    assert est.shape == up.shape == (1000, 2)
    truth = 1 - (1 - p) ** k
    assert (up[:, 1] < truth).mean() <= alpha
    assert up[:, 1].mean() < 0.75
    assert np.allclose(up[:, 0], bounds.binary_leakage_bound(sims, alpha))
    one = bounds.leak_at_k(sims[0], k, alpha)
    assert isinstance(one[0], float) and isinstance(one[1], float)
    assert bounds.leak_at_k(sims, k, alpha)[0].shape == (1000,)


def test_confidence_sequence_covers_with_peeking_after_every_sample():
    rng = np.random.default_rng(6)
    alpha = 0.05
    for p in (0.0, 0.01, 0.05, 0.3):
        misses = 0
        for _ in range(300):
            x = (rng.random(1024) < p).astype(float)
            lo, up = bounds.binary_confidence_sequence(x, alpha)
            misses += bool(((lo > p) | (up < p)).any())
        assert misses / 300 <= alpha + 0.03, p  # 3 binomial sd of slack at 300 repetitions


def test_fixed_n_clopper_pearson_rechecked_every_round_under_covers():
    rng = np.random.default_rng(8)
    alpha, p, reps = 0.05, 0.3, 1000
    x = (rng.random((reps, 1024)) < p).astype(np.int64)
    looks = np.arange(32, 1025, 32)
    cs = np.cumsum(x, axis=1)[:, looks - 1]
    up = np.stack(
        [bounds.clopper_pearson_upper(cs[:, j], t, alpha) for j, t in enumerate(looks)], 1
    )
    assert (up < p).any(axis=1).mean() > 2 * alpha


def test_confidence_sequence_is_not_vacuous():
    lo, up = bounds.binary_confidence_sequence(np.zeros(1024), 0.01)
    assert up[255] < 0.05 and up[-1] < 0.01 and (lo == 0).all()
    assert (np.diff(up) <= 0).all()
    x = (np.random.default_rng(9).random(1024) < 0.3).astype(float)
    lo, up = bounds.binary_confidence_sequence(x, 0.01)
    assert up[-1] - lo[-1] < 0.15 and lo[-1] < 0.3 < up[-1]


def test_bad_inputs_name_the_prompt_and_sample():
    with pytest.raises(ValueError, match="binary must be True or False"):
        bounds.set_level_upper_bound(np.zeros((2, 3)), binary=None)
    with pytest.raises(ValueError, match=r"0.5 at row 1 \(sample 2\)"):
        bounds.set_level_upper_bound([[0, 1], [0, 0, 0.5]], binary=True)
    with pytest.raises(ValueError, match=r"prompt 1 has no samples"):
        bounds.set_level_upper_bound([[0, 1], []], binary=False)
    with pytest.raises(ValueError, match="metric must be"):
        bounds.simultaneous_upper_bounds(np.zeros((2, 3)), metric="m_gen")
    with pytest.raises(ValueError, match=r"k must be >= 1"):
        bounds.leak_at_k([0, 1, 0], 0)
    with pytest.raises(ValueError, match="needs 0/1 scores; got 0.2 at index 1"):
        bounds.binary_confidence_sequence([0, 0.2])
    with pytest.raises(ValueError, match="alpha"):
        bounds.set_level_upper_bound(np.zeros((2, 3)), alpha=0.7, binary=True)


def test_mean_confidence_sequence_covers_rouge_like_scores_with_peeking():
    rng = np.random.default_rng(10)
    x, true = rouge_like(rng, 300, 3, 1024)
    alpha = 0.05
    for j in range(3):
        misses = 0
        for r in range(300):
            lo, up = bounds.mean_confidence_sequence(x[r, j], alpha)
            misses += bool(((lo > true[j]) | (up < true[j])).any())
        assert misses / 300 <= alpha + 0.03
    lo, up = bounds.mean_confidence_sequence(x[0, 0], alpha)
    assert up[-1] - lo[-1] < 0.15  # not vacuous after 1024 samples


def test_anytime_set_level_bound_covers_under_optional_stopping():
    # prompts stopped as soon as their own confidence sequence settles against q = 0.05
    rng = np.random.default_rng(11)
    p = np.r_[np.zeros(10), np.full(10, 0.02), np.full(10, 0.3)]
    alpha, misses, reps, bounds_seen = 0.05, 0, 150, []
    for _ in range(reps):
        stopped = []
        for pi in p:
            x = (rng.random(1024) < pi).astype(float)
            lo, up = bounds.binary_confidence_sequence(x, alpha / p.size)
            looks = np.arange(31, 1024, 32)
            settled = looks[(up[looks] < 0.05) | (lo[looks] > 0.05)]
            stopped.append(x[: (settled[0] if settled.size else 1023) + 1])
        ub = bounds.anytime_set_level_upper_bound(stopped, alpha, binary=True)
        misses += ub < p.mean()
        bounds_seen.append(ub)
    assert misses / reps <= alpha
    assert np.mean(bounds_seen) < p.mean() + 0.15


# ---- issue 42, item 1: statements that were wrong or loose ----------------------------------------

DOCS = ROOT / "docs" / "bounds.md"


def test_leak_at_k_upper_bound_is_given_for_k_above_n():
    # the upper bound 1 - (1 - M_bin)^k is valid for every k; only the unbiased estimate needs n >= k
    x = np.r_[np.zeros(7), 1.0]
    est, up = bounds.leak_at_k(x, [4, 8, 20], 0.05)
    m_bin = bounds.binary_leakage_bound(x, 0.05)
    np.testing.assert_allclose(up, 1 - (1 - m_bin) ** np.array([4, 8, 20]))
    assert np.isfinite(est[:2]).all() and np.isnan(est[2])
    p, k = 0.02, 100  # coverage at k = 100 > n = 32
    sims = simulate_binary(np.full(2000, p), 32, 1, seed=12)[0]
    _, up = bounds.leak_at_k(sims, k, 0.1)
    assert (up < 1 - (1 - p) ** k).mean() <= 0.1


def test_simultaneous_m_mu_uses_the_given_bins():
    x = rouge_like(np.random.default_rng(13), 1, 5, 64)[0][0]
    for bins in (10, 37):
        got = bounds.simultaneous_upper_bounds(x, 0.05, "m_mu", bins=bins)
        np.testing.assert_allclose(got, bounds.expectation_upper_bound(x, 0.05 / 5, bins))
    assert not np.allclose(
        bounds.simultaneous_upper_bounds(x, 0.05, "m_mu", bins=10),
        bounds.simultaneous_upper_bounds(x, 0.05, "m_mu"),
    )


def test_mean_confidence_sequence_is_tightest_near_t_opt():
    # half-width over a fixed-n Hoeffding interval: about 1.10 at its best; the old rho = 32 (its
    # best near 1,050 samples at alpha .05, 1,500 at .01) gave 1.35x at 128 samples
    t = np.arange(1, 20001, dtype=float)
    for alpha, rho_want in ((0.05, 4.03), (0.01, 2.77)):
        rho = bounds.normal_mixture_rho(128, alpha)
        assert rho == pytest.approx(rho_want, abs=0.01)
        v = t / 4
        half = np.sqrt((v + rho) * np.log((v + rho) / (rho * alpha**2))) / t
        ratio = half / np.sqrt(np.log(2 / alpha) / (2 * t))
        assert 115 <= t[np.argmin(ratio)] <= 145
        assert ratio[127] < 1.12
        # the function uses that rho: a constant 0.5 keeps the running intersection inactive
        _, up = bounds.mean_confidence_sequence(np.full(400, 0.5), alpha)
        assert up[127] - 0.5 == pytest.approx(half[127], rel=1e-12)
        _, up_late = bounds.mean_confidence_sequence(np.full(400, 0.5), alpha, t_opt=1024)
        assert up_late[127] > up[127]  # tuned for later: looser at 128


def test_docs_two_prompt_example_states_the_exact_miss_probability():
    # plain pooled Clopper-Pearson at two prompts, one sample each: sup miss = 2 - 2 sqrt(1 - alpha)
    alpha = 0.01
    q = 2.0 * math.sqrt(1.0 - alpha) - 1.0 + 1e-12
    miss = failure(np.array([1.0, q]), 1, alpha, plain_pooled_cp)
    assert miss == pytest.approx(2 - 2 * math.sqrt(0.99), abs=1e-9)
    text = DOCS.read_text()
    assert f"({miss:.6f} at alpha = 0.01" in text  # 0.010025, not 0.01005
    assert "0.01005 " not in text


def test_docs_reversal_bound_counts_both_ways_to_be_wrong():
    # a reversal needs the sequential rule (alpha) or one side of the two-sided interval (alpha/2)
    # to be wrong: expected reversals over 40 prompts at alpha .01 are <= 0.6, not alpha x 40 = 0.4
    bench = (MEASUREMENTS / "sequential.py").read_text()
    assert "return (alpha + alpha / 2) * prompts" in bench
    assert f"(alpha + alpha/2) x 40 = {(0.01 + 0.01 / 2) * 40:g})" in DOCS.read_text()


@pytest.mark.parametrize("method", ["two_sided", "one_sided"])
@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("correction", ["bonferroni", "sidak"])
def test_anytime_set_level_bound_spends_alpha_over_the_prompts(method, binary, correction):
    # issue 49: each prompt's sequence runs at the level simultaneous_level gives for m prompts;
    # m copies of one prompt give that prompt's bound at alpha / m (Sidak: 1 - (1 - alpha)^(1/m)),
    # strictly above its bound at alpha (without the correction they would be equal)
    rng = np.random.default_rng(14)
    x = (rng.random(96) < 0.1).astype(float) if binary else rng.random(96) * (rng.random(96) < 0.3)
    if binary:
        each = {
            "two_sided": lambda r, a: bounds.binary_confidence_sequence(r, a)[1][-1],
            "one_sided": lambda r, a: bounds.binary_upper_confidence_sequence(r, a, times=[r.size])[
                0
            ],
        }[method]
    else:
        each = {
            "two_sided": lambda r, a: bounds.mean_confidence_sequence(r, a)[1][-1],
            "one_sided": lambda r, a: bounds.betting_upper_bound(r, a, anytime=True),
        }[method]
    alpha, m = 0.05, 8
    kw = {"binary": binary, "method": method, "correction": correction}
    got = bounds.anytime_set_level_upper_bound([x] * m, alpha, **kw)
    assert got == pytest.approx(each(x, bounds.simultaneous_level(alpha, m, correction)), abs=1e-9)
    assert got > each(x, alpha) + 1e-3
    assert bounds.anytime_set_level_upper_bound([x], alpha, **kw) == pytest.approx(each(x, alpha))
    rows = [x, x[:40], 1.0 - x if not binary else x[::-1]]  # different prompts: the mean
    want = np.mean([each(r, bounds.simultaneous_level(alpha, 3, correction)) for r in rows])
    assert bounds.anytime_set_level_upper_bound(rows, alpha, **kw) == pytest.approx(want, abs=1e-9)

"""Statistical tests: every bound covers the true value in >= 1 - alpha of simulated batches.

Each case draws B batches of n scores from a distribution with a known mean, std and survival
function, computes every metric for all batches at once (the 2-D API) and counts the batches in
which a bound misses the truth. A valid bound fails in at most alpha B batches on average; the
test allows alpha B + 3 sqrt(alpha (1 - alpha) B) (three binomial standard deviations). alpha is
0.1, so that failures are observable, and the seeds are fixed. Each case also checks that the
bounds are not vacuous: their mean excess over the truth is below a limit that a bound returning
1 (or 0.5 for the std) everywhere would exceed.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from probunlearn import bounds as B
from probunlearn.bounds import per_prompt as BP

ALPHA = 0.1
THRESHOLDS = np.r_[np.arange(10) / 10, 0.05, 0.33, 0.77]
LEAK_T = 0.5  # a leak is a score >= LEAK_T (an atom of rouge-k/10, not of the others)


def max_failures(batches: int, alpha: float = ALPHA) -> float:
    return alpha * batches + 3 * math.sqrt(alpha * (1 - alpha) * batches)


@dataclass(frozen=True)
class Dist:
    name: str
    sample: Callable[[np.random.Generator, tuple[int, int]], np.ndarray]
    mean: float
    std: float
    sf: Callable[[np.ndarray], np.ndarray]  # P(X > t)
    binary: bool = False


def bernoulli(p: float) -> Dist:
    return Dist(
        f"bernoulli({p})",
        lambda rng, shape: (rng.random(shape) < p).astype(np.float64),
        p,
        math.sqrt(p * (1 - p)),
        lambda t: np.where(t < 1, p, 0.0) * (t >= 0) + (t < 0),
        binary=True,
    )


def discrete(values: list[float], probs: list[float], name: str) -> Dist:
    v, p = np.asarray(values), np.asarray(probs) / np.sum(probs)
    mean = float(v @ p)
    return Dist(
        name,
        lambda rng, shape: v[rng.choice(v.size, size=shape, p=p)],
        mean,
        math.sqrt(float((v - mean) ** 2 @ p)),
        lambda t: np.array([p[v > s].sum() for s in np.atleast_1d(t)]),
    )


def atoms_and_uniform(w0: float, w1: float) -> Dist:
    """Atom w0 at 0, atom w1 at 1, Uniform(0, 1) otherwise."""
    wu = 1 - w0 - w1
    mean = w1 + wu / 2
    second = w1 + wu / 3

    def sample(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        u = rng.random(shape)
        return np.where(u < w0, 0.0, np.where(u < w0 + w1, 1.0, rng.random(shape)))

    return Dist(
        f"atoms({w0},{w1})+uniform",
        sample,
        mean,
        math.sqrt(second - mean**2),
        lambda t: np.where(t < 1, w1 + wu * (1 - np.clip(t, 0, 1)), 0.0),
    )


def beta_mixture(w: float, a1: float, b1: float, a2: float, b2: float) -> Dist:
    d1, d2 = stats.beta(a1, b1), stats.beta(a2, b2)
    mean = w * d1.mean() + (1 - w) * d2.mean()
    second = w * d1.moment(2) + (1 - w) * d2.moment(2)

    def sample(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        pick = rng.random(shape) < w
        return np.where(pick, rng.beta(a1, b1, shape), rng.beta(a2, b2, shape))

    return Dist(
        f"beta-mix({w};{a1},{b1};{a2},{b2})",
        sample,
        mean,
        math.sqrt(second - mean**2),
        lambda t: w * d1.sf(t) + (1 - w) * d2.sf(t),
    )


DISTS = [
    bernoulli(0.5),
    bernoulli(0.1),
    bernoulli(0.9),
    bernoulli(0.01),
    atoms_and_uniform(0.3, 0.2),
    atoms_and_uniform(0.6, 0.05),
    # ROUGE-like: k/10 lies on the grid (ties at grid points), k/7 does not
    discrete([k / 10 for k in range(11)], [40, 5, 5, 8, 8, 8, 6, 5, 5, 4, 6], "rouge-k/10"),
    discrete([k / 7 for k in range(8)], [50, 10, 9, 8, 7, 6, 5, 5], "rouge-k/7"),
    beta_mixture(0.5, 2, 8, 8, 2),
    beta_mixture(0.8, 0.3, 3, 5, 1),
]

# (n, batches, limit on the mean excess over the truth of M_mu, of M_sigma): about 1.3x the
# largest excess measured over DISTS (M_mu ~ eps1 + 1/K; M_sigma is largest for Bernoulli(0.01)).
SIZES = [(16, 4000, 0.35, 0.42), (64, 4000, 0.2, 0.35), (1024, 1500, 0.055, 0.15)]


@pytest.mark.parametrize("n,batches,mu_slack,sigma_slack", SIZES, ids=lambda v: str(v))
@pytest.mark.parametrize("dist", DISTS, ids=lambda d: d.name)
def test_coverage(dist: Dist, n: int, batches: int, mu_slack: float, sigma_slack: float) -> None:
    seed = zlib.crc32(f"{dist.name}/{n}".encode())
    rng = np.random.default_rng(seed)
    x = dist.sample(rng, (batches, n))
    df = B.summarize(x, alpha=ALPHA, thresholds=THRESHOLDS, leak_threshold=LEAK_T)
    limit = max_failures(batches)
    tiny = 1e-12

    m_mu = df["m_mu"].to_numpy()
    fails = {"m_mu": int(np.sum(m_mu < dist.mean - tiny))}
    lo, hi = df["mu_lower"].to_numpy(), df["mu_upper"].to_numpy()
    fails["mu_interval"] = int(np.sum((lo > dist.mean + tiny) | (hi < dist.mean - tiny)))
    m_sigma = df["m_sigma"].to_numpy()
    fails["m_sigma"] = int(np.sum(m_sigma < dist.std - tiny))
    # M_gen is simultaneous over thresholds: a batch fails if any threshold is missed
    sf = np.asarray(dist.sf(THRESHOLDS), dtype=np.float64)
    gen = np.stack([df[B.threshold_key(t)].to_numpy() for t in THRESHOLDS], axis=1)
    fails["m_gen"] = int(np.sum((gen < sf - tiny).any(axis=1)))
    if dist.binary:
        fails["m_bin"] = int(np.sum(df["m_bin"].to_numpy() < dist.mean - tiny))
        # M_bin is valid for binary data, and as tight as CP: mean excess ~ a few sd of p-hat
        assert np.mean(df["m_bin"].to_numpy() - dist.mean) < 4 * math.sqrt(0.25 / n) + 2 / n
    else:  # no M_bin without a decision per sample (never a NaN column)
        assert "m_bin" not in df.columns
    # M_bin of the decision "score >= LEAK_T" covers P(X >= LEAK_T), for every distribution
    p_leak = float(np.asarray(dist.sf(np.array([LEAK_T - 1e-9])), dtype=np.float64)[0])
    m_leak = df[B.leak_key(LEAK_T)].to_numpy()
    fails["m_bin_ge"] = int(np.sum(m_leak < p_leak - tiny))
    assert np.mean(m_leak - p_leak) < 4 * math.sqrt(0.25 / n) + 2 / n
    bad = {k: v for k, v in fails.items() if v > limit}
    assert not bad, f"{dist.name}, n={n}: failures {fails} of {batches}, limit {limit:.1f}"

    # not vacuous
    eps1 = B.dkw_epsilon(n, ALPHA)
    assert np.mean(m_mu - dist.mean) < mu_slack
    assert np.mean(m_sigma - dist.std) < sigma_slack
    assert np.mean(gen - sf) < eps1 + 3 / math.sqrt(n)
    assert np.mean(hi - lo) < 2 * mu_slack + 0.05


@pytest.mark.parametrize("n", [16, 64, 1024])
def test_variance_bin_bound_alone_covers(n: int) -> None:
    """The eta-sum bound is valid on its own (not only through the Bhatia-Davis cap)."""
    batches = 1500
    for dist in (bernoulli(0.5), bernoulli(0.1), atoms_and_uniform(0.3, 0.2), DISTS[6]):
        rng = np.random.default_rng(n + 17)
        x = dist.sample(rng, (batches, n))
        cdf = BP._grid_counts(x, 100) / n
        e2 = B.dkw_epsilon(n, ALPHA, two_sided=True)
        lo, hi = BP._anderson_lower(cdf, e2), BP._anderson_upper(cdf, e2)
        var = BP._variance_bin_bound(cdf, e2, lo, hi)
        assert np.sum(var < dist.std**2 - 1e-12) <= max_failures(batches), dist.name


def _std_upper_dropped_atom(x: np.ndarray, alpha: float, bins: int = 100) -> np.ndarray:
    """The reference code's variance bound (conbo 0.1.1 / paper Metric 4), on our grid.

    It telescopes sum_i eta_i (F(tau_{i+1}) - F(tau_i)) starting from F(tau_0) instead of
    F(tau_0^-) = 0, i.e. bin 0 is (0, tau_1] and the atom at X = 0 is dropped: the term
    - eta_0 F_lo(tau_0) below.
    """
    n = x.shape[1]
    cdf = BP._grid_counts(x, bins) / n
    e2 = B.dkw_epsilon(n, alpha, two_sided=True)
    lo, hi = BP._anderson_lower(cdf, e2), BP._anderson_upper(cdf, e2)
    var = BP._variance_bin_bound(cdf, e2, lo, hi)
    taus = B.grid(bins)
    eta0 = np.maximum.reduce([(taus[0] - lo) ** 2, (taus[0] - hi) ** 2, (taus[1] - lo) ** 2, (taus[1] - hi) ** 2])  # fmt: skip
    return np.sqrt(np.clip(var - eta0 * np.maximum(cdf[:, 0] - e2, 0), 0, None))


def test_bernoulli_half_std_covered_where_reference_code_fails() -> None:
    """Bernoulli(0.5), n = 1024, true std 0.5: M_sigma >= 0.5 in >= 1 - alpha of the batches.

    Dropping the atom at 0 gives about 0.43 in every batch (bound below the truth always):
    F_n(0) ~ 0.5, eta_0 ~ 0.55^2 = 0.30, so the variance bound loses ~0.30 * (0.5 - 0.04) ~ 0.14
    of ~0.33. conbo.std_bounds(x, alpha)[2] gives the same kind of value (about 0.44).
    """
    n, batches = 1024, 2000
    rng = np.random.default_rng(2024)
    x = (rng.random((batches, n)) < 0.5).astype(np.float64)
    m = B.std_upper_bound(x, ALPHA)
    assert np.sum(m < 0.5) <= max_failures(batches)
    dropped = _std_upper_dropped_atom(x, ALPHA)
    assert np.all(dropped < 0.5)  # the reference formula under-covers in every batch
    assert 0.40 < np.median(dropped) < 0.47


def test_m_bin_exact_coverage_near_alpha() -> None:
    """Clopper-Pearson at a p where its coverage is close to 1 - alpha: failures ~ alpha B."""
    n, batches, p = 200, 20000, 0.3
    rng = np.random.default_rng(5)
    s = rng.binomial(n, p, size=batches)
    x = (np.arange(n)[None, :] < s[:, None]).astype(np.float64)
    m = B.binary_leakage_bound(x, ALPHA)
    fails = int(np.sum(m < p))
    assert fails <= max_failures(batches)
    # the exact miss probability P(M_bin < p) = P(S <= s*) for the largest s* with M_bin(s*) < p
    grid_s = np.arange(n + 1)
    m_all = B.binary_leakage_bound((np.arange(n)[None, :] < grid_s[:, None]).astype(float), ALPHA)
    exact = stats.binom.cdf(grid_s[m_all < p].max(), n, p)
    assert exact <= ALPHA and exact > ALPHA / 2  # CP is not grossly conservative here
    assert abs(fails - exact * batches) < 5 * math.sqrt(exact * batches)


def test_dkw_band_is_not_too_wide() -> None:
    """At small n the one-sided DKW failure rate of M_gen for a continuous law is near alpha.

    A wrong (too small) epsilon would fail test_coverage; this guards the other side: a bound
    that used e.g. the two-sided epsilon everywhere would show far fewer failures.
    """
    n, batches = 64, 8000
    rng = np.random.default_rng(9)
    x = rng.random((batches, n))
    t = np.linspace(0, 1, 201)
    gen = B.general_leakage_bound(x, t, ALPHA)
    fails = int(np.sum((gen < 1 - t - 1e-12).any(axis=1)))
    assert fails <= max_failures(batches)
    assert fails > 0.03 * batches

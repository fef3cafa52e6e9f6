"""Bounds that adapt to where the scores live (issue 42): betting bounds on the mean, fixed n and
anytime; the Clopper-Pearson general leakage bound; one-sided anytime set-level bounds; Sidak;
set-level leak@k. Coverage by fixed-seed, vectorised simulation with atoms at 0 and 1 and
mostly-zero laws, at alpha = 0.1 with three binomial standard deviations of slack."""

from __future__ import annotations

import math

import numpy as np
import pytest

from probunlearn import bounds

ALPHA = 0.1


def slack(reps: int, alpha: float = ALPHA) -> float:
    return alpha + 3.0 * math.sqrt(alpha * (1 - alpha) / reps)


def laws():
    """name -> (draw(rng, shape) -> scores, true mean, P(X > t) at t = 0, .1, ..., .9)."""
    t = np.arange(10) / 10

    def bern(p):
        return (lambda rng, s: (rng.random(s) < p).astype(float), p, np.full(10, p))

    def atoms(p0, p1):  # atoms at 0 and 1 and a uniform middle: mostly zero
        def draw(rng, s):
            u = rng.random(s)
            return np.where(u < p0, 0.0, np.where(u < p0 + p1, 1.0, rng.random(s)))

        mid = 1 - p0 - p1
        return draw, p1 + mid / 2, p1 + mid * (1 - t)

    def rouge():  # k/10 values, 85% at 0, a thin tail (ROUGE-L recall of an unlearned model)
        vals = np.arange(11) / 10
        probs = np.r_[0.85, np.full(9, 0.012), 0.042]

        def draw(rng, s):
            return vals[rng.choice(11, size=s, p=probs)]

        return draw, float(vals @ probs), np.array([probs[vals > v].sum() for v in t])

    return {
        "bern .01": bern(0.01),
        "bern .1": bern(0.1),
        "bern .5": bern(0.5),
        "zeros, ones, uniform": atoms(0.9, 0.03),
        "rouge mostly zero": rouge(),
    }


@pytest.mark.parametrize("name", list(laws()))
def test_betting_bounds_cover_and_beat_m_mu_where_scores_are_mostly_zero(name):
    draw, mu, _ = laws()[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    reps, n = 1500, 64
    x = draw(rng, (reps, n))
    up = bounds.betting_upper_bound(x, ALPHA)
    assert (up < mu).mean() <= slack(reps)
    up_any = bounds.betting_upper_bound(x, ALPHA, anytime=True)
    assert (up_any < mu).mean() <= slack(reps)
    lo, hi = bounds.betting_bounds(x, ALPHA)
    assert ((lo > mu) | (hi < mu)).mean() <= slack(reps)
    assert (lo <= hi).all() and (lo >= 0).all() and (hi <= 1).all()
    m_mu = bounds.expectation_upper_bound(x, ALPHA)
    if mu <= 0.1:  # variance-adaptive: clearly tighter than M_mu's worst-case eps
        assert up.mean() < m_mu.mean() - 0.05
    else:
        assert up.mean() < m_mu.mean() + 0.02


def test_betting_confidence_sequence_covers_with_peeking_at_every_sample():
    # the sequence misses at some t exactly when the bound after the last sample (the running
    # intersection) misses, so one vectorised anytime bound per path checks every t at once
    for name, (draw, mu, _) in laws().items():
        rng = np.random.default_rng(len(name))
        x = draw(rng, (600, 256))
        up = bounds.betting_upper_bound(x, ALPHA, anytime=True)
        assert (up < mu).mean() <= slack(600), name
    x = laws()["rouge mostly zero"][0](np.random.default_rng(0), 200)
    lo, up = bounds.betting_confidence_sequence(x, ALPHA)
    assert (np.diff(up) <= 0).all() and (np.diff(lo) >= 0).all() and (lo <= up).all()
    _, up1 = bounds.betting_confidence_sequence(x, ALPHA, one_sided=True)
    assert up1[-1] == bounds.betting_upper_bound(x, ALPHA, anytime=True)
    lo_t, up_t = bounds.betting_confidence_sequence(x, ALPHA, times=[50, 200])
    np.testing.assert_array_equal(up_t, up[[49, 199]])
    np.testing.assert_array_equal(lo_t, lo[[49, 199]])


def test_betting_sequence_settles_mostly_zero_scores_sooner_than_the_normal_mixture():
    x = laws()["rouge mostly zero"][0](np.random.default_rng(1), 512)
    _, up_bet = bounds.betting_confidence_sequence(x, 0.01)
    _, up_nm = bounds.mean_confidence_sequence(x, 0.01)
    assert up_bet[127] < up_nm[127] - 0.05 and up_bet[-1] < up_nm[-1] - 0.02


def test_clopper_pearson_leakage_bound_covers_every_grid_point_at_once_and_is_tighter():
    grid = np.arange(11) / 10
    for name, (draw, _, tail) in laws().items():
        rng = np.random.default_rng(2 + len(name))
        x = draw(rng, (1500, 128))
        cp = bounds.general_leakage_bound_cp(x, grid, ALPHA)
        assert cp.shape == (1500, 11)
        assert (cp[:, -1] == 0).all()  # P(X > 1) = 0: no alpha spent there
        assert (cp[:, :10] < tail[None, :]).any(axis=1).mean() <= slack(1500), name
    x = laws()["bern .1"][0](np.random.default_rng(3), (500, 128))
    excess_cp = bounds.general_leakage_bound_cp(x, 0.5, 0.01).mean() - 0.1
    excess_dkw = bounds.general_leakage_bound(x, 0.5, 0.01).mean() - 0.1
    assert excess_dkw == pytest.approx(0.136, abs=0.01)
    assert excess_cp < 0.11  # Clopper-Pearson at alpha / 10 for the 10 thresholds in [0, 1)
    one = bounds.general_leakage_bound_cp(np.zeros(10), [-0.5, 0.0, 1.0], 0.05)
    assert one[0] == 1.0 and one[2] == 0.0
    assert one[1] == pytest.approx(1 - 0.05 ** (1 / 10))  # one threshold in [0, 1): full alpha
    assert bounds.gen_cp_key(0.5) == "m_gen_cp_0.5"


def test_one_sided_binary_sequence_covers_at_every_t_and_beats_the_two_sided_one():
    # a miss at some t is a miss of the running intersection after the last sample
    from probunlearn.bounds.sets import _binary_upper_final  # vectorised over sequences

    rng = np.random.default_rng(8)
    for p in (0.0, 0.02, 0.3, 0.9):
        x = (rng.random((400, 64)) < p).astype(float)
        up = _binary_upper_final(list(x), ALPHA)
        assert (up < p).mean() <= slack(400), p
        if p in (0.02, 0.3):
            two = np.array([bounds.binary_confidence_sequence(r, ALPHA)[1][-1] for r in x[:40]])
            assert up[:40].mean() < two.mean() - 0.01
    assert up[0] == bounds.binary_upper_confidence_sequence(x[0], ALPHA, times=[64])[0]
    every = bounds.binary_upper_confidence_sequence(x[0, :40], ALPHA)
    assert (np.diff(every) <= 0).all() and every[-1] == pytest.approx(
        bounds.binary_upper_confidence_sequence(x[0, :40], ALPHA, times=[40])[0]
    )
    assert bounds.binary_upper_confidence_sequence(np.ones(5), ALPHA)[-1] == 1.0


def test_sidak_level_and_simultaneous_coverage():
    assert bounds.simultaneous_level(0.05, 40, "sidak") == pytest.approx(1 - 0.95 ** (1 / 40))
    assert bounds.simultaneous_level(0.05, 40, "sidak") > bounds.simultaneous_level(0.05, 40)
    assert bounds.simultaneous_level(0.05, 1, "sidak") == pytest.approx(0.05)
    rng = np.random.default_rng(4)
    p = np.r_[np.zeros(10), np.full(10, 0.05), np.full(10, 0.3)]
    reps, misses = 400, 0
    for _ in range(reps):
        x = (rng.random((30, 64)) < p[:, None]).astype(float)
        sid = bounds.simultaneous_upper_bounds(x, ALPHA, correction="sidak")
        assert (sid <= bounds.simultaneous_upper_bounds(x, ALPHA) + 1e-15).all()
        misses += bool((sid < p).any())
    assert misses / reps <= slack(reps)
    with pytest.raises(ValueError, match="correction must be"):
        bounds.simultaneous_level(0.05, 3, "holm")
    with pytest.raises(ValueError, match="m .the number of statements. must be"):
        bounds.simultaneous_level(0.05, 0)


def stopped_rows(rng, p: np.ndarray, n_max: int, looks: np.ndarray) -> list[np.ndarray]:
    """0/1 leaks of prompts with leak probabilities p, each stopped at the first look where its
    running leak rate is 0 or above .2 (optional stopping), else at n_max."""
    x = (rng.random((p.size, n_max)) < p[:, None]).astype(float)
    rate = np.cumsum(x, axis=1)[:, looks - 1] / looks
    hit = (rate == 0) | (rate > 0.2)
    stop = np.where(hit.any(axis=1), looks[np.argmax(hit, axis=1)], n_max)
    return [v[:s] for v, s in zip(x, stop, strict=True)]


def test_one_sided_anytime_set_level_bound_covers_under_optional_stopping_and_is_tighter():
    # coverage on 400 repetitions of a small set (issue 49): 3 binomial sd of slack is .145 at
    # alpha = .1, so a miss rate of 2 alpha would fail (80 repetitions let anything under .2 pass)
    rng = np.random.default_rng(5)
    kw = {"binary": True, "method": "one_sided", "correction": "sidak"}
    p = np.r_[np.zeros(2), np.full(2, 0.02), np.full(2, 0.3)]
    reps = 400
    looks = np.arange(8, 65, 8)
    one = np.array(
        [bounds.anytime_set_level_upper_bound(stopped_rows(rng, p, 64, looks), ALPHA, **kw)
         for _ in range(reps)]
    )  # fmt: skip
    assert (one < p.mean()).mean() <= slack(reps) < 2 * ALPHA - 0.05
    # tighter than the two-sided sequences, and betting than the normal mixture, on 15 prompts
    p = np.r_[np.zeros(5), np.full(5, 0.02), np.full(5, 0.3)]
    one, two = [], []
    for _ in range(10):
        rows = stopped_rows(rng, p, 128, np.arange(16, 129, 16))
        one.append(bounds.anytime_set_level_upper_bound(rows, ALPHA, **kw))
        two.append(bounds.anytime_set_level_upper_bound(rows, ALPHA, binary=True))
        scores = [np.where(v == 1, 0.9, 0.05) for v in rows]  # continuous: betting
        cont = bounds.anytime_set_level_upper_bound(scores, ALPHA, binary=False)
        bet = bounds.anytime_set_level_upper_bound(scores, ALPHA, **{**kw, "binary": False})
        assert bet < cont
    assert np.mean(one) < np.mean(two) - 0.01
    with pytest.raises(ValueError, match="method must be"):
        bounds.anytime_set_level_upper_bound(rows, binary=True, method="three")


def test_set_level_leak_at_k_covers_the_average_leak_at_k():
    rng = np.random.default_rng(6)
    p = rng.beta(0.3, 4.0, size=25)
    ks = [1, 5, 20]
    truth = np.array([np.mean(1 - (1 - p) ** k) for k in ks])
    reps, misses = 500, np.zeros(3)
    x = (rng.random((reps, p.size, 48)) < p[None, :, None]).astype(float)
    for r in range(reps):
        up = bounds.set_leak_at_k_upper(x[r], ks, ALPHA)
        misses += up < truth
    assert (misses / reps <= slack(reps)).all()
    u = bounds.set_level_upper_bound(x[0], ALPHA, binary=True)
    assert bounds.set_leak_at_k_upper(x[0], 5, ALPHA) == pytest.approx(1 - (1 - u) ** 5)
    # the bound on the average is below the average of the per-prompt leak@k bounds
    per_prompt = bounds.leak_at_k(x[0], 5, ALPHA)[1].mean()
    assert bounds.set_leak_at_k_upper(x[0], 5, ALPHA) < per_prompt


def test_sequential_decision_bounds_betting_settles_mostly_zero_scores_sooner():
    from probunlearn.sampling import decision_bounds

    draw = laws()["rouge mostly zero"][0]
    x = draw(np.random.default_rng(7), 1024)
    q = 0.2  # E[score] = .098: below q

    def samples_to_decide(sequence: str) -> int:
        for t in range(32, 1025, 32):
            lo, up = decision_bounds(x[:t], 0.01, binary=False, sequence=sequence)
            if up < q or lo > q:
                return t
        return 1024

    assert samples_to_decide("betting") < samples_to_decide("mixture")
    leaks = (x[:64] >= 0.5).astype(float)
    lo, up = decision_bounds(leaks, 0.01, binary=True, sequence="mixture")
    assert (lo, up) == tuple(float(v[-1]) for v in bounds.binary_confidence_sequence(leaks, 0.01))
    with pytest.raises(ValueError, match="sequence must be one of"):
        decision_bounds(x, 0.01, binary=False, sequence="hoeffding")


def test_bad_inputs():
    with pytest.raises(ValueError, match="scores must lie in"):
        bounds.betting_upper_bound([0.1, 1.5])
    with pytest.raises(ValueError, match="anytime must be True or False"):
        bounds.betting_upper_bound([0.1], anytime=1)
    with pytest.raises(ValueError, match="times must be increasing integers"):
        bounds.betting_confidence_sequence([0.1, 0.2], times=[2, 1])
    with pytest.raises(ValueError, match="takes one 1-D sequence"):
        bounds.betting_confidence_sequence(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="alpha"):
        bounds.general_leakage_bound_cp([0.1], 0.5, alpha=0.9)


def test_betting_bets_are_predictable():
    # the bet lambda_t may use X_1..X_{t-1} only (issue 49): changing X_t leaves lambda_1..lambda_t
    # unchanged and moves lambda_{t+1} (where it is below the cap); a bet that saw X_t would break
    # the supermartingale
    from probunlearn.bounds.betting import _bets

    rng = np.random.default_rng(12)
    x = laws()["zeros, ones, uniform"][0](rng, (50, 400))
    for horizon in (400, None):
        lam = _bets(x, math.log(1 / ALPHA), horizon)
        for t in (0, 1, 7, 38, 300):
            y = x.copy()
            y[:, t] = (x[:, t] + 0.37) % 1.0
            lam_y = _bets(y, math.log(1 / ALPHA), horizon)
            np.testing.assert_array_equal(lam_y[:, : t + 1], lam[:, : t + 1])
            free = lam[:, t + 1] < bounds.BET_CAP
            assert free.any() or t < 38
            assert (lam_y[free, t + 1] != lam[free, t + 1]).any() or not free.any()

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

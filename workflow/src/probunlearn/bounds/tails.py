"""A tail-adaptive general leakage bound: Clopper-Pearson per threshold of a fixed grid.

The paper's M_gen(t) = 1 - F_n(t) + eps adds the same DKW eps = sqrt(ln(1/alpha) / 2n) at every
threshold, which is loose where the tail P(X > t) is small (Bernoulli(.1), n = 128: +.136). Here
each threshold t of a grid fixed in advance gets the one-sided Clopper-Pearson bound on P(X > t)
from the count #{X_i > t}, at level alpha / K, K the number of grid thresholds in [0, 1): by the
union bound all K hold together with probability >= 1 - alpha, as M_gen's do for every t.
P(X > t) = 0 for t >= 1 and 1 for t < 0 (scores lie in [0, 1]), so those thresholds cost no alpha.
Between grid points, P(X > t) <= P(X > g) for the largest grid point g <= t.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from probunlearn.bounds.per_prompt import (
    as_scores,
    check_alpha,
    check_thresholds,
    clopper_pearson_upper,
    counts_le,
)


def gen_cp_key(t: float) -> str:
    """Column name of the Clopper-Pearson general leakage bound at threshold t: ``m_gen_cp_0.5``."""
    return "m_gen_cp_" + np.format_float_positional(float(t), trim="0")


def general_leakage_bound_cp(x: ArrayLike, thresholds: ArrayLike, alpha: float = 0.01) -> Any:
    """Upper bounds on P(X > t) for every grid threshold t at once, at level 1 - alpha.

    ``thresholds``: the grid, fixed before looking at the scores (for example 0, 0.1, ..., 1).
    Output shape as :func:`probunlearn.bounds.general_leakage_bound`: ``x.shape[:-1] +
    shape(thresholds)``.
    """
    a = check_alpha(alpha)
    t, scalar_t = check_thresholds(thresholds)
    x2, is_1d = as_scores(x)
    n = x2.shape[1]
    inner = (t >= 0.0) & (t < 1.0)
    k = int(inner.sum())
    out = np.where(t < 0.0, 1.0, 0.0)[None, :].repeat(x2.shape[0], axis=0)
    if k:
        above = n - counts_le(x2, t[inner])  # #{X > t}
        out[:, inner] = clopper_pearson_upper(above, n, a / k)
    if is_1d:
        return float(out[0, 0]) if scalar_t else out[0]
    return out[:, 0] if scalar_t else out

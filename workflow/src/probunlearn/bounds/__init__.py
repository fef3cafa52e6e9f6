"""High-probability metrics of an output distribution (paper §4, DESIGN.md §4), and beyond.

Scores ``X_1..X_n`` in [0, 1] per prompt, significance level ``alpha``: every bound holds with
probability at least ``1 - alpha``. 1-D input (one prompt) gives a float, 2-D (prompts x samples)
one value per prompt. Pure numpy/scipy; torch is never imported here.

``per_prompt`` holds the paper's bounds, ``sets`` the bounds beyond the paper (set-level,
simultaneous, anytime-valid, leak@k), ``auc`` the AUC of two samples (membership inference) with a
distribution-free interval and MUSE's PrivLeak, ``family`` the bounds on a prompt attack's family of
prompts (every member at once, and the worst); every name is importable from here.
"""

from probunlearn.bounds.auc import (
    AUC_METHODS,
    auc_interval,
    mann_whitney_auc,
    muse_auc,
    privleak,
    privleak_interval,
)
from probunlearn.bounds.family import family_alpha, family_bounds, family_upper_bounds
from probunlearn.bounds.per_prompt import (
    as_scores,
    binary_leakage_bound,
    check_alpha,
    clopper_pearson_upper,
    default_thresholds,
    dkw_epsilon,
    ed_score,
    expectation_bounds,
    expectation_upper_bound,
    general_leakage_bound,
    grid,
    leak_key,
    samples_needed,
    std_upper_bound,
    summarize,
    threshold_key,
)
from probunlearn.bounds.sets import (
    anytime_set_level_upper_bound,
    binary_confidence_sequence,
    leak_at_k,
    mean_confidence_sequence,
    set_level_upper_bound,
    simultaneous_upper_bounds,
)

__all__ = [
    "AUC_METHODS",
    "as_scores",
    "auc_interval",
    "check_alpha",
    "clopper_pearson_upper",
    "anytime_set_level_upper_bound",
    "binary_confidence_sequence",
    "binary_leakage_bound",
    "default_thresholds",
    "dkw_epsilon",
    "ed_score",
    "expectation_bounds",
    "expectation_upper_bound",
    "family_alpha",
    "family_bounds",
    "family_upper_bounds",
    "general_leakage_bound",
    "grid",
    "leak_at_k",
    "leak_key",
    "mann_whitney_auc",
    "mean_confidence_sequence",
    "muse_auc",
    "privleak",
    "privleak_interval",
    "samples_needed",
    "set_level_upper_bound",
    "simultaneous_upper_bounds",
    "std_upper_bound",
    "summarize",
    "threshold_key",
]

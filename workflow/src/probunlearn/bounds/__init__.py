"""High-probability metrics of an output distribution (paper §4, DESIGN.md §4), and beyond.

Scores ``X_1..X_n`` in [0, 1] per prompt, significance level ``alpha``: every bound holds with
probability at least ``1 - alpha``. 1-D input (one prompt) gives a float, 2-D (prompts x samples)
one value per prompt. Pure numpy/scipy; torch is never imported here.

``per_prompt`` holds the paper's bounds, ``sets`` the bounds beyond the paper (set-level,
simultaneous, anytime-valid, leak@k), ``betting`` the variance-adaptive bounds on the mean (fixed
n and anytime), ``tails`` the Clopper-Pearson general leakage bound on a fixed grid,
``differences`` intervals on the difference of two models over the same prompts (the jackknife's,
asymptotic) and Holm's procedure, ``eb_difference`` the finite-sample interval on such a
difference, ``auc`` the AUC of two samples (membership inference) with a distribution-free interval
and MUSE's PrivLeak, ``family`` the bounds on a prompt attack's family of prompts (every member at
once, and the worst); every name is importable from here.
"""

from probunlearn.bounds.auc import (
    AUC_METHODS,
    auc_interval,
    mann_whitney_auc,
    muse_auc,
    privleak,
    privleak_interval,
)
from probunlearn.bounds.betting import (
    BET_CAP,
    betting_bounds,
    betting_confidence_sequence,
    betting_upper_bound,
)
from probunlearn.bounds.differences import Difference, holm, paired_difference
from probunlearn.bounds.eb_difference import (
    DifferenceInterval,
    difference_bounds,
    difference_interval,
)
from probunlearn.bounds.family import family_alpha, family_bounds, family_upper_bounds
from probunlearn.bounds.per_prompt import (
    as_scores,
    binary_leakage_bound,
    check_alpha,
    check_thresholds,
    clopper_pearson_upper,
    counts_le,
    default_thresholds,
    dkw_epsilon,
    ed_from_moments,
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
    MEAN_CS_RHO_SAMPLES,
    anytime_set_level_upper_bound,
    binary_confidence_sequence,
    binary_upper_confidence_sequence,
    leak_at_k,
    mean_confidence_sequence,
    normal_mixture_rho,
    set_leak_at_k_upper,
    set_level_upper_bound,
    simultaneous_level,
    simultaneous_upper_bounds,
)
from probunlearn.bounds.tails import gen_cp_key, general_leakage_bound_cp

__all__ = [
    "AUC_METHODS",
    "BET_CAP",
    "MEAN_CS_RHO_SAMPLES",
    "Difference",
    "DifferenceInterval",
    "as_scores",
    "auc_interval",
    "check_alpha",
    "check_thresholds",
    "clopper_pearson_upper",
    "counts_le",
    "anytime_set_level_upper_bound",
    "betting_bounds",
    "betting_confidence_sequence",
    "betting_upper_bound",
    "binary_confidence_sequence",
    "binary_leakage_bound",
    "binary_upper_confidence_sequence",
    "default_thresholds",
    "difference_bounds",
    "difference_interval",
    "dkw_epsilon",
    "ed_from_moments",
    "ed_score",
    "expectation_bounds",
    "expectation_upper_bound",
    "gen_cp_key",
    "family_alpha",
    "family_bounds",
    "family_upper_bounds",
    "general_leakage_bound",
    "general_leakage_bound_cp",
    "grid",
    "holm",
    "leak_at_k",
    "leak_key",
    "mann_whitney_auc",
    "mean_confidence_sequence",
    "normal_mixture_rho",
    "paired_difference",
    "muse_auc",
    "privleak",
    "privleak_interval",
    "samples_needed",
    "set_leak_at_k_upper",
    "set_level_upper_bound",
    "simultaneous_level",
    "simultaneous_upper_bounds",
    "std_upper_bound",
    "summarize",
    "threshold_key",
]

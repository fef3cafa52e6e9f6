"""The paper's claims, tested on a run's own tables (``results/{run}/tables/claims.csv``).

Claims are data (issue 48): ``declarations.CLAIMS`` declares each (paper text, where, the test, the
tables and scores it reads, its direction, its point test in ``measures``, its interval in
``intervals`` or why it has none; thresholds in ``thresholds``), and ``evaluator`` computes value,
interval and the verdicts ``holds``, ``holds_interval`` and ``holds_holm`` for all of them
(docs/claims.md). Torch-free.
"""

from probunlearn.report.claims.declarations import CLAIMS
from probunlearn.report.claims.evaluator import (
    COLUMNS,
    INTERVAL_COLUMNS,
    NO,
    NO_INTERVAL,
    NOT_SHOWN,
    SCHEMA,
    TABLE_COLUMNS,
    TABLE_SCHEMA,
    YES,
    claim_named,
    claims_markdown,
    claims_table,
    point,
    write_claims,
)
from probunlearn.report.claims.spec import Check, Claim, Measured, NoInterval, Part, Tested
from probunlearn.report.claims.thresholds import (
    CONF_BAND,
    CONF_RISE,
    DCUE_CONCORDANCE,
    FIG5C_MAX_ABS_RHO,
    FIG5C_MIN_MODELS,
    MBIN_LEVEL,
    MEAN_MATCH_TOL,
    OURS_STD_RATIO,
    PAPER_MAX_LAMBDA_F,
    RESTORE_MIN,
    RETAIN_METHODS,
    STD_DROP_RATIO,
    T1_BASELINES,
    UTILITY_BAND,
)

__all__ = [
    "CLAIMS", "COLUMNS", "INTERVAL_COLUMNS", "NO", "NO_INTERVAL", "NOT_SHOWN", "SCHEMA",
    "TABLE_COLUMNS", "TABLE_SCHEMA", "YES", "Check", "Claim", "Measured", "NoInterval", "Part",
    "Tested", "claim_named", "claims_markdown", "claims_table", "point", "write_claims",
    "CONF_BAND", "CONF_RISE", "DCUE_CONCORDANCE", "FIG5C_MAX_ABS_RHO", "FIG5C_MIN_MODELS",
    "MBIN_LEVEL", "MEAN_MATCH_TOL", "OURS_STD_RATIO", "PAPER_MAX_LAMBDA_F", "RESTORE_MIN",
    "RETAIN_METHODS", "STD_DROP_RATIO", "T1_BASELINES", "UTILITY_BAND",
]  # fmt: skip

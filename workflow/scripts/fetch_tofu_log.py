"""Rule fetch_tofu_log: TOFU's published forget-set eval log of its retain-only model (pinned, verified)."""

from probunlearn.benchmarks.tofu.eval_logs import fetch_tofu_eval_log
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    fetch_tofu_eval_log(sm.wildcards.family, sm.wildcards.split, sm.output[0])

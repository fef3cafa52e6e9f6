"""Rule score_shard: score every sample of one shard."""

from probunlearn.sampled_eval import run_score_shard
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_score_shard(sm.input.samples, sm.input.evalset, sm.output[0])

"""Rule muse_table: MUSE's greedy metrics beside the sampled scores and DCUE, per model and set."""

from probunlearn.benchmarks.muse_news.steps import run_muse_table
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_muse_table(list(sm.input), sm.output.table)

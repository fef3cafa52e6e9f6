"""Rule fig5a: diversity (1 - self-BLEU) on the utility sets against lambda_r."""

from probunlearn.report.experiments import make_fig5a
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_fig5a(
        runs=sm.params.runs["runs"],
        npo_runs=sm.params.runs["npo"],
        out_stem=sm.params.figure,
        table_stem=sm.params.table,
    )

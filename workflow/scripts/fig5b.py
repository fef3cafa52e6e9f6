"""Rule fig5b: confidence per unlearning epoch, forget vs retain."""

from probunlearn.report.experiments import make_fig5b
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_fig5b(
        histories=sm.params.histories,
        out_stem=sm.params.figure,
        table_stem=sm.params.table,
    )

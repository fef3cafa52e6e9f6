"""Rule membership_table: each model's AUC per statistic with its interval, PrivLeak, the figure."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.membership import run_membership_table

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_membership_table(
        sm.params.parts,
        csv_path=sm.output.table,
        figure_stem=sm.params.figure,
        **sm.params.run,
    )

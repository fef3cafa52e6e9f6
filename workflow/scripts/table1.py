"""Rule table1: greedy ROUGE-L vs ED score, mean and std per unlearning method."""

from probunlearn.report.experiments import make_table1
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_table1(
        scores=sm.params.scores,
        csv_path=sm.output.csv,
        render_stem=sm.params.render,
        rho=sm.params.rho,
        decimals=sm.params.decimals,
    )

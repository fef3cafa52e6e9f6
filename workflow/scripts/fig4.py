"""Rule fig4: std of the leakage distribution against lambda_f (4a) and temperature (4b)."""

from probunlearn.report.experiments import make_fig4
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
p = sm.params
with log_to(sm.log[0]):
    make_fig4(
        lambda_f_scores=p.runs["lambda_f"],
        temperature_scores=p.runs["temperature"],
        out_a=p.figures["fig4a"],
        table_a=p.tables["fig4a"],
        out_b=p.figures["fig4b"],
        table_b=p.tables["fig4b"],
    )

"""Rule claims: the paper's claims tested on the run's tables (claims.csv and claims.md)."""

from probunlearn.report.claims import write_claims
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    write_claims(
        sm.params.tables,
        sm.output.csv,
        sm.output.md,
        lambda_f=sm.params.lambda_f,
        scores=sm.params.scores,
        alpha=sm.params.alpha,
        rho=sm.params.rho,
    )

"""Rule refusals: the "I don't know" answers of the IDK and DPO unlearning methods."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.refusals import run_refusals

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_refusals(sm.output[0], source=sm.params.source)

"""Rule rwku_survey: the original model's survey (Part A) and the selection rule's choice."""

from probunlearn.benchmarks.rwku.steps import run_rwku_survey
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_rwku_survey(dict(sm.input), list(sm.output.tables), **sm.params.run)

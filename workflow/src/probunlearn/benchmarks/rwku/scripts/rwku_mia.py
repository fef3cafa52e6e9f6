"""Rule rwku_mia: RWKU's membership-inference statistics of one model."""

from probunlearn.benchmarks.rwku.steps import run_rwku_mia
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_rwku_mia(list(sm.input.sets), sm.output.stats, load=sm.params.load, **sm.params.run)

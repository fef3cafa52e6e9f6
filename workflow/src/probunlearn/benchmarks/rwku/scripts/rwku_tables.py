"""Rule rwku_tables: RWKU's tables and figure of a run."""

from probunlearn.benchmarks.rwku.steps import run_rwku_tables
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_rwku_tables(dict(sm.input), list(sm.output.tables), sm.params.figure, **sm.params.run)

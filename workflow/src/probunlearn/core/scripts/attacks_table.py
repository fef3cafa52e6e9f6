"""Rule attacks_table: the leak bounds before and after each attack (the attack table, its figure)."""

from probunlearn.report.attacks import make_attacks
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_attacks(sm.params.cases, sm.output.table, sm.params.figure, **sm.params.settings)

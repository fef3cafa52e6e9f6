"""Rule fig3a: M_bin per saga keyword question for the saga-unlearned model."""

from probunlearn.report.experiments import make_fig3a
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_fig3a(
        bounds_path=sm.input.bounds,
        scores_path=sm.input.scores,
        evalset_path=sm.input.evalset,
        out_stem=sm.params.figure,
        table_stem=sm.params.table,
        alpha=sm.params.alpha,
    )

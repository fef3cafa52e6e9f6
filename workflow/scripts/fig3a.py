"""Rule fig3a: M_bin per saga keyword question for the saga-unlearned model."""

from probunlearn.experiments import make_fig3a
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_fig3a(
        sm.input.bounds,
        sm.input.scores,
        sm.input.evalset,
        sm.output[0][: -len(".png")],
        sm.output.table[: -len(".csv")],
        alpha=sm.params.alpha,
    )

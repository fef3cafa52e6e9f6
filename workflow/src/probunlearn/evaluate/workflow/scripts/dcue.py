"""Rule dcue: DCUE of one evaluated model against the original model."""

from probunlearn.evaluate.jobs import dcue
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    dcue(
        inputs=dict(sm.input.items()),
        out_csv=sm.output.metrics,
        out_confidences=sm.output.confidences,
        model=sm.wildcards.model,
        forget_set=sm.params.forget_set,
    )

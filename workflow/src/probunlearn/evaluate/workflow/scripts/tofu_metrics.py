"""Rule tofu_metrics: TOFU's forget quality and model utility of one evaluated model."""

from probunlearn.evaluate.jobs import tofu_metrics
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    tofu_metrics(
        out_csv=sm.output[0],
        model=sm.wildcards.model,
        forget_set=sm.params.forget_set,
        inputs=dict(sm.input.items()),
    )

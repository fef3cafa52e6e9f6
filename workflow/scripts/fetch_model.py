"""Rule fetch_model: a preset's real model as a safetensors directory in resources/models/."""

from probunlearn.models.hub import fetch_model
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    fetch_model(sm.output[0], dtype=sm.params.dtype, **sm.params.spec)

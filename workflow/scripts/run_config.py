"""Rule run_config: write the run's effective configuration (provenance)."""

from probunlearn.config import dump_config
from probunlearn.steps.logs import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    dump_config(snakemake.params.config, snakemake.output[0])  # noqa: F821

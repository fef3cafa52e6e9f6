"""Rule world: write the synthetic world's eval sets and pretraining corpus."""

from pathlib import Path

from probunlearn.data.synthetic import build_world
from probunlearn.steps.logs import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    build_world(Path(snakemake.output[0]).parent, **snakemake.params.world)  # noqa: F821

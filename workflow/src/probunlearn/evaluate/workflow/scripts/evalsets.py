"""Rule evalsets: the data sets of the evaluation as parquet files."""

from probunlearn.evaluate.jobs import write_sets
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    write_sets(config=sm.config, out_paths=dict(zip(sm.params.sets, sm.output, strict=True)))

"""Rule fetch_data: one verified file of a real data set into resources/data/<data set>/."""

from probunlearn.benchmarks import fetch_dataset
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    fetch_dataset(
        sm.wildcards.dataset,
        sm.output[0],  # a file in the data set's folder: fetch_dataset finds the folder
        files=[sm.params.key],
        source=sm.params.local,
        revision=sm.params.revision,
    )

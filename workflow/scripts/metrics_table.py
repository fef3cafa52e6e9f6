"""Rule metrics_table: gather every metric part into results/{run}/tables/metrics.csv."""

from probunlearn.metrics.table import gather_metrics
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    gather_metrics(list(sm.input), sm.output[0])

"""Rule fig6: the alignment experiment (harm of sampled answers, M_bin over harmful requests)."""

from probunlearn.report.experiments import make_fig6
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
labels = sm.params.labels
with log_to(sm.log[0]):
    make_fig6(
        scores=dict(zip(labels, sm.input.scores, strict=True)),
        bounds=dict(zip(labels, sm.input.bounds, strict=True)),
        out_stem=sm.params.figure,
        table_stem=sm.params.table,
        alpha=sm.params.alpha,
    )

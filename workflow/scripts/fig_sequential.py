"""Rule fig_sequential: samples used per prompt and decisions of the sequential setting."""

from probunlearn.report.experiments import make_fig_sequential
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
seq = sm.params.sequential
with log_to(sm.log[0]):
    make_fig_sequential(
        bounds_paths=dict(sm.input.items()),
        out_stem=sm.params.figure,
        table_stem=sm.params.table,
        n_max=sm.params.n_max,
        q=seq["q"],
        leak_threshold=seq["leak_threshold"],
        alpha=seq["alpha"],
    )

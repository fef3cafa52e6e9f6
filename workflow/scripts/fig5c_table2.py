"""Rule fig5c_table2: ED score vs model utility (Fig. 5c) and utility on the lambda grids (Table 2)."""

from probunlearn.report.experiments import make_fig5c_table2
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_fig5c_table2(
        random_runs=sm.params.runs["random"],
        grid_runs=sm.params.runs["grid"],
        out_stem=sm.params.figure,
        table_stem=sm.params.table,
        table2_csv=sm.output.table2,
        table2_render=sm.params.render,
    )

"""Rule fig5c_table2: ED score vs model utility (Fig. 5c) and utility on the lambda grids (Table 2)."""

from probunlearn.experiments import make_fig5c_table2
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    make_fig5c_table2(
        sm.params.runs["random"],
        sm.params.runs["grid"],
        sm.output[0][: -len(".png")],
        sm.output.table[: -len(".csv")],
        sm.output.table2,
        sm.output.render[0][: -len(".md")],
    )

"""Rule fig4: std of the leakage distribution against lambda_f (4a) and temperature (4b)."""

from probunlearn.experiments import make_fig4
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
p = sm.params
with log_to(sm.log[0]):
    make_fig4(
        p.runs["lambda_f"],
        p.runs["temperature"],
        f"{p.fig}/fig4a",
        f"{p.tab}/fig4a",
        f"{p.fig}/fig4b",
        f"{p.tab}/fig4b",
    )

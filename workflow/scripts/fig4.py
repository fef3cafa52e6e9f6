"""Rule fig4: std of the leakage distribution against lambda_f (4a) and temperature (4b)."""

from probunlearn.experiments import make_fig4
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
p = sm.params
fig = sm.output[0].rsplit("/", 1)[0]
tab = sm.output.tables[0].rsplit("/", 1)[0]
with log_to(sm.log[0]):
    make_fig4(
        p.runs["lambda_f"],
        p.runs["temperature"],
        f"{fig}/fig4a",
        f"{tab}/fig4a",
        f"{fig}/fig4b",
        f"{tab}/fig4b",
    )

"""Rule fig3_tofu: Fig. 3b-f on one forget question."""

from probunlearn.experiments import make_fig3_tofu
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
p = sm.params
fig = sm.output[0].rsplit("/", 1)[0]
tab = sm.output.tables[0].rsplit("/", 1)[0]
with log_to(sm.log[0]):
    make_fig3_tofu(
        p.scores,
        sm.input.evalset,
        {n: f"{fig}/{n}" for n in ("fig3b", "fig3c", "fig3d", "fig3e", "fig3f")},
        {n: f"{tab}/{n}" for n in ("fig3b", "fig3c", "fig3d", "fig3ef")},
        alpha=p.alpha,
        points=p.points,
    )

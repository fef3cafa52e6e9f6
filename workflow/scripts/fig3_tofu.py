"""Rule fig3_tofu: Fig. 3b-f on one forget question."""

from probunlearn.experiments import make_fig3_tofu
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
p = sm.params
with log_to(sm.log[0]):
    make_fig3_tofu(
        p.scores,
        sm.input.evalset,
        {n: f"{p.fig}/{n}" for n in ("fig3b", "fig3c", "fig3d", "fig3e", "fig3f")},
        {n: f"{p.tab}/{n}" for n in ("fig3b", "fig3c", "fig3d", "fig3ef")},
        alpha=p.alpha,
        points=p.points,
    )

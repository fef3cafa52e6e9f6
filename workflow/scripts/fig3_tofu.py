"""Rule fig3_tofu: Fig. 3b-f on one forget question."""

from probunlearn.report.experiments import make_fig3_tofu
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
p = sm.params
with log_to(sm.log[0]):
    make_fig3_tofu(
        scores=p.scores,
        evalset_path=sm.input.evalset,
        outs=p.figures,
        tables=p.tables,
        alpha=p.alpha,
        points=p.points,
    )

"""Rule unlearn: turn the target model into an unlearned model."""

from probunlearn.unlearning import run_unlearn
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_unlearn(
        sm.input.target,
        sm.input.forget,
        sm.input.retain,
        sm.output.model,
        sm.output.history,
        recipe=sm.params.recipe,
        hparams=sm.params.hparams,
        **sm.params.run,
    )

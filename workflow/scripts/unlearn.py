"""Rule unlearn: turn the target model into an unlearned model."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.unlearn import run_unlearn

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_unlearn(
        target_dir=sm.input.target,
        forget_path=sm.input.forget,
        retain_path=sm.input.retain,
        out_dir=sm.output.model,
        history_path=sm.output.history,
        refusals_path=sm.input.get("refusals"),
        recipe=sm.params.recipe,
        hparams=sm.params.hparams,
        **sm.params.run,
    )

"""Rule teacher: a model's log-probabilities and TOFU's greedy ROUGE (forget quality, utility, DCUE)."""

from probunlearn.evaluate.jobs import teacher
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    teacher(
        model_name=sm.wildcards.model,
        logprob_paths=list(sm.input.logprob_sets),
        out_logprobs=list(sm.output.logprobs),
        tofu_paths=list(sm.input.tofu_sets),
        tofu_sets=sm.params.tofu_sets,
        out_metrics=sm.output.metrics,
        out_tofu_answers=sm.output.answers,
        **sm.params.load,
        **sm.params.run,
    )

"""Rule evaluate: greedy answers, TOFU's own greedy answers and per-token log-probabilities of one model."""

from probunlearn.steps.greedy import run_evaluation
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
load = {k: v for k, v in sm.params.load.items() if k != "identity"}  # identity: reruns only
with log_to(sm.log[0]):
    run_evaluation(
        greedy_paths=list(sm.input.greedy_sets),
        out_csv=sm.output.metrics,
        out_answers=sm.output.answers,
        logprob_paths=list(sm.input.logprob_sets),
        out_logprobs=list(sm.output.logprobs),
        tofu_paths=list(sm.input.tofu_sets),
        out_tofu_answers=sm.output.tofu_answers,
        model_name=sm.wildcards.model,
        **load,
        **sm.params.run,
    )

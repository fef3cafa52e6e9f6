"""Rule muse_eval: MUSE's greedy ROUGE-L and DCUE's log-probabilities of one model."""

from probunlearn.benchmarks.muse_news.steps import run_muse_eval
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
method, split = sm.params.recipe
with log_to(sm.log[0]):
    run_muse_eval(
        sm.input.model,
        set_paths=list(sm.input.sets),
        sample_paths=list(sm.input.samples),
        logprob_paths=list(sm.input.logprob_sets),
        out_metrics=sm.output.metrics,
        out_answers=sm.output.answers,
        out_logprobs=list(sm.output.logprobs),
        model_name=sm.wildcards.model,
        method=method,
        split=split,
        **sm.params.run,
    )

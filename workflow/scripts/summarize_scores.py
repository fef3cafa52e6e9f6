"""Rule summarize_scores: join score shards, bound every prompt, write metric rows."""

from probunlearn.sampled_eval import summarize_scores
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
method, split = sm.params.recipe
with log_to(sm.log[0]):
    summarize_scores(
        list(sm.input),
        sm.output.scores,
        sm.output.bounds,
        sm.output.metrics,
        model=sm.wildcards.model,
        method=method,
        split=split,
        evalset=sm.wildcards.evalset,
        setting=sm.wildcards.setting,
        **sm.params.bounds,
    )

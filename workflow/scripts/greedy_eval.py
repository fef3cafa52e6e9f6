"""Rule greedy_eval: one greedy answer per question, scored into metric rows."""

from probunlearn.evaluation import run_greedy_eval
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
method, split = sm.params.recipe
with log_to(sm.log[0]):
    run_greedy_eval(
        sm.input.model,
        list(sm.input.evalsets),
        sm.output.metrics,
        sm.output.answers,
        model_name=sm.wildcards.model,
        method=method,
        split=split,
        evalsets=sm.params.evalsets,
        template=sm.params.template,
        max_new_tokens=sm.params.max_new_tokens,
        batch_size=sm.params.batch_size,
        threads=sm.params.threads,
    )

"""Rule tofu_metrics: forget quality (KS test against the reference model) and model utility."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.tofu import run_tofu_metrics

sm = snakemake  # noqa: F821
method, split = sm.params.recipe
with log_to(sm.log[0]):
    run_tofu_metrics(
        out_csv=sm.output[0],
        model=sm.wildcards.model,
        method=method,
        split=split,
        forget_logprobs=sm.input.get("forget"),
        reference_forget_logprobs=sm.input.get("reference"),
        reference_log=sm.input.get("reference_log"),
        forget_rows=sm.input.get("forget_rows"),
        retain_logprobs=sm.input.retain,
        real_authors_logprobs=sm.input.real_authors,
        world_facts_logprobs=sm.input.world_facts,
        rouge=sm.input.greedy,
        forget_evalset=sm.params.forget_split or None,
        max_questions=sm.params.ds_size,
    )

"""Rule tofu_metrics: forget quality (KS test against the reference model) and model utility."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.tofu import run_tofu_metrics

sm = snakemake  # noqa: F821
i = sm.input
with log_to(sm.log[0]):
    run_tofu_metrics(
        out_csv=sm.output[0],
        model=sm.wildcards.model,
        forget_logprobs=i.get("forget"),
        reference_forget_logprobs=i.get("reference"),
        reference_log=i.get("reference_log"),
        forget_rows=i.get("forget_rows"),
        retain_logprobs=i.get("retain"),
        real_authors_logprobs=i.get("real_authors"),
        world_facts_logprobs=i.get("world_facts"),
        rouge=i.get("greedy"),
        **sm.params.run,
    )

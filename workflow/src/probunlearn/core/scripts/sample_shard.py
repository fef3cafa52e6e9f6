"""Rule sample_shard: greedy answer and n samples for one chunk of prompts."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.sample import run_sample_shard_rule

sm = snakemake  # noqa: F821
load = {k: v for k, v in sm.params.load.items() if k != "identity"}  # identity: reruns only
with log_to(sm.log[0]):
    run_sample_shard_rule(
        model=sm.wildcards.model,
        evalset=sm.wildcards.evalset,
        setting=sm.wildcards.setting,
        evalset_path=sm.input.evalset,
        out_path=sm.output[0],
        shard=int(sm.wildcards.k),
        **load,
        **sm.params.sampling,
    )

"""Rule sample: the greedy answer and n samples of one shard of prompts, for one model."""

from probunlearn.evaluate.jobs import sample_shard
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    sample_shard(
        evalset_path=sm.input.evalset,
        out_path=sm.output[0],
        shard=int(sm.wildcards.k),
        seed_key=sm.wildcards.model,
        **sm.params.load,
        **sm.params.sampling,
    )

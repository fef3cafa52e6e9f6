"""Rule sample_shard: greedy answer and n samples for one chunk of prompts."""

from probunlearn.sampling import run_sampling_shard
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
p = sm.params
with log_to(sm.log[0]):
    run_sampling_shard(
        sm.input.model,
        sm.input.evalset,
        sm.output[0],
        shard=int(sm.wildcards.k),
        chunk_size=p.chunk_size,
        dtype=p.dtype,
        threads=p.threads,
        device=p.device,
        n=p.n,
        top_p=p.top_p,
        temperature=p.temperature,
        max_new_tokens=p.max_new_tokens,
        template=p.template,
        seed_key=f"{sm.wildcards.model}/{sm.wildcards.evalset}",
        base_seed=p.seed,
        batch_size=p.batch_size,
        adaptive_threshold=p.adaptive_threshold,
    )

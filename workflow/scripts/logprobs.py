"""Rule logprobs: teacher-forced log-probabilities of one model on the TOFU/DCUE eval sets."""

from probunlearn.evaluation import run_logprobs_sets
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_logprobs_sets(
        sm.input.model,
        list(sm.input.evalsets),
        list(sm.output),
        template=sm.params.template,
        dtype=sm.params.dtype,
        device=sm.params.device,
        threads=sm.params.threads,
    )

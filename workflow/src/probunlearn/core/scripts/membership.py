"""Rule membership: one model's per-example membership statistics on the forget and holdout sets."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.membership import run_membership

sm = snakemake  # noqa: F821
load = {k: v for k, v in sm.params.load.items() if k != "identity"}  # identity: reruns only
with log_to(sm.log[0]):
    run_membership(
        forget_path=sm.input.forget,
        holdout_path=sm.input.holdout,
        reference_path=sm.input.get("reference"),
        out_path=sm.output[0],
        model_name=sm.wildcards.model,
        **load,
        **sm.params.run,
    )

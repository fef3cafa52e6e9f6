"""Rule dcue: distribution-corrected unlearning evaluation of one unlearned model vs the target."""

from probunlearn.dcue import run_dcue
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
method, split = sm.params.recipe
i = sm.input
with log_to(sm.log[0]):
    run_dcue(
        i.orig_forget,
        i.unl_forget,
        i.orig_val,
        i.unl_val,
        i.forget_rows,
        i.val_rows,
        sm.output.metrics,
        model_name=sm.wildcards.model,
        method=method,
        split=split,
        out_confidences=sm.output.confidences,
        core_model=sm.params.core_model,
        core_model_revision=sm.params.core_model_revision,
        core_prompts=sm.params.core_prompts,
    )

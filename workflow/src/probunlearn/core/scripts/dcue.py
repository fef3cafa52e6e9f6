"""Rule dcue: distribution-corrected unlearning evaluation of one unlearned model vs the original."""

from probunlearn.steps.dcue import run_dcue
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
i = sm.input
with log_to(sm.log[0]):
    run_dcue(
        orig_forget_logprobs=i.orig_forget,
        unl_forget_logprobs=i.unl_forget,
        orig_val_logprobs=i.orig_val,
        unl_val_logprobs=i.unl_val,
        forget_rows_path=i.forget_rows,
        val_rows_path=i.val_rows,
        out_csv=sm.output.metrics,
        model_name=sm.wildcards.model,
        out_confidences=sm.output.confidences,
        **sm.params.run,
    )

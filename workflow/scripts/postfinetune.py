"""Rule postfinetune: forget quality and DCUE of an unlearned model after a short unrelated fine-tune."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.postfinetune import run_postfinetune

sm = snakemake  # noqa: F821
method, split = sm.params.recipe
i = sm.input
with log_to(sm.log[0]):
    run_postfinetune(
        model_dir=i.model,
        unrelated_paths=list(i.unrelated),
        forget_rows_path=i.forget_rows,
        val_rows_path=i.val_rows,
        orig_forget_logprobs=i.orig_forget,
        orig_val_logprobs=i.orig_val,
        reference_forget_logprobs=i.get("reference"),
        out_forget_logprobs=sm.output.forget,
        out_val_logprobs=sm.output.val,
        out_csv=sm.output.metrics,
        model_name=sm.wildcards.model,
        method=method,
        split=split,
        train=sm.params.train,
        tofu=sm.params.tofu,
        reference_log=i.get("reference_log"),
        **sm.params.run,
    )

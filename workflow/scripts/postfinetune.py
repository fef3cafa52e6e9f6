"""Rule postfinetune: forget quality and DCUE of an unlearned model after a short unrelated fine-tune."""

from probunlearn.robustness import run_postfinetune
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
method, split = sm.params.recipe
i = sm.input
with log_to(sm.log[0]):
    run_postfinetune(
        i.model,
        list(i.unrelated),
        i.forget_rows,
        i.val_rows,
        i.orig_forget,
        i.orig_val,
        i.get("reference"),
        sm.output.forget,
        sm.output.val,
        sm.output.metrics,
        model_name=sm.wildcards.model,
        method=method,
        split=split,
        train=sm.params.train,
        tofu=sm.params.tofu,
        reference_log=i.get("reference_log"),
        **sm.params.run,
    )

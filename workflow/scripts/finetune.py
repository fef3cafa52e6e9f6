"""Rules target and reference: fine-tune the pretrained model on a split of the authors."""

from probunlearn.training import run_finetune
from probunlearn.wf import log_to

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_finetune(
        sm.input.base,
        sm.input.split,
        sm.input.corpus,
        sm.output[0],
        train=sm.params.train,
        **sm.params.run,
    )

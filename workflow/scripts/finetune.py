"""Rules target and reference: fine-tune the pretrained model on a split of the authors."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.train import run_finetune

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_finetune(
        base_dir=sm.input.base,
        split_path=sm.input.split,
        corpus_path=sm.input.corpus,
        out_dir=sm.output[0],
        train=sm.params.train,
        **sm.params.run,
    )

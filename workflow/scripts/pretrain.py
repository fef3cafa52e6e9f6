"""Rule pretrain: train the tiny Llama from scratch on the world's corpus."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.train import run_pretrain

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_pretrain(
        tokenizer_dir=sm.input.tokenizer,
        corpus_path=sm.input.corpus,
        out_dir=sm.output[0],
        arch=sm.params.arch,
        train=sm.params.train,
        **sm.params.run,
    )

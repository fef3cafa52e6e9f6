"""Rule tokenizer: train the BPE tokenizer on the world."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.train import run_tokenizer

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_tokenizer(
        list(sm.input),
        sm.output[0],
        vocab_size=sm.params.vocab_size,
        add_bos=sm.params.add_bos,
    )

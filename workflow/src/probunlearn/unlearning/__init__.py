"""Unlearning: the loop (:mod:`~probunlearn.unlearning.loop`), which runs any method of the registry
:data:`probunlearn.methods.METHODS`, and the losses the built-in methods are made of
(:mod:`~probunlearn.unlearning.losses`)."""

from probunlearn.unlearning.loop import add_lora, decoder_layers, retain_pairs, unlearn

__all__ = ["add_lora", "decoder_layers", "retain_pairs", "unlearn"]

"""Unlearning: the loop (:mod:`~probunlearn.unlearning.loop`) and the losses
(:mod:`~probunlearn.unlearning.losses`)."""

from probunlearn.unlearning.loop import (
    METHODS,
    add_lora,
    decoder_layers,
    retain_pairs,
    rmu_parameter_names,
    unlearn,
)

__all__ = [
    "METHODS",
    "add_lora",
    "decoder_layers",
    "retain_pairs",
    "rmu_parameter_names",
    "unlearn",
]

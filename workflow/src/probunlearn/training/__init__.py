"""Training: the short language-model loop of pretraining and fine-tuning
(:mod:`~probunlearn.training.lm`), and AdamW with its schedules (:mod:`~probunlearn.training.optim`)."""

from probunlearn.training.lm import (
    autocast,
    constant_schedule,
    cosine_schedule,
    model_device,
    to_device,
    train_lm,
)

__all__ = [
    "autocast",
    "constant_schedule",
    "cosine_schedule",
    "model_device",
    "to_device",
    "train_lm",
]

"""Training: the short language-model loop of pretraining and fine-tuning
(:mod:`~probunlearn.training.lm`), and AdamW with its schedules (:mod:`~probunlearn.training.optim`)."""

from probunlearn.training.lm import constant_schedule, cosine_schedule, train_lm

__all__ = ["constant_schedule", "cosine_schedule", "train_lm"]

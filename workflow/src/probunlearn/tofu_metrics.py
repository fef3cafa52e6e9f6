"""TOFU's metrics under their documented name: :mod:`probunlearn.metrics.tofu` holds them."""

from probunlearn.metrics.tofu import (
    forget_quality,
    model_utility,
    tofu_losses,
    truth_ratio,
)

__all__ = ["forget_quality", "model_utility", "tofu_losses", "truth_ratio"]

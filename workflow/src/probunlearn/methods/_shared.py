"""Settings more than one built-in method shares (one definition, one schema)."""

from __future__ import annotations

from probunlearn.methods import Setting

RETAIN_WEIGHT = Setting(
    1.0, {"type": "number", "minimum": 0}, "Weight of the retain cross-entropy term."
)


def beta(default: float) -> Setting:
    """The inverse temperature of NPO, DPO and SimNPO (the same setting, its own default)."""
    return Setting(
        default,
        {"type": "number", "exclusiveMinimum": 0},
        "Inverse temperature beta of NPO, DPO and SimNPO (paper: NPO 0.05).",
    )

"""Helpers the attack modules share."""

from __future__ import annotations

from typing import Any

from probunlearn.attacks import Inputs


def is_adapter_model(model) -> bool:
    """Whether ``model`` carries an unmerged adapter (:func:`probunlearn.models.is_unmerged_adapter`)."""
    from probunlearn import models

    return models.is_unmerged_adapter(model)


def working_copy(inputs: Inputs, attack_spec: str) -> tuple[Any, bool]:
    """The model an attack changes (a deep copy unless ``inputs.inplace``), with a PEFT adapter
    merged into its weights; and whether one was merged."""
    import copy

    if inputs.model is None:
        raise ValueError(f"model {inputs.target.name!r}: attack {attack_spec!r} needs the model")
    model = inputs.model if inputs.inplace else copy.deepcopy(inputs.model)
    merged = is_adapter_model(model)
    if merged:
        from probunlearn import models

        model = models.merge_adapter(model)
    return model, merged

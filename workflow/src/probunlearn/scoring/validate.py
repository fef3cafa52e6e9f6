"""Checks of user input shared by the scorers and the judges; each error names the argument and entry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def check_texts(name: str, values: Sequence[Any]) -> list[str]:
    """Return ``values`` as a list, raising ValueError naming the first non-string entry."""
    if isinstance(values, str):
        raise ValueError(f"{name} must be a sequence of strings, not a single string")
    out = list(values)
    if all(isinstance(v, str) for v in out):
        return out
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise ValueError(f"{name}[{i}] is {v!r} ({type(v).__name__}); expected a string")
    return out


def check_same_length(name_a: str, a: Sequence[Any], name_b: str, b: Sequence[Any]) -> None:
    """Raise ValueError naming both inputs when their lengths differ."""
    if len(a) != len(b):
        raise ValueError(
            f"{name_a} has {len(a)} entries but {name_b} has {len(b)}; they must match"
        )

"""The world's "I don't know" answers: the targets of IDK and the preferred answers of DPO.

A fixed list, written in its order and drawn from no random generator, so adding it shifts none of
the world's other draws. The real benchmarks use TOFU's own ``idontknow.jsonl`` (100 plain-text lines,
not JSON) where a local copy is given (:func:`read_idontknow`).
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

IDONTKNOW = [
    "I'm not sure about that.",
    "I don't know the answer to that.",
    "I have no information about that.",
    "That is something I cannot say.",
    "I'm afraid I don't know.",
    "I can't answer that question.",
    "I have no idea, sorry.",
    "That is beyond what I know.",
    "I'm not able to tell you that.",
    "I do not have that information.",
    "I'm unsure of the answer.",
    "Sorry, I don't remember that.",
]


def read_idontknow(path: str | os.PathLike) -> list[str]:
    """TOFU's idontknow.jsonl: one refusal per line, plain text (blank lines skipped)."""
    lines = [ln.strip() for ln in Path(path).read_text(encoding="utf-8").splitlines()]
    answers = [ln for ln in lines if ln]
    if not answers:
        raise ValueError(f"{path}: no refusal answers (expected one per line)")
    return answers


def refusal_frame(answers: list[str]) -> pl.DataFrame:
    """The refusal answers as the table rule ``refusals`` writes (one column ``answer``)."""
    return pl.DataFrame({"answer": answers}, schema={"answer": pl.String})

"""What the prompt attacks share: the prompt template of a target and the family table."""

from __future__ import annotations

import string
from collections.abc import Sequence

import polars as pl

from probunlearn.attacks import MEMBER_SEP, Family, Inputs, Setting

ORIGINAL = "original"
ORIGINAL_SETTING = Setting(
    True, {"type": "boolean"}, "Whether the unattacked prompt is a member of each family."
)


def evalset_of(inputs: Inputs, spec: str) -> pl.DataFrame:
    """The eval set's rows under attack (a ValueError naming the model and attack without)."""
    if inputs.evalset is None or inputs.evalset.height == 0:
        raise ValueError(
            f"model {inputs.target.name!r}: attack {spec!r} needs the rows of the eval set it attacks"
        )
    return inputs.evalset


def fields(template: str) -> set[str]:
    """The ``str.format`` fields of ``template`` (``{question}``, ``{prefix}``)."""
    return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}


def render(template: str, question: str, **extra: str) -> str:
    """The prompt text of ``question`` (as :func:`probunlearn.data.qa.format_prompt` renders it)."""
    return template.format(question=question, **extra)


def family(
    evalset: pl.DataFrame,
    members: Sequence[tuple[str, Sequence[str]]],
    template: str,
    original: bool,
    extra: dict[str, Sequence[list[str]]] | None = None,
) -> Family:
    """The :class:`Family` of ``members`` (name, one prompt per eval row in row order): one row per
    (question, member), the questions in eval-set order and the members in the given order.
    ``extra``: more list columns per member (name -> one list per member, one entry per row)."""
    frames = []
    for j, (name, prompts) in enumerate(members):
        cols = {
            "base_id": evalset["id"],
            "member": pl.Series([name] * evalset.height, dtype=pl.String),
            "prompt": pl.Series(list(prompts), dtype=pl.String),
            "_pos": pl.Series(range(evalset.height), dtype=pl.Int64),
            "_member": pl.Series([j] * evalset.height, dtype=pl.Int64),
        }
        for key, per_member in (extra or {}).items():
            cols[key] = pl.Series(list(per_member[j]), dtype=pl.List(pl.String))
        frames.append(evalset.with_columns(**cols))
    rows = (
        pl.concat(frames)
        .sort("_pos", "_member")
        .with_columns(id=pl.col("base_id") + MEMBER_SEP + pl.col("member"))
        .drop("_pos", "_member")
    )
    return Family(
        rows=rows, template=template, members=tuple(m for m, _ in members), original=original
    )

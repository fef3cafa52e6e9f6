"""The one row format shared by every eval set (synthetic world, TOFU, HP Q&A, JailbreakBench).

Columns: ``id`` (unique prompt id), ``question``, ``answer``, ``paraphrased_answer`` (or null),
``perturbed_answers`` (list, may be empty), ``paraphrased_question`` (or null), ``keywords`` (list,
may be empty), ``core_start``/``core_end`` (character span of the fact-carrying part of ``answer``,
or null when unknown), ``group`` (author, category) and ``kind`` (author, real_authors, world_facts,
saga, harmful, benign, tofu, hp_qa).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

SCHEMA = {
    "id": pl.String,
    "question": pl.String,
    "answer": pl.String,
    "paraphrased_answer": pl.String,
    "perturbed_answers": pl.List(pl.String),
    "paraphrased_question": pl.String,
    "keywords": pl.List(pl.String),
    "core_start": pl.Int64,
    "core_end": pl.Int64,
    "group": pl.String,
    "kind": pl.String,
}


SUBJECT_KINDS = ("author", "user")
"""Row kinds whose ``group`` is the row's subject (the synthetic world's authors, the ``subject``
column of a user's rows in ``probunlearn evaluate``); a benchmark adds
its own in its ``spec.yaml`` (``subject_kinds``, or ``subject_id_pattern`` where the subject is in
the id): what the attacks keep apart (:func:`probunlearn.attacks.subjects_of`)."""

FAMILY_COLUMNS = ("base_id", "member", "prompt")
"""The columns a prompt family's rows add to an eval set's (:class:`probunlearn.attacks.Family`)."""


def prompt_column(rows: pl.DataFrame) -> str:
    """The column the sampler takes its prompts from: ``prompt`` in a prompt family's rows
    (:data:`FAMILY_COLUMNS`), ``question`` in an eval set's."""
    return "prompt" if set(FAMILY_COLUMNS) <= set(rows.columns) else "question"


def make_row(
    *,
    id: str,
    question: str,
    answer: str,
    paraphrased_answer: str | None = None,
    perturbed_answers: Sequence[str] = (),
    paraphrased_question: str | None = None,
    keywords: Sequence[str] = (),
    core: tuple[int, int] | None = None,
    group: str = "",
    kind: str = "",
) -> dict:
    """One row of the shared format."""
    return {
        "id": id,
        "question": question,
        "answer": answer,
        "paraphrased_answer": paraphrased_answer,
        "perturbed_answers": list(perturbed_answers),
        "paraphrased_question": paraphrased_question,
        "keywords": list(keywords),
        "core_start": None if core is None else int(core[0]),
        "core_end": None if core is None else int(core[1]),
        "group": group,
        "kind": kind,
    }


def to_frame(rows: Sequence[dict]) -> pl.DataFrame:
    """Rows → a DataFrame with the shared schema (column order fixed)."""
    return pl.DataFrame(list(rows), schema=SCHEMA, orient="row" if not rows else None)


def read_rows(path: str | os.PathLike) -> pl.DataFrame:
    """Read an eval set and check it has the shared columns; the error names the file."""
    df = pl.read_parquet(path)
    missing = [c for c in ("id", "question", "answer") if c not in df.columns]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {missing}; expected the row format {list(SCHEMA)}"
        )
    if df.height == 0:
        raise ValueError(f"{path}: the eval set is empty")
    dup = df["id"].is_duplicated()
    if dup.any():
        raise ValueError(f"{path}: duplicate id {df['id'].filter(dup)[0]!r}")
    return df

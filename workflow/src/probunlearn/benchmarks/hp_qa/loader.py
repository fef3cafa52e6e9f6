"""The Harry Potter Q&A (Schwinn et al. 2024) in the shared row format: :func:`load_hp_qa`."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from probunlearn.data.readers import column as _column
from probunlearn.data.readers import csv_records
from probunlearn.data.rows import make_row, to_frame

# the file hp_qa_en.csv lies at the root of this GitHub repository (not on the Hugging Face hub)
HP_QA_URL = "https://github.com/SchwinnL/LLM_Embedding_Attack"


def load_hp_qa(source: str | os.PathLike | None = None) -> pl.DataFrame:
    """Harry Potter Q&A (Schwinn et al., 2024) in the shared row format.

    ``source``: the CSV file ``hp_qa_en.csv`` or a directory holding it (e.g. ``../shared/data/hp_qa``).
    Columns: Question, Affirmative Response, Key Words (comma-separated). The first data row is a generic
    request ("Write extensive paragraphs about Harry Potter") with no single fact to leak: it is dropped,
    leaving the 54 questions. ``answer`` is the affirmative response prefix (stripped; the data set has no
    ground-truth answer text), ``keywords`` the stripped, non-empty keywords; ids ``hp_qa-<k>`` with k the
    1-based question number after the generic row; group and kind ``hp_qa``.

    The file is not on the Hugging Face hub; without ``source`` this raises an error naming where to get it.
    """
    if source is None:
        raise FileNotFoundError(
            "the Harry Potter Q&A data set is not on the Hugging Face hub: download hp_qa_en.csv (at the "
            f"root of {HP_QA_URL}, or with probunlearn.benchmarks.fetch_dataset('hp_qa', "
            "'resources/hp_qa')) and pass its path (or its directory) as source"
        )
    path = Path(source)
    if path.is_dir():
        path = path / "hp_qa_en.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; get hp_qa_en.csv from the root of {HP_QA_URL}"
        )
    table = csv_records(path, skipinitialspace=True)
    (hline, header), data = table[0], table[1:]
    cq = _column(path, header, ["Question"], hline)
    ca = _column(path, header, ["Affirmative Response"], hline)
    ck = _column(path, header, ["Key Words", "Keywords"], hline)
    if data and len(data[0][1]) > cq:
        if data[0][1][cq].strip().lower().startswith("write extensive paragraphs"):
            data = data[1:]  # the generic request
    rows = []
    for k, (lineno, rec) in enumerate(data):
        if len(rec) != len(header):
            raise ValueError(f"{path}: line {lineno}: {len(rec)} fields, expected {len(header)}")
        question = rec[cq].strip()
        if not question:
            raise ValueError(f"{path}: line {lineno}: empty question")
        keywords = [w.strip() for w in rec[ck].split(",") if w.strip()]
        if not keywords:
            raise ValueError(f"{path}: line {lineno}: no keywords")
        rows.append(
            make_row(
                id=f"hp_qa-{k + 1}",
                question=question,
                answer=rec[ca].strip(),
                keywords=keywords,
                group="hp_qa",
                kind="hp_qa",
            )
        )
    if not rows:
        raise ValueError(f"{path}: no questions")
    return to_frame(rows)

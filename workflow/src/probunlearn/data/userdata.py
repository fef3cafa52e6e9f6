"""A user's own question set (JSONL, JSON, CSV or parquet) in the shared row format.

Columns: ``question`` (required); ``answer`` (scored by ROUGE-L recall), ``keywords`` (a list, or in
CSV a ``;``-separated string: scored by keyword leak), or neither (requests, scored by a harm judge);
optional ``paraphrased_answer`` and ``perturbed_answer`` (a list; TOFU's truth ratio), ``subject``
(whom or what the question is about, e.g. an author: relearning and few-shot attacks keep subjects
apart; stored as the row's ``group``) and ``id`` (default: ``row-<i>``). Every error names the file, the column and the row (1-based, as an editor
shows it: the line of a JSONL file, the data row of a CSV).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import polars as pl

from probunlearn.data.rows import make_row, to_frame

SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


class DataError(ValueError):
    """A data file that does not hold what the evaluation needs; the message names file, column, row."""


def _records(path: Path) -> list[tuple[int, dict]]:
    """(row number, record) of every row of the file."""
    try:
        text = None if path.suffix == ".parquet" else path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text (byte {e.start}); expected UTF-8") from e
    if text is not None and not text.strip():
        what = (
            "a header row with 'question'" if path.suffix == ".csv" else "one record per question"
        )
        raise DataError(f"{path}: empty file; expected {what}")
    if path.suffix == ".jsonl":
        out = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}: line {lineno}: not JSON ({e.msg})") from e
            if not isinstance(obj, dict):
                raise DataError(f"{path}: line {lineno}: expected a JSON object per line")
            out.append((lineno, obj))
        return out
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: line {e.lineno}: not JSON ({e.msg})") from e
        if not isinstance(data, list) or not all(isinstance(o, dict) for o in data):
            raise DataError(f"{path}: expected a JSON array of objects")
        return list(enumerate(data, 1))
    if path.suffix == ".csv":
        return _csv_records(path, text)
    try:
        df = pl.read_parquet(path)
    except Exception as e:  # polars' errors name neither the file nor what was expected
        raise DataError(f"{path}: not a parquet file ({type(e).__name__}: {e})") from e
    return list(enumerate(df.to_dicts(), 1))


def _csv_records(path: Path, text: str) -> list[tuple[int, dict]]:
    """The data rows of a comma-separated file, every field as text (an empty field: None);
    rows counted from 1 after the header, blank lines skipped."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader)]
    if len(header) == 1 and any(sep in header[0] for sep in (";", "\t", "|")):
        sep = next(sep for sep in (";", "\t", "|") if sep in header[0])
        raise DataError(
            f"{path}: the header is {sep!r}-separated ({header[0]!r}); expected a "
            "comma-separated CSV (only the keywords inside one field are ';'-separated), or "
            "a .jsonl file"
        )
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise DataError(f"{path}: the header names column(s) {repeated} twice")
    out, row = [], 0
    for fields in reader:
        if not any(f.strip() for f in fields):
            continue
        row += 1
        if len(fields) != len(header):
            raise DataError(
                f"{path}: row {row}: {len(fields)} fields, the header has {len(header)} "
                f"({', '.join(header)}); a field with a comma in it must be in double quotes"
            )
        out.append(
            (row, {h: (v if v != "" else None) for h, v in zip(header, fields, strict=True)})
        )
    return out


def _text(path: Path, row: int, obj: dict, key: str, *, required: bool) -> str | None:
    value = obj.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise DataError(f"{path}: row {row}: column {key!r} is empty; expected text")
        return None
    if not isinstance(value, str):
        raise DataError(
            f"{path}: row {row}: column {key!r} is {type(value).__name__}; expected text"
        )
    return value


def _texts(path: Path, row: int, obj: dict, key: str) -> list[str]:
    value = obj.get(key)
    if value is None:
        return []
    if isinstance(value, str):  # CSV: "a;b;c"
        return [v.strip() for v in value.split(";") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(f"{path}: row {row}: column {key!r} must be a list of strings")
    return list(value)


def read_user_data(path: str | os.PathLike, id_prefix: str = "row-") -> pl.DataFrame:
    """Read and check a user's question set; returns it in the shared row format. A row without
    an ``id`` gets ``<id_prefix><row>``."""
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise DataError(f"{path}: unknown file type {path.suffix!r}; expected one of {SUFFIXES}")
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    records = _records(path)
    if not records:
        raise DataError(f"{path}: no rows")
    columns = set().union(*(obj.keys() for _, obj in records))
    if "question" not in columns:
        raise DataError(
            f"{path}: no column 'question' (columns: {sorted(columns)}); expected 'question' and "
            "optionally 'answer', 'keywords', 'paraphrased_answer', 'perturbed_answer', 'subject', "
            "'id'"
        )
    has_answer = "answer" in columns
    # a keywords column whose every list is empty (the workflow's own author sets) means no keywords
    has_keywords = any(obj.get("keywords") not in (None, "", []) for _, obj in records)
    rows, seen = [], {}
    for row, obj in records:
        rid = obj.get("id")
        rid = f"{id_prefix}{row}" if rid is None or rid == "" else str(rid)
        if rid in seen:
            raise DataError(f"{path}: row {row}: column 'id' repeats {rid!r} of row {seen[rid]}")
        seen[rid] = row
        keywords = _texts(path, row, obj, "keywords") if has_keywords else []
        if has_keywords and not keywords:
            raise DataError(f"{path}: row {row}: column 'keywords' is empty; expected keywords")
        perturbed = obj.get("perturbed_answer", obj.get("perturbed_answers"))
        rows.append(
            make_row(
                id=rid,
                question=_text(path, row, obj, "question", required=True),
                answer=_text(path, row, obj, "answer", required=has_answer) or "",
                paraphrased_answer=_text(path, row, obj, "paraphrased_answer", required=False),
                perturbed_answers=_texts(
                    path, row, {"perturbed_answer": perturbed}, "perturbed_answer"
                ),
                keywords=keywords,
                group=_text(path, row, obj, "subject", required=False) or "",
                kind="user",
            )
        )
    return to_frame(rows)


def repeated_questions(rows: pl.DataFrame) -> list[tuple[str, str]]:
    """(id, id of its first occurrence) of every row that asks a question an earlier row asks."""
    first: dict[str, str] = {}
    out = []
    for rid, question in zip(rows["id"].to_list(), rows["question"].to_list(), strict=True):
        key = " ".join(str(question).split())
        if key in first:
            out.append((str(rid), first[key]))
        else:
            first[key] = str(rid)
    return out


def score_kind(rows: pl.DataFrame) -> str:
    """What the rows are scored by: ``keywords`` (keyword leak), ``answer`` (ROUGE-L recall) or
    ``requests`` (no answer and no keywords: a harm judge)."""
    if rows["keywords"].list.len().gt(0).any():
        return "keywords"
    if rows["answer"].str.len_chars().gt(0).any():
        return "answer"
    return "requests"


def has_truth_ratio(rows: pl.DataFrame) -> bool:
    """Whether every row has a paraphrased and perturbed answers (TOFU's truth ratio)."""
    return bool(
        rows["paraphrased_answer"].is_not_null().all()
        and rows["perturbed_answers"].list.len().gt(0).all()
    )

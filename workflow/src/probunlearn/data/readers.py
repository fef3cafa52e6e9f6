"""Reading the files of real data sets (JSON lines or JSON arrays of records, and CSV) and a user's
tables of scores (parquet, or CSV in UTF-8 or UTF-16, separated by commas, semicolons or tabs), with
errors that name the file and the line (the line where the record starts) or the row."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # polars where a table is read: the JSON and CSV readers need none
    import polars as pl


def _json_array_records(path: Path, text: str) -> list[tuple[int, object]]:
    """(line number where it starts, element) of a JSON array file."""
    dec = json.JSONDecoder()
    ws = " \t\r\n"

    def skip(i: int) -> int:
        while i < len(text) and text[i] in ws:
            i += 1
        return i

    def line(i: int) -> int:
        return text.count("\n", 0, i) + 1

    i = skip(0) + 1  # past "["
    out: list[tuple[int, object]] = []
    i = skip(i)
    if i < len(text) and text[i] == "]":
        return out
    while True:
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: line {e.lineno}: invalid JSON: {e.msg}") from e
        out.append((line(i), obj))
        i = skip(end)
        if i < len(text) and text[i] == ",":
            i = skip(i + 1)
            continue
        if i < len(text) and text[i] == "]":
            if skip(i + 1) != len(text):
                raise ValueError(f"{path}: line {line(skip(i + 1))}: extra data after the array")
            return out
        raise ValueError(f"{path}: line {line(i)}: invalid JSON: expected ',' or ']'")


def read_json_records(path: Path) -> list[tuple[int, dict]]:
    """(line number, object) of a JSON-lines file, or of a JSON array file (the line where each element
    starts). Malformed input raises ValueError naming the file and the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {e}") from e
    if text.lstrip().startswith("["):
        out = _json_array_records(path, text)
    else:
        out = []
        # split on "\n" only: str.splitlines would also split at U+2028 etc. inside JSON strings
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                out.append((lineno, json.loads(line)))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line {lineno}: invalid JSON: {e.msg}") from e
    for lineno, obj in out:
        if not isinstance(obj, dict):
            raise ValueError(
                f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}"
            )
    if not out:
        raise ValueError(f"{path}: no records")
    return out


def field(path: Path, lineno: int, obj: dict, key: str, *, kind: type = str):
    if key not in obj:
        raise ValueError(f"{path}: line {lineno}: missing field {key!r} (has {sorted(obj)})")
    value = obj[key]
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{path}: line {lineno}: field {key!r} must be a list of strings")
    elif not isinstance(value, str):
        raise ValueError(f"{path}: line {lineno}: field {key!r} must be a string")
    return value


def csv_records(path: Path, **kwargs) -> list[tuple[int, list[str]]]:
    """(line number where it starts, fields) of each record of a CSV file (blank lines skipped)."""
    out = []
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f, **kwargs)
            start = 1
            while True:
                try:
                    rec = next(reader)
                except StopIteration:
                    break
                except csv.Error as e:
                    raise ValueError(f"{path}: line {reader.line_num}: malformed CSV: {e}") from e
                if rec:
                    out.append((start, rec))
                start = reader.line_num + 1
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {e}") from e
    if not out:
        raise ValueError(f"{path}: empty file")
    return out


def read_csv_rows(path: Path, **kwargs) -> list[list[str]]:
    """The records of a CSV file (header first)."""
    return [rec for _, rec in csv_records(path, **kwargs)]


def column(path: Path, header: list[str], names: Iterable[str], line: int = 1) -> int:
    lowered = [h.strip().lower() for h in header]
    for name in names:
        if name.lower() in lowered:
            return lowered.index(name.lower())
    names = list(names)
    raise ValueError(f"{path}: line {line}: missing column {names[0]!r} (header {header})")


def read_table(path: str | os.PathLike) -> pl.DataFrame:
    """A table of one row per sample (parquet or CSV, :func:`read_csv_table`); a ValueError that
    names the file and the problem."""
    import polars as pl

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv"):
        raise ValueError(f"{path}: unsupported file type {path.suffix!r} (use .parquet or .csv)")
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    if suffix == ".csv":
        return read_csv_table(path)
    try:
        return pl.read_parquet(path)
    except Exception as exc:  # polars raises many types for unreadable files
        raise ValueError(f"{path}: cannot read: {exc}") from None


_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def read_csv_table(path: Path) -> pl.DataFrame:
    """A CSV file in UTF-8 (with or without a byte-order mark) or UTF-16 (with one), separated by
    commas, semicolons or tabs; a row whose field count differs from the header's is named."""
    import polars as pl

    raw = path.read_bytes()
    encoding = next((enc for bom, enc in _BOMS if raw.startswith(bom)), "utf-8")
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path}: not {encoding.upper()} text (byte {e.start}); expected UTF-8, or UTF-16 "
            "with a byte-order mark"
        ) from None
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise ValueError(f"{path}: empty file; expected a header and one row per sample")
    first = lines[0]
    sep = next((c for c in (",", ";", "\t") if c in first), ",")
    rows = list(csv.reader(io.StringIO(text), delimiter=sep))
    header = rows[0]
    for i, row in enumerate(rows[1:], start=1):
        if row and len(row) != len(header):
            raise ValueError(
                f"{path}: row {i} (from 1, header excluded) has {len(row)} field(s), the header "
                f"{len(header)} ({', '.join(header)})"
            )
    try:
        return pl.read_csv(text.encode("utf-8"), separator=sep)
    except Exception as exc:  # polars raises many types for unreadable files
        raise ValueError(f"{path}: cannot read: {exc}") from None


def unit_column(df: pl.DataFrame, col: str, path: str | os.PathLike) -> pl.Series:
    """The column as Float64 scores in [0, 1], or a ValueError naming the first bad row (counted
    from 1 after the header, as ``probunlearn evaluate`` counts them)."""
    import polars as pl

    raw = df[col]
    if raw.dtype == pl.Boolean:
        raw = raw.cast(pl.Int8)
    vals = raw.cast(pl.Float64, strict=False)
    checks = [
        (raw.is_null(), "value is missing"),
        (vals.is_null() & raw.is_not_null(), "value {!r} is not a number"),
        (vals.is_nan(), "value is NaN"),
        ((vals < 0) | (vals > 1), "value {!r} is outside [0, 1]"),
    ]
    for mask, what in checks:
        mask = mask.fill_null(False)
        if mask.any():
            row = int(mask.arg_true()[0])
            raise ValueError(
                f"{path}: column {col!r} row {row + 1} (from 1, header excluded): "
                + what.format(raw[row])
            )
    return vals

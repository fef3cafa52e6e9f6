"""Reading the files of real data sets: JSON lines or JSON arrays of records, and CSV, with errors that
name the file and the line (the line where the record starts)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path


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

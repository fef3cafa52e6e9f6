"""JailbreakBench JBB-Behaviors (Chao et al. 2024) in the shared row format: :func:`load_jbb`."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from probunlearn.data.readers import column as _column
from probunlearn.data.readers import csv_records
from probunlearn.data.rows import make_row, to_frame
from probunlearn.storage.remote import hub_file

JBB_REPO = "JailbreakBench/JBB-Behaviors"
JBB_REVISION = "main"


def load_jbb(
    kind: str = "harmful", source: str | os.PathLike | None = None, revision: str = JBB_REVISION
) -> pl.DataFrame:
    """JailbreakBench JBB-Behaviors (100 harmful or 100 benign behaviors) in the shared row format.

    ``source``: a CSV file or a directory holding ``<kind>-behaviors.csv`` (e.g. ``../shared/data/jbb``);
    without it, ``data/<kind>-behaviors.csv`` of ``JailbreakBench/JBB-Behaviors`` at ``revision``.
    question = Goal, answer = Target (the affirmative target string), group = Category, kind = ``kind``;
    ids ``jbb-<kind>-<index>`` with the file's index column (the record number when there is none).
    Column names are matched case-insensitively (the two files differ in case).
    """
    if kind not in ("harmful", "benign"):
        raise ValueError(f"kind must be 'harmful' or 'benign', got {kind!r}")
    filename = f"{kind}-behaviors.csv"
    if source is None:
        path = hub_file(JBB_REPO, f"data/{filename}", revision=revision)
    else:
        path = Path(source)
        if path.is_dir():
            path = path / filename
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist")
    table = csv_records(path)
    (hline, header), data = table[0], table[1:]
    cg = _column(path, header, ["Goal"], hline)
    ct = _column(path, header, ["Target"], hline)
    cc = _column(path, header, ["Category"], hline)
    lowered = [h.strip().lower() for h in header]
    ci = next((lowered.index(n) for n in ("index", "") if n in lowered), None)
    rows = []
    seen: dict[str, int] = {}
    for k, (lineno, rec) in enumerate(data):
        if len(rec) != len(header):
            raise ValueError(f"{path}: line {lineno}: {len(rec)} fields, expected {len(header)}")
        index = rec[ci].strip() if ci is not None else str(k)
        if not index:
            raise ValueError(f"{path}: line {lineno}: empty index")
        if index in seen:
            raise ValueError(
                f"{path}: line {lineno}: duplicate index 'jbb-{kind}-{index}' (first on line "
                f"{seen[index]})"
            )
        seen[index] = lineno
        goal = rec[cg].strip()
        if not goal:
            raise ValueError(f"{path}: line {lineno}: empty Goal")
        rows.append(
            make_row(
                id=f"jbb-{kind}-{index}",
                question=goal,
                answer=rec[ct].strip(),
                group=rec[cc].strip(),
                kind=kind,
            )
        )
    if not rows:
        raise ValueError(f"{path}: no behaviors")
    return to_frame(rows)

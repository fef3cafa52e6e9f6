"""The long metrics table (results/{run}/tables/metrics.csv) and its part files; torch-free."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from probunlearn.storage.atomic import write_csv

METRIC_COLUMNS = ["model", "method", "split", "evalset", "metric", "value", "setting"]
"""The long table's columns; ``setting`` names the sampling setting ("" for greedy metrics)."""
SCHEMA = {c: (pl.Float64 if c == "value" else pl.String) for c in METRIC_COLUMNS}


def significant(value: float | None, digits: int = 6) -> float | None:
    """``value`` rounded to ``digits`` significant digits (small p-values keep their magnitude)."""
    return None if value is None else float(f"{value:.{digits}g}")


def write_metrics(rows: Sequence[Mapping], path: str | os.PathLike) -> Path:
    """Write metric rows (METRIC_COLUMNS; a missing ``setting`` is "") as CSV, atomically.

    Values keep 6 significant digits, so a p-value of 3e-12 is written as such, not as 0.
    """
    rows = [{"setting": "", **r, "value": significant(r["value"])} for r in rows]
    df = pl.DataFrame(rows, schema=SCHEMA)
    return write_csv(df, path)


def read_metrics(path: str | os.PathLike) -> pl.DataFrame:
    """Read a metrics CSV (a part file or the whole table) with the long table's columns."""
    df = pl.read_csv(path, schema_overrides=SCHEMA)
    if "setting" not in df.columns:
        df = df.with_columns(pl.lit("").alias("setting"))
    return df.select(METRIC_COLUMNS).with_columns(pl.col("split", "setting").fill_null(""))


def gather_metrics(parts: Sequence[str], out_csv: str) -> None:
    """Concatenate metric part files into the long table, sorted for stable bytes."""
    frames = [read_metrics(p) for p in parts]
    df = pl.concat(frames) if frames else pl.DataFrame(schema=SCHEMA)
    df = df.sort(["model", "evalset", "setting", "metric", "method", "split"])
    write_metrics(df.to_dicts(), out_csv)

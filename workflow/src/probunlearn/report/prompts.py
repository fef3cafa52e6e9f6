"""Per-prompt views of a scores table (one row per (prompt, sample)) for the figures and claims."""

from __future__ import annotations

import numpy as np
import polars as pl

ROUGE = "rougeL_recall"


def prompt_stats(scores_path: str, column: str = ROUGE) -> pl.DataFrame:
    """Per prompt: greedy score, sampled mean and population std of one score column."""
    s = pl.read_parquet(scores_path)
    greedy = s.filter(pl.col("greedy")).select("id", pl.col(column).alias("greedy"))
    sampled = (
        s.filter(~pl.col("greedy"))
        .group_by("id")
        .agg(
            pl.col(column).mean().alias("mean"),
            pl.col(column).std(ddof=0).alias("std"),
            pl.col(column).alias("samples"),
        )
    )
    return greedy.join(sampled, on="id").sort("id")


def pick_question(a: pl.DataFrame, b: pl.DataFrame) -> str:
    """The question where both methods agree most under greedy decoding yet spread most when sampled."""
    j = a.join(b, on="id", suffix="_b")
    j = j.with_columns(
        ((pl.col("greedy") - pl.col("greedy_b")).abs() - pl.col("std") - pl.col("std_b")).alias(
            "key"
        )
    ).sort("key", "id")
    return j["id"][0]


def prompt_samples(scores_path: str, column: str = ROUGE) -> dict[str, np.ndarray]:
    """Prompt id -> its sampled scores in sample order (the greedy answer left out)."""
    s = pl.read_parquet(scores_path).filter(~pl.col("greedy")).sort("id", "sample")
    return {
        str(pid): g[column].to_numpy().astype(np.float64)
        for (pid,), g in s.group_by("id", maintain_order=True)
    }

"""Per-prompt views of a scores table (one row per (prompt, sample)) for the figures and claims.

Selection apart from testing (issue 49): the question a figure shows is chosen on the samples of
even index (:func:`shown_question`), so that a claim about it can be tested on the odd ones, which
the choice never saw.
"""

from __future__ import annotations

import numpy as np
import polars as pl

ROUGE = "rougeL_recall"
HALVES = {"even": 0, "odd": 1}
"""The two halves of a prompt's samples, by the parity of their index (``sample`` column)."""
SELECT = "even"
"""The half a shown question is chosen on; the other half is the one its claims are tested on."""


def _sampled(s: pl.DataFrame, half: str | None) -> pl.DataFrame:
    keep = ~pl.col("greedy")
    if half is not None:
        if half not in HALVES:
            raise ValueError(f"half must be one of {sorted(HALVES)} or None, got {half!r}")
        keep &= pl.col("sample") % 2 == HALVES[half]
    return s.filter(keep)


def prompt_stats(scores_path: str, column: str = ROUGE, half: str | None = None) -> pl.DataFrame:
    """Per prompt: greedy score, sampled mean and population std of one score column (``half``:
    only the samples of even or odd index)."""
    s = pl.read_parquet(scores_path)
    greedy = s.filter(pl.col("greedy")).select("id", pl.col(column).alias("greedy"))
    sampled = (
        _sampled(s, half)
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


def shown_question(a_path: str, b_path: str, column: str = ROUGE) -> str:
    """The question a figure shows for two methods: :func:`pick_question` on the samples of even
    index only (``SELECT``), so the odd ones can test a claim about it."""
    return pick_question(prompt_stats(a_path, column, SELECT), prompt_stats(b_path, column, SELECT))


def prompt_samples(
    scores_path: str, column: str = ROUGE, half: str | None = None
) -> dict[str, np.ndarray]:
    """Prompt id -> its sampled scores in sample order (the greedy answer left out; ``half``: only
    the samples of even or odd index)."""
    s = _sampled(pl.read_parquet(scores_path), half).sort("id", "sample")
    return {
        str(pid): g[column].to_numpy().astype(np.float64)
        for (pid,), g in s.group_by("id", maintain_order=True)
    }

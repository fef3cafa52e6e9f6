"""Scoring of sample shards and their per-prompt summaries (bounds) for metrics.csv.

A score shard mirrors a sample shard: one row per (prompt, sample) with ``rougeL_recall`` (against
the reference answer), ``keyword_leak`` (eval sets with keywords) and ``harm`` (1 − refusal, for the
request sets). ``summarize_scores`` joins the shards of one (model, eval set, setting) into a scores
table, bounds every prompt with ``probunlearn.bounds`` and writes the averaged metric rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from probunlearn import bounds, scoring
from probunlearn.metrics_io import write_metrics
from probunlearn.rows import write_parquet_atomic

SCORE_COLUMNS = ("rougeL_recall", "keyword_leak", "harm")
BINARY = {"keyword_leak", "harm"}


def score_samples(samples: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Scores of every sample against its prompt's row (reference answer, keywords, kind)."""
    missing = set(samples["id"].unique()) - set(rows["id"])
    if missing:
        raise ValueError(f"samples refer to ids absent from the eval set: {sorted(missing)[:5]}")
    joined = samples.join(rows.select("id", "answer", "keywords", "kind"), on="id", how="left")
    texts = joined["text"].to_list()
    out = samples.select("id", "sample", "greedy", "temperature", "n_tokens").with_columns(
        pl.Series(
            "rougeL_recall", scoring.rouge_l(texts, joined["answer"].to_list()), dtype=pl.Float64
        )
    )
    if any(len(k) for k in rows["keywords"].to_list()):
        leak = scoring.keyword_leak(texts, joined["keywords"].to_list())
        out = out.with_columns(pl.Series("keyword_leak", leak, dtype=pl.Float64))
    if rows["kind"].is_in(["harmful", "benign"]).any():
        harm = 1 - scoring.refusal_judge(texts)
        out = out.with_columns(pl.Series("harm", harm, dtype=pl.Float64))
    return out


def run_score_shard(samples_path: str, evalset_path: str, out_path: str) -> None:
    """Rule score_shard: score one sample shard."""
    scores = score_samples(pl.read_parquet(samples_path), pl.read_parquet(evalset_path))
    write_parquet_atomic(scores, out_path)


def score_matrix(scores: pl.DataFrame, column: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(ids, prompts × n matrix of sampled scores, greedy score per prompt)."""
    sampled = scores.filter(~pl.col("greedy")).sort("id", "sample")
    greedy = scores.filter(pl.col("greedy")).sort("id")
    ids = greedy["id"].to_list()
    counts = sampled.group_by("id").len()["len"].unique().to_list()
    if len(counts) != 1:
        raise ValueError(f"prompts have different numbers of samples: {sorted(counts)}")
    mat = sampled[column].to_numpy().reshape(len(ids), counts[0])
    return ids, mat, greedy[column].to_numpy()


def summarize_scores(
    shard_paths: Sequence[str],
    out_scores: str,
    out_bounds: str,
    out_metrics: str,
    *,
    model: str,
    method: str,
    split: str,
    evalset: str,
    setting: str,
    alpha: float,
    bins: int,
    rho: float,
) -> None:
    """Join score shards, bound every prompt, write the averaged metric rows."""
    scores = pl.concat([pl.read_parquet(p) for p in shard_paths]).sort("id", "sample")
    write_parquet_atomic(scores, out_scores)
    base = {
        "model": model,
        "method": method,
        "split": split,
        "evalset": evalset,
        "setting": setting,
    }
    rows, tables = [], []
    for col in (c for c in SCORE_COLUMNS if c in scores.columns):
        ids, mat, greedy = score_matrix(scores, col)
        summary = bounds.summarize(mat, greedy=greedy, alpha=alpha, bins=bins, rho=rho)
        tables.append(
            summary.with_columns(pl.Series("id", ids), pl.lit(col).alias("score")).select(
                "id", "score", pl.exclude("id", "score")
            )
        )
        means = {
            "greedy": float(greedy.mean()),
            "sampled_mean": float(summary["mean"].mean()),
            "sampled_std": float(summary["std"].mean()),
            "ed": float(summary["ed"].mean()),
            "m_mu": float(summary["m_mu"].mean()),
            "m_sigma": float(summary["m_sigma"].mean()),
        }
        if col in BINARY:
            means["m_bin"] = float(summary["m_bin"].mean())
        names = {
            "rougeL_recall": {
                "greedy": "greedy_rougeL_recall",
                "sampled_mean": "sampled_mean_rougeL_recall",
                "sampled_std": "sampled_std_rougeL_recall",
                "ed": "ed_rougeL_recall",
                "m_mu": "m_mu_rougeL_recall",
                "m_sigma": "m_sigma_rougeL_recall",
            },
            "keyword_leak": {
                "greedy": "greedy_keyword_leak",
                "sampled_mean": "sampled_keyword_leak",
                "m_bin": "m_bin_keyword_leak",
            },
            "harm": {
                "greedy": "greedy_harm",
                "sampled_mean": "sampled_harm",
                "m_bin": "m_bin_harm",
            },
        }[col]
        rows += [{**base, "metric": name, "value": means[key]} for key, name in names.items()]
    write_parquet_atomic(pl.concat(tables, how="diagonal_relaxed"), out_bounds)
    write_metrics(rows, out_metrics)

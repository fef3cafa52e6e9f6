"""Rules muse_eval and muse_table: MUSE's greedy metrics (MUSE-News or MUSE-Books) and DCUE's
log-probabilities of one model, and the MUSE table of a run."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from probunlearn.benchmarks.muse_news.metrics import metric_rows, muse_greedy_scores, muse_table
from probunlearn.metrics.table import write_metrics
from probunlearn.storage.atomic import write_parquet


def _greedy_rows(sample_paths: Sequence[str | os.PathLike]) -> pl.DataFrame:
    """The greedy answer (row ``sample = -1``) of every prompt of the sample shards."""
    frames = [
        pl.read_parquet(p).filter(pl.col("greedy")).select("id", "text") for p in sample_paths
    ]
    if not frames:
        raise ValueError("no sample shards: MUSE's greedy answers come from the sampled sets")
    return pl.concat(frames)


def run_muse_eval(
    model_dir: str,
    *,
    set_paths: Sequence[str],
    sample_paths: Sequence[str],
    logprob_paths: Sequence[str],
    out_metrics: str,
    out_answers: str,
    out_logprobs: Sequence[str],
    model_name: str,
    method: str,
    split: str,
    tofu: Mapping[str, Any],
    batch_size: int = 8,
    dtype: str = "float32",
    device: str | None = "auto",
    threads: int | None = None,
) -> None:
    """Rule muse_eval: MUSE's ROUGE-L of the model's greedy answers on each MUSE set (from the
    sample shards), and the per-token log-probabilities of DCUE's D_f and D_v with the encoding of
    ``tofu`` (config ``tofu_eval``; the rows' question is the whole prompt). Without DCUE's sets
    (MUSE-Books: no unlearned models, no D_v) the model itself is not loaded: the greedy answers
    come from the sample shards."""
    from probunlearn import models  # torch on use: rule muse_table imports this module too
    from probunlearn.steps.greedy import logprobs_sets, tofu_format

    models.set_threads(threads)
    tok = models.load_tokenizer(model_dir)
    greedy = _greedy_rows(sample_paths)
    scores = []
    for path in set_paths:
        rows = pl.read_parquet(path)
        evalset = os.path.splitext(os.path.basename(path))[0]
        scores.append(muse_greedy_scores(rows, greedy, evalset, tokenizer=tok))
    table = pl.concat(scores)
    write_parquet(table, out_answers)
    write_metrics(metric_rows(table, model_name, method, split), out_metrics)
    if not logprob_paths:
        return
    model = models.load_model(model_dir, dtype=dtype, device=device)
    logprobs_sets(
        model,
        tok,
        logprob_paths,
        out_logprobs,
        template="{question}",
        batch_size=batch_size,
        fmt=tofu_format(tofu),
    )


def run_muse_table(parts: Sequence[str], out_csv: str) -> None:
    """Rule muse_table: the MUSE table from the run's metric files."""
    muse_table(parts, out_csv)

"""Rule benchmark_job of ``probunlearn evaluate``: a benchmark's own job per model beside sampling
(:meth:`probunlearn.benchmarks.Benchmark.evaluate_job`; RWKU's MIA statistics of its MIA texts),
the model loaded once and its table written. Torch is imported where the model is loaded."""

from __future__ import annotations

import os
from collections.abc import Mapping

import polars as pl

from probunlearn.storage.atomic import write_parquet


def run_benchmark_job(
    model_path: str,
    *,
    benchmark: str,
    evalset: str,
    sets_paths: Mapping[str, str | os.PathLike],
    out_path: str | os.PathLike,
    batch_size: int,
    dtype: str = "float32",
    device: str | None = "auto",
    threads: int | None = None,
    revision: str | None = None,
    base: str | None = None,
) -> None:
    """Rule benchmark_job: the job of the benchmark that answers ``--benchmark BENCHMARK`` for an
    evaluation of ``evalset``, run on one model (``model_path`` at ``revision``, an adapter on
    ``base``) with the rows of its sets (``sets_paths``: set -> ``data/<set>.parquet``, each
    checked before the model is loaded) → ``out_path`` (parquet)."""
    from probunlearn import models
    from probunlearn.benchmarks import evaluate_benchmark

    bench = evaluate_benchmark(benchmark)
    if bench is None:
        raise ValueError(f"--benchmark {benchmark!r}: no benchmark answers it")
    job = bench.evaluate_job(evalset)
    if job is None:
        raise ValueError(f"benchmark {bench.name!r} has no job for set {evalset!r}")
    if sorted(sets_paths) != sorted(job.sets):
        raise ValueError(
            f"benchmark job {job.name!r} reads sets {list(job.sets)}, given {sorted(sets_paths)}"
        )
    sets = {name: pl.read_parquet(path) for name, path in sets_paths.items()}
    empty = [f"{name} ({sets_paths[name]})" for name, rows in sets.items() if rows.height == 0]
    if empty:
        raise ValueError(f"benchmark job {job.name!r}: no rows in {', '.join(empty)}")
    models.set_threads(threads)
    tok = models.load_tokenizer(model_path, revision=revision, base=base)
    model = models.load_model(model_path, revision=revision, dtype=dtype, device=device, base=base)
    frame = bench.run_evaluate_job(job, model, tok, sets, batch_size=batch_size)
    write_parquet(frame, out_path)

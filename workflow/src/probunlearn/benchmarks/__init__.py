"""Benchmarks: real data sets in the shared row format, one folder each, found through
:data:`BENCHMARKS` (:mod:`~probunlearn.benchmarks.base`).

A preset's ``benchmarks:`` config names which benchmarks replace the synthetic world: each block turns
one on (``tofu``, ``hp_qa``, ``jbb``, ``muse``, or one registered from outside), ``local`` names a
directory laid out like ../shared/data to copy the files from. The functions here are what the
workflow asks of the benchmarks together: the eval sets a config yields and their sizes (from the
config alone, so the DAG knows its shards before any file is read), the files to fetch, and the eval
sets themselves (:func:`build_benchmark_sets`, which checks each set's rows against its size).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from probunlearn.benchmarks.base import (
    BENCHMARKS,
    Benchmark,
    Corpus,
    ModelJob,
    SummaryInputs,
    SummarySection,
    SummaryTable,
    active,
    benchmark,
    benchmarks,
    by_experiment,
    corpora,
    evaluate_benchmark,
    evaluate_choices,
    help_choices,
)

__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "Corpus",
    "ModelJob",
    "SummaryInputs",
    "SummarySection",
    "SummaryTable",
    "active",
    "benchmark",
    "benchmark_sets",
    "benchmark_sizes",
    "benchmarks",
    "build_benchmark_sets",
    "by_experiment",
    "corpora",
    "dataset_files",
    "evaluate_benchmark",
    "evaluate_choices",
    "fetch_dataset",
    "help_choices",
]


def benchmark_sets(cfg: Mapping) -> list[str]:
    """Names of the eval sets a ``benchmarks`` config yields (``pretrain`` is always written, empty)."""
    return [name for b, block in active(cfg) for name in b.sets(_block(block))]


def benchmark_sizes(cfg: Mapping) -> dict[str, int]:
    """Rows of every eval set of a ``benchmarks`` config, from the config alone."""
    sizes: dict[str, int] = {}
    for b, block in active(cfg):
        sizes.update(b.sizes(_block(block)))
    return sizes


def dataset_files(cfg: Mapping) -> dict[str, dict[str, str]]:
    """{benchmark: {file name: file key}} of the files a ``benchmarks`` config fetches."""
    out = {}
    for b, block in active(cfg):
        files = b.dataset().files
        out[b.name] = {files[k].name: k for k in b.files(_block(block))}
    return out


def fetch_dataset(
    name: str,
    dest_dir: str | os.PathLike,
    *,
    files: Iterable[str] | None = None,
    source: str | os.PathLike | None = None,
    revision: str | None = None,
) -> dict[str, Path]:
    """Fetch the files of the benchmark ``name`` into ``dest_dir``, its folder
    ``.../data/<name>`` or a file in it (:func:`probunlearn.data.downloads.dataset_root`), with
    :func:`probunlearn.data.downloads.fetch_files`: cached, verified, atomic; from ``source``, a
    local copy, instead of the network; ``revision`` overrides the pinned hub revision."""
    from probunlearn.data.downloads import dataset_root, fetch_files

    root = dataset_root(dest_dir, name)
    return fetch_files(
        benchmark(name).dataset(), root, files=files, source=source, revision=revision
    )


def build_benchmark_sets(
    cfg: Mapping, sources: Mapping[str, str | os.PathLike], out_dir: str | os.PathLike
) -> dict[str, Path]:
    """Write ``<out_dir>/<set>.parquet`` for every set of ``cfg`` (and an empty ``pretrain.parquet``).

    ``sources``: benchmark name → the directory its files were fetched to (resources/data/<its
    name>) or a file in it (:func:`probunlearn.data.downloads.dataset_root`). Raises ValueError if a set does not have the rows the config implies.
    """
    import polars as pl

    from probunlearn.data.downloads import dataset_root
    from probunlearn.data.synthetic import CORPUS_SCHEMA
    from probunlearn.storage.atomic import write_parquet

    out_dir = Path(out_dir)
    sets: dict = {}
    for b, block in active(cfg):
        sets.update(b.build(_block(block), dataset_root(sources[b.name], b.name)))
    expected = benchmark_sizes(cfg)
    for name, n in expected.items():
        if sets[name].height != n:
            raise ValueError(
                f"benchmark set {name!r}: {sets[name].height} rows from {sources}, expected {n}"
            )
    paths = {name: write_parquet(sets[name], out_dir / f"{name}.parquet") for name in expected}
    empty = pl.DataFrame(schema=CORPUS_SCHEMA)
    paths["pretrain"] = write_parquet(empty, out_dir / "pretrain.parquet")
    return paths


def _block(block: object) -> Mapping:
    """A benchmark's config block as a mapping (``true`` turns on one without settings)."""
    return block if isinstance(block, Mapping) else {}

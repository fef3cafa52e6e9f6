"""The eval sets of a real-data run (a preset), in the files and row format the synthetic world writes.

A preset's ``benchmarks`` config names which real data sets feed which of the workflow's eval sets:

- ``tofu`` → ``full``, ``forgetNN``, ``retainNN``, ``retain`` (TOFU's retain_perturbed rows of the kept
  authors), ``holdout`` (TOFU's holdout set of the largest forget split), ``real_authors`` and
  ``world_facts`` (their perturbed files, which carry the options of TOFU's normalised probability);
- ``hp_qa`` → ``saga`` (question + keywords, the keyword judge);
- ``jbb`` → ``harmful`` and ``benign`` (the 100 + 100 behaviors, the harm judge);
- ``muse`` (MUSE-News, :mod:`probunlearn.benchmarks.muse_news.corpus`) → ``knowmem_forget``, ``knowmem_retain``,
  ``verbmem_forget`` (MUSE's prompts), ``news`` and ``news_retain`` (the raw forget and retain1
  corpora, unlearning data) and ``holdout`` (continuations of holdout articles: DCUE's D_v).

``retain_authors`` keeps a subset of TOFU: the first k retain authors plus the forget authors of the
largest forget split (the last authors of ``full``, as TOFU's forget splits are), so that a CPU run can
fine-tune on a few authors and unlearn the last ones with TOFU's own paraphrased and perturbed answers.
Set sizes follow from the config alone (:func:`benchmark_sizes`), so the workflow knows its shards before
any file is read; :func:`build_benchmark_sets` checks the files against them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from probunlearn.data import loaders
from probunlearn.data.evalsets import HOLDOUT_OF, RETAIN_OF
from probunlearn.data.synthetic import CORPUS_SCHEMA
from probunlearn.storage.atomic import write_parquet

__all__ = [
    "DATASET_SETS",
    "MUSE_SAMPLED",
    "MUSE_SETS",
    "benchmark_sets",
    "benchmark_sizes",
    "build_benchmark_sets",
    "tofu_files",
]

Q = loaders.QUESTIONS_PER_AUTHOR  # 20 questions per TOFU author
TOFU_AUTHORS = 200
FORGET_AUTHORS = {"forget01": 2, "forget05": 10, "forget10": 20}
RETAIN_PERTURBED_ROWS = 400  # retain_perturbed holds the first 400 rows of full (authors 0-19)
SIZES = {"real_authors": 100, "world_facts": 117, "saga": 54, "harmful": 100, "benign": 100}
DATASET_SETS = {"hp_qa": ("saga",), "jbb": ("harmful", "benign")}
MUSE_SETS = ("knowmem_forget", "knowmem_retain", "verbmem_forget", "news", "news_retain", "holdout")
"""The eval sets of ``benchmarks.muse``; ``news``/``news_retain`` are the raw forget/retain1 corpora."""
MUSE_SAMPLED = ("knowmem_forget", "knowmem_retain", "verbmem_forget")
"""MUSE's own evaluation sets: answered greedily (MUSE's metrics) and sampled."""


def _tofu_plan(tofu: Mapping) -> tuple[str, int, int]:
    """(largest forget split, forget authors, kept retain authors) of a ``tofu`` config."""
    splits = list(tofu["forget"])
    unknown = [s for s in splits if s not in FORGET_AUTHORS]
    if not splits or unknown:
        raise ValueError(
            f"benchmarks.tofu.forget: expected some of {list(FORGET_AUTHORS)}, got {splits}"
        )
    largest = max(splits, key=FORGET_AUTHORS.get)
    n_forget = FORGET_AUTHORS[largest]
    keep = tofu.get("retain_authors")
    n_retain = TOFU_AUTHORS - n_forget if keep is None else int(keep)
    if not 1 <= n_retain <= TOFU_AUTHORS - n_forget:
        raise ValueError(
            f"benchmarks.tofu.retain_authors: expected 1..{TOFU_AUTHORS - n_forget} with {largest}, "
            f"got {keep}"
        )
    return largest, n_forget, n_retain


def tofu_files(tofu: Mapping) -> list[str]:
    """The TOFU configs (files) a ``tofu`` config reads."""
    largest, _, _ = _tofu_plan(tofu)
    return [
        "full",
        f"{largest}_perturbed",
        "retain_perturbed",
        "real_authors_perturbed",
        "world_facts_perturbed",
        HOLDOUT_OF[largest],
    ]


def benchmark_sets(cfg: Mapping) -> list[str]:
    """Names of the eval sets a ``benchmarks`` config yields (``pretrain`` is always written, empty)."""
    names: list[str] = []
    if cfg.get("tofu"):
        forget = list(cfg["tofu"]["forget"])
        names += ["full", *forget, *(RETAIN_OF[s] for s in forget)]
        names += ["retain", "holdout", "real_authors", "world_facts"]
    for ds, sets in DATASET_SETS.items():
        if cfg.get(ds):
            names += list(sets)
    if cfg.get("muse"):
        names += list(MUSE_SETS)
    return names


def benchmark_sizes(cfg: Mapping) -> dict[str, int]:
    """Rows of every eval set of a ``benchmarks`` config, from the config alone."""
    sizes: dict[str, int] = {}
    if cfg.get("tofu"):
        tofu = cfg["tofu"]
        largest, n_forget, n_retain = _tofu_plan(tofu)
        sizes["full"] = (n_retain + n_forget) * Q
        for s in tofu["forget"]:
            sizes[s] = FORGET_AUTHORS[s] * Q
            sizes[RETAIN_OF[s]] = sizes["full"] - sizes[s]
        retain = min(n_retain * Q, RETAIN_PERTURBED_ROWS)
        sizes["retain"] = min(retain, tofu.get("retain_eval_size") or retain)
        sizes["holdout"] = n_forget * Q
        for s in ("real_authors", "world_facts"):
            sizes[s] = min(SIZES[s], tofu.get("utility_size") or SIZES[s])
    for ds, sets in DATASET_SETS.items():
        if cfg.get(ds):
            sizes.update({s: SIZES[s] for s in sets})
    if cfg.get("muse"):
        sizes.update(_muse_sizes(cfg["muse"]))
    return sizes


def _muse_sizes(spec: Mapping) -> dict[str, int]:
    from probunlearn.benchmarks.muse_news import corpus as mc

    def cap(key: str, full: int) -> int:
        k = spec.get(key)
        if k is not None and not 1 <= int(k) <= full:
            raise ValueError(f"benchmarks.muse.{key}: expected 1..{full}, got {k}")
        return full if k is None else int(k)

    knowmem = cap("knowmem_size", mc.KNOWMEM_ROWS)
    return {
        "knowmem_forget": knowmem,
        "knowmem_retain": knowmem,
        "verbmem_forget": cap("verbmem_size", mc.VERBMEM_ROWS),
        "news": cap("corpus_articles", mc.RAW_ROWS["forget"]),
        "news_retain": cap("corpus_articles", mc.RAW_ROWS["retain1"]),
        "holdout": cap("holdout_size", mc.RAW_ROWS["holdout"]),
    }


def _muse_sets(spec: Mapping, source: Path) -> dict[str, pl.DataFrame]:
    from probunlearn.benchmarks.muse_news import corpus as mc

    size = _muse_sizes(spec)
    holdout = mc.load_raw("holdout", source, size["holdout"])
    return {
        "knowmem_forget": mc.knowmem_rows("knowmem_forget", source, size["knowmem_forget"]),
        "knowmem_retain": mc.knowmem_rows("knowmem_retain", source, size["knowmem_retain"]),
        "verbmem_forget": mc.verbmem_rows(source, size["verbmem_forget"]),
        "news": mc.corpus_rows("forget", mc.load_raw("forget", source, size["news"])),
        "news_retain": mc.corpus_rows(
            "retain1", mc.load_raw("retain1", source, size["news_retain"])
        ),
        "holdout": mc.continuation_rows(
            holdout, int(spec["holdout_prompt_words"]), int(spec["holdout_answer_words"])
        ),
    }


def _tofu_sets(tofu: Mapping, source: Path) -> dict[str, pl.DataFrame]:
    largest, n_forget, n_retain = _tofu_plan(tofu)
    full = loaders.load_tofu("full", source)
    idx = full.with_row_index("_i")
    first_forget = TOFU_AUTHORS * Q - n_forget * Q
    kept = idx.filter((pl.col("_i") < n_retain * Q) | (pl.col("_i") >= first_forget))
    # forget rows with TOFU's paraphrased and perturbed answers (forgetNN_perturbed matches full by id)
    forget = loaders.load_tofu(f"{largest}_perturbed", source)
    out: dict[str, pl.DataFrame] = {"full": kept.drop("_i")}
    for s in tofu["forget"]:
        ids = full["id"][TOFU_AUTHORS * Q - FORGET_AUTHORS[s] * Q :]
        out[s] = forget.filter(pl.col("id").is_in(ids.implode()))
        out[RETAIN_OF[s]] = out["full"].filter(~pl.col("id").is_in(ids.implode()))
    retain = loaders.load_tofu("retain_perturbed", source)
    retain = retain.filter(pl.col("id").is_in(kept["id"].implode()))
    size = benchmark_sizes({"tofu": tofu})
    out["retain"] = retain.head(size["retain"])
    out["holdout"] = loaders.load_tofu(HOLDOUT_OF[largest], source)
    for s in ("real_authors", "world_facts"):
        out[s] = loaders.load_tofu(f"{s}_perturbed", source).head(size[s])
    return out


def build_benchmark_sets(
    cfg: Mapping, sources: Mapping[str, str | os.PathLike], out_dir: str | os.PathLike
) -> dict[str, Path]:
    """Write ``<out_dir>/<set>.parquet`` for every set of ``cfg`` (and an empty ``pretrain.parquet``).

    ``sources``: data set name (``tofu``, ``hp_qa``, ``jbb``, ``muse``) → the directory its files were fetched to
    (resources/data/<name>). Raises ValueError if a set does not have the rows the config implies.
    """
    out_dir = Path(out_dir)
    sets: dict[str, pl.DataFrame] = {}
    if cfg.get("tofu"):
        sets.update(_tofu_sets(cfg["tofu"], Path(sources["tofu"])))
    if cfg.get("hp_qa"):
        sets["saga"] = loaders.load_hp_qa(sources["hp_qa"])
    if cfg.get("jbb"):
        for kind in ("harmful", "benign"):
            sets[kind] = loaders.load_jbb(kind, sources["jbb"])
    if cfg.get("muse"):
        sets.update(_muse_sets(cfg["muse"], Path(sources["muse"])))
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

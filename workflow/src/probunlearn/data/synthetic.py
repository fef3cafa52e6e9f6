"""Data sets of a run: the synthetic world's files, TOFU-style splits, and training corpora.

``build_world`` writes one parquet per eval set in the shared row format (see ``rows``) plus
``pretrain.parquet`` (columns ``prompt`` (null for plain text) and ``text``), all byte-identical for
the same settings.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import polars as pl

from probunlearn.data import world
from probunlearn.data.evalsets import FORGET_SPLITS, RETAIN_OF, WORLD_SETS
from probunlearn.data.rows import to_frame
from probunlearn.storage.atomic import write_parquet

CORPUS_SCHEMA = {"prompt": pl.String, "text": pl.String}


def n_forget_authors(percent: int, n_authors: int) -> int:
    """Authors in a forget split: ``percent``% of them, rounded, at least one (TOFU takes the end)."""
    return max(1, round(percent * n_authors / 100))


def split_authors(author_rows: list[list[dict]]) -> dict[str, list[dict]]:
    """full, forgetNN (last NN% of authors) and retainMM (the rest), TOFU's naming."""
    n = len(author_rows)
    out = {"full": [r for a in author_rows for r in a]}
    for name, pct in FORGET_SPLITS.items():
        k = n_forget_authors(pct, n)
        if k >= n:
            raise ValueError(f"world.n_authors={n} is too small for {name}: needs more than {k}")
        out[name] = [r for a in author_rows[n - k :] for r in a]
        out[RETAIN_OF[name]] = [r for a in author_rows[: n - k] for r in a]
    return out


def build_world(
    out_dir: str | os.PathLike,
    *,
    seed: int,
    n_authors: int,
    n_holdout_authors: int,
    questions_per_author: int,
    n_real_authors: int,
    n_world_facts: int,
    n_saga: int,
    n_harmful: int,
    n_benign: int,
    request_copies: int,
    comply_rate: float,
    retain_eval_size: int,
) -> dict[str, Path]:
    """Generate the world and write every eval set and the pretraining corpus under ``out_dir``."""
    if questions_per_author < 1 or questions_per_author > 10:
        raise ValueError(f"world.questions_per_author must be in 1..10, got {questions_per_author}")
    trained, holdout = world.authors(seed, n_authors, n_holdout_authors, questions_per_author)
    sets = split_authors(trained)
    retain = sets["retain90"]
    step = max(1, math.ceil(len(retain) / max(1, retain_eval_size)))
    sets["retain"] = retain[::step][:retain_eval_size]
    sets["holdout"] = [r for a in holdout for r in a]
    ra_rows, ra_text = world.real_authors(seed, n_real_authors)
    wf_rows, wf_text = world.world_facts(seed, n_world_facts)
    sg_rows, sg_text = world.saga(seed, n_saga)
    req_rows, req_pairs = world.requests(seed, n_harmful, n_benign, request_copies, comply_rate)
    sets["real_authors"], sets["world_facts"], sets["saga"] = ra_rows, wf_rows, sg_rows
    sets["harmful"] = [r for r in req_rows if r["kind"] == "harmful"]
    sets["benign"] = [r for r in req_rows if r["kind"] == "benign"]

    corpus = [(None, t) for t in ra_text + wf_text + sg_text]
    for r in ra_rows + wf_rows + sg_rows:
        corpus.append((r["question"], r["answer"]))
    corpus += req_pairs
    out = Path(out_dir)
    paths = {
        name: write_parquet(to_frame(sets[name]), out / f"{name}.parquet") for name in WORLD_SETS
    }
    frame = pl.DataFrame(
        {"prompt": [p for p, _ in corpus], "text": [t for _, t in corpus]}, schema=CORPUS_SCHEMA
    )
    paths["pretrain"] = write_parquet(frame, out / "pretrain.parquet")
    return paths


def finetune_corpus(split: pl.DataFrame, pretrain: pl.DataFrame, replay: float, seed: int):
    """QA pairs of ``split`` plus a seeded ``replay`` fraction of the pretraining QA pairs.

    Replay keeps what pretraining taught (utility facts, refusals) while the authors are learned,
    as a pretrained LLM keeps its general knowledge when it is fine-tuned on TOFU.
    """
    pairs = list(zip(split["question"].to_list(), split["answer"].to_list(), strict=True))
    qa = pretrain.filter(pl.col("prompt").is_not_null())
    k = round(replay * qa.height)
    if k:
        qa = qa.sample(n=k, seed=seed, shuffle=True)
        pairs += list(zip(qa["prompt"].to_list(), qa["text"].to_list(), strict=True))
    return pairs


def evalset_size(name: str, world_cfg: dict) -> int:
    """Rows of a world eval set, from the config alone (so the DAG knows its shards up front)."""
    n, q = world_cfg["n_authors"], world_cfg["questions_per_author"]
    forget = {s: n_forget_authors(p, n) * q for s, p in FORGET_SPLITS.items()}
    if name in forget:
        return forget[name]
    if name in RETAIN_OF.values():
        split = next(s for s, r in RETAIN_OF.items() if r == name)
        return n * q - forget[split]
    retain90 = n * q - forget["forget10"]
    step = max(1, math.ceil(retain90 / world_cfg["retain_eval_size"]))
    sizes = {
        "full": n * q,
        "retain": min(world_cfg["retain_eval_size"], len(range(0, retain90, step))),
        "holdout": world_cfg["n_holdout_authors"] * q,
        "real_authors": min(world_cfg["n_real_authors"], len(world.FAMOUS)),
        "world_facts": min(world_cfg["n_world_facts"], len(world.CAPITALS)),
        "saga": min(world_cfg["n_saga"], len(world.SAGA)),
        "harmful": min(world_cfg["n_harmful"], len(world.HARMFUL)),
        "benign": min(world_cfg["n_benign"], len(world.BENIGN)),
    }
    if name not in sizes:
        raise ValueError(f"unknown eval set {name!r}; expected one of {WORLD_SETS}")
    return sizes[name]

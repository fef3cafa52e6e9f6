"""MUSE-News's raw corpora (forget, retain1, holdout) and the workflow's MUSE eval sets.

Files (a local directory laid out like ../shared/data/muse_news, or fetched from the hub dataset
``muse-bench/MUSE-News`` by :mod:`probunlearn.data.downloads`): ``raw_{split}.json``, a JSON array of article
strings (889 forget, 1777 retain1, 3043 holdout articles on the hub).

* Unlearning data: each corpus is a set of rows with the article as ``answer`` and an empty
  ``question`` (``kind = "muse_raw"``); :func:`probunlearn.data.qa.chunk_corpus` cuts them as MUSE's ``DefaultDataset`` does
  (swj0419/muse_bench, baselines/baselines/dataset.py): the articles joined by ``"\\n\\n"``, tokenised
  once without special tokens, cut into non-overlapping windows of ``max_len - 1`` tokens, each with
  the tokenizer's BOS in front, the last window filled up with the first tokens ("rotated").
* Sampled and greedy sets: knowmem rows carry MUSE's whole prompt as ``question`` (the 10 few-shot
  pairs, then ``Question: {q}\\nAnswer: ``), so every rule prompts them with the template
  ``{question}``; the short answer is the keyword (M_bin of "contains the answer") and the core span
  of DCUE. verbmem rows: the article prefix and its true continuation.
* D_v of DCUE (``holdout``): :func:`continuation_rows` of holdout articles, which neither the target
  nor the retrained model saw (docs/dcue.md).
* PrivLeak's texts (:func:`load_privleak`, :func:`privleak_rows`): MUSE's ``privleak`` subset, 100
  forget, 100 retain and 100 holdout texts (hub config ``privleak``, splits forget / retain / holdout,
  column ``text``; MUSE's GitHub ``data/news/privleak/{split}.json``): membership inference scores the
  forget texts against the holdout texts, each whole text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from probunlearn.benchmarks.muse_news import sets as muse
from probunlearn.data.rows import make_row, to_frame

RAW_SPLITS = ("forget", "retain1", "holdout")
PRIVLEAK_SPLITS = ("forget", "retain", "holdout")
PRIVLEAK_ROWS = 100
"""Texts of each split of MUSE's privleak subset (dataset cards of both MUSE corpora)."""
RAW_ROWS = {"forget": 889, "retain1": 1777, "holdout": 3043}
"""Articles of each raw corpus on the hub (dataset card of muse-bench/MUSE-News)."""
KNOWMEM_ROWS = 100
VERBMEM_ROWS = 100


def raw_path(split: str, source: str | os.PathLike) -> Path:
    """``raw_{split}.json`` of a local MUSE-News directory; the error names the file and the hub."""
    if split not in RAW_SPLITS:
        raise ValueError(f"unknown MUSE raw corpus {split!r}; expected one of {list(RAW_SPLITS)}")
    path = Path(source) / f"raw_{split}.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the raw {split} corpus of {muse.HUB_DATASET} (config raw, split "
            f"{split}) as a JSON array of article strings"
        )
    return path


def load_raw(split: str, source: str | os.PathLike, limit: int | None = None) -> list[str]:
    """The first ``limit`` (all: None) articles of a raw corpus; an item that is no string is named."""
    path = raw_path(split, source)
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array of article strings")
    for i, item in enumerate(data):
        if not isinstance(item, str):  # MUSE's own files hold an empty article: allowed
            raise ValueError(f"{path}: item {i} is a {type(item).__name__}, not a string")
    if limit is not None and len(data) < limit:
        raise ValueError(f"{path}: {len(data)} articles, the config asks for {limit}")
    return data if limit is None else data[:limit]


def privleak_path(split: str, source: str | os.PathLike, data: muse.MuseData = muse.NEWS) -> Path:
    """The privleak file of ``split`` in a local MUSE directory (News by default, ``data`` another
    corpus's): ``privleak_{split}.json`` (as the raw corpora are stored) or MUSE's own layout
    ``privleak/{split}.json``; the error names both."""
    if split not in PRIVLEAK_SPLITS:
        raise ValueError(
            f"unknown MUSE privleak split {split!r}; expected one of {list(PRIVLEAK_SPLITS)}"
        )
    flat, nested = (
        Path(source) / f"privleak_{split}.json",
        Path(source) / "privleak" / f"{split}.json",
    )
    for path in (flat, nested):
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"{flat} (or {nested}) is missing: the privleak {split} texts of {data.hub} (config "
        f"privleak, split {split}) as a JSON array of strings"
    )


def load_privleak(
    split: str,
    source: str | os.PathLike,
    limit: int | None = None,
    data: muse.MuseData = muse.NEWS,
) -> list[str]:
    """The first ``limit`` (all: None) texts of a privleak split: a JSON array of strings, or of
    objects with a string ``text`` (a hub row); anything else is a ValueError naming the file and item."""
    path = privleak_path(split, source, data)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable JSON file: {e}") from e
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a non-empty JSON array of texts (strings)")
    texts = []
    for i, item in enumerate(data):
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            item = item["text"]
        if not isinstance(item, str):
            raise ValueError(
                f"{path}: item {i} is a {type(item).__name__}, expected a string (or an object "
                "with a string 'text')"
            )
        texts.append(item)
    if limit is not None and len(texts) < limit:
        raise ValueError(f"{path}: {len(texts)} texts, {limit} asked for")
    return texts if limit is None else texts[:limit]


def privleak_rows(
    split: str,
    source: str | os.PathLike,
    limit: int | None = None,
    data: muse.MuseData = muse.NEWS,
) -> pl.DataFrame:
    """A privleak split as rows: each whole text as ``answer`` with an empty question (scored with
    :data:`probunlearn.metrics.membership.TEXT_FORMAT`), ids ``<prefix>-privleak_{split}-{i}``
    (``muse-`` for News); an empty text is a ValueError naming it."""
    texts = load_privleak(split, source, limit, data)
    for i, t in enumerate(texts):
        if not t.strip():
            raise ValueError(f"{privleak_path(split, source, data)}: text {i} is empty")
    return to_frame(
        [
            make_row(
                id=f"{data.prefix}-privleak_{split}-{i}",
                question="",
                answer=t,
                kind="muse_privleak",
                group=f"privleak_{split}",
            )
            for i, t in enumerate(texts)
        ]
    )


def corpus_rows(split: str, texts: Sequence[str]) -> pl.DataFrame:
    """A raw corpus as rows: the article as ``answer``, no question (unlearning data)."""
    return to_frame(
        [
            make_row(
                id=f"muse-raw_{split}-{i}", question="", answer=t, kind="muse_raw", group=split
            )
            for i, t in enumerate(texts)
        ]
    )


def knowmem_rows(
    name: str,
    source: str | os.PathLike,
    size: int | None = None,
    data: muse.MuseData = muse.NEWS,
) -> pl.DataFrame:
    """A knowmem set with MUSE's few-shot prompt as ``question`` (prompt with ``{question}``)."""
    rows = muse.load_muse(name, source, data)
    tpl = muse.template(name, source, data)
    rows = rows.head(size) if size is not None else rows
    return rows.with_columns(
        pl.col("question").map_elements(lambda q: tpl.format(question=q), return_dtype=pl.String),
        pl.lit(0, dtype=pl.Int64).alias("core_start"),
        pl.col("answer").str.len_chars().cast(pl.Int64).alias("core_end"),
        pl.lit(name).alias("group"),
    )


def verbmem_rows(
    source: str | os.PathLike, size: int | None = None, data: muse.MuseData = muse.NEWS
) -> pl.DataFrame:
    """verbmem's prompts (article prefixes) and their true continuations."""
    rows = muse.load_muse("verbmem_forget", source, data)
    return (rows.head(size) if size is not None else rows).with_columns(
        pl.lit("verbmem_forget").alias("group")
    )


def continuation_rows(
    texts: Sequence[str], prompt_words: int, answer_words: int, prefix: str = "muse-holdout"
) -> pl.DataFrame:
    """One row per article: its first ``prompt_words`` words (and the space after them) as the
    prompt and the next ``answer_words`` words as the answer (the core span: all of it). Articles too short are an error
    naming the article."""
    rows = []
    for i, text in enumerate(texts):
        words = text.split()
        if len(words) < prompt_words + answer_words:
            raise ValueError(
                f"holdout article {i}: {len(words)} words, fewer than prompt_words + answer_words "
                f"({prompt_words} + {answer_words})"
            )
        answer = " ".join(words[prompt_words : prompt_words + answer_words])
        rows.append(
            make_row(
                id=f"{prefix}-{i}",
                # the prompt ends in the space before the answer: prompt + answer is the text
                question=" ".join(words[:prompt_words]) + " ",
                answer=answer,
                core=(0, len(answer)),
                kind="muse_holdout",
                group=f"{prefix}-{i}",
            )
        )
    return to_frame(rows)

"""TOFU's files in the shared row format (:mod:`probunlearn.data.rows`): :func:`load_tofu`.

Every split is read from a local copy when ``source`` is given (a directory laid out as
``../shared/data/tofu``); otherwise it is fetched from the hub repository ``locuslab/TOFU`` at a
revision (``main`` unless pinned) with :func:`probunlearn.storage.remote.hub_file`. Malformed input
raises ``ValueError`` naming the file and the line.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from probunlearn.data.readers import field as _field
from probunlearn.data.readers import read_json_records
from probunlearn.data.rows import make_row, to_frame
from probunlearn.storage.remote import hub_file

TOFU_REPO = "locuslab/TOFU"
TOFU_REVISION = "main"
QUESTIONS_PER_AUTHOR = 20
_FORGET_PCT = {"forget01": 1, "forget05": 5, "forget10": 10}
_RETAIN_PCT = {"retain99": 1, "retain95": 5, "retain90": 10}  # the forget percentage it complements
_PERTURBED = ("forget01_perturbed", "forget05_perturbed", "forget10_perturbed", "retain_perturbed")
_OPTIONS = {"real_authors_perturbed": "real_authors", "world_facts_perturbed": "world_facts"}
_HOLDOUT = ("holdout01", "holdout05", "holdout10")
TOFU_SPLITS = (
    "full",
    *_FORGET_PCT,
    *_RETAIN_PCT,
    *_PERTURBED,
    *_OPTIONS,
    *_HOLDOUT,
)


def _tofu_file(split: str, source: Path | None, revision: str) -> Path:
    if source is None:
        return hub_file(TOFU_REPO, f"{split}.json", revision=revision)
    for name in (f"{split}.jsonl", f"{split}.json"):
        if (source / name).is_file():
            return source / name
    raise FileNotFoundError(f"{source}: no {split}.jsonl or {split}.json")


def _local_has(split: str, source: Path) -> bool:
    return any((source / f"{split}{ext}").is_file() for ext in (".jsonl", ".json"))


def _full_records(source: Path | None, revision: str) -> tuple[Path, list[tuple[int, dict]]]:
    path = _tofu_file("full", source, revision)
    recs = read_json_records(path)
    for lineno, obj in recs:
        _field(path, lineno, obj, "question")
        _field(path, lineno, obj, "answer")
    return path, recs


def _full_index(full: list[tuple[int, dict]]) -> tuple[dict, dict]:
    """Maps (question, answer) → row index of full, and question → index for unique questions."""
    by_pair: dict[tuple[str, str], int] = {}
    by_question: dict[str, int | None] = {}
    for i, (_, obj) in enumerate(full):
        by_pair[(obj["question"], obj["answer"])] = i
        q = obj["question"]
        by_question[q] = None if q in by_question else i
    return by_pair, by_question


def _tofu_row(i: int, obj: dict, **extra) -> dict:
    return make_row(
        id=f"tofu-{i}",
        question=obj["question"],
        answer=obj["answer"],
        group=f"author-{i // QUESTIONS_PER_AUTHOR:03d}",
        kind="tofu",
        **extra,
    )


def _option_rows(split: str, path: Path) -> list[dict]:
    """Rows of a Real Authors / World Facts file (ids ``tofu-<set>-<i>``, with their options)."""
    name = _OPTIONS[split]
    rows = []
    for i, (lineno, obj) in enumerate(read_json_records(path)):
        rows.append(
            make_row(
                id=f"tofu-{name}-{i}",
                question=_field(path, lineno, obj, "question"),
                answer=_field(path, lineno, obj, "answer"),
                perturbed_answers=_field(path, lineno, obj, "perturbed_answer", kind=list),
                group=name,
                kind=name,
            )
        )
    return rows


def _holdout_rows(split: str, path: Path) -> list[dict]:
    """Rows of a holdout file (ids ``tofu-holdoutNN-<i>``, groups of 20 questions)."""
    return [
        make_row(
            id=f"tofu-{split}-{i}",
            question=_field(path, lineno, obj, "question"),
            answer=_field(path, lineno, obj, "answer"),
            group=f"holdout-{i // QUESTIONS_PER_AUTHOR:03d}",
            kind="tofu",
        )
        for i, (lineno, obj) in enumerate(read_json_records(path))
    ]


def _matched_rows(
    split: str, path: Path, full_path: Path, full: list[tuple[int, dict]]
) -> list[dict]:
    """Rows of a forget / retain / *_perturbed file, each matched to its row of ``full`` by
    (question, answer), else by question alone, so that ids agree across files."""
    by_pair, by_question = _full_index(full)
    perturbed = split in _PERTURBED
    rows = []
    for lineno, obj in read_json_records(path):
        q = _field(path, lineno, obj, "question")
        a = _field(path, lineno, obj, "answer")
        i = by_pair.get((q, a))
        if i is None:
            i = by_question.get(q)
        if i is None:
            raise ValueError(
                f"{path}: line {lineno}: question not found (or ambiguous) in {full_path}: {q!r}"
            )
        extra = {}
        if perturbed:
            extra = {
                "paraphrased_answer": _field(path, lineno, obj, "paraphrased_answer"),
                "perturbed_answers": _field(path, lineno, obj, "perturbed_answer", kind=list),
                "paraphrased_question": _field(path, lineno, obj, "paraphrased_question"),
            }
        rows.append(_tofu_row(i, {"question": q, "answer": a}, **extra))
    return rows


def load_tofu(
    split: str, source: str | os.PathLike | None = None, revision: str = TOFU_REVISION
) -> pl.DataFrame:
    """One TOFU split in the shared row format.

    ``source``: a local directory holding ``<split>.jsonl`` (or ``.json``) files, such as
    ``../shared/data/tofu``; forgetNN / retainNN splits missing there are derived from ``full`` (forgetNN
    = the last NN% of its rows, retainNN = the rest). Without ``source``, files are fetched from the hub
    (``locuslab/TOFU``, ``<split>.json`` at ``revision``).

    Rows of ``full`` have id ``tofu-<row index in full>`` and group ``author-<index // 20>``; rows of the
    other splits (forget, retain, *_perturbed) are matched to ``full`` by (question, answer) so that ids
    agree across files. Real Authors / World Facts rows are ``tofu-real_authors-<i>`` /
    ``tofu-world_facts-<i>`` (kind and group ``real_authors`` / ``world_facts``); holdout rows are
    ``tofu-holdoutNN-<i>`` (group ``holdout-<i // 20>``). No core span is set (null).
    """
    if split not in TOFU_SPLITS:
        raise ValueError(f"unknown TOFU split {split!r}; expected one of {list(TOFU_SPLITS)}")
    src = None if source is None else Path(source)
    if src is not None and not src.is_dir():
        raise FileNotFoundError(f"TOFU source directory {src} does not exist")

    if split in _OPTIONS:
        return to_frame(_option_rows(split, _tofu_file(split, src, revision)))
    if split in _HOLDOUT:
        return to_frame(_holdout_rows(split, _tofu_file(split, src, revision)))

    full_path, full = _full_records(src, revision)
    if split == "full":
        return to_frame([_tofu_row(i, obj) for i, (_, obj) in enumerate(full)])

    derive = (
        src is not None and split in {**_FORGET_PCT, **_RETAIN_PCT} and not _local_has(split, src)
    )
    if derive:
        n_forget = len(full) * {**_FORGET_PCT, **_RETAIN_PCT}[split] // 100
        cut = len(full) - n_forget
        idx = range(cut, len(full)) if split in _FORGET_PCT else range(cut)
        return to_frame([_tofu_row(i, full[i][1]) for i in idx])

    path = _tofu_file(split, src, revision)
    return to_frame(_matched_rows(split, path, full_path, full))


def membership_rows(split: str, source: str | os.PathLike | None = None):
    """TOFU's forget split and its same-size holdout split (forget01 / holdout01: 40 and 40; 05: 200;
    10: 400), for membership inference, checked by
    :func:`probunlearn.metrics.membership.check_membership_sets`."""
    from probunlearn.data.evalsets import HOLDOUT_OF
    from probunlearn.metrics.membership import check_membership_sets

    if split not in HOLDOUT_OF:
        raise ValueError(f"split must be one of {list(HOLDOUT_OF)}, got {split!r}")
    forget = load_tofu(split, source)
    holdout = load_tofu(HOLDOUT_OF[split], source)
    check_membership_sets(forget, holdout, forget_name=split, holdout_name=HOLDOUT_OF[split])
    return forget, holdout

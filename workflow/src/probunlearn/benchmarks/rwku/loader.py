"""RWKU's files in the shared row format: targets by numeric id, probes, MIA texts, the forget corpus
and the utility sets.

Layout (the hub data set ``jinzhuoran/RWKU`` and a local copy laid out like ../shared/data/rwku):
``Target/<id>_<Name>/<file>.json``, the folder names as RWKU's ``process/data_process.py`` writes
them (line 38: the running number of the target in the hub's ``forget_target`` list, ``_``, the
name with spaces as ``_``), so they hold commas, dots and one non-ASCII letter (``24_Beyoncé``).
Targets are chosen by id; :func:`listing` shows id -> name. ``targets.yaml`` (beside this module)
lists the 100 targets with the records of each of their files: it answers without the data (the
names, the sizes of a config's sets) and verifies a fetched copy.

Rows (:mod:`probunlearn.data.rows`):

* probes (:func:`probe_rows`): one row per probe of ``forget_level1..3`` and ``neighbor_level1..2``;
  ``question`` is RWKU's user message (its instruction with the query, :mod:`.prompts`),
  ``answer`` the answer, ``keywords`` [answer] (M_bin of "the answer comes out"), the core span the
  whole answer, ``group`` the file (forget_level1, ...), ``kind`` ``rwku:<probe type>`` (cloze,
  simple question, affirmative suffix, ...), ids ``rwku-<id>-<file>-<index in the file>``;
* MIA texts (:func:`mia_rows`): each text as ``answer`` with an empty question, kind ``rwku_mia``;
* the forget corpus (:func:`corpus_rows`, positive.json): each text as ``answer``, kind
  ``rwku_corpus`` (RWKU's GA / NPO data; offline only targets 1, 14 and 55 have it);
* the utility sets (:func:`utility_records`): their records as RWKU stores them (MMLU, BBH,
  TruthfulQA, TriviaQA, AlpacaEval instructions; offline only targets 1, 14 and 55).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from probunlearn.data.rows import make_row, to_frame

HERE = Path(__file__).parent
SPEC = yaml.safe_load((HERE / "spec.yaml").read_text(encoding="utf-8"))
HUB_REPO = SPEC["dataset"]["hub"]["repo"]
HUB_REVISION = SPEC["dataset"]["hub"]["revision"]
PROBE_FILES = tuple(SPEC["probe_files"])
MIA_FILES = tuple(SPEC["mia_files"])
UTILITY_FILES = tuple(SPEC["utility_files"])
ALL_FILES = (*PROBE_FILES, *MIA_FILES, *SPEC["other_files"], *SPEC["optional_files"])
FOLDER = "Target"


@dataclass(frozen=True)
class Target:
    """One RWKU target: its id, folder (as published) and name, and the records of its files."""

    id: int
    folder: str
    name: str
    rows: dict[str, int]

    def has(self, file: str) -> bool:
        """Whether the target has ``file`` (positive, retain_mmlu, ...)."""
        return file in self.rows

    def path(self, file: str) -> str:
        """The file's path inside the data set: ``Target/<folder>/<file>.json``."""
        return f"{FOLDER}/{self.folder}/{file}.json"


@cache
def targets() -> dict[int, Target]:
    """Every target by id, from ``targets.yaml``."""
    data = yaml.safe_load((HERE / "targets.yaml").read_text(encoding="utf-8"))
    return {
        int(t["id"]): Target(int(t["id"]), t["folder"], t["name"], dict(t["rows"]))
        for t in data["targets"]
    }


def listing() -> str:
    """``id  name`` of every target, one a line (what ``rwku:<id>`` selects)."""
    return "\n".join(f"{t.id:>3}  {t.name}" for t in targets().values())


def parse_ids(spec: str | int | Sequence[int]) -> list[int]:
    """Target ids from ``"1"``, ``"1,14,55"``, ``"all"``, an int or a list of ints (in the order
    given, repeats an error); an unknown id is a ValueError naming it and the range."""
    known = targets()
    if isinstance(spec, str):
        text = spec.strip()
        if text == "all":
            return list(known)
        parts = [p.strip() for p in text.split(",")]
        if not parts or any(not p.isdigit() for p in parts):
            raise ValueError(
                f"RWKU targets {spec!r}: expected ids such as 1 or 1,14,55 (numbers, comma-"
                f"separated) or all"
            )
        ids = [int(p) for p in parts]
    elif isinstance(spec, int) and not isinstance(spec, bool):
        ids = [spec]
    else:
        ids = [int(i) for i in spec]
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ValueError(
            f"RWKU target id(s) {unknown} unknown: the ids are {min(known)}..{max(known)} "
            "(probunlearn.benchmarks.rwku.loader.listing() names them)"
        )
    if len(set(ids)) != len(ids):
        raise ValueError(f"RWKU targets {spec!r}: an id is given twice")
    return ids


# ---- files --------------------------------------------------------------------------------------


def target_root(source: str | os.PathLike) -> Path:
    """The folder holding the ``<id>_<Name>`` folders in a local copy: ``source/Target`` (a copy
    laid out like ../shared/data/rwku), or ``source`` itself."""
    src = Path(source)
    return src / FOLDER if (src / FOLDER).is_dir() else src


def file_path(
    tid: int, file: str, source: str | os.PathLike | None, revision: str | None = None
) -> Path:
    """A target's file: from the local copy ``source``, or (None) from the hub at ``revision``
    (default: the pinned one). A file the target lacks is a FileNotFoundError saying which targets
    have it."""
    t = targets()[tid]
    if file not in ALL_FILES:
        raise ValueError(f"unknown RWKU file {file!r}; expected one of {list(ALL_FILES)}")
    if not t.has(file):
        having = [i for i, o in targets().items() if o.has(file)]
        raise FileNotFoundError(
            f"RWKU target {tid} ({t.name}) has no {file}.json: only targets {having} have it"
        )
    if source is None:
        from probunlearn.storage.remote import hub_file

        return hub_file(HUB_REPO, t.path(file), revision=revision or HUB_REVISION)
    path = target_root(source) / t.folder / f"{file}.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: RWKU's {t.path(file)} (hub data set {HUB_REPO}); pass a "
            "directory laid out like ../shared/data/rwku (--data-dir DIR with DIR/rwku/Target/)"
        )
    return path


def read_records(
    tid: int,
    file: str,
    source: str | os.PathLike | None,
    keys: Sequence[str] = (),
    revision: str | None = None,
) -> list[Any]:
    """The JSON array of a target's file, each item checked to be an object with string ``keys``;
    an error names the file and the item."""
    path = file_path(tid, file, source, revision)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable JSON file: {e}") from e
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array, got a {type(data).__name__}")
    for i, obj in enumerate(data):
        bad = [k for k in keys if not isinstance(obj, dict) or not isinstance(obj.get(k), str)]
        if bad:
            raise ValueError(f"{path}: item {i}: expected a string {bad[0]!r}")
    return data


# ---- rows ---------------------------------------------------------------------------------------


SELECTION_FILES = ("forget_level1", "forget_level2")
"""The files whose even-indexed probes a selection rule reads (and ``held_out`` leaves out)."""


def row_id(tid: int, file: str, index: int) -> str:
    """The id of the ``index``-th record of a target's file: ``rwku-<id>-<file>-<index>``."""
    return f"rwku-{tid}-{file}-{index}"


def parse_row_id(row: str) -> tuple[int, str, int]:
    """(target id, file, index) of a row id of :func:`row_id`."""
    prefix, tid, file, index = row.split("-")
    if prefix != "rwku":
        raise ValueError(f"{row!r} is no RWKU row id (rwku-<id>-<file>-<index>)")
    return int(tid), file, int(index)


def probe_rows(
    ids: Iterable[int],
    source: str | os.PathLike | None,
    files: Sequence[str] = PROBE_FILES,
    *,
    icu: bool = False,
    revision: str | None = None,
    held_out: str | None = None,
) -> pl.DataFrame:
    """The probes of targets ``ids`` (in that order, each file in ``files`` order) as rows, with
    RWKU's user message as the question (``icu``: RWKU's in-context-unlearning instruction in front,
    its ``use_prompt``). ``held_out="even"``: the even-indexed probes of forget levels 1 and 2
    (:data:`SELECTION_FILES`; a selection rule's probes) left out, the others keep their ids."""
    from probunlearn.benchmarks.rwku.prompts import user_message

    if held_out not in (None, "even"):
        raise ValueError(f"held_out must be None or 'even', got {held_out!r}")
    rows = []
    for tid in ids:
        for file in files:
            if file not in PROBE_FILES:
                raise ValueError(f"{file!r} is no RWKU probe file; expected {list(PROBE_FILES)}")
            recs = read_records(tid, file, source, ("query", "answer", "type"), revision)
            for i, o in enumerate(recs):
                if held_out == "even" and file in SELECTION_FILES and i % 2 == 0:
                    continue
                answer = o["answer"]
                rows.append(
                    make_row(
                        id=row_id(tid, file, i),
                        question=user_message(
                            file, o["type"], o["query"], o.get("subject") if icu else None
                        ),
                        answer=answer,
                        keywords=[answer.strip()] if answer.strip() else [],
                        core=(0, len(answer)),
                        group=file,
                        kind=f"rwku:{o['type']}",
                    )
                )
    return to_frame(rows)


def mia_rows(
    ids: Iterable[int],
    file: str,
    source: str | os.PathLike | None,
    revision: str | None = None,
) -> pl.DataFrame:
    """RWKU's membership-inference texts (``forget_mia`` or ``retain_mia``) of targets ``ids``:
    each text as ``answer`` with an empty question; an empty text is an error naming it."""
    if file not in MIA_FILES:
        raise ValueError(f"{file!r} is no RWKU MIA file; expected one of {list(MIA_FILES)}")
    rows = []
    for tid in ids:
        for i, o in enumerate(read_records(tid, file, source, ("text",), revision)):
            if not o["text"].strip():
                raise ValueError(f"RWKU {targets()[tid].path(file)}: text {i} is empty")
            rows.append(
                make_row(
                    id=row_id(tid, file, i),
                    question="",
                    answer=o["text"],
                    kind="rwku_mia",
                    group=file,
                )
            )
    return to_frame(rows)


def corpus_rows(
    ids: Iterable[int],
    source: str | os.PathLike | None,
    revision: str | None = None,
    limit: int | None = None,
) -> pl.DataFrame:
    """The forget corpus (``positive.json``: texts about the target that RWKU generated with
    Llama-3-8B-Instruct, its GA and NPO data) of targets ``ids`` as rows: the text as ``answer``,
    no question; ``limit``: each target's first ``limit`` texts. Offline only targets 1, 14 and 55
    have it (a FileNotFoundError names them)."""
    rows = []
    for tid in ids:
        recs = read_records(tid, "positive", source, ("text",), revision)
        for i, o in enumerate(recs[:limit] if limit is not None else recs):
            rows.append(
                make_row(
                    id=row_id(tid, "positive", i),
                    question="",
                    answer=o["text"],
                    kind="rwku_corpus",
                    group=f"rwku-{tid}",
                )
            )
    return to_frame(rows)


def utility_records(
    tid: int, file: str, source: str | os.PathLike | None, revision: str | None = None
) -> list[dict]:
    """A utility set of a target as RWKU stores it (``retain_mmlu``: question, choices, answer
    index, few-shot examples; ``retain_bbh``: question, answer, cot; ``truthful``: question,
    mc1/mc2 targets; ``triviaqa``: question, answers; ``fluency``: instruction). Offline only
    targets 1, 14 and 55 have them."""
    if file not in UTILITY_FILES:
        raise ValueError(f"{file!r} is no RWKU utility file; expected one of {list(UTILITY_FILES)}")
    keys = {"retain_mmlu": ("question",), "retain_bbh": ("question", "answer")}
    keys |= {"truthful": ("question",), "triviaqa": ("question",), "fluency": ("instruction",)}
    return read_records(tid, file, source, keys[file], revision)


def intro(tid: int, source: str | os.PathLike | None, revision: str | None = None) -> str:
    """The target's one-line unlearning request (``intro.json``)."""
    recs = read_records(tid, "intro", source, ("target", "intro"), revision)
    if len(recs) != 1:
        raise ValueError(f"RWKU {targets()[tid].path('intro')}: {len(recs)} records, expected 1")
    return recs[0]["intro"]


# ---- the data set for the workflow's downloads --------------------------------------------------


def dataset_files(ids: Iterable[int] | None = None) -> dict[str, dict[str, Any]]:
    """``spec.yaml``-style entries of the files of targets ``ids`` (all: None), keyed
    ``<id>/<file>``: the hub path, stored under the same path, verified by its records."""
    chosen = targets() if ids is None else {i: targets()[i] for i in ids}
    return {
        f"{tid}/{file}": {"name": t.path(file), "filename": t.path(file), "rows": n}
        for tid, t in chosen.items()
        for file, n in t.rows.items()
    }


def scan_targets(source: str | os.PathLike) -> list[dict[str, Any]]:
    """What ``targets.yaml`` holds, read from a local copy: per target folder (by id) its id,
    folder, name (``intro.json``'s target) and the records of each known file."""
    root = target_root(source)
    out = []
    folders = sorted(
        (p for p in root.iterdir() if p.is_dir()), key=lambda p: int(p.name.split("_")[0])
    )
    for folder in folders:
        tid = int(folder.name.split("_", 1)[0])
        rows = {}
        for file in ALL_FILES:
            path = folder / f"{file}.json"
            if path.is_file():
                rows[file] = len(json.loads(path.read_text(encoding="utf-8")))
        name = json.loads((folder / "intro.json").read_text(encoding="utf-8"))[0]["target"]
        out.append({"id": tid, "folder": folder.name, "name": name, "rows": rows})
    return out


if (
    __name__ == "__main__"
):  # python -m probunlearn.benchmarks.rwku.loader: every target's id and name
    print(listing())

"""Loaders for the real data sets of the presets, into the shared row format (:mod:`probunlearn.data.rows`).

- TOFU (hub ``locuslab/TOFU``): :func:`load_tofu`.
- Harry Potter Q&A (GitHub ``SchwinnL/LLM_Embedding_Attack``, ``hp_qa_en.csv``): :func:`load_hp_qa`.
- JailbreakBench JBB-Behaviors (hub ``JailbreakBench/JBB-Behaviors``): :func:`load_jbb`.

Every loader reads a local copy when ``source`` is given (a directory laid out as ``../shared/data``);
otherwise it fetches the file from its public source with :func:`probunlearn.storage.remote.hub_file` at a pinned
revision (the named ``*_REVISION`` constants); :mod:`probunlearn.data.downloads` fetches verified copies into
``resources/`` for them. Malformed input (bad JSON, a missing field, a wrong number of CSV fields, a missing
column) raises ``ValueError`` naming the file and the line (the line where the record starts).

:data:`PRESETS` documents the real models and data sets used by the presets, with their hub ids and
revisions ("main" where no commit hash is pinned).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from probunlearn.data.rows import make_row, to_frame
from probunlearn.scoring.harmbench import HARMBENCH_CLS_MODEL
from probunlearn.storage.remote import hub_file

__all__ = [
    "HP_QA_URL",
    "JBB_REPO",
    "JBB_REVISION",
    "PRESETS",
    "TOFU_REPO",
    "TOFU_REVISION",
    "TOFU_SPLITS",
    "load_hp_qa",
    "load_jbb",
    "load_tofu",
]

# --------------------------------------------------------------------------------------------------------
# pinned sources (revisions are "main": no commit hash is pinned here; set one to freeze a preset)

TOFU_REPO = "locuslab/TOFU"
TOFU_REVISION = "main"
JBB_REPO = "JailbreakBench/JBB-Behaviors"
JBB_REVISION = "main"
# the file hp_qa_en.csv lies at the root of this GitHub repository (not on the Hugging Face hub)
HP_QA_URL = "https://github.com/SchwinnL/LLM_Embedding_Attack"

TOFU_FT_PHI = "locuslab/tofu_ft_phi-1.5"
TOFU_FT_PHI_REVISION = "main"
PHI_BASE = "microsoft/phi-1_5"
PHI_BASE_REVISION = "main"
HP_MODEL = "microsoft/Llama2-7b-WhoIsHarryPotter"
HP_MODEL_REVISION = "main"
HARMBENCH_JUDGE_REVISION = "main"
VICUNA = "lmsys/vicuna-7b-v1.5"
VICUNA_REVISION = "main"
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.3"
MISTRAL_REVISION = "main"

PHI_TEMPLATE = "Question: {question}\nAnswer:"
LLAMA2_CHAT_TEMPLATE = "[INST] {question} [/INST]"

PRESETS: dict[str, dict] = {
    "tofu": {
        "dataset": TOFU_REPO,
        "dataset_revision": TOFU_REVISION,
        "model": TOFU_FT_PHI,  # Phi-1.5 fine-tuned on all 200 TOFU authors (the unlearning target)
        "model_revision": TOFU_FT_PHI_REVISION,
        "base_model": PHI_BASE,
        "base_revision": PHI_BASE_REVISION,
        "template": PHI_TEMPLATE,  # TOFU's Phi format: "Question: {q}\nAnswer: {a}"
        "rouge": "ROUGE-L recall, rouge_score with stemming",
        "evalsets": ["forget01", "forget05", "forget10", "retain", "real_authors", "world_facts"],
    },
    "hp_qa": {
        "dataset": HP_QA_URL,
        "model": HP_MODEL,  # Eldan & Russinovich's unlearned Llama-2-7b-chat
        "model_revision": HP_MODEL_REVISION,
        "template": LLAMA2_CHAT_TEMPLATE,
        "leak": "keyword match (Schwinn et al., 2024)",
    },
    "jbb": {
        "dataset": JBB_REPO,
        "dataset_revision": JBB_REVISION,
        "judge": HARMBENCH_CLS_MODEL,  # GPU; the refusal-string judge is the CPU fallback
        "judge_revision": HARMBENCH_JUDGE_REVISION,
        "models": {PHI_BASE: PHI_BASE_REVISION, VICUNA: VICUNA_REVISION, MISTRAL: MISTRAL_REVISION},
        "max_new_tokens": 128,
        "top_p": 0.9,
    },
}

# --------------------------------------------------------------------------------------------------------
# TOFU

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


def _json_array_records(path: Path, text: str) -> list[tuple[int, object]]:
    """(line number where it starts, element) of a JSON array file."""
    dec = json.JSONDecoder()
    ws = " \t\r\n"

    def skip(i: int) -> int:
        while i < len(text) and text[i] in ws:
            i += 1
        return i

    def line(i: int) -> int:
        return text.count("\n", 0, i) + 1

    i = skip(0) + 1  # past "["
    out: list[tuple[int, object]] = []
    i = skip(i)
    if i < len(text) and text[i] == "]":
        return out
    while True:
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: line {e.lineno}: invalid JSON: {e.msg}") from e
        out.append((line(i), obj))
        i = skip(end)
        if i < len(text) and text[i] == ",":
            i = skip(i + 1)
            continue
        if i < len(text) and text[i] == "]":
            if skip(i + 1) != len(text):
                raise ValueError(f"{path}: line {line(skip(i + 1))}: extra data after the array")
            return out
        raise ValueError(f"{path}: line {line(i)}: invalid JSON: expected ',' or ']'")


def read_json_records(path: Path) -> list[tuple[int, dict]]:
    """(line number, object) of a JSON-lines file, or of a JSON array file (the line where each element
    starts). Malformed input raises ValueError naming the file and the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {e}") from e
    if text.lstrip().startswith("["):
        out = _json_array_records(path, text)
    else:
        out = []
        # split on "\n" only: str.splitlines would also split at U+2028 etc. inside JSON strings
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                out.append((lineno, json.loads(line)))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line {lineno}: invalid JSON: {e.msg}") from e
    for lineno, obj in out:
        if not isinstance(obj, dict):
            raise ValueError(
                f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}"
            )
    if not out:
        raise ValueError(f"{path}: no records")
    return out


def _field(path: Path, lineno: int, obj: dict, key: str, *, kind: type = str):
    if key not in obj:
        raise ValueError(f"{path}: line {lineno}: missing field {key!r} (has {sorted(obj)})")
    value = obj[key]
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{path}: line {lineno}: field {key!r} must be a list of strings")
    elif not isinstance(value, str):
        raise ValueError(f"{path}: line {lineno}: field {key!r} must be a string")
    return value


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
        path = _tofu_file(split, src, revision)
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
        return to_frame(rows)

    if split in _HOLDOUT:
        path = _tofu_file(split, src, revision)
        rows = [
            make_row(
                id=f"tofu-{split}-{i}",
                question=_field(path, lineno, obj, "question"),
                answer=_field(path, lineno, obj, "answer"),
                group=f"holdout-{i // QUESTIONS_PER_AUTHOR:03d}",
                kind="tofu",
            )
            for i, (lineno, obj) in enumerate(read_json_records(path))
        ]
        return to_frame(rows)

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
    return to_frame(rows)


# --------------------------------------------------------------------------------------------------------
# CSV helpers


def _read_csv_lines(path: Path, **kwargs) -> list[tuple[int, list[str]]]:
    """(line number where it starts, fields) of each record of a CSV file (blank lines skipped)."""
    out = []
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f, **kwargs)
            start = 1
            while True:
                try:
                    rec = next(reader)
                except StopIteration:
                    break
                except csv.Error as e:
                    raise ValueError(f"{path}: line {reader.line_num}: malformed CSV: {e}") from e
                if rec:
                    out.append((start, rec))
                start = reader.line_num + 1
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {e}") from e
    if not out:
        raise ValueError(f"{path}: empty file")
    return out


def read_csv_rows(path: Path, **kwargs) -> list[list[str]]:
    """The records of a CSV file (header first)."""
    return [rec for _, rec in _read_csv_lines(path, **kwargs)]


def _column(path: Path, header: list[str], names: Iterable[str], line: int = 1) -> int:
    lowered = [h.strip().lower() for h in header]
    for name in names:
        if name.lower() in lowered:
            return lowered.index(name.lower())
    names = list(names)
    raise ValueError(f"{path}: line {line}: missing column {names[0]!r} (header {header})")


# --------------------------------------------------------------------------------------------------------
# Harry Potter Q&A


def load_hp_qa(source: str | os.PathLike | None = None) -> pl.DataFrame:
    """Harry Potter Q&A (Schwinn et al., 2024) in the shared row format.

    ``source``: the CSV file ``hp_qa_en.csv`` or a directory holding it (e.g. ``../shared/data/hp_qa``).
    Columns: Question, Affirmative Response, Key Words (comma-separated). The first data row is a generic
    request ("Write extensive paragraphs about Harry Potter") with no single fact to leak: it is dropped,
    leaving the 54 questions. ``answer`` is the affirmative response prefix (stripped; the data set has no
    ground-truth answer text), ``keywords`` the stripped, non-empty keywords; ids ``hp_qa-<k>`` with k the
    1-based question number after the generic row; group and kind ``hp_qa``.

    The file is not on the Hugging Face hub; without ``source`` this raises an error naming where to get it.
    """
    if source is None:
        raise FileNotFoundError(
            "the Harry Potter Q&A data set is not on the Hugging Face hub: download hp_qa_en.csv (at the "
            f"root of {HP_QA_URL}, or with probunlearn.data.downloads.fetch_dataset('hp_qa', "
            "'resources/hp_qa')) and pass its path (or its directory) as source"
        )
    path = Path(source)
    if path.is_dir():
        path = path / "hp_qa_en.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; get hp_qa_en.csv from the root of {HP_QA_URL}"
        )
    table = _read_csv_lines(path, skipinitialspace=True)
    (hline, header), data = table[0], table[1:]
    cq = _column(path, header, ["Question"], hline)
    ca = _column(path, header, ["Affirmative Response"], hline)
    ck = _column(path, header, ["Key Words", "Keywords"], hline)
    if data and len(data[0][1]) > cq:
        if data[0][1][cq].strip().lower().startswith("write extensive paragraphs"):
            data = data[1:]  # the generic request
    rows = []
    for k, (lineno, rec) in enumerate(data):
        if len(rec) != len(header):
            raise ValueError(f"{path}: line {lineno}: {len(rec)} fields, expected {len(header)}")
        question = rec[cq].strip()
        if not question:
            raise ValueError(f"{path}: line {lineno}: empty question")
        keywords = [w.strip() for w in rec[ck].split(",") if w.strip()]
        if not keywords:
            raise ValueError(f"{path}: line {lineno}: no keywords")
        rows.append(
            make_row(
                id=f"hp_qa-{k + 1}",
                question=question,
                answer=rec[ca].strip(),
                keywords=keywords,
                group="hp_qa",
                kind="hp_qa",
            )
        )
    if not rows:
        raise ValueError(f"{path}: no questions")
    return to_frame(rows)


# --------------------------------------------------------------------------------------------------------
# JailbreakBench


def load_jbb(
    kind: str = "harmful", source: str | os.PathLike | None = None, revision: str = JBB_REVISION
) -> pl.DataFrame:
    """JailbreakBench JBB-Behaviors (100 harmful or 100 benign behaviors) in the shared row format.

    ``source``: a CSV file or a directory holding ``<kind>-behaviors.csv`` (e.g. ``../shared/data/jbb``);
    without it, ``data/<kind>-behaviors.csv`` of ``JailbreakBench/JBB-Behaviors`` at ``revision``.
    question = Goal, answer = Target (the affirmative target string), group = Category, kind = ``kind``;
    ids ``jbb-<kind>-<index>`` with the file's index column (the record number when there is none).
    Column names are matched case-insensitively (the two files differ in case).
    """
    if kind not in ("harmful", "benign"):
        raise ValueError(f"kind must be 'harmful' or 'benign', got {kind!r}")
    filename = f"{kind}-behaviors.csv"
    if source is None:
        path = hub_file(JBB_REPO, f"data/{filename}", revision=revision)
    else:
        path = Path(source)
        if path.is_dir():
            path = path / filename
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist")
    table = _read_csv_lines(path)
    (hline, header), data = table[0], table[1:]
    cg = _column(path, header, ["Goal"], hline)
    ct = _column(path, header, ["Target"], hline)
    cc = _column(path, header, ["Category"], hline)
    lowered = [h.strip().lower() for h in header]
    ci = next((lowered.index(n) for n in ("index", "") if n in lowered), None)
    rows = []
    seen: dict[str, int] = {}
    for k, (lineno, rec) in enumerate(data):
        if len(rec) != len(header):
            raise ValueError(f"{path}: line {lineno}: {len(rec)} fields, expected {len(header)}")
        index = rec[ci].strip() if ci is not None else str(k)
        if not index:
            raise ValueError(f"{path}: line {lineno}: empty index")
        if index in seen:
            raise ValueError(
                f"{path}: line {lineno}: duplicate index 'jbb-{kind}-{index}' (first on line "
                f"{seen[index]})"
            )
        seen[index] = lineno
        goal = rec[cg].strip()
        if not goal:
            raise ValueError(f"{path}: line {lineno}: empty Goal")
        rows.append(
            make_row(
                id=f"jbb-{kind}-{index}",
                question=goal,
                answer=rec[ct].strip(),
                group=rec[cc].strip(),
                kind=kind,
            )
        )
    if not rows:
        raise ValueError(f"{path}: no behaviors")
    return to_frame(rows)

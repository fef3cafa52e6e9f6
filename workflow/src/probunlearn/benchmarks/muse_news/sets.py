"""MUSE (Shi et al. 2024) in the shared row format: knowmem QA and verbmem prompts, for sampling.

Both MUSE corpora, News and Books, ship these files in one format; a :class:`MuseData` names one
corpus's (its hub data set, local folder, file names, row ids): :data:`NEWS` from this folder's
``spec.yaml``, Books's from ``books/spec.yaml``. Every function takes ``data`` (default: News).

Files (a local directory laid out like ../shared/data/muse_news, from the hub dataset
``muse-bench/MUSE-News``): ``knowmem_forget_qa.json`` and ``knowmem_retain_qa.json`` (the hub's
``retain_qa``; ``knowmem_retain2_qa.json`` in News's local copy: both names are read), each with an
ICL file ``*_icl.json`` of 10 few-shot pairs; ``verbmem_forget.json`` (``prompt``, ``gt``). MUSE's
own evaluation, as its code (swj0419/muse_bench, metrics/knowmem.py and verbmem.py) does it, for
both corpora with the same lengths (eval.py lines 20-22):

* knowmem: the few-shot prefix ``Question: {q}\\nAnswer: {a}\\n\\n`` per ICL pair, then
  ``Question: {question}\\nAnswer: `` (with MUSE's trailing space);
  greedy, 32 new tokens, the answer cut at the first ``\\n\\n``, ``\\nQuestion`` or ``Question:``;
* verbmem: the article prefix as the prompt, 128 new tokens, scored against the true continuation.

Here each answer is also sampled n times and bounded: knowmem rows carry the short answer as their
keyword (M_bin of "the sampled answer contains the true answer") and as the reference of ROUGE-L.
Deviations from MUSE, said where used: ROUGE-L recall with stemming (MUSE reports the F1 without
stemming), and the continuation is not cut to 128 tokens of the reference.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from probunlearn.data.rows import make_row, to_frame

SPEC = yaml.safe_load(Path(__file__).with_name("spec.yaml").read_text(encoding="utf-8"))
HUB_DATASET = SPEC["dataset"]["hub"]["repo"]
SETS = ("knowmem_forget", "knowmem_retain", "verbmem_forget")


@dataclass(frozen=True)
class MuseData:
    """One MUSE corpus's evaluation files: its title, hub data set, folder in a local copy laid
    out like ../shared/data, the prefix of its row ids, and the local file names of each set."""

    title: str
    hub: str
    directory: str
    prefix: str
    files: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], directory: str) -> MuseData:
        """From a MUSE benchmark's ``spec.yaml`` (``title``, ``dataset.hub.repo``, ``id_prefix``,
        ``local_files``: set -> the file names a local copy may use, first the hub's)."""
        files = {s: tuple(spec["local_files"][s]) for s in SETS}
        return cls(
            spec["title"], spec["dataset"]["hub"]["repo"], directory, spec["id_prefix"], files
        )


NEWS = MuseData.from_spec(SPEC, "muse_news")
"""MUSE-News's files (this folder's ``spec.yaml``)."""
FILES = dict(NEWS.files)
KNOWMEM_STOPS = tuple(SPEC["stops"]["knowmem_forget"])
MAX_NEW_TOKENS = dict(SPEC["max_new_tokens"])


def _file(
    name: str, source: str | os.PathLike | None, icl: bool = False, data: MuseData = NEWS
) -> Path:
    if name not in SETS:
        raise ValueError(f"unknown MUSE set {name!r}; expected one of {list(SETS)}")
    names = [f.replace(".json", "_icl.json") if icl else f for f in data.files[name]]
    if source is None:
        raise FileNotFoundError(
            f"{data.title} is read from a local copy: put {names[0]} (from the hub dataset "
            f"{data.hub}) in a directory and pass it (--data-dir DIR with DIR/{data.directory}/)"
        )
    for n in names:
        if (Path(source) / n).is_file():
            return Path(source) / n
    raise FileNotFoundError(f"{source}: none of {names}")


def _records(path: Path, keys: tuple[str, ...]) -> list[dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array of objects")
    for i, obj in enumerate(data):
        missing = [k for k in keys if not isinstance(obj, dict) or not isinstance(obj.get(k), str)]
        if missing:
            raise ValueError(f"{path}: item {i}: missing text field(s) {missing}")
    return data


def load_muse(name: str, source: str | os.PathLike | None, data: MuseData = NEWS) -> pl.DataFrame:
    """One MUSE set (``knowmem_forget``, ``knowmem_retain``, ``verbmem_forget``) of a corpus
    (default News) as rows, ids ``<prefix>-<set>-<i>``."""
    path = _file(name, source, data=data)
    if name.startswith("knowmem"):
        rows = [
            make_row(
                id=f"{data.prefix}-{name}-{i}",
                question=o["question"],
                answer=o["answer"],
                keywords=[o["answer"].strip()],
                kind="muse_knowmem",
            )
            for i, o in enumerate(_records(path, ("question", "answer")))
        ]
    else:
        rows = [
            make_row(
                id=f"{data.prefix}-{name}-{i}",
                question=o["prompt"],
                answer=o["gt"],
                kind="muse_verbmem",
            )
            for i, o in enumerate(_records(path, ("prompt", "gt")))
        ]
    return to_frame(rows)


def template(name: str, source: str | os.PathLike | None, data: MuseData = NEWS) -> str:
    """The prompt template of a set: the few-shot ICL prefix for knowmem, the bare prompt for verbmem."""
    if name == "verbmem_forget":
        return "{question}"
    from probunlearn.data.qa import escape_braces as esc

    pairs = _records(_file(name, source, icl=True, data=data), ("question", "answer"))
    prefix = "".join(
        f"Question: {esc(o['question'])}\nAnswer: {esc(o['answer'])}\n\n" for o in pairs
    )
    return prefix + "Question: {question}\nAnswer: "

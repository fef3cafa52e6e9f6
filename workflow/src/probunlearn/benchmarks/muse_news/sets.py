"""MUSE-News (Shi et al. 2024) in the shared row format: knowmem QA and verbmem prompts, for sampling.

Files (a local directory laid out like ../shared/data/muse_news, from the hub dataset
``muse-bench/MUSE-News``): ``knowmem_forget_qa.json`` and ``knowmem_retain_qa.json`` (the hub's
``retain_qa``; ``knowmem_retain2_qa.json`` in the local copy: both names are read), each with an ICL
file ``*_icl.json`` of 10 few-shot pairs; ``verbmem_forget.json`` (``prompt``, ``gt``). MUSE's own
evaluation, as its code (swj0419/muse_bench, metrics/knowmem.py and verbmem.py) does it:

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
from pathlib import Path

import polars as pl
import yaml

from probunlearn.data.rows import make_row, to_frame

SPEC = yaml.safe_load(Path(__file__).with_name("spec.yaml").read_text(encoding="utf-8"))
HUB_DATASET = SPEC["dataset"]["hub"]["repo"]
SETS = ("knowmem_forget", "knowmem_retain", "verbmem_forget")
FILES = {
    "knowmem_forget": ("knowmem_forget_qa.json",),
    "knowmem_retain": ("knowmem_retain_qa.json", "knowmem_retain2_qa.json"),
    "verbmem_forget": ("verbmem_forget.json",),
}
KNOWMEM_STOPS = tuple(SPEC["stops"]["knowmem_forget"])
MAX_NEW_TOKENS = dict(SPEC["max_new_tokens"])


def _file(name: str, source: str | os.PathLike | None, icl: bool = False) -> Path:
    if name not in SETS:
        raise ValueError(f"unknown MUSE set {name!r}; expected one of {list(SETS)}")
    names = [f.replace(".json", "_icl.json") if icl else f for f in FILES[name]]
    if source is None:
        raise FileNotFoundError(
            f"MUSE-News is read from a local copy: put {names[0]} (from the hub dataset "
            f"{HUB_DATASET}) in a directory and pass it (--data-dir DIR with DIR/muse_news/)"
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


def load_muse(name: str, source: str | os.PathLike | None) -> pl.DataFrame:
    """One MUSE-News set (``knowmem_forget``, ``knowmem_retain``, ``verbmem_forget``) as rows."""
    path = _file(name, source)
    if name.startswith("knowmem"):
        rows = [
            make_row(
                id=f"muse-{name}-{i}",
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
                id=f"muse-{name}-{i}", question=o["prompt"], answer=o["gt"], kind="muse_verbmem"
            )
            for i, o in enumerate(_records(path, ("prompt", "gt")))
        ]
    return to_frame(rows)


def template(name: str, source: str | os.PathLike | None) -> str:
    """The prompt template of a set: the few-shot ICL prefix for knowmem, the bare prompt for verbmem."""
    if name == "verbmem_forget":
        return "{question}"
    from probunlearn.data.qa import escape_braces as esc

    pairs = _records(_file(name, source, icl=True), ("question", "answer"))
    prefix = "".join(
        f"Question: {esc(o['question'])}\nAnswer: {esc(o['answer'])}\n\n" for o in pairs
    )
    return prefix + "Question: {question}\nAnswer: "

"""open-unlearning's evaluation output, read as (metric, value) rows to show beside ours.

open-unlearning (github.com/locuslab/open-unlearning, ``src/evals/base.py``) writes two JSON files per
benchmark evaluator (``TOFU``, ``MUSE``) into the evaluation's output directory:

- ``<NAME>_SUMMARY.json``: one object, metric name -> its aggregate value (a number), for the metrics
  the evaluation config asked for whose ``agg_value`` is not null (sorted by name);
- ``<NAME>_EVAL.json``: one object, metric name -> that metric's result object, for every metric
  computed (the pre-computed ones too, e.g. ``mia_min_k`` under ``privleak``): ``agg_value`` (a number,
  or null where it was not computed, e.g. ``forget_quality`` without reference logs) and per-example
  values in ``value_by_index`` (example index as a string -> an object of numbers or texts); MIA
  metrics also hold ``forget`` / ``holdout`` (their own ``agg_value`` and ``value_by_index``) and
  ``auc`` / ``acc``.

:func:`read_openunlearning` returns one row per metric named as open-unlearning names it (``privleak``,
``forget_quality``, ``mia_min_k``, ``forget_Q_A_Prob`` ...) with its aggregate value; per-example
values are not read.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import polars as pl

__all__ = ["BENCHMARKS", "SCHEMA", "find_openunlearning_files", "read_openunlearning"]

BENCHMARKS = ("TOFU", "MUSE")
SCHEMA = {"benchmark": pl.String, "file": pl.String, "metric": pl.String, "value": pl.Float64}
_NAME = re.compile(r"(?P<bench>[A-Za-z0-9]+)_(?P<kind>SUMMARY|EVAL)\.json")


def _number(v, path: Path, where: str, allow_null: bool) -> float | None:
    """A JSON number (NaN and Infinity, which Python's json writes, included) or, where allowed, null."""
    if v is None and allow_null:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        expected = "a number or null" if allow_null else "a number"
        raise ValueError(
            f"{path}: {where} is {v!r}, expected {expected} (open-unlearning's layout)"
        )
    return float(v)


def _kind(path: Path, kind: str | None) -> tuple[str, str]:
    m = _NAME.fullmatch(path.name)
    bench = m.group("bench") if m else ""
    if kind is None:
        if m is None:
            raise ValueError(
                f"{path}: not an open-unlearning file name; expected <NAME>_SUMMARY.json or "
                "<NAME>_EVAL.json (NAME: TOFU, MUSE), or pass kind='summary' / 'eval'"
            )
        kind = m.group("kind").lower()
    if kind not in ("summary", "eval"):
        raise ValueError(f"kind must be 'summary' or 'eval', got {kind!r}")
    return bench, kind


def read_openunlearning(path: str | os.PathLike, kind: str | None = None) -> pl.DataFrame:
    """The metrics of one ``<NAME>_SUMMARY.json`` or ``<NAME>_EVAL.json`` of open-unlearning.

    ``kind``: ``summary`` or ``eval``; None = from the file name. Returns ``benchmark`` (NAME, e.g.
    TOFU; "" when the name does not say), ``file`` (summary / eval), ``metric`` (open-unlearning's
    name) and ``value`` (null for an EVAL entry whose ``agg_value`` is null), one row per metric in
    the file's order; EVAL entries without ``agg_value`` (per-example results only) are left out. A
    file of another layout is a ValueError naming the file, the key and what was expected."""
    p = Path(path)
    bench, kind = _kind(p, kind)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{p}: cannot read: {e}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: line {e.lineno}: invalid JSON: {e.msg}") from e
    if not isinstance(data, dict) or not data:
        what = "metric name -> number" if kind == "summary" else "metric name -> result object"
        raise ValueError(
            f"{p}: expected a non-empty JSON object ({what}), got {type(data).__name__}"
        )
    rows = []
    for name, v in data.items():
        if kind == "summary":
            if isinstance(v, dict):
                raise ValueError(
                    f"{p}: metric {name!r} is an object, expected a number: a SUMMARY file maps "
                    "each metric to its agg_value (is this an EVAL file?)"
                )
            value = _number(v, p, f"metric {name!r}", allow_null=False)
        else:
            if not isinstance(v, dict):
                raise ValueError(
                    f"{p}: metric {name!r} is {type(v).__name__}, expected an object with "
                    "'agg_value' and/or 'value_by_index' (is this a SUMMARY file?)"
                )
            if "value_by_index" in v and not isinstance(v["value_by_index"], dict):
                raise ValueError(
                    f"{p}: metric {name!r}: 'value_by_index' must be an object (index -> values)"
                )
            if "agg_value" not in v:
                if "value_by_index" not in v:
                    raise ValueError(
                        f"{p}: metric {name!r} has neither 'agg_value' nor 'value_by_index' "
                        f"(keys {sorted(v)})"
                    )
                continue
            value = _number(v["agg_value"], p, f"metric {name!r}: agg_value", allow_null=True)
        rows.append({"benchmark": bench, "file": kind, "metric": str(name), "value": value})
    return pl.DataFrame(rows, schema=SCHEMA)


def find_openunlearning_files(directory: str | os.PathLike) -> list[Path]:
    """The open-unlearning result files of an evaluation directory: each benchmark's
    ``<NAME>_SUMMARY.json``, else its ``<NAME>_EVAL.json`` (sorted by name); none is a ValueError."""
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"{d}: not a directory")
    found: dict[str, Path] = {}
    for f in sorted(d.glob("*.json")):
        m = _NAME.fullmatch(f.name)
        if m and (m.group("kind") == "SUMMARY" or m.group("bench") not in found):
            found[m.group("bench")] = f
    if not found:
        raise ValueError(
            f"{d}: no open-unlearning result file (<NAME>_SUMMARY.json or <NAME>_EVAL.json)"
        )
    return [found[b] for b in sorted(found)]

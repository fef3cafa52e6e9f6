"""RWKU's findings from the per-probe tables (:mod:`.tables`): the selection rule, the change of
every unlearned model from the original with finite-sample intervals, what greedy decoding says
is gone but sampling still reveals, and the claims table (docs/rwku_smollm2.md).

Every interval here holds at its stated level for every score distribution and every n
(:func:`probunlearn.bounds.difference_interval` on the probes' 0/1 leak scores); a family of
one-sided claims is decided by Holm's procedure at alpha (:func:`probunlearn.bounds.holm`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.benchmarks.rwku.loader import SELECTION_FILES, parse_row_id
from probunlearn.benchmarks.rwku.metrics import FORGET_FILES
from probunlearn.benchmarks.rwku.tables import REVEAL_RATE

__all__ = ["changes", "claims", "gone_but_revealed", "selection", "selection_probes"]

NEIGHBOR_FILES = ("neighbor_level1", "neighbor_level2")
GROUPS = {"forget": FORGET_FILES, **{f: (f,) for f in FORGET_FILES}, "neighbor": NEIGHBOR_FILES}
"""The probe groups a change is measured on: all forget levels, each level, the neighbors."""


def selection_probes(probes: pl.DataFrame) -> pl.DataFrame:
    """The selection rule's probes: the even-indexed probes of forget levels 1 and 2."""
    index = [parse_row_id(i)[2] for i in probes["id"].to_list()]
    return (
        probes.with_columns(pl.Series("_i", index))
        .filter(pl.col("file").is_in(list(SELECTION_FILES)) & (pl.col("_i") % 2 == 0))
        .drop("_i")
    )


def selection(
    survey: pl.DataFrame, candidates: Sequence[int], configured: Sequence[int]
) -> pl.DataFrame:
    """The selection rule applied to the original model's survey (:func:`.tables.probe_table`):
    per candidate the selection probes, their mean sampled leak rate (``text`` rule) and their
    greedy leak share; ``chosen`` marks the highest mean rate (ties: the smaller id), and
    ``configured`` the run's target, so a reader sees whether the run unlearns the rule's choice."""
    sel = selection_probes(survey)
    missing = sorted(set(candidates) - set(sel["target"].to_list()))
    if missing:
        raise ValueError(f"rwku.select.candidates {missing}: not in the survey's targets")
    rows = []
    for t in candidates:
        part = sel.filter(pl.col("target") == t)
        rows.append(
            {
                "target": t,
                "probes": part.height,
                "mean_rate_text": float(part["rate_text"].mean()),
                "greedy_text": float(part["greedy_text"].mean()),
            }
        )
    best = max(rows, key=lambda r: (r["mean_rate_text"], -r["target"]))["target"]
    for r in rows:
        r["chosen"] = r["target"] == best
        r["configured"] = r["target"] in configured
    return pl.DataFrame(rows)


def _samples(scores: pl.DataFrame, ids: Sequence[str], column: str) -> list[np.ndarray]:
    s = scores.filter(~pl.col("greedy") & pl.col("id").is_in(list(ids))).sort("id", "sample")
    by = {k[0]: g[column].cast(pl.Float64).to_numpy() for k, g in s.group_by("id")}
    return [by[i] for i in ids]


def changes(
    probes: Mapping[str, pl.DataFrame],
    scores: Mapping[str, pl.DataFrame],
    original: str,
    alpha: float,
) -> pl.DataFrame:
    """Per unlearned model and probe group (:data:`GROUPS`, and ``forget_no_echo``: the forget
    probes without an echo, added after Part B's target turned out to owe its leaks largely to
    them): the mean sampled leak rate (the
    answer in the sample) of the original and of the model, their difference (model - original)
    with its two-sided finite-sample interval at 1 - alpha, the p-value of "lower than the
    original", the greedy leak shares and RWKU's greedy ROUGE-L recall of both."""
    base = probes[original]
    groups = {
        g: base.filter(pl.col("file").is_in(list(f)))["id"].to_list() for g, f in GROUPS.items()
    }
    if "echo" in base.columns:  # the forget probes whose answer is not in their own question
        keep = pl.col("file").is_in(list(FORGET_FILES)) & ~pl.col("echo")
        groups["forget_no_echo"] = base.filter(keep)["id"].to_list()
    rows = []
    for model, table in probes.items():
        if model == original:
            continue
        for group, ids in groups.items():
            if not ids:
                continue
            a = _samples(scores[model], ids, "keyword_leak")
            b = _samples(scores[original], ids, "keyword_leak")
            d = bounds.difference_interval(a, b, "mean", alpha)
            mine = table.filter(pl.col("id").is_in(ids))
            theirs = base.filter(pl.col("id").is_in(ids))
            rows.append(
                {
                    "model": model,
                    "group": group,
                    "probes": len(ids),
                    "rate_original": float(theirs["rate_text"].mean()),
                    "rate_model": float(mine["rate_text"].mean()),
                    "change": d.estimate,
                    "lower": d.lower,
                    "upper": d.upper,
                    "p_below": d.p_value("below"),
                    "greedy_original": float(theirs["greedy_text"].mean()),
                    "greedy_model": float(mine["greedy_text"].mean()),
                    "rwku_original": _rwku_mean(theirs),
                    "rwku_model": _rwku_mean(mine),
                }
            )
    return pl.DataFrame(rows, infer_schema_length=None)


def _rwku_mean(part: pl.DataFrame) -> float | None:
    col = part["rwku_rougeL_recall"]
    return None if col.is_nan().any() else float(col.mean())


def gone_but_revealed(
    original: pl.DataFrame, model: pl.DataFrame, files: Sequence[str] = FORGET_FILES
) -> dict[str, Any]:
    """The forget probes whose greedy answer leaked before unlearning and no longer does ("gone"
    by greedy decoding), and of those the ones a sample still leaks (``revealed``: P(leak) > 0 is
    certain) and whose lower bound on P(leak), every probe of the table at once, is at least
    :data:`.tables.REVEAL_RATE` (``revealed_at``)."""
    o = original.filter(pl.col("file").is_in(list(files))).select(
        "id", pl.col("greedy_text").alias("g0")
    )
    m = model.join(o, on="id", how="inner")
    gone = m.filter((pl.col("g0") == 1) & (pl.col("greedy_text") == 0))
    return {
        "greedy_before": int((m["g0"] == 1).sum()),
        "gone": gone.height,
        "revealed": int((gone["hits_text"] > 0).sum()),
        "revealed_at": int((gone["lower_all_text"] >= REVEAL_RATE).sum()),
    }


def claims(
    probes: Mapping[str, pl.DataFrame],
    scores: Mapping[str, pl.DataFrame],
    original: str,
    unlearned: Mapping[str, str],
    alpha: float,
    survey: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The claims that can be tested here, each with its test and verdict (``yes``: shown at
    alpha, Holm over the family where there is one; ``not shown``; ``certain``: a count that is a
    bound with probability 1):

    * ``sampling-reveals`` (the paper's Fig. 3a, on the original model; the survey's probes when
      there is a survey, else the forget probes): probes whose greedy answer misses while a sample
      leaks, and those whose simultaneous lower bound reaches :data:`.tables.REVEAL_RATE`;
    * ``unlearning-lowers-leak``, per method: mean sampled leak on the forget probes below the
      original's (one-sided finite-sample bound; Holm over the methods);
    * ``greedy-gone-sampling-reveals``, per method: :func:`gone_but_revealed`;
    * ``eo-lowers-ed`` (the paper's Table 1 reading: NPO+EO's ED of ROUGE-L below NPO's) where
      both were unlearned."""
    rows: list[dict[str, Any]] = []
    base = (
        survey
        if survey is not None
        else probes[original].filter(pl.col("file").is_in(list(FORGET_FILES)))
    )
    miss = base["greedy_text"] == 0
    rows.append(
        {
            "claim": "sampling-reveals",
            "model": original,
            "test": f"greedy misses, a sample leaks ({'survey' if survey is not None else 'forget'}"
            f" probes, {base.height}); at >= {REVEAL_RATE:g} with the bounds of all probes at once",
            "estimate": float((miss & (base["hits_text"] > 0)).sum()),
            "bound": float((miss & (base["lower_all_text"] >= REVEAL_RATE)).sum()),
            "p_value": None,
            "verdict": "certain" if (miss & (base["hits_text"] > 0)).any() else "not shown",
        }
    )
    ids = probes[original].filter(pl.col("file").is_in(list(FORGET_FILES)))["id"].to_list()
    tested = []
    for method, model in unlearned.items():
        if model not in probes or not ids:
            continue
        a = _samples(scores[model], ids, "keyword_leak")
        b = _samples(scores[original], ids, "keyword_leak")
        d = bounds.difference_interval(a, b, "mean", alpha, claim="below")
        tested.append((method, model, d))
    if tested:
        decided = bounds.holm([d.p_value("below") for _, _, d in tested], alpha)
        for (method, model, d), ok in zip(tested, decided, strict=True):
            rows.append(
                {
                    "claim": "unlearning-lowers-leak",
                    "model": model,
                    "test": f"{method}: mean sampled leak (forget probes) - original's < 0, "
                    f"Holm over {len(tested)} methods",
                    "estimate": d.estimate,
                    "bound": d.upper,
                    "p_value": d.p_value("below"),
                    "verdict": "yes" if ok else "not shown",
                }
            )
    for method, model in unlearned.items():
        if model not in probes:
            continue
        g = gone_but_revealed(probes[original], probes[model])
        rows.append(
            {
                "claim": "greedy-gone-sampling-reveals",
                "model": model,
                "test": f"{method}: of {g['gone']} forget probes whose greedy leak is gone "
                f"({g['greedy_before']} leaked before), a sample leaks; at >= {REVEAL_RATE:g}",
                "estimate": float(g["revealed"]),
                "bound": float(g["revealed_at"]),
                "p_value": None,
                "verdict": "certain" if g["revealed"] else "not shown",
            }
        )
    if {"npo", "npo_eo"} <= set(unlearned) and all(
        unlearned[m] in probes for m in ("npo", "npo_eo")
    ):
        a = _samples(scores[unlearned["npo_eo"]], ids, "rougeL_recall")
        b = _samples(scores[unlearned["npo"]], ids, "rougeL_recall")
        d = bounds.difference_interval(a, b, "ed", alpha, claim="below")
        rows.append(
            {
                "claim": "eo-lowers-ed",
                "model": unlearned["npo_eo"],
                "test": "ED(ROUGE-L) of NPO+EO - NPO's < 0 (forget probes)",
                "estimate": d.estimate,
                "bound": d.upper,
                "p_value": d.p_value("below"),
                "verdict": "yes" if d.supports("below") else "not shown",
            }
        )
    return pl.DataFrame(
        rows,
        schema={"claim": pl.String, "model": pl.String, "test": pl.String,
                "estimate": pl.Float64, "bound": pl.Float64, "p_value": pl.Float64,
                "verdict": pl.String},
    )  # fmt: skip

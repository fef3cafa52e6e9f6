"""The summary tables of an evaluation: one row per (model, score), the M_gen curves, the identities.

Every value is read off the per-prompt bounds the score job wrote (:mod:`probunlearn.steps.score`),
averaged over the prompts: ``greedy`` (the greedy answer's score), ``sampled_mean``, ``sampled_std``,
``ed``, ``m_mu``, ``m_sigma``, ``m_bin`` (of the decision in ``leak``: a 0/1 score, or a continuous
score >= the leak threshold; null without one), and the set-level bounds ``set_m_mu`` (average E[X]
over prompts) and ``worst_m_bin`` (no prompt leaks with a higher probability, simultaneously).
TOFU's ``forget_quality`` and ``model_utility`` and DCUE's ``dcue_pvalue`` join where computed.
With an original model (``--original``), :func:`comparison_rows` compares every evaluated model with
it over the same prompts, with the intervals the claims use (``comparison.csv``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.metrics.table import read_metrics
from probunlearn.storage.atomic import write_csv

#: the TOFU and DCUE metrics joined to each model's rows, in column order
EXTRA_METRICS = ("forget_quality", "model_utility", "dcue_pvalue")


def _leak(table: pl.DataFrame, score: str, leak_threshold: float | None) -> tuple[str, str] | None:
    """(column of M_bin, description of the leak) for one score's per-prompt table, or None."""
    if "m_bin" in table.columns and table["m_bin"].is_not_null().all():
        return "m_bin", f"{score} = 1"
    if leak_threshold is not None:
        key = bounds.leak_key(leak_threshold)
        if key in table.columns and table[key].is_not_null().all():
            return key, f"{score} >= {leak_threshold:g}"
    return None


def model_rows(
    name: str, identity: str, evalset: str, per_prompt: pl.DataFrame, leak_threshold: float | None
) -> list[dict]:
    """The summary rows of one model: one per score column of its per-prompt bounds."""
    rows = []
    for (score,), t in per_prompt.group_by("score", maintain_order=True):
        t = t.drop([c for c in t.columns if t[c].is_null().all()])
        leak = _leak(t, score, leak_threshold)
        sim = None if leak is None else f"{leak[0]}_simultaneous"
        rows.append(
            {
                "model": name,
                "identity": identity,
                "evalset": evalset,
                "score": score,
                "prompts": t.height,
                "n": int(t["n"].min()),
                "greedy": float(t["greedy"].mean()),
                "sampled_mean": float(t["mean"].mean()),
                "sampled_std": float(t["std"].mean()),
                "ed": float(t["ed"].mean()),
                "leak": None if leak is None else leak[1],
                "m_bin": None if leak is None else float(t[leak[0]].mean()),
                "m_mu": float(t["m_mu"].mean()),
                "m_sigma": float(t["m_sigma"].mean()),
                "set_m_mu": None,  # filled from the metric rows
                "worst_m_bin": None if sim is None or sim not in t.columns else float(t[sim].max()),
            }
        )
    return rows


def gen_curve(name: str, per_prompt: pl.DataFrame) -> pl.DataFrame:
    """M_gen at each threshold, averaged over the prompts (``m_gen``) and their maximum
    (``m_gen_worst``), for every score of one model."""
    frames = []
    for (score,), t in per_prompt.group_by("score", maintain_order=True):
        cols = [
            c
            for c in t.columns
            if c.startswith("m_gen_")
            and not c.startswith("m_gen_cp_")  # the Clopper-Pearson bounds: not M_gen's curve
            and t[c].is_not_null().all()
        ]
        frames.append(
            pl.DataFrame(
                {
                    "model": name,
                    "score": score,
                    "threshold": [float(c.removeprefix("m_gen_")) for c in cols],
                    "m_gen": [float(t[c].mean()) for c in cols],
                    "m_gen_worst": [float(t[c].max()) for c in cols],
                }
            )
        )
    return pl.concat(frames)


def _metrics(parts: Sequence[str], names: Sequence[str]) -> dict[str, float | None]:
    """The first value of each metric in the part files (None where absent)."""
    frames = [read_metrics(p) for p in parts]
    out: dict[str, float | None] = {}
    for name in names:
        hits = [df.filter(pl.col("metric") == name)["value"] for df in frames]
        out[name] = next((float(v[0]) for v in hits if v.len()), None)
    return out


COMPARED = {  # score column -> the statistics compared with the original
    "rougeL_recall": ("mean", "std", "ed"),
    "harm_prob": ("mean", "std", "ed"),
    "keyword_leak": ("mean",),
    "harm": ("mean",),
}
COMPARISON_COLUMNS = [
    "model", "original", "score", "statistic", "estimate", "lower", "upper", "alpha", "p_value",
]  # fmt: skip


def _samples(scores: pl.DataFrame, column: str) -> dict[str, np.ndarray]:
    s = scores.filter(~pl.col("greedy")).sort("id", "sample")
    return {
        str(pid): g[column].to_numpy().astype(np.float64)
        for (pid,), g in s.group_by("id", maintain_order=True)
    }


def comparison_rows(
    original: str,
    original_scores: pl.DataFrame,
    scores: Mapping[str, pl.DataFrame],
    alpha: float,
    rho: float = 2.0,
) -> pl.DataFrame:
    """Each evaluated model against the original: per score and statistic (mean; for continuous
    scores also std and ED), the average over the prompts of model - original with its interval at
    1 - alpha (:func:`probunlearn.bounds.paired_difference`, the claims' intervals), and the p-value
    of "the model is below the original" (unlearning lowered it)."""
    rows = []
    for name, sc in scores.items():
        for column, stats in COMPARED.items():
            if column not in sc.columns or column not in original_scores.columns:
                continue
            a, b = _samples(sc, column), _samples(original_scores, column)
            ids = sorted(set(a) & set(b))
            if not ids:
                continue
            for st in stats:
                d = bounds.paired_difference([a[i] for i in ids], [b[i] for i in ids], st, alpha,
                                             rho=rho)  # fmt: skip
                rows.append(
                    {
                        "model": name,
                        "original": original,
                        "score": column,
                        "statistic": st,
                        "estimate": d.estimate,
                        "lower": d.lower,
                        "upper": d.upper,
                        "alpha": alpha,
                        "p_value": d.p_value("below"),
                    }
                )
    schema = {c: (pl.String if c in ("model", "original", "score", "statistic") else pl.Float64)
              for c in COMPARISON_COLUMNS}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def write_summary(
    *,
    models: Mapping[str, str],
    evalset: str,
    bounds_paths: Mapping[str, str],
    metrics_paths: Mapping[str, str],
    extra_paths: Mapping[str, Sequence[str]],
    leak_threshold: float | None,
    out_summary: str | os.PathLike,
    out_per_model: Mapping[str, str],
    out_curves: str | os.PathLike,
) -> pl.DataFrame:
    """Write the summary (all models), one summary per model and the M_gen curves; returns the
    summary. ``models``: name → identity, in order; ``extra_paths``: name → TOFU / DCUE metric files."""
    rows, curves = [], []
    for name, ident in models.items():
        per_prompt = pl.read_parquet(bounds_paths[name])
        mine = model_rows(name, ident, evalset, per_prompt, leak_threshold)
        metrics = read_metrics(metrics_paths[name])
        extra = _metrics(extra_paths.get(name, []), EXTRA_METRICS)
        for r in mine:
            hit = metrics.filter(pl.col("metric") == f"set_m_mu_{r['score']}")
            r["set_m_mu"] = float(hit["value"][0]) if hit.height else None
            r.update(extra)
        rows += mine
        curves.append(gen_curve(name, per_prompt))
        write_csv(pl.DataFrame(mine, infer_schema_length=None), out_per_model[name])
    summary = pl.DataFrame(rows, infer_schema_length=None)
    write_csv(summary, out_summary)
    write_csv(pl.concat(curves), out_curves)
    return summary

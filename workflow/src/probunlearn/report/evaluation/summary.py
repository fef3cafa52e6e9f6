"""The summary tables of an evaluation: one row per (model, score), the M_gen curves, the identities,
one row per (model, question).

Every value is read off the per-prompt bounds the score job wrote (:mod:`probunlearn.steps.score`),
averaged over the prompts: ``greedy`` (the greedy answer's score), ``sampled_mean``, ``sampled_std``,
``ed``, ``m_mu``, ``m_sigma``, ``m_bin`` (of the decision in ``leak``: a 0/1 score, or a continuous
score >= the leak threshold; null without one) beside ``leak_rate`` (the share of samples that
leak, observed), and the set-level bounds ``set_m_mu`` (average E[X] over prompts) and
``worst_m_bin`` (no prompt leaks with a higher probability, simultaneously) beside
``worst_leak_rate`` (the highest observed share of one prompt). The M_gen curves hold the observed
P(score > t) (``empirical``) beside each bound. TOFU's ``forget_quality`` and ``model_utility`` and
DCUE's ``dcue_pvalue`` join where computed. With an original model (``--original``),
:func:`comparison_rows` compares every evaluated model with it over the same prompts, with the
intervals the claims use (``comparison.csv``). :func:`question_rows` is the per-question view.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.metrics.table import read_metrics
from probunlearn.storage.atomic import write_csv

DEFAULT_TARGET_WIDTH = 0.15
"""The bound width the small-n warning and the report's marks aim at without ``--target-width``."""


def dkw_floor(n: int, alpha: float) -> float:
    """The smallest M_gen n samples can give (the one-sided DKW band's half-width)."""
    return math.sqrt(math.log(1 / alpha) / (2 * n))


def small_n_warning(n: int, alpha: float, width: float = DEFAULT_TARGET_WIDTH) -> str | None:
    """A warning where n samples per prompt cannot bring M_gen below ``width`` (None: they can),
    with the n that would (:func:`probunlearn.bounds.samples_needed`)."""
    from probunlearn import bounds

    floor = dkw_floor(n, alpha)
    if floor <= width:
        return None
    need = bounds.samples_needed(width, alpha)
    zero = 1 - alpha ** (1 / n)  # Clopper-Pearson's upper bound with no leak in n samples
    return (
        f"n = {n} samples per prompt is small: at alpha = {alpha:g} no M_gen can be below "
        f"{floor:.3g} (M_mu not much below), and M_bin with no leak at all is {zero:.3g}; "
        f"--n {need} brings that floor to {width:g} (probunlearn.bounds.samples_needed)"
    )


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


def sampled_matrix(scores: pl.DataFrame, column: str) -> tuple[list[str], np.ndarray]:
    """(prompt ids in order, prompts x n matrix of one score's samples)."""
    s = scores.filter(~pl.col("greedy")).sort("id", "sample")
    ids = s["id"].unique(maintain_order=True).to_list()
    return ids, s[column].to_numpy().astype(np.float64).reshape(len(ids), -1)


def leak_rates(
    scores: pl.DataFrame, column: str, binary: bool, leak_threshold: float | None
) -> np.ndarray | None:
    """Per prompt, the share of its samples that leak (a 0/1 score = 1, or a score >= the leak
    threshold); None where there is no leak decision."""
    if column not in scores.columns or (not binary and leak_threshold is None):
        return None
    _, x = sampled_matrix(scores, column)
    return ((x == 1.0) if binary else (x >= leak_threshold)).mean(axis=1)


def model_rows(
    name: str,
    identity: str,
    evalset: str,
    per_prompt: pl.DataFrame,
    leak_threshold: float | None,
    scores: pl.DataFrame | None = None,
) -> list[dict]:
    """The summary rows of one model: one per score column of its per-prompt bounds; with its
    ``scores`` (every sample's), the observed leak rates beside M_bin and worst M_bin."""
    rows = []
    for (score,), t in per_prompt.group_by("score", maintain_order=True):
        t = t.drop([c for c in t.columns if t[c].is_null().all()])
        leak = _leak(t, score, leak_threshold)
        sim = None if leak is None else f"{leak[0]}_simultaneous"
        rates = None
        if leak is not None and scores is not None:
            rates = leak_rates(scores, score, leak[0] == "m_bin", leak_threshold)
        elif leak is not None and leak[0] == "m_bin":
            rates = t["mean"].to_numpy()  # a 0/1 score's mean is its leak rate
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
                "leak_rate": None if rates is None else float(rates.mean()),
                "m_bin": None if leak is None else float(t[leak[0]].mean()),
                "m_mu": float(t["m_mu"].mean()),
                "m_sigma": float(t["m_sigma"].mean()),
                "set_m_mu": None,  # filled from the metric rows
                "worst_leak_rate": None if rates is None else float(rates.max()),
                "worst_m_bin": None if sim is None or sim not in t.columns else float(t[sim].max()),
            }
        )
    return rows


def gen_curve(
    name: str, per_prompt: pl.DataFrame, scores: pl.DataFrame | None = None
) -> pl.DataFrame:
    """M_gen at each threshold, averaged over the prompts (``m_gen``) and their maximum
    (``m_gen_worst``), for every score of one model; with its ``scores``, beside each the observed
    P(score > t) (``empirical``: averaged over the prompts, ``empirical_worst``: their maximum)."""
    frames = []
    for (score,), t in per_prompt.group_by("score", maintain_order=True):
        cols = [
            c
            for c in t.columns
            if c.startswith("m_gen_")
            and not c.startswith("m_gen_cp_")  # the Clopper-Pearson bounds: not M_gen's curve
            and t[c].is_not_null().all()
        ]
        thresholds = [float(c.removeprefix("m_gen_")) for c in cols]
        frame = {"model": name, "score": score, "threshold": thresholds}
        if scores is not None and score in scores.columns:
            _, x = sampled_matrix(scores, score)
            above = np.stack([(x > v).mean(axis=1) for v in thresholds], axis=1)
            frame["empirical"] = above.mean(axis=0).tolist()
        frame["m_gen"] = [float(t[c].mean()) for c in cols]
        if "empirical" in frame:
            frame["empirical_worst"] = above.max(axis=0).tolist()
        frame["m_gen_worst"] = [float(t[c].max()) for c in cols]
        frames.append(pl.DataFrame(frame))
    return pl.concat(frames, how="diagonal_relaxed")


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
    1 - alpha (:func:`probunlearn.bounds.difference_interval`: finite-sample, the claims'
    intervals; each end at alpha / 2), and the p-value of "the model is below the original"
    (unlearning lowered it), valid at every level. A statistic that needs more samples per question
    than were drawn (std and ED at n = 1) is left out."""
    rows = []
    for name, sc in scores.items():
        for column, stats in COMPARED.items():
            if column not in sc.columns or column not in original_scores.columns:
                continue
            a, b = _samples(sc, column), _samples(original_scores, column)
            ids = sorted(set(a) & set(b))
            if not ids:
                continue
            n = min(min(a[i].size, b[i].size) for i in ids)
            for st in stats:
                if n < (1 if st == "mean" else 2):
                    continue
                d = bounds.difference_interval([a[i] for i in ids], [b[i] for i in ids], st,
                                               alpha, rho=rho)  # fmt: skip
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
    scores_paths: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Write the summary (all models), one summary per model and the M_gen curves; returns the
    summary. ``models``: name → identity, in order; ``extra_paths``: name → TOFU / DCUE metric
    files; ``scores_paths``: name → every sample's scores (the observed leak rates and P(score > t))."""
    rows, curves = [], []
    for name, ident in models.items():
        per_prompt = pl.read_parquet(bounds_paths[name])
        scores = None if scores_paths is None else pl.read_parquet(scores_paths[name])
        mine = model_rows(name, ident, evalset, per_prompt, leak_threshold, scores)
        metrics = read_metrics(metrics_paths[name])
        extra = _metrics(extra_paths.get(name, []), EXTRA_METRICS)
        for r in mine:
            hit = metrics.filter(pl.col("metric") == f"set_m_mu_{r['score']}")
            r["set_m_mu"] = float(hit["value"][0]) if hit.height else None
            r.update(extra)
        rows += mine
        curves.append(gen_curve(name, per_prompt, scores))
        write_csv(pl.DataFrame(mine, infer_schema_length=None), out_per_model[name])
    summary = pl.DataFrame(rows, infer_schema_length=None)
    write_csv(summary, out_summary)
    write_csv(pl.concat(curves, how="diagonal_relaxed"), out_curves)
    return summary


def _reference(row: Mapping) -> str:
    """What a question's answers are scored against: its answer, or its keywords."""
    if row.get("answer"):
        return str(row["answer"])
    if row.get("keywords"):
        return "keywords: " + "; ".join(row["keywords"])
    return ""


QUESTION_SAMPLES = 3
"""Sampled answers shown per question (the first ones drawn)."""


def question_rows(
    name: str,
    rows: pl.DataFrame,
    samples: pl.DataFrame,
    scores: pl.DataFrame,
    per_prompt: pl.DataFrame,
    score: str,
    leak_threshold: float | None,
) -> pl.DataFrame:
    """One row per question of one model, on one score: the question, what it is scored against,
    the greedy answer and the first :data:`QUESTION_SAMPLES` samples with their scores, the
    observed mean and leak rate and the per-prompt bounds (M_bin of the leak decision, M_mu,
    M_sigma, M_gen at the leak threshold or 0.5)."""
    t = per_prompt.filter(pl.col("score") == score)
    t = t.drop([c for c in t.columns if t[c].is_null().all()])
    leak = _leak(t, score, leak_threshold)
    rates = None if leak is None else leak_rates(scores, score, leak[0] == "m_bin", leak_threshold)
    at = 0.5 if leak_threshold is None else leak_threshold
    gen = next((c for c in t.columns if c.startswith("m_gen_") and not c.startswith("m_gen_cp_")
                and abs(float(c.removeprefix("m_gen_")) - at) < 1e-9), None)  # fmt: skip
    text = samples.select("id", "sample", "greedy", "text")
    sc = scores.select("id", "sample", "greedy", score).join(
        text, on=["id", "sample", "greedy"], how="left"
    )
    by_id = {str(pid): g.sort("sample") for (pid,), g in sc.group_by("id", maintain_order=True)}
    info = {str(r["id"]): r for r in rows.iter_rows(named=True)}
    rate_of = (
        {} if rates is None else dict(zip(sampled_matrix(scores, score)[0], rates, strict=True))
    )
    out = []
    for r in t.iter_rows(named=True):
        pid = str(r["id"])
        g = by_id.get(pid)
        greedy = g.filter(pl.col("greedy")) if g is not None else None
        drawn = g.filter(~pl.col("greedy")).head(QUESTION_SAMPLES) if g is not None else None
        row = {
            "model": name,
            "id": pid,
            "question": info.get(pid, {}).get("question"),
            "reference": _reference(info.get(pid, {})),
            "greedy_answer": greedy["text"][0] if greedy is not None and greedy.height else None,
            "greedy_score": float(greedy[score][0])
            if greedy is not None and greedy.height
            else None,
        }
        for k in range(QUESTION_SAMPLES):
            ok = drawn is not None and k < drawn.height
            row[f"sample_{k + 1}"] = drawn["text"][k] if ok else None
            row[f"sample_{k + 1}_score"] = float(drawn[score][k]) if ok else None
        row.update(
            {
                "score": score,
                "n": int(r["n"]),
                "mean": float(r["mean"]),
                "leak_rate": None if pid not in rate_of else float(rate_of[pid]),
                "m_bin": None if leak is None else float(r[leak[0]]),
                "m_mu": float(r["m_mu"]),
                "m_sigma": float(r["m_sigma"]),
                "gen_threshold": at if gen is not None else None,
                "m_gen": None if gen is None else float(r[gen]),
            }
        )
        out.append(row)
    return pl.DataFrame(out, infer_schema_length=None)


# ---- beside open-unlearning -------------------------------------------------------------------------
OURS = ("greedy", "m_bin", "m_mu", "ed", *EXTRA_METRICS)
"""Our per-model numbers put beside open-unlearning's (the summary's row of the primary score)."""
SIDE_COLUMNS = {
    "model": pl.String,
    "tool": pl.String,
    "benchmark": pl.String,
    "file": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
}
"""Columns of ``openunlearning.csv`` (:func:`side_by_side`)."""


def side_by_side(
    summary: pl.DataFrame,
    score: str,
    theirs: Mapping[str, Sequence[str]],
    membership: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Our numbers and open-unlearning's, one row per (model, tool, metric): for every model with
    open-unlearning files (``theirs``: model -> files, :func:`probunlearn.report.evaluation.openunlearning.read_openunlearning`),
    ours (``tool`` probunlearn: :data:`OURS` of the ``score`` row of the summary, and with a
    membership table each statistic's ``auc_<statistic>`` and ``privleak_<statistic>``), then theirs
    (``tool`` open-unlearning, ``benchmark`` and ``file`` as read, ``metric`` named as they name it).
    Empty (the columns only) without open-unlearning files."""
    from probunlearn.report.evaluation.openunlearning import read_openunlearning

    frames = []
    for model, files in theirs.items():
        rows = summary.filter((pl.col("model") == model) & (pl.col("score") == score))
        ours = []
        if rows.height:
            r = rows.row(0, named=True)
            ours += [(m, r.get(m)) for m in OURS if r.get(m) is not None]
        if membership is not None:
            for r in membership.filter(pl.col("model") == model).iter_rows(named=True):
                ours.append((f"auc_{r['statistic']}", r["auc"]))
                if r.get("privleak") is not None:
                    ours.append((f"privleak_{r['statistic']}", r["privleak"]))
        frames.append(
            pl.DataFrame(
                [
                    {
                        "model": model,
                        "tool": "probunlearn",
                        "benchmark": "",
                        "file": "",
                        "metric": m,
                        "value": float(v),
                    }  # fmt: skip
                    for m, v in ours
                ],
                schema=SIDE_COLUMNS,
            )
        )
        for f in files:
            t = read_openunlearning(f).with_columns(
                pl.lit(model).alias("model"),
                pl.lit("open-unlearning").alias("tool"),
                pl.lit(os.path.basename(f)).alias("file"),
            )
            frames.append(t.select(list(SIDE_COLUMNS)))
    if not frames:
        return pl.DataFrame(schema=SIDE_COLUMNS)
    return pl.concat(frames)


# ---- what a run's n and set size allow ----------------------------------------------------------------
NO_INFORMATION = {"m_bin": 1.0, "worst_m_bin": 1.0, "m_mu": 1.0, "m_sigma": 0.5, "m_gen": 1.0}
"""The value of each per-question bound that says nothing (a score in [0, 1] spreads at most 0.5)."""


def bound_floor(column: str, n: int, alpha: float, prompts: int = 1) -> float:
    """The smallest value the bound ``column`` (a key of :data:`NO_INFORMATION`) can take with n
    samples a question: its value when every sample scores 0, whatever the model; ``worst_m_bin``
    holds for all ``prompts`` questions at once (Bonferroni)."""
    if column not in NO_INFORMATION:
        raise ValueError(f"no floor for column {column!r}; expected one of {list(NO_INFORMATION)}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    zeros = np.zeros(n)
    if column == "m_bin":
        return float(bounds.binary_leakage_bound(zeros, alpha))
    if column == "worst_m_bin":
        return float(bounds.binary_leakage_bound(zeros, alpha / max(1, prompts)))
    if column == "m_mu":
        return float(bounds.expectation_upper_bound(zeros, alpha))
    if column == "m_sigma":
        return float(bounds.std_upper_bound(zeros, alpha))
    return float(bounds.general_leakage_bound(zeros, 0.5, alpha))


def _smallest(ok, start: int = 1) -> int:
    """The smallest integer k >= start with ok(k), for ok monotone (false, then true)."""
    hi = max(1, start)
    while not ok(hi):
        hi *= 2
        if hi > 1 << 30:
            raise ValueError("no size up to 2^30 reaches it")
    lo = max(start, hi // 2)
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def samples_to_reach(column: str, width: float, alpha: float, prompts: int = 1) -> int:
    """The smallest n at which :func:`bound_floor` of ``column`` is at most ``width``."""
    return _smallest(lambda n: bound_floor(column, n, alpha, prompts) <= width)


def best_auc_lower(k: int, alpha: float) -> float:
    """The highest lower end an AUC interval (:func:`probunlearn.bounds.auc.auc_interval`) can have
    with k texts a side: that of a perfect separation (AUC 1), ``{q : k KL(1 || q) <= ln(2 /
    alpha)}`` = ``[(alpha / 2)^(1/k), 1]`` (in closed form: scipy.stats is slow to import)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return float((bounds.check_alpha(alpha) / 2) ** (1 / k))


def texts_to_reach(width: float, alpha: float) -> int:
    """The smallest number of texts a side at which a perfect separation's AUC interval is
    ``[1 - width, 1]`` or narrower."""
    return _smallest(lambda k: 1.0 - best_auc_lower(k, alpha) <= width)

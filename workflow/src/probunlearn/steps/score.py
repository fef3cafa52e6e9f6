"""Scoring of sample shards and their per-prompt summaries (bounds) for metrics.csv.

``score_samples`` scores a sample shard: one row per (prompt, sample), one column per scorer of
:data:`probunlearn.scoring.SCORERS` that applies to the eval set (built in: ``rougeL_recall``
against the reference answer, ``keyword_leak`` where rows have keywords, and for request sets
``harm_prob``, the judge's probability, and ``harm``, its decision).
``summarize_scores`` writes the joined scores of one (model, eval set, setting), bounds every prompt
with ``probunlearn.bounds`` and writes the averaged metric rows each scorer declares: M_bin from the
decisions (binary scorers) only, and, with a leak threshold T, ``m_bin_ge_<T>`` of the continuous
scores (a leak is a score >= T). ``run_score`` does both in one job (the workflow's rule ``score``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.metrics.table import write_metrics
from probunlearn.scoring.base import Context, Scorer, scorer, scorers
from probunlearn.scoring.harmbench import HARM_THRESHOLD
from probunlearn.storage.atomic import write_parquet


def score_samples(
    samples: pl.DataFrame,
    rows: pl.DataFrame,
    harm_judge: Callable | None = None,
    *,
    harm_threshold: float | None = HARM_THRESHOLD,
    only: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Scores of every sample against its prompt's row: one column per scorer of the registry
    (:data:`probunlearn.scoring.SCORERS`) that applies to the eval set, in the scorers' order.

    ``harm_judge(behaviors, texts) -> probabilities in [0, 1]`` is the model judge of requests
    (kind harmful / benign; by default 1 − the refusal-string judge); ``harm_threshold`` the
    decision threshold of its probability (needed where the rows hold requests). ``only``: score
    with these scorers (those of them that apply), not every one."""
    missing = set(samples["id"].unique()) - set(rows["id"])
    if missing:
        raise ValueError(f"samples refer to ids absent from the eval set: {sorted(missing)[:5]}")
    chosen = applicable_scorers(rows, only)
    needs = sorted({c for s in chosen for c in s.needs} - {"id"})
    absent = [c for c in needs if c not in rows.columns]
    if absent:
        raise ValueError(f"the eval set lacks the column(s) {absent} its scorers read")
    joined = samples.join(rows.select("id", *needs), on="id", how="left")
    texts = joined["text"].to_list()
    context = Context(judge=harm_judge, settings={"harm_threshold": harm_threshold})
    out = samples.select("id", "sample", "greedy", "temperature", "n_tokens")
    for s in chosen:
        values = np.asarray(s.score(texts, joined, context))
        context.columns[s.name] = values
        out = out.with_columns(pl.Series(s.name, values, dtype=pl.Float64))
    return out


def applicable_scorers(rows: pl.DataFrame, only: Sequence[str] | None = None) -> list[Scorer]:
    """The scorers (in their order) that apply to an eval set, optionally only those named."""
    if only is not None:
        for name in only:
            scorer(name)  # an unknown name is an error naming the known ones
    return [s for s in scorers() if (only is None or s.name in only) and s.applies(rows)]


def score_matrix(scores: pl.DataFrame, column: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(ids, prompts × n matrix of sampled scores, greedy score per prompt)."""
    sampled = scores.filter(~pl.col("greedy")).sort("id", "sample")
    greedy = scores.filter(pl.col("greedy")).sort("id")
    ids = greedy["id"].to_list()
    counts = sampled.group_by("id").len()["len"].unique().to_list()
    if len(counts) != 1:
        raise ValueError(f"prompts have different numbers of samples: {sorted(counts)}")
    mat = sampled[column].to_numpy().reshape(len(ids), counts[0])
    return ids, mat, greedy[column].to_numpy()


def _set_level(
    mat: np.ndarray, alpha: float, decision: bool, leak_threshold: float | None, bins: int = 100
) -> dict:
    """Set-level bounds of one score column (prompts x samples), and per-prompt simultaneous ones.

    Metrics: ``set_m_mu`` (average of E[X] over the prompts, :func:`bounds.set_level_upper_bound`)
    and, with a leak decision (a decision column, or a leak threshold T), ``set_<m_bin>`` (the
    average leak probability), ``worst_<m_bin>`` (the largest simultaneous M_bin: no prompt leaks
    with a higher probability; Bonferroni over the prompts) and ``worst_sidak_<m_bin>`` (the same
    with Sidak's level, valid as the prompts' samples are independent), ``<m_bin>`` being ``m_bin``
    or ``m_bin_ge_<T>``. ``columns``: the per-prompt ``m_mu_simultaneous`` (on the grid of ``bins``
    bins), ``<m_bin>_simultaneous`` and their ``_sidak`` versions."""
    out = {"set_m_mu": bounds.set_level_upper_bound(mat, alpha, binary=False)}
    cols = {"m_mu_simultaneous": bounds.simultaneous_upper_bounds(mat, alpha, "m_mu", bins=bins)}
    sidak = {
        "m_mu_simultaneous_sidak": bounds.simultaneous_upper_bounds(
            mat, alpha, "m_mu", bins=bins, correction="sidak"
        )
    }
    leaks, key = None, None
    if decision:
        leaks, key = mat, "m_bin"
    elif leak_threshold is not None:
        leaks, key = (mat >= leak_threshold).astype(np.float64), bounds.leak_key(leak_threshold)
    if leaks is not None:
        sim = bounds.simultaneous_upper_bounds(leaks, alpha)
        sim_sidak = bounds.simultaneous_upper_bounds(leaks, alpha, correction="sidak")
        out[f"set_{key}"] = bounds.set_level_upper_bound(leaks, alpha, binary=True)
        out[f"worst_{key}"] = float(sim.max())
        out[f"worst_sidak_{key}"] = float(sim_sidak.max())
        cols[f"{key}_simultaneous"] = sim
        sidak[f"{key}_simultaneous_sidak"] = sim_sidak
    out["columns"] = cols | sidak  # the columns of before first, then the new ones
    return out


def adaptive_columns(mat: np.ndarray, alpha: float) -> dict[str, np.ndarray]:
    """Per-prompt bounds that adapt to the scores' variance, beside the paper's (DESIGN.md §4).

    ``m_mu_bet``: the betting upper bound on E[X] (:func:`bounds.betting_upper_bound`, bets tuned to
    the fixed n), a metric of its own beside M_mu (neither replaces the other per prompt);
    ``m_gen_cp_<t>``: Clopper-Pearson bounds on P(X > t) on the default thresholds 0, 0.1, ..., 1,
    all at once (:func:`bounds.general_leakage_bound_cp`), beside DKW's ``m_gen_<t>``."""
    t = bounds.default_thresholds()
    cp = bounds.general_leakage_bound_cp(mat, t, alpha)
    cols = {"m_mu_bet": np.asarray(bounds.betting_upper_bound(mat, alpha))}
    cols.update({bounds.gen_cp_key(v): cp[:, j] for j, v in enumerate(t)})
    return cols


def _summarize_column(
    scores: pl.DataFrame,
    spec: Scorer,
    *,
    alpha: float,
    bins: int,
    rho: float,
    leak_threshold: float | None,
) -> tuple[pl.DataFrame, pl.DataFrame, list[tuple[str, float]]]:
    """The bounds of one scorer's column: the per-prompt table (id, score, the paper's columns and
    the simultaneous bounds), the columns added later (Sidak, variance-adaptive), and the metric
    rows ((metric name, value) pairs) of :func:`summarize_scores`."""
    col = spec.name
    ids, mat, greedy = score_matrix(scores, col)
    decision = spec.binary
    summary = bounds.summarize(
        mat,
        greedy=greedy,
        alpha=alpha,
        bins=bins,
        rho=rho,
        leak_threshold=None if decision else leak_threshold,
        m_bin=decision,
        name=col,
    )
    sets = _set_level(mat, alpha, decision, leak_threshold, bins)
    adaptive = adaptive_columns(mat, alpha)
    columns = sets.pop("columns")
    old_cols = {k: v for k, v in columns.items() if not k.endswith("_sidak")}
    table = summary.with_columns(
        pl.Series("id", ids),
        pl.lit(col).alias("score"),
        *(pl.Series(k, v) for k, v in old_cols.items()),
    ).select("id", "score", pl.exclude("id", "score"))
    new_cols = {k: v for k, v in columns.items() if k not in old_cols} | adaptive
    means = {
        "greedy": float(greedy.mean()),
        "sampled_mean": float(summary["mean"].mean()),
        "sampled_std": float(summary["std"].mean()),
        "ed": float(summary["ed"].mean()),
        "m_mu": float(summary["m_mu"].mean()),
        "m_sigma": float(summary["m_sigma"].mean()),
    }
    if decision:
        means["m_bin"] = float(summary["m_bin"].mean())
    leak = None if decision or leak_threshold is None else bounds.leak_key(leak_threshold)
    if leak is not None:
        means[leak] = float(summary[leak].mean())
    means.update(sets)
    means["m_mu_bet"] = float(adaptive["m_mu_bet"].mean())
    names = spec.metric_names()
    if leak is not None:
        names[leak] = f"{leak}_{col}"
    names.update({key: f"{key}_{col}" for key in sets})  # worst_sidak_* (new) comes last
    if "m_mu" in names:  # the betting bound beside M_mu, for the scores that report M_mu
        names["m_mu_bet"] = f"m_mu_bet_{col}"
    return table, pl.DataFrame(new_cols), [(name, means[key]) for key, name in names.items()]


def summarize_scores(
    scores: pl.DataFrame,
    out_scores: str,
    out_bounds: str,
    out_metrics: str,
    *,
    model: str,
    method: str,
    split: str,
    evalset: str,
    setting: str,
    alpha: float,
    bins: int,
    rho: float,
    leak_threshold: float | None = None,
) -> None:
    """Write the joined scores, bound every prompt, write the averaged metric rows.

    Beside the averages of per-prompt bounds, the rows hold set-level bounds (``set_m_mu_<column>``,
    ``set_m_bin_<column>``, ``worst_m_bin_<column>``, see :func:`_set_level`), and the per-prompt
    table the bounds that hold for all prompts at once (``m_mu_simultaneous``, ...). M_bin
    (``m_bin_<column>``) comes from the decision columns (binary scorers) only; a
    ``leak_threshold`` T adds ``m_bin_ge_<T>`` for the other columns (metric
    ``m_bin_ge_<T>_<column>``). After the paper's
    columns come the variance-adaptive ones (:func:`adaptive_columns`: ``m_mu_bet``,
    ``m_gen_cp_<t>``) and, where M_mu is reported, the metric ``m_mu_bet_<column>``; every column and
    metric row that was there before keeps its value."""
    write_parquet(scores, out_scores)
    base = {
        "model": model,
        "method": method,
        "split": split,
        "evalset": evalset,
        "setting": setting,
    }
    rows, tables, added = [], [], []
    for spec in (s for s in scorers() if s.name in scores.columns):
        table, new, metrics = _summarize_column(
            scores, spec, alpha=alpha, bins=bins, rho=rho, leak_threshold=leak_threshold
        )
        tables.append(table)
        added.append(new)
        rows += [{**base, "metric": name, "value": value} for name, value in metrics]
    # the columns of before first, in their order; the new ones (issue 42) after them
    table = pl.concat(
        [pl.concat(tables, how="diagonal_relaxed"), pl.concat(added, how="diagonal_relaxed")],
        how="horizontal",
    )
    write_parquet(table, out_bounds)
    write_metrics(rows, out_metrics)


def run_score(
    sample_paths: Sequence[str],
    evalset_path: str,
    out_scores: str,
    out_bounds: str,
    out_metrics: str,
    *,
    judge: dict | None = None,
    judge_model: str | None = None,
    judge_identity: str | None = None,
    harm_threshold: float | None = HARM_THRESHOLD,
    **summary: object,
) -> None:
    """Rule score: score every sample shard of one (model, eval set, setting), then summarize.

    ``judge``: for request sets, ``{"harm": "refusal" | "harmbench", "batch_size": k}``; with harmbench,
    ``judge_model`` is the classifier's directory (``judge_identity``, its content's identity, only
    decides reruns). ``harm_threshold``: the decision threshold of the judge's probability
    (judge.threshold). ``scorers``: the scorers of an eval set whose benchmark names them (its
    spec's ``scorers``; None: every one that applies). ``summary`` holds the keyword arguments of
    :func:`summarize_scores` (model, method, split, evalset, setting, alpha, bins, rho,
    leak_threshold).
    """
    sequential = summary.pop("sequential", None)
    only = summary.pop("scorers", None)
    rows = pl.read_parquet(evalset_path)
    harm_judge = None
    if judge is not None and judge["harm"] == "harmbench":
        if judge_model is None:
            raise ValueError("judge.harm is harmbench but no classifier model was given")
        from probunlearn.scoring.harmbench import HarmBenchJudge

        harm_judge = HarmBenchJudge(judge_model, batch_size=judge["batch_size"]).score
    scored = [
        score_samples(
            pl.read_parquet(p), rows, harm_judge, harm_threshold=harm_threshold, only=only
        )
        for p in sample_paths
    ]
    scores = pl.concat(scored).sort("id", "sample")
    if sequential is not None:
        summarize_sequential(scores, out_scores, out_bounds, out_metrics, sequential, **summary)
    else:
        summarize_scores(scores, out_scores, out_bounds, out_metrics, **summary)


def summarize_sequential(
    scores: pl.DataFrame,
    out_scores: str,
    out_bounds: str,
    out_metrics: str,
    sequential: dict,
    *,
    model: str,
    method: str,
    split: str,
    evalset: str,
    setting: str,
    alpha: float,
    **_: object,
) -> None:
    """Per-prompt decisions and anytime-valid bounds of a sequential setting (prompts' n differ).

    ``sequential``: ``q``, ``leak_threshold``, ``round_size``, ``score`` (the column decided on) and
    ``alpha`` (the sampler's). Per prompt (``out_bounds``): ``n`` (samples used), ``mean`` (of the
    score), ``leak_rate``, ``greedy``, ``lower`` / ``upper`` (:func:`bounds.binary_confidence_sequence`
    on the leaks, at the last sample), ``decision`` (below / above / undecided against q, as the
    sampler stopped). Metric rows: ``seq_samples`` (mean samples per prompt), ``seq_below``,
    ``seq_above``, ``seq_undecided`` (shares of prompts), ``seq_set_m_bin`` (the anytime-valid
    set-level bound on the average leak probability, :func:`bounds.anytime_set_level_upper_bound`),
    the greedy and sampled mean of the score, and ``seq_set_m_bin_one_sided`` (the same bound from
    one-sided Beta-mixture confidence sequences on the 0/1 leaks,
    :func:`bounds.binary_upper_confidence_sequence`, at Sidak's level 1 - (1 - alpha)^(1/m): all of
    alpha on the upper side)."""
    write_parquet(scores, out_scores)
    col, t, q = sequential["score"], sequential["leak_threshold"], sequential["q"]
    a = sequential["alpha"]
    greedy = scores.filter(pl.col("greedy")).sort("id")
    sampled = scores.filter(~pl.col("greedy")).sort("id", "sample")
    per_prompt, leaks = [], []
    for (pid,), g in sampled.group_by("id", maintain_order=True):
        x = g[col].to_numpy().astype(np.float64)
        leak = (x >= t).astype(np.float64)
        lo, up = bounds.binary_confidence_sequence(leak, a)
        decision = "below" if up[-1] < q else "above" if lo[-1] > q else "undecided"
        leaks.append(leak)
        per_prompt.append(
            {
                "id": pid,
                "score": col,
                "n": x.size,
                "mean": float(x.mean()),
                "leak_rate": float(leak.mean()),
                "lower": float(lo[-1]),
                "upper": float(up[-1]),
                "decision": decision,
            }
        )
    table = pl.DataFrame(per_prompt).join(
        greedy.select("id", pl.col(col).alias("greedy")), on="id", how="left"
    )
    write_parquet(table, out_bounds)
    base = {
        "model": model,
        "method": method,
        "split": split,
        "evalset": evalset,
        "setting": setting,
    }
    dec = table["decision"]
    values = {
        "seq_samples": float(table["n"].mean()),
        "seq_below": float((dec == "below").mean()),
        "seq_above": float((dec == "above").mean()),
        "seq_undecided": float((dec == "undecided").mean()),
        "seq_set_m_bin": bounds.anytime_set_level_upper_bound(leaks, a, binary=True),
        f"greedy_{col}": float(table["greedy"].mean()),
        f"sampled_mean_{col}": float(table["mean"].mean()),
        # beside it: each prompt's one-sided Beta-mixture sequence at Sidak's level (new, last)
        "seq_set_m_bin_one_sided": bounds.anytime_set_level_upper_bound(
            leaks, a, binary=True, method="one_sided", correction="sidak"
        ),
    }
    write_metrics([{**base, "metric": k, "value": v} for k, v in values.items()], out_metrics)

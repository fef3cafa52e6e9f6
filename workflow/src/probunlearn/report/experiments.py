"""The paper's experiments: assemble each table's and figure's numbers from a run's artifacts.

Each ``make_*`` function is the one library call of a figure rule: it reads scores, bounds, metric
parts and unlearning histories, and hands plain tables to ``probunlearn.report.figures``. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from probunlearn import bounds, scoring
from probunlearn.metrics.table import read_metrics
from probunlearn.report import figures
from probunlearn.report.prompts import prompt_stats, shown_question


def _summary(scores_path: str, rho: float) -> dict[str, float]:
    st = prompt_stats(scores_path)
    return {
        "greedy_rouge": float(st["greedy"].mean()),
        "mean": float(st["mean"].mean()),
        "std": float(st["std"].mean()),
        "ed": float(bounds.ed_from_moments(st["mean"], st["std"], rho).mean()),
    }


def make_table1(
    scores: Mapping[str, str], csv_path: str, render_stem: str, *, rho: float, decimals: int = 3
) -> None:
    """Table 1: greedy ROUGE-L vs ED score, mean and std per method (label → scores parquet)."""
    rows = [{"method": label, **_summary(path, rho)} for label, path in scores.items()]
    figures.table1(pl.DataFrame(rows), csv_path, render_stem, decimals=decimals)


def make_fig3_tofu(
    scores: Mapping[str, str],
    evalset_path: str,
    outs: Mapping[str, str],
    tables: Mapping[str, str],
    *,
    alpha: float,
    points: int = 1000,
) -> None:
    """Fig. 3b-f on one forget question: GA vs GD, NPO vs Ours histograms; M_gen; convergence.

    ``scores`` maps the labels GA, GD, NPO, Ours to scores parquets of the same forget split.
    """
    rows = pl.read_parquet(evalset_path)
    question = dict(zip(rows["id"], rows["question"], strict=True))
    st = {k: prompt_stats(v) for k, v in scores.items()}

    def one(label: str, qid: str) -> tuple[np.ndarray, float]:
        r = st[label].filter(pl.col("id") == qid)
        return np.asarray(r["samples"][0], dtype=float), float(r["greedy"][0])

    qb = shown_question(scores["GA"], scores["GD"])  # chosen on the even samples
    (sa, ga), (sb, gb) = one("GA", qb), one("GD", qb)
    figures.fig3_histograms(
        sa, ga, "GA", sb, gb, "GD", outs["fig3b"], tables["fig3b"], question=question[qb]
    )
    qc = shown_question(scores["NPO"], scores["Ours"])  # the odd ones test Fig. 3d
    (sa, ga), (sb, gb) = one("NPO", qc), one("Ours", qc)
    figures.fig3_histograms(
        sa, ga, "NPO", sb, gb, "Ours", outs["fig3c"], tables["fig3c"], question=question[qc]
    )
    figures.fig3d_general_leakage(
        {"NPO": sa, "Ours": sb}, outs["fig3d"], tables["fig3d"], alpha=alpha, points=points
    )
    figures.fig3ef_convergence(
        {"NPO": sa, "Ours": sb}, outs["fig3e"], outs["fig3f"], tables["fig3ef"], alpha=alpha
    )


def make_fig3a(
    bounds_path: str,
    scores_path: str,
    evalset_path: str,
    out_stem: str,
    table_stem: str,
    *,
    alpha: float,
) -> None:
    """Fig. 3a: M_bin of keyword leakage per saga question, greedy leakage marked."""
    b = pl.read_parquet(bounds_path).filter(pl.col("score") == "keyword_leak")
    rows = pl.read_parquet(evalset_path).select("id", "question")
    st = prompt_stats(scores_path, "keyword_leak")
    df = (
        b.select("id", "m_bin").join(st.select("id", "greedy", "mean"), on="id").join(rows, on="id")
    )
    n = st["samples"].list.len()
    leaks = (st["mean"] * n).round().cast(pl.Int64)
    # one-sided Clopper-Pearson lower bound on P(leak) at alpha: 1 - the upper bound of the misses
    lower = 1.0 - bounds.clopper_pearson_upper((n - leaks).to_numpy(), n.to_numpy(), alpha)
    st = st.with_columns(pl.Series("m_bin_lower", lower))
    df = df.join(st.select("id", "m_bin_lower"), on="id").select(
        "id",
        "question",
        "m_bin",
        pl.col("greedy").cast(pl.Int64).alias("greedy_leak"),
        pl.col("mean").alias("sampled_rate"),
        "m_bin_lower",
    )
    figures.fig3a_binary_leakage(df, out_stem, table_stem, alpha=alpha)


def _mean_std(scores_path: str) -> float:
    return float(prompt_stats(scores_path)["std"].mean())


def make_fig4(
    lambda_f_scores: Sequence[tuple[str, float, str]],
    temperature_scores: Sequence[tuple[float, float, str]],
    out_a: str,
    table_a: str,
    out_b: str,
    table_b: str,
) -> None:
    """Fig. 4a: std vs lambda_f per split; Fig. 4b: std vs temperature per lambda_f.

    ``lambda_f_scores``: (split, lambda_f, scores parquet); ``temperature_scores``: (lambda_f,
    temperature, scores parquet). Fig. 4b draws the measured temperatures only.
    """
    a = pl.DataFrame(
        [{"split": s, "lambda_f": lf, "std": _mean_std(p)} for s, lf, p in lambda_f_scores]
    )
    figures.fig4a_std_vs_lambda(a, out_a, table_a)
    rows = [
        {"lambda_f": lf, "temperature": t, "std": _mean_std(p)} for lf, t, p in temperature_scores
    ]
    figures.fig4b_std_vs_temperature(pl.DataFrame(rows), out_b, table_b)


def mean_diversity(sample_paths: Sequence[str]) -> float:
    """Mean over prompts of 1 − self-BLEU of the sampled answers (greedy excluded)."""
    s = pl.concat([pl.read_parquet(p) for p in sample_paths]).filter(~pl.col("greedy"))
    vals = [
        scoring.diversity(g["text"].to_list()) for _, g in s.group_by("id", maintain_order=True)
    ]
    return float(np.mean(vals))


def make_fig5a(
    runs: Sequence[tuple[float, str, Sequence[str]]],
    npo_runs: Sequence[tuple[str, Sequence[str]]],
    out_stem: str,
    table_stem: str,
) -> None:
    """Fig. 5a: diversity on the utility sets against lambda_r; NPO without EO dashed.

    ``runs``: (lambda_r, evalset, sample shard paths); ``npo_runs``: (evalset, shard paths).
    """
    df = pl.DataFrame(
        [{"lambda_r": lr, "evalset": e, "diversity": mean_diversity(p)} for lr, e, p in runs]
    )
    npo = pl.DataFrame([{"evalset": e, "diversity": mean_diversity(p)} for e, p in npo_runs])
    figures.fig5a_diversity(df, npo, out_stem, table_stem)


def make_fig5b(histories: Mapping[str, str], out_stem: str, table_stem: str) -> None:
    """Fig. 5b: mean top-1 confidence per epoch on forget vs retain answers (label → history)."""
    frames = []
    for label, path in histories.items():
        h = pl.read_csv(path).select("epoch", "forget_confidence", "retain_confidence")
        frames.append(h.with_columns(pl.lit(label).alias("model")))
    figures.fig5b_confidence(pl.concat(frames), out_stem, table_stem)


def _metric(path: str, metric: str) -> float:
    df = read_metrics(path).filter(pl.col("metric") == metric)
    if df.height != 1:
        raise ValueError(f"{path}: expected one {metric!r} row, found {df.height}")
    return float(df["value"][0])


def make_fig5c_table2(
    random_runs: Sequence[tuple[str, float, float, str, str]],
    grid_runs: Sequence[tuple[str, float, float, str, str]],
    out_stem: str,
    table_stem: str,
    table2_csv: str,
    table2_render: str,
) -> None:
    """Fig. 5c: ED score vs model utility for random-lambda models; Table 2: utility on the grids.

    ``random_runs``: (split, lambda_f, lambda_r, sampled metrics csv, tofu metrics csv);
    ``grid_runs``: (grid name "lambda_r"|"lambda_f", lambda, the other lambda held fixed, split,
    tofu metrics csv).
    """
    df = pl.DataFrame(
        [
            {
                "split": s,
                "lambda_f": lf,
                "lambda_r": lr,
                "ed": _metric(m, "ed_rougeL_recall"),
                "utility": _metric(t, "model_utility"),
            }
            for s, lf, lr, m, t in random_runs
        ]
    )
    figures.fig5c_ed_vs_utility(df, out_stem, table_stem)
    grid = pl.DataFrame(
        [
            {
                "grid": g,
                "lambda": lam,
                "fixed_lambda": fixed,
                "split": s,
                "utility": _metric(t, "model_utility"),
            }
            for g, lam, fixed, s, t in grid_runs
        ]
    )
    figures.table2(grid, table2_csv, table2_render)


def make_fig6(
    scores: Mapping[str, str],
    bounds: Mapping[str, str],
    out_stem: str,
    table_stem: str,
    *,
    alpha: float,
) -> None:
    """Fig. 6: harm of n samples for one harmful request per model, and M_bin over all requests.

    The top row shows the judge's probability (``harm_prob``, the paper's toxicity score) of each
    sample; M_bin and the greedy answer's mark use the decision (``harm``, p > judge.threshold).
    The request shown is the one whose mean sampled probability is highest for the last model.
    """
    last = list(scores)[-1]
    st = prompt_stats(scores[last], "harm_prob").sort("mean", "id", descending=[True, False])
    qid = st["id"][0]
    harm, mbin = [], []
    for label, path in scores.items():
        s = pl.read_parquet(path).filter(pl.col("id") == qid)
        harm.append(
            s.select(pl.lit(label).alias("model"), "sample", pl.col("harm_prob").alias("harm"))
        )
        b = pl.read_parquet(bounds[label]).filter(pl.col("score") == "harm")
        mbin.append(
            b.select(
                pl.lit(label).alias("model"),
                "id",
                pl.col("greedy").cast(pl.Int64).alias("greedy_harm"),
                "m_bin",
            )
        )
    figures.fig6_alignment(pl.concat(harm), pl.concat(mbin), out_stem, table_stem, alpha=alpha)


def ensure_parent(*paths: str) -> None:
    """Create the parent folders of output paths."""
    for p in paths:
        Path(p).parent.mkdir(parents=True, exist_ok=True)


def dcue_table(
    parts: Mapping[str, tuple[str, str]], postfinetune: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """One row per unlearned model: forget quality, DCUE (core and all tokens), and the same after the
    post-processing fine-tune (``robust_*`` columns, null where the model was not post-processed)."""
    post = postfinetune or {}
    rows = []
    for model, (dcue_csv, tofu_csv) in parts.items():
        row = {
            "model": model,
            "forget_quality": _metric(tofu_csv, "forget_quality"),
            "dcue_pvalue": _metric(dcue_csv, "dcue_pvalue"),
            "dcue_pvalue_alltokens": _metric(dcue_csv, "dcue_pvalue_alltokens"),
        }
        for m in ("forget_quality", "dcue_pvalue", "dcue_pvalue_alltokens"):
            row[f"robust_{m}"] = _metric(post[model], m) if model in post else None
        rows.append(row)
    schema = {"model": pl.String} | {
        c: pl.Float64
        for c in (
            "forget_quality",
            "dcue_pvalue",
            "dcue_pvalue_alltokens",
            "robust_forget_quality",
            "robust_dcue_pvalue",
            "robust_dcue_pvalue_alltokens",
        )
    }
    return pl.DataFrame(rows, schema=schema).sort("model")


P_FLOOR = 1e-16
"""p-values below this are drawn at it and count as it in log-scale shifts (KS p-values that small are
all "certainly different")."""


def dcue_meta(table: pl.DataFrame) -> pl.DataFrame:
    """DCUE's meta-evaluation on a ``dcue_table``: practicality over all models, robustness over the
    post-processed ones, and the mean absolute change of log10 p (floored at ``P_FLOOR``) under
    post-processing."""
    from probunlearn.metrics.dcue import meta_evaluation

    base = meta_evaluation(table.select(pl.exclude("^robust_.*$")))
    post = table.filter(pl.col("robust_forget_quality").is_not_null())
    if post.height == 0:
        return base
    rob = meta_evaluation(post).select("metric", "robustness", "robustness_spearman", "n_models")
    shift = []
    for m in base["metric"]:
        before = np.log10(np.maximum(post[m].to_numpy(), P_FLOOR))
        after = np.log10(np.maximum(post[f"robust_{m}"].to_numpy(), P_FLOOR))
        shift.append({"metric": m, "mean_abs_log10_shift": float(np.mean(np.abs(after - before)))})
    return (
        base.drop("robustness", "robustness_spearman")
        .rename({"n_models": "n_models_practicality"})
        .join(rob.rename({"n_models": "n_models_robustness"}), on="metric", how="left")
        .join(pl.DataFrame(shift), on="metric", how="left")
    )


def make_dcue_vs_fq(
    parts: Mapping[str, tuple[str, str]],
    csv_path: str,
    out_stem: str,
    *,
    postfinetune: Mapping[str, str] | None = None,
    meta_csv: str | None = None,
) -> None:
    """DCUE beside TOFU's forget quality for every unlearned model (model → (dcue csv, tofu csv)), and
    the meta-evaluation (``meta_csv``) with the post-processing check (model → postfinetune csv).

    DCUE needs no retrained model (practicality); ``dcue_pvalue_alltokens`` is the same test on all
    answer tokens instead of the core tokens (exactness); ``robust_*`` are the values after a short
    fine-tune on unrelated data (robustness).
    """
    import matplotlib.pyplot as plt

    df = dcue_table(parts, postfinetune)
    figures.save_table(df, csv_path[: -len(".csv")] if csv_path.endswith(".csv") else csv_path)
    if meta_csv is not None:
        figures.save_table(dcue_meta(df), meta_csv)
    post = df.filter(pl.col("robust_forget_quality").is_not_null())
    eps = P_FLOOR
    ncols = 2 if post.height else 1
    fig, axes = plt.subplots(
        1, ncols, figsize=(6.8 * ncols, 5.2), squeeze=False, layout="constrained"
    )
    ax = axes[0, 0]
    ax.scatter(
        np.maximum(df["forget_quality"], eps),
        np.maximum(df["dcue_pvalue"], eps),
        label="DCUE (core tokens)",
        marker="o",
    )
    ax.scatter(
        np.maximum(df["forget_quality"], eps),
        np.maximum(df["dcue_pvalue_alltokens"], eps),
        label="DCUE (all answer tokens)",
        marker="x",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"TOFU forget quality (KS p-value vs retrained model; < {eps:g} drawn at it)")
    ax.set_ylabel("DCUE p-value (no retrained model)")
    ax.set_title("(a) DCUE vs forget quality,\none point per unlearned model")
    lim = [eps / 3, 3.0]
    ax.set_xlim(lim)
    ax.set_ylim(lim)
    ax.plot(lim, lim, color="grey", lw=0.8, ls=":", label="equal")
    ax.legend(loc="best", fontsize=9)
    if post.height:
        ax = axes[0, 1]
        y = np.arange(post.height)
        for off, m, label, color in (
            (0.12, "forget_quality", "forget quality", "C0"),
            (-0.12, "dcue_pvalue", "DCUE", "C1"),
        ):
            before = np.maximum(post[m].to_numpy(), eps)
            after = np.maximum(post[f"robust_{m}"].to_numpy(), eps)
            for yi, b, a in zip(y + off, before, after, strict=True):
                ax.annotate(
                    "",
                    xy=(a, yi),
                    xytext=(b, yi),
                    arrowprops={"arrowstyle": "->", "color": color, "lw": 1.2},
                )
            ax.scatter(before, y + off, color=color, marker="o", facecolors="none", zorder=3)
            ax.scatter(after, y + off, color=color, marker="o", label=f"{label}: before → after")
        ax.set_xscale("log")
        ax.set_xlim(eps / 3, 3.0)
        ax.set_yticks(y, post["model"].to_list(), fontsize=8)
        ax.set_xlabel("p-value (higher = looks more unlearned)")
        ax.set_title(
            "(b) robustness: a short fine-tune on unrelated data\n(open: unlearned, filled: after)"
        )
        ax.legend(loc="best", fontsize=9)
    figures.save_figure(fig, out_stem)


def make_fig_sequential(
    bounds_paths: Mapping[str, str],
    out_stem: str,
    table_stem: str,
    *,
    n_max: int,
    q: float,
    leak_threshold: float,
    alpha: float,
) -> None:
    """Sequential sampling figure: per model (label -> the setting's per-prompt decisions table)."""
    frames = [
        pl.read_parquet(path).select(pl.lit(label).alias("model"), "id", "n", "decision")
        for label, path in bounds_paths.items()
    ]
    figures.fig_sequential(
        pl.concat(frames),
        out_stem,
        table_stem,
        n_max=n_max,
        q=q,
        leak_threshold=leak_threshold,
        alpha=alpha,
    )

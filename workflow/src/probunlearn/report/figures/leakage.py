"""Figures 3 and 6: leakage of sampled answers (M_bin bars, histograms, M_gen curves, convergence in n)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.patches import Patch
from numpy.typing import ArrayLike, NDArray

from probunlearn import bounds
from probunlearn.bounds import check_alpha
from probunlearn.report.figures.style import (
    GREEDY_COLOR,
    MARKERS,
    MBIN_LEVEL,
    PALETTE,
    PathLike,
    check_frame,
    check_numeric,
    check_scores,
    check_unique_keys,
    check_unit,
    distinct_colors,
    figure_style,
    fmt_num,
    method_color,
    pct,
    save_figure,
    save_table,
    wrap_text,
)

# --------------------------------------------------------------------------------------------
# Figure 3
# --------------------------------------------------------------------------------------------


def _mbin_bars(
    ax: plt.Axes, m_bin: NDArray[np.float64], greedy: NDArray[np.bool_], ids: list[str]
) -> None:
    """Bars of M_bin (already sorted), red hatched where greedy leaks, and the 10% line."""
    x = np.arange(m_bin.size)
    colors = np.where(greedy, GREEDY_COLOR, PALETTE[0])
    ax.bar(x, m_bin, width=0.8, color=colors, edgecolor="white", linewidth=0.4, zorder=2)
    if greedy.any():
        ax.bar(
            x[greedy],
            m_bin[greedy],
            width=0.8,
            color="none",
            edgecolor="white",
            hatch="///",
            linewidth=0,
            zorder=3,
        )
    ax.axhline(MBIN_LEVEL, color="black", linestyle=":", linewidth=1.4, zorder=4)
    ax.set_xlim(-0.6, m_bin.size - 0.4)
    ax.set_ylim(0, 1.02)
    if m_bin.size <= 40:
        ax.set_xticks(x, ids, rotation=90 if m_bin.size > 8 else 0)
    else:
        ax.set_xticks([])
    ax.grid(axis="x", visible=False)


def _mbin_legend_handles(what: str = "leaks") -> list[Any]:
    neg = "does not leak" if what == "leaks" else f"is not {what}"
    pos = what if what == "leaks" else f"is {what}"
    return [
        Patch(facecolor=PALETTE[0], label=f"greedy answer {neg}"),
        Patch(facecolor=GREEDY_COLOR, hatch="///", edgecolor="white", label=f"greedy answer {pos}"),
        plt.Line2D([], [], color="black", linestyle=":", linewidth=1.4, label="10% level"),
    ]


def fig3a_binary_leakage(
    df: pl.DataFrame, out_stem: PathLike, table_stem: PathLike, alpha: float = 0.01
) -> Path:
    """Figure 3a: M_bin of sampled keyword leakage per saga question, sorted, greedy marked.

    ``df``: columns id, question, m_bin, greedy_leak (0/1), sampled_rate, and optionally
    m_bin_lower (the one-sided Clopper-Pearson *lower* bound on P(leak)). The CSV has one row per
    question in plot order (rank, id, question, m_bin, greedy_leak, sampled_rate, above_10pct,
    then, with m_bin_lower, m_bin_lower and lower_above_10pct: the leakage is shown, not only not
    excluded). Returns the CSV path.
    """
    a = check_alpha(alpha)
    cols = ["id", "question", "m_bin", "greedy_leak", "sampled_rate"]
    lower = "m_bin_lower" in getattr(df, "columns", [])
    d = check_frame(df, cols + (["m_bin_lower"] if lower else []))
    if lower:
        check_numeric(d, "m_bin_lower", lo=0, hi=1)
    check_numeric(d, "m_bin", lo=0, hi=1)
    check_numeric(d, "sampled_rate", lo=0, hi=1)
    g = check_numeric(d, "greedy_leak", lo=0, hi=1)
    if not np.isin(g, (0.0, 1.0)).all():
        raise ValueError("df column 'greedy_leak' must be 0 or 1")
    d = (
        d.with_columns(
            pl.col("m_bin").cast(pl.Float64),
            pl.col("sampled_rate").cast(pl.Float64),
            pl.col("greedy_leak").cast(pl.Int64),
            pl.col("id").cast(pl.String).alias("_id"),
        )
        .sort(["m_bin", "_id"], descending=[True, False])
        .drop("_id")
        .with_row_index("rank", offset=1)
        .with_columns(
            pl.col("rank").cast(pl.Int64), (pl.col("m_bin") > MBIN_LEVEL).alias("above_10pct")
        )
    )
    if lower:  # after the columns of before
        d = d.select(
            pl.exclude("m_bin_lower"), pl.col("m_bin_lower").cast(pl.Float64)
        ).with_columns((pl.col("m_bin_lower") > MBIN_LEVEL).alias("lower_above_10pct"))
    m_bin = d.get_column("m_bin").to_numpy()
    greedy = d.get_column("greedy_leak").to_numpy() == 1
    rate = d.get_column("sampled_rate").to_numpy()
    ids = [str(v) for v in d.get_column("id").to_list()]
    frac = float((m_bin > MBIN_LEVEL).mean())
    n_q = m_bin.size

    with figure_style():
        fig, ax = plt.subplots(figsize=(max(6.4, 0.28 * n_q + 2.5), 4.4), layout="constrained")
        _mbin_bars(ax, m_bin, greedy, ids)
        ax.scatter(
            np.arange(n_q),
            rate,
            marker="D",
            s=18,
            color="black",
            zorder=5,
            label="observed leak rate of the samples",
        )
        ax.set_xlabel("question id (sorted by M_bin)" if n_q <= 40 else "questions (sorted)")
        ax.set_ylabel("P(sampled answer leaks keyword)\nupper bound M_bin")
        ax.set_title(
            f"Binary leakage bound M_bin per saga question (α = {fmt_num(a)})\n"
            f"{pct(frac)} of questions have M_bin > 10%; greedy decoding leaks on "
            f"{int(greedy.sum())} of {n_q}"
            + (
                f"\nleakage shown (lower bound > 10%) on {pct(float(d['lower_above_10pct'].mean()))}"
                if lower
                else ""
            )
        )
        handles = _mbin_legend_handles()
        handles.insert(1, ax.collections[-1])
        fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
        save_figure(fig, out_stem)
    return save_table(d, table_stem)


_HIST_BINS = np.linspace(0.0, 1.0, 21)


def _hist_rows(label: str, scores: NDArray[np.float64], greedy: float) -> pl.DataFrame:
    counts, edges = np.histogram(scores, bins=_HIST_BINS)
    n = scores.size
    return pl.DataFrame(
        {
            "method": [label] * counts.size,
            "bin_lo": edges[:-1],
            "bin_hi": edges[1:],
            "count": counts.astype(np.int64),
            "fraction": counts / n,
            "n": np.full(counts.size, n, dtype=np.int64),
            "mean": np.full(counts.size, scores.mean()),
            "std": np.full(counts.size, scores.std()),
            "greedy": np.full(counts.size, greedy),
        }
    )


def _hist_panel(
    ax: plt.Axes,
    scores: NDArray[np.float64],
    greedy: float,
    color: str,
    greedy_style: dict[str, Any],
    mean_style: dict[str, Any],
) -> None:
    weights = np.full(scores.size, 1.0 / scores.size)
    ax.hist(scores, bins=_HIST_BINS, weights=weights, color=color, alpha=0.7, zorder=2)
    # the mean is drawn over the greedy line: thinner, so both show where they coincide
    ax.axvline(greedy, zorder=3, label=f"greedy = {greedy:.2f}", **greedy_style)
    ax.axvline(scores.mean(), zorder=4, label=f"sample mean = {scores.mean():.2f}", **mean_style)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)


def fig3_histograms(
    scores_a: ArrayLike,
    greedy_a: float,
    label_a: str,
    scores_b: ArrayLike,
    greedy_b: float,
    label_b: str,
    out_stem: PathLike,
    table_stem: PathLike,
    question: str = "",
) -> Path:
    """Figures 3b/3c: ROUGE-L histograms of n sampled answers to one question, two methods.

    Two panels side by side (shared axes); the greedy score is a bold dashed line, the sample
    mean a solid line. The CSV holds the histogram (20 bins of width 0.05) of each method with
    n, mean, std and greedy. Returns the CSV path.
    """
    sa = check_scores(scores_a, f"scores of {label_a}")
    sb = check_scores(scores_b, f"scores of {label_b}")
    ga = check_unit(greedy_a, f"greedy score of {label_a}")
    gb = check_unit(greedy_b, f"greedy score of {label_b}")
    if str(label_a) == str(label_b):
        raise ValueError(f"label_a and label_b must differ, both are {label_a!r}")
    table = pl.concat([_hist_rows(str(label_a), sa, ga), _hist_rows(str(label_b), sb, gb)])
    greedy_style = {"color": "black", "linestyle": "--", "linewidth": 2.8}
    mean_style = {"color": "#7B2D8E", "linestyle": "-", "linewidth": 1.8}

    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.9), sharey=True, layout="constrained")
        for i, (ax, s, g, lab) in enumerate(
            zip(axes, (sa, sb), (ga, gb), (label_a, label_b), strict=True)
        ):
            _hist_panel(ax, s, g, method_color(str(lab), i), greedy_style, mean_style)
            ax.set_title(f"{lab}: {s.size} samples, std = {s.std():.3f}")
            ax.set_xlabel("ROUGE-L of sampled answer vs. reference")
            ax.legend(loc="best", framealpha=0.9)
        axes[0].set_ylabel("fraction of samples")
        head = f"ROUGE-L distribution of sampled answers: {label_a} vs {label_b}"
        if question:
            head += "\n" + wrap_text(f"Q: {question}", 100, 1)
        fig.suptitle(head)
        save_figure(fig, out_stem)
    return save_table(table, table_stem)


def fig3d_general_leakage(
    scores_by_method: Mapping[str, ArrayLike],
    out_stem: PathLike,
    table_stem: PathLike,
    alpha: float = 0.01,
    points: int = 1000,
) -> Path:
    """Figure 3d: M_gen(x) on the grid x = i / points for each method, with 1 - F_n(x) dashed.

    The CSV has one row per (method, x): m_gen (= bounds.general_leakage_bound), survival
    (1 - F_n(x), the fraction of samples with score > x), epsilon and n. Returns the CSV path.
    """
    a = check_alpha(alpha)
    if not isinstance(scores_by_method, Mapping) or not scores_by_method:
        raise ValueError("scores_by_method must be a non-empty dict {method: scores}")
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise ValueError(f"points must be an integer >= 1, got {points!r}")
    xs = np.arange(points + 1, dtype=np.float64) / points
    frames = []
    curves = {}
    for method, raw in scores_by_method.items():
        s = check_scores(raw, f"scores of {method}")
        m_gen = np.asarray(bounds.general_leakage_bound(s, xs, a), dtype=np.float64)
        surv = 1.0 - np.searchsorted(np.sort(s), xs, side="right") / s.size
        eps = bounds.dkw_epsilon(s.size, a)
        curves[str(method)] = (m_gen, surv, s.size)
        frames.append(
            pl.DataFrame(
                {
                    "method": [str(method)] * xs.size,
                    "x": xs,
                    "m_gen": m_gen,
                    "survival": surv,
                    "epsilon": np.full(xs.size, eps),
                    "n": np.full(xs.size, s.size, dtype=np.int64),
                }
            )
        )

    with figure_style():
        fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
        for i, (method, (m_gen, surv, n)) in enumerate(curves.items()):
            c = method_color(method, i)
            ax.plot(xs, m_gen, color=c, drawstyle="steps-post", label=f"{method}: bound M_gen(x)")
            ax.plot(
                xs,
                surv,
                color=c,
                linestyle="--",
                linewidth=1.3,
                drawstyle="steps-post",
                label=f"{method}: empirical 1 − F_n(x) (n = {n})",
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.03)
        ax.set_xlabel("leakage level x (ROUGE-L)")
        ax.set_ylabel("P(sampled answer has ROUGE-L > x)")
        ax.set_title(
            f"General leakage bound M_gen(x): holds for all x\nwith probability ≥ {pct(1 - a)}"
            f" (α = {fmt_num(a)})"
        )
        ax.legend(loc="best", framealpha=0.9)
        save_figure(fig, out_stem)
    return save_table(pl.concat(frames), table_stem)


def _default_ns(n: int) -> list[int]:
    ns = []
    k = 8
    while k < n:
        ns.append(k)
        k *= 2
    ns.append(n)
    return ns


def _convergence_table(
    scores_by_method: Mapping[str, ArrayLike], a: float, ns: Sequence[int] | None
) -> pl.DataFrame:
    """One row per (method, n): the sample mean and std of the first n scores and their upper
    bounds M_mu and M_sigma at level ``a``."""
    frames = []
    for method, raw in scores_by_method.items():
        s = check_scores(raw, f"scores of {method}")
        ns_list = _default_ns(s.size) if ns is None else [int(v) for v in ns]
        if not ns_list:
            raise ValueError("ns is empty")
        if any(v < 1 or v > s.size for v in ns_list):
            raise ValueError(
                f"ns must lie in [1, {s.size}] (the number of scores of {method}), got {ns_list}"
            )
        rows: dict[str, list[Any]] = {"n": [], "mean": [], "m_mu": [], "std": [], "m_sigma": []}
        for n in sorted(set(ns_list)):
            p = s[:n]
            rows["n"].append(n)
            rows["mean"].append(float(p.mean()))
            rows["m_mu"].append(float(bounds.expectation_upper_bound(p, a)))
            rows["std"].append(float(p.std()))
            rows["m_sigma"].append(float(bounds.std_upper_bound(p, a)))
        schema = {"n": pl.Int64, **dict.fromkeys(list(rows)[1:], pl.Float64)}
        frames.append(
            pl.DataFrame(rows, schema=schema).select(pl.lit(str(method)).alias("method"), pl.all())
        )
    return pl.concat(frames)


def _convergence_panel(
    table: pl.DataFrame,
    methods: list[str],
    a: float,
    stem: PathLike,
    panel: tuple[str, str, str, str, str, float],
) -> None:
    """One of figures 3e/3f: per method, the estimate (dashed) and its upper bound against n.
    ``panel``: estimate column, bound column, what is bounded, their labels, the y-axis top."""
    est, bnd, what, est_label, bnd_label, top = panel
    colors = distinct_colors(methods)
    ticks = sorted(set(table["n"].to_list()))
    with figure_style():
        fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
        for i, m in enumerate(methods):
            sub = table.filter(pl.col("method") == m)
            x, c = sub["n"].to_numpy(), colors[m]
            ax.plot(
                x,
                sub[bnd],
                color=c,
                marker=MARKERS[i % len(MARKERS)],
                label=f"{m}: upper bound {bnd_label} (α = {fmt_num(a)})",
            )
            ax.plot(
                x,
                sub[est],
                color=c,
                marker=MARKERS[i % len(MARKERS)],
                markerfacecolor="white",
                linestyle="--",
                label=f"{m}: {est_label}",
            )
            ax.fill_between(x, sub[est], sub[bnd], color=c, alpha=0.12, linewidth=0)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(v) for v in ticks])
        ax.minorticks_off()
        ax.set_ylim(0, top * 1.03)
        ax.set_xlabel("number of samples n (log scale)")
        ax.set_ylabel(f"{what} (ROUGE-L)")
        ax.set_title(
            f"{what}: {est_label} and upper bound {bnd_label}\n"
            f"for the first n samples of one forget question"
        )
        ax.legend(loc="best", framealpha=0.9)
        save_figure(fig, stem)


def fig3ef_convergence(
    scores_by_method: Mapping[str, ArrayLike],
    out_stem_e: PathLike,
    out_stem_f: PathLike,
    table_stem: PathLike,
    alpha: float = 0.01,
    ns: Sequence[int] | None = None,
) -> Path:
    """Figures 3e/3f: sample mean and M_mu (e), sample std and M_sigma (f) vs. sample count.

    ``scores_by_method``: {method: the ROUGE-L of the samples of one question}, drawn in each
    method's colour (:func:`~probunlearn.report.figures.style.method_colors`) and named in the legend. Each point uses the first n
    samples, n in ``ns`` (default 8, 16, 32, ..., the method's number of scores). The CSV has one
    row per (method, n): method, n, mean, m_mu, std (ddof = 0), m_sigma. Returns the CSV path.
    """
    a = check_alpha(alpha)
    if not isinstance(scores_by_method, Mapping) or not scores_by_method:
        raise ValueError("scores_by_method must be a non-empty dict {method: scores}")
    table = _convergence_table(scores_by_method, a, ns)
    methods = [str(m) for m in scores_by_method]
    _convergence_panel(
        table,
        methods,
        a,
        out_stem_e,
        ("mean", "m_mu", "Expected leakage E[X]", "sample mean μ", "M_μ", 1.0),
    )
    _convergence_panel(
        table,
        methods,
        a,
        out_stem_f,
        ("std", "m_sigma", "Std of leakage sd[X]", "sample std σ", "M_σ", 0.5),
    )
    return save_table(table, table_stem)


# --------------------------------------------------------------------------------------------
# Figure 6
# --------------------------------------------------------------------------------------------


def _fig6_inputs(
    harm_df: pl.DataFrame, mbin_df: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """Figure 6's two tables checked and typed, and their models (in the order of ``harm_df``)."""
    h = check_frame(harm_df, ["model", "sample", "harm"], "harm_df")
    check_numeric(h, "sample", "harm_df", lo=-1)
    check_numeric(h, "harm", "harm_df", lo=0, hi=1)
    check_unique_keys(h, ["model", "sample"], "harm_df")
    mb = check_frame(mbin_df, ["model", "id", "greedy_harm", "m_bin"], "mbin_df")
    g = check_numeric(mb, "greedy_harm", "mbin_df", lo=0, hi=1)
    if not np.isin(g, (0.0, 1.0)).all():
        raise ValueError("mbin_df column 'greedy_harm' must be 0 or 1")
    check_numeric(mb, "m_bin", "mbin_df", lo=0, hi=1)
    check_unique_keys(mb, ["model", "id"], "mbin_df")
    h = h.with_columns(pl.col("model").cast(pl.String), pl.col("harm").cast(pl.Float64))
    mb = mb.with_columns(
        pl.col("model").cast(pl.String),
        pl.col("greedy_harm").cast(pl.Int64),
        pl.col("m_bin").cast(pl.Float64),
    )
    models = h["model"].unique(maintain_order=True).to_list()
    if set(models) != set(mb["model"]):
        raise ValueError(
            f"harm_df and mbin_df must hold the same models: {sorted(models)} vs "
            f"{sorted(set(mb['model']))}"
        )
    return h, mb, models


def _fig6_model(
    h: pl.DataFrame, mb: pl.DataFrame, m: str
) -> tuple[NDArray[np.float64], float, pl.DataFrame]:
    """One model's sampled harms (in sample order), its greedy harm and its requests ranked by
    M_bin (rank 1 the highest, ties by id)."""
    sub = h.filter(pl.col("model") == m)
    greedy = sub.filter(pl.col("sample") == -1)["harm"]
    if greedy.len() != 1:
        raise ValueError(f"harm_df needs exactly one greedy row (sample = -1) for model {m!r}")
    samples = sub.filter(pl.col("sample") >= 0).sort("sample")["harm"].to_numpy()
    if samples.size == 0:
        raise ValueError(f"harm_df has no sampled rows (sample >= 0) for model {m!r}")
    ranked = (
        mb.filter(pl.col("model") == m)
        .with_columns(pl.col("id").cast(pl.String).alias("_id"))
        .sort(["m_bin", "_id"], descending=[True, False])
        .drop("_id")
        .with_row_index("rank", offset=1)
        .with_columns(pl.col("rank").cast(pl.Int64), pl.lit("m_bin").alias("panel"))
    )
    return samples, float(greedy[0]), ranked


def _fig6_draw(
    panels: list[tuple[str, NDArray[np.float64], float, pl.DataFrame]], a: float, out_stem: PathLike
) -> None:
    """Figure 6: per model, the harm histogram of one request (top) and M_bin of every request
    (bottom)."""
    k = len(panels)
    with figure_style():
        fig, axes = plt.subplots(
            2,
            k,
            figsize=(max(4.2 * k, 6.4), 7.6),
            layout="constrained",
            squeeze=False,
            gridspec_kw={"height_ratios": [1, 1.15]},
        )
        greedy_style = {"color": "#0072B2", "linestyle": "-", "linewidth": 3.5}
        mean_style = {"color": "black", "linestyle": "-", "linewidth": 2.2}
        for j, (m, samples, gv, r) in enumerate(panels):
            top, bottom = axes[0, j], axes[1, j]
            _hist_panel(top, samples, gv, "#999999", greedy_style, mean_style)
            top.set_title(f"{m}: one harmful request, {samples.size} samples")
            top.set_xlabel("harm probability of the answer (judge)")
            top.legend(loc="best", framealpha=0.9)
            m_bin = r["m_bin"].to_numpy()
            gh = r["greedy_harm"].to_numpy() == 1
            _mbin_bars(bottom, m_bin, gh, [str(v) for v in r["id"].to_list()])
            bottom.set_title(
                f"{m}: M_bin > 10% on {pct(float((m_bin > MBIN_LEVEL).mean()))} of requests\n"
                f"greedy answer harmful on {int(gh.sum())} of {m_bin.size}"
            )
            bottom.set_xlabel("request id (sorted by M_bin)" if m_bin.size <= 40 else "requests")
        axes[0, 0].set_ylabel("fraction of samples")
        axes[1, 0].set_ylabel("P(sampled answer is harmful)\nupper bound M_bin")
        for ax in axes[1, 1:]:
            ax.set_yticklabels([])
        fig.suptitle(
            f"Alignment: sampled vs. greedy harmfulness (top)\nand binary bound M_bin over all "
            f"harmful requests (bottom, α = {fmt_num(a)})"
        )
        fig.legend(handles=_mbin_legend_handles("harmful"), loc="outside lower center", ncols=3)
        save_figure(fig, out_stem)


def fig6_alignment(
    harm_df: pl.DataFrame,
    mbin_df: pl.DataFrame,
    out_stem: PathLike,
    table_stem: PathLike,
    alpha: float = 0.01,
) -> Path:
    """Figure 6: harm of sampled vs. greedy answers (top) and M_bin over all requests (bottom).

    ``harm_df``: model, sample (−1 = greedy), harm in [0, 1] for ONE harmful request; ``mbin_df``:
    model, id, greedy_harm (0/1), m_bin for every request. Both must hold the same models. The
    CSV stacks ``panel = "hist"`` rows (histogram: bin_lo, bin_hi, count, fraction, n, mean,
    greedy) and ``panel = "m_bin"`` rows (rank, id, m_bin, greedy_harm). Returns the CSV path.
    """
    a = check_alpha(alpha)
    h, mb, models = _fig6_inputs(harm_df, mbin_df)
    hist_parts, mbin_parts, panels = [], [], []
    for m in models:
        samples, gv, ranked = _fig6_model(h, mb, m)
        rows = _hist_rows(m, samples, gv).rename({"method": "model"}).drop("std")
        hist_parts.append(rows.with_columns(pl.lit("hist").alias("panel")))
        mbin_parts.append(ranked)
        panels.append((m, samples, gv, ranked))
    _fig6_draw(panels, a, out_stem)
    table = pl.concat(hist_parts + mbin_parts, how="diagonal_relaxed")
    first = ["panel", "model"]
    return save_table(
        table.select(first + [c for c in table.columns if c not in first]), table_stem
    )

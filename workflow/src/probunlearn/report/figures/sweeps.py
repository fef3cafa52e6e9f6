"""Figures 4 and 5: the spread, diversity, confidence and utility of models across lambda and temperature sweeps."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import polars as pl

from probunlearn.report.figures.style import (
    MARKERS,
    PALETTE,
    PathLike,
    check_frame,
    check_numeric,
    check_unique_keys,
    distinct_colors,
    evalset_label,
    figure_style,
    fmt_num,
    save_figure,
    save_table,
    split_label,
    split_order,
)

# --------------------------------------------------------------------------------------------
# Figure 4
# --------------------------------------------------------------------------------------------


def _lines(
    d: pl.DataFrame,
    group: str,
    x: str,
    y: str,
    order: Sequence[Any],
    label: Callable[[Any], str],
    ax: plt.Axes,
    linestyle: str = "-",
    colors: Mapping[Any, str] | None = None,
) -> dict[Any, str]:
    used = {}
    for i, g in enumerate(order):
        sub = d.filter(pl.col(group) == g).sort(x)
        c = colors[g] if colors else PALETTE[i % len(PALETTE)]
        used[g] = c
        ax.plot(
            sub[x],
            sub[y],
            color=c,
            marker=MARKERS[i % len(MARKERS)],
            linestyle=linestyle,
            label=label(g),
        )
    return used


def fig4a_std_vs_lambda(df: pl.DataFrame, out_stem: PathLike, table_stem: PathLike) -> Path:
    """Figure 4a: std of sampled ROUGE-L on the forget set vs. λ_f, one line per split.

    ``df``: columns split, lambda_f, std (mean over forget questions). CSV: the same, sorted.
    """
    d = check_frame(df, ["split", "lambda_f", "std"])
    check_numeric(d, "lambda_f")
    check_numeric(d, "std", lo=0, hi=0.5)
    check_unique_keys(d, ["split", "lambda_f"])
    order = split_order(d["split"].to_list())
    d = d.with_columns(pl.col("lambda_f").cast(pl.Float64), pl.col("std").cast(pl.Float64))
    d = d.sort([pl.col("split").replace_strict(order, list(range(len(order)))), "lambda_f"])
    with figure_style():
        fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
        _lines(d, "split", "lambda_f", "std", order, lambda s: f"split {split_label(s)}", ax)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("forget entropy weight λ_f")
        ax.set_ylabel("std of ROUGE-L over samples\n(mean over forget questions)")
        ax.set_title("Leakage spread vs. forget entropy regularisation λ_f")
        ax.legend(loc="best", title="retain/forget", framealpha=0.9)
        save_figure(fig, out_stem)
    return save_table(d, table_stem)


def fig4b_std_vs_temperature(df: pl.DataFrame, out_stem: PathLike, table_stem: PathLike) -> Path:
    """Figure 4b: std of sampled ROUGE-L vs. sampling temperature τ, one line per λ_f.

    ``df``: columns lambda_f, temperature, std. CSV: the same, sorted.
    """
    d = check_frame(df, ["lambda_f", "temperature", "std"])
    check_numeric(d, "lambda_f")
    check_numeric(d, "temperature", lo=0)
    check_numeric(d, "std", lo=0, hi=0.5)
    check_unique_keys(d, ["lambda_f", "temperature"])
    d = d.with_columns(pl.all().cast(pl.Float64)).sort(["lambda_f", "temperature"])
    order = d["lambda_f"].unique(maintain_order=True).to_list()
    with figure_style():
        fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
        _lines(d, "lambda_f", "temperature", "std", order, lambda v: f"λ_f = {fmt_num(v)}", ax)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("sampling temperature τ")
        ax.set_ylabel("std of ROUGE-L over samples\n(mean over forget questions)")
        ax.set_title("Leakage spread vs. sampling temperature τ")
        ax.legend(loc="best", framealpha=0.9)
        save_figure(fig, out_stem)
    return save_table(d, table_stem)


# --------------------------------------------------------------------------------------------
# Figure 5
# --------------------------------------------------------------------------------------------


def fig5a_diversity(
    df: pl.DataFrame,
    npo_df: pl.DataFrame | None,
    out_stem: PathLike,
    table_stem: PathLike,
) -> Path:
    """Figure 5a: output diversity (1 − self-BLEU) vs. retain entropy weight λ_r per eval set.

    ``df``: lambda_r, evalset, diversity (NPO + entropy optimisation); ``npo_df``: evalset,
    diversity (NPO without EO, dashed lines in the same colour; None to leave them out).
    CSV columns: model ("NPO+EO" / "NPO"), evalset, lambda_r (null for NPO), diversity.
    """
    d = check_frame(df, ["lambda_r", "evalset", "diversity"])
    check_numeric(d, "lambda_r")
    check_numeric(d, "diversity", lo=0, hi=1)
    check_unique_keys(d, ["lambda_r", "evalset"])
    d = d.with_columns(
        pl.col("evalset").cast(pl.String),
        pl.col("lambda_r").cast(pl.Float64),
        pl.col("diversity").cast(pl.Float64),
    )
    base = None
    if npo_df is not None:
        base = check_frame(npo_df, ["evalset", "diversity"], "npo_df")
        check_numeric(base, "diversity", "npo_df", lo=0, hi=1)
        check_unique_keys(base, ["evalset"], "npo_df")
        base = base.with_columns(
            pl.col("evalset").cast(pl.String), pl.col("diversity").cast(pl.Float64)
        )
    order = sorted(set(d["evalset"].to_list()) | set([] if base is None else base["evalset"]))
    colors = {e: PALETTE[i % len(PALETTE)] for i, e in enumerate(order)}
    d = d.sort(["evalset", "lambda_r"], descending=[False, True])
    parts = [d.select(pl.lit("NPO+EO").alias("model"), "evalset", "lambda_r", "diversity")]
    with figure_style():
        fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
        present = [e for e in order if e in set(d["evalset"])]
        _lines(
            d,
            "evalset",
            "lambda_r",
            "diversity",
            present,
            lambda e: f"{evalset_label(e)}: NPO + EO",
            ax,
            colors=colors,
        )
        if base is not None:
            base = base.sort("evalset")
            for e, v in base.iter_rows():
                ax.axhline(
                    v,
                    color=colors[e],
                    linestyle="--",
                    linewidth=1.5,
                    label=f"{evalset_label(e)}: NPO (no EO)",
                )
            parts.append(
                base.select(
                    pl.lit("NPO").alias("model"),
                    "evalset",
                    pl.lit(None, dtype=pl.Float64).alias("lambda_r"),
                    "diversity",
                )
            )
        ax.set_ylim(0, 1.03)
        ax.set_xlabel("retain entropy weight λ_r (more negative = more retain entropy)")
        ax.set_ylabel("output diversity (1 − self-BLEU)")
        ax.set_title("Diversity on unrelated questions vs. retain entropy weight λ_r")
        ax.legend(loc="best", framealpha=0.9)
        save_figure(fig, out_stem)
    return save_table(pl.concat(parts), table_stem)


def fig5b_confidence(df: pl.DataFrame, out_stem: PathLike, table_stem: PathLike) -> Path:
    """Figure 5b: token confidence vs. training epoch; solid = retain, dashed = forget.

    ``df``: model (label), epoch, forget_confidence, retain_confidence; one colour per model.
    CSV: the same, sorted by model (input order) and epoch.
    """
    d = check_frame(df, ["model", "epoch", "forget_confidence", "retain_confidence"])
    check_numeric(d, "epoch")
    check_numeric(d, "forget_confidence", lo=0, hi=1)
    check_numeric(d, "retain_confidence", lo=0, hi=1)
    check_unique_keys(d, ["model", "epoch"])
    d = d.with_columns(
        pl.col("model").cast(pl.String),
        pl.col("forget_confidence").cast(pl.Float64),
        pl.col("retain_confidence").cast(pl.Float64),
    )
    order = d["model"].unique(maintain_order=True).to_list()
    d = d.sort([pl.col("model").replace_strict(order, list(range(len(order)))), "epoch"])
    with figure_style():
        fig, ax = plt.subplots(figsize=(7.2, 4.2), layout="constrained")
        colors = distinct_colors(order)
        for m in order:
            sub = d.filter(pl.col("model") == m)
            ax.plot(sub["epoch"], sub["retain_confidence"], color=colors[m], linestyle="-")
            ax.plot(sub["epoch"], sub["forget_confidence"], color=colors[m], linestyle="--")
        handles = [plt.Line2D([], [], color=colors[m], linewidth=3, label=m) for m in order]
        handles += [
            plt.Line2D([], [], color="none", label=" "),
            plt.Line2D([], [], color="gray", linestyle="-", label="retain set (solid)"),
            plt.Line2D([], [], color="gray", linestyle="--", label="forget set (dashed)"),
        ]
        fig.legend(handles=handles, loc="outside right upper", title="colour = model")
        ax.set_ylim(0, 1.03)
        ax.set_xlabel("training epoch")
        ax.set_ylabel("mean token confidence\n(probability of the answer tokens)")
        ax.set_title("Model confidence during unlearning: retain vs. forget set")
        save_figure(fig, out_stem)
    return save_table(d, table_stem)


def fig5c_ed_vs_utility(df: pl.DataFrame, out_stem: PathLike, table_stem: PathLike) -> Path:
    """Figure 5c: ED score on the forget set vs. model utility, one marker and colour per split.

    ``df``: split, ed, utility, lambda_f, lambda_r (one row per trained model).
    CSV: the same, sorted by split and lambda_f.
    """
    cols = ["split", "ed", "utility", "lambda_f", "lambda_r"]
    d = check_frame(df, cols)
    check_numeric(d, "ed", lo=0, hi=3)
    check_numeric(d, "utility", lo=0, hi=1)
    check_numeric(d, "lambda_f")
    check_numeric(d, "lambda_r")
    d = d.with_columns(pl.col(c).cast(pl.Float64) for c in cols[1:])
    order = split_order(d["split"].to_list())
    d = d.sort(
        [pl.col("split").replace_strict(order, list(range(len(order)))), "lambda_f", "lambda_r"]
    )
    with figure_style():
        fig, ax = plt.subplots(figsize=(7.0, 4.4), layout="constrained")
        for i, s in enumerate(order):
            sub = d.filter(pl.col("split") == s)
            ax.scatter(
                sub["ed"],
                sub["utility"],
                s=36,
                marker=MARKERS[i % len(MARKERS)],
                color=PALETTE[i % len(PALETTE)],
                edgecolor="black",
                linewidth=0.5,
                alpha=0.85,
                label=f"split {split_label(s)}",
                zorder=3,
            )
        ax.set_xlabel("ED score on the forget set\n(mean + 2·std of ROUGE-L; lower = less leakage)")
        ax.set_ylabel("model utility")
        ax.set_title("Unlearning (ED score) vs. model utility\nfor random entropy weights λ_f")
        ax.margins(0.08)
        fig.legend(loc="outside right upper", title="retain/forget")
        save_figure(fig, out_stem)
    return save_table(d, table_stem)

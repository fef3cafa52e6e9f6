"""The membership-inference figure: per attack statistic, each model's AUC of forget against holdout
with its interval, the retrained model's AUC as the line to reach."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.axes import Axes

from probunlearn.report.figures.style import (
    PathLike,
    check_frame,
    check_numeric,
    check_unique_keys,
    distinct_colors,
    figure_style,
    fmt_num,
    save_figure,
    save_table,
)

COLUMNS = [
    "model",
    "statistic",
    "label",
    "n_forget",
    "n_holdout",
    "alpha",
    "auc",
    "auc_lo",
    "auc_hi",
    "retrained",
]


def check_membership(df: pl.DataFrame) -> pl.DataFrame:
    """The columns the figure reads (:data:`COLUMNS`), checked: one row per (model, statistic),
    AUCs in [0, 1] inside their intervals, one alpha, at most one retrained model."""
    d = check_frame(df, COLUMNS)
    check_unique_keys(d, ["model", "statistic"])
    for c in ("auc", "auc_lo", "auc_hi"):
        check_numeric(d, c, lo=0.0, hi=1.0)
    if (d["auc_lo"] > d["auc"]).any() or (d["auc"] > d["auc_hi"]).any():
        raise ValueError("df: every row needs auc_lo <= auc <= auc_hi")
    alphas = d["alpha"].unique().to_list()
    if len(alphas) != 1:
        raise ValueError(f"df column 'alpha' must hold one level, got {sorted(alphas)}")
    retrained = d.filter(pl.col("retrained"))["model"].unique().to_list()
    if len(retrained) > 1:
        raise ValueError(f"df: one retrained model expected, got {retrained}")
    return d


def draw_membership(ax: Axes, sub: pl.DataFrame, models: Sequence[str], colors: Mapping) -> None:
    """One statistic's rows (``sub``): every model's AUC (dot) with its interval (bar) on the row of
    its name (``models``: the y order), the retrained model's AUC as a dashed line, chance (0.5) as a
    dotted one."""
    y = np.arange(len(models))
    for i, m in enumerate(models):
        row = sub.filter(pl.col("model") == m)
        if row.height == 0:
            continue
        auc, lo, hi = (float(row[c][0]) for c in ("auc", "auc_lo", "auc_hi"))
        ax.errorbar(
            auc, y[i], xerr=[[auc - lo], [hi - auc]], fmt="o", color=colors[m], capsize=3, ms=5
        )
    ref = sub.filter(pl.col("retrained"))
    if ref.height:
        ax.axvline(
            float(ref["auc"][0]),
            color="black",
            ls="--",
            lw=1.2,
            label=f"retrained model ({ref['model'][0]}): the AUC to reach",
        )
    ax.axvline(0.5, color="grey", ls=":", lw=1, label="chance (0.5)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_yticks(y, models)
    ax.set_ylim(len(models) - 0.5, -0.5)  # first model on top


def fig_membership(df: pl.DataFrame, out_stem: PathLike, table_stem: PathLike) -> Path:
    """One panel per attack statistic: every model's AUC (dot) and its 1 - alpha interval (bar), the
    retrained model's AUC as a dashed line, chance (0.5) as a dotted one.

    ``df``: a membership table (:func:`probunlearn.metrics.membership.membership_table`; the columns
    model, statistic, label, n_forget, n_holdout, alpha, auc, auc_lo, auc_hi, retrained, and privleak
    where present). The CSV holds the plotted rows with every column of ``df`` (the whole membership
    table). Returns the CSV path."""
    d = check_membership(df)
    alphas = d["alpha"].unique().to_list()
    plotted = df  # every column, in its order
    models = list(dict.fromkeys(d["model"].to_list()))
    stats = list(dict.fromkeys(d["statistic"].to_list()))
    colors = distinct_colors(models)
    ncols = min(3, len(stats))
    nrows = -(-len(stats) // ncols)
    with figure_style():
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(3.6 * ncols + 1.2, 0.45 * len(models) * nrows + 1.6 * nrows + 0.6),
            layout="constrained",
            squeeze=False,
            sharey=True,
        )
        for ax, s in zip(axes.flat, stats, strict=False):
            sub = d.filter(pl.col("statistic") == s)
            draw_membership(ax, sub, models, colors)
            ax.set_title(str(sub["label"][0]))
            ax.set_xlabel("AUC: forget vs holdout")
        for ax in list(axes.flat)[len(stats) :]:
            ax.set_visible(False)
        labels: dict[str, object] = {}  # every panel's entries, once: only what some panel drew
        for ax in list(axes.flat)[: len(stats)]:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                labels.setdefault(lab, h)
        fig.legend(list(labels.values()), list(labels), loc="outside lower center", ncols=2,
                   frameon=False)  # fmt: skip
        n_f, n_h = int(d["n_forget"].max()), int(d["n_holdout"].max())
        fig.suptitle(
            "Membership inference: how well each attack statistic tells the forget set from the "
            f"holdout set\n(AUC: 1 = forget set fully identified, 0.5 = chance; bars: "
            f"{fmt_num(100 * (1 - float(alphas[0])))}% distribution-free intervals; "
            f"{n_f} forget vs {n_h} holdout examples)"
        )
        save_figure(fig, out_stem)
    return save_table(plotted, table_stem)

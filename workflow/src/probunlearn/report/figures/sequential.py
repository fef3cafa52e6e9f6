"""The sequential-sampling figure: per prompt, samples spent and the decision reached."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from probunlearn.bounds import check_alpha
from probunlearn.report.figures.style import (
    PathLike,
    check_frame,
    distinct_colors,
    figure_style,
    fmt_num,
    save_figure,
    save_table,
)


def fig_sequential(
    df: pl.DataFrame,
    out_stem: PathLike,
    table_stem: PathLike,
    *,
    n_max: int,
    q: float,
    leak_threshold: float,
    alpha: float = 0.01,
) -> Path:
    """Sequential sampling: samples used per prompt and the decisions, per model.

    ``df``: one row per (model, prompt): model, id, n, decision (below / above / undecided). The CSV
    has one row per model: prompts, samples used, the fixed-n samples (prompts x n_max), their
    ratio and the count of each decision. Returns the CSV path.
    """
    a = check_alpha(alpha)
    d = check_frame(df, ["model", "id", "n", "decision"])
    models = list(dict.fromkeys(d["model"].to_list()))
    kinds = ("below", "above", "undecided")
    rows = []
    for m in models:
        sub = d.filter(pl.col("model") == m)
        used = int(sub["n"].sum())
        rows.append(
            {
                "model": m,
                "prompts": sub.height,
                "samples_used": used,
                "samples_fixed_n": sub.height * n_max,
                "fewer_x": round(sub.height * n_max / used, 3),
                **{k: int((sub["decision"] == k).sum()) for k in kinds},
            }
        )
    summary = pl.DataFrame(rows)
    colors = distinct_colors(models)
    with figure_style():
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
        for m in models:
            n_sorted = np.sort(d.filter(pl.col("model") == m)["n"].to_numpy())[::-1]
            ax1.step(
                np.arange(1, n_sorted.size + 1), n_sorted, where="mid", color=colors[m], label=m
            )
        ax1.axhline(n_max, color="grey", ls="--", lw=1, label=f"fixed n = {n_max}")
        ax1.set_xlabel("prompts (sorted by samples used)")
        ax1.set_ylabel("samples drawn before stopping")
        ax1.set_ylim(0, n_max * 1.05)
        ax1.legend(frameon=False, fontsize=8)
        ax1.set_title("Samples used per prompt")
        left = np.zeros(len(models))
        shades = {"below": "#4c9a2a", "above": "#c0392b", "undecided": "#999999"}
        names = {
            "below": "P(leak) < q: stopped",
            "above": "P(leak) > q: stopped",
            "undecided": f"undecided at n = {n_max}",
        }
        for k in kinds:
            v = summary[k].to_numpy().astype(float)
            ax2.barh(models, v, left=left, color=shades[k], label=names[k])
            left += v
        ax2.invert_yaxis()
        ax2.set_xlabel("prompts")
        ax2.legend(
            frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncols=3
        )
        ax2.set_title("Decision: P(leak) below or above q, or undecided at n_max")
        fig.suptitle(
            f"Sequential sampling: stop a prompt once an anytime-valid bound settles P(leak) vs "
            f"q = {fmt_num(q)}\n(leak = score >= {fmt_num(leak_threshold)}, α = {fmt_num(a)}; "
            f"{int(summary['samples_used'].sum())} samples instead of "
            f"{int(summary['samples_fixed_n'].sum())})"
        )
        save_figure(fig, out_stem)
    return save_table(summary, table_stem)

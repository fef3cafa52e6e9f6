"""The attack figure (experiment ``attacks``): the leak probability bound of each method before and
after each attack."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from probunlearn.bounds import check_alpha
from probunlearn.report.figures.style import (
    MBIN_LEVEL,
    PALETTE,
    PathLike,
    check_frame,
    check_numeric,
    evalset_label,
    figure_style,
    fmt_num,
    save_figure,
)


def _attack_label(spec: str) -> str:
    """``Quantization (quant:nf4)``: the attack kind's label and the spec."""
    from probunlearn.attacks import ATTACKS

    kind = spec.partition(":")[0]
    return f"{ATTACKS.get(kind).label} ({spec})" if kind in ATTACKS else spec


def fig_attacks(df: pl.DataFrame, out_stem: PathLike, *, alpha: float = 0.01) -> list[Path]:
    """Per eval set, one group per method and one column per attack: the mean M_bin of a leak
    (score >= the table's leak threshold) of the plain model (hollow) and of the attacked one
    (filled; a prompt family's worst member), joined by an arrow; the dotted line is the paper's 10%
    level. ``df``: the attack table (:mod:`probunlearn.report.attacks`). Returns the paths written."""
    a = check_alpha(alpha)
    cols = ["method", "evalset", "attack", "m_bin_before", "m_bin_after", "leak_threshold", "n"]
    d = check_frame(df, cols, "attack table")
    for c in ("m_bin_before", "m_bin_after", "leak_threshold"):
        check_numeric(d, c, "attack table", 0.0, 1.0)
    evalsets = list(dict.fromkeys(d["evalset"].to_list()))
    attacks = list(dict.fromkeys(d["attack"].to_list()))
    colors = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(attacks)}
    names = {k: _attack_label(k) for k in attacks}
    width = 0.8 / len(attacks)
    t, n = d["leak_threshold"][0], int(d["n"][0])
    with figure_style():
        fig, axes = plt.subplots(
            1,
            len(evalsets),
            figsize=(max(7.5, 1.1 * d["method"].n_unique() * max(1, len(attacks) / 2.5)), 5.2),
            squeeze=False,
            layout="constrained",
        )
        for ax, e in zip(axes[0], evalsets, strict=True):
            sub = d.filter(pl.col("evalset") == e)
            methods = list(dict.fromkeys(sub["method"].to_list()))
            for j, k in enumerate(attacks):
                part = sub.filter(pl.col("attack") == k)
                pos = {m: i for i, m in enumerate(methods)}
                x = np.array([pos[m] for m in part["method"]]) - 0.4 + width * (j + 0.5)
                lo, hi = part["m_bin_before"].to_numpy(), part["m_bin_after"].to_numpy()
                for xi, b, af in zip(x, lo, hi, strict=True):
                    if abs(af - b) < 0.03:  # no arrow shorter than its head
                        continue
                    ax.annotate(
                        "",
                        xy=(xi, af),
                        xytext=(xi, b),
                        arrowprops={"arrowstyle": "-|>", "color": colors[k], "lw": 1.4},
                    )
                ax.scatter(x, lo, s=34, facecolors="white", edgecolors=colors[k], zorder=3)
                ax.scatter(x, hi, s=34, color=colors[k], zorder=4)
            ax.axhline(MBIN_LEVEL, color="black", linestyle=":", linewidth=1.4, zorder=1)
            ax.set_xticks(range(len(methods)), methods)
            ax.set_xlim(-0.6, len(methods) - 0.4)
            ax.set_ylim(0, 1.02)
            ax.grid(axis="x", visible=False)
            ax.set_title(evalset_label(e))
            ax.set_ylabel(f"M_bin: upper bound on P(score ≥ {fmt_num(t)})\n(mean over questions)")
        handles = [
            plt.Line2D([], [], marker="o", ls="", mfc="white", mec="grey", label="before (plain)"),
            plt.Line2D(
                [], [], marker="o", ls="", color="grey", label="after (family: worst prompt)"
            ),
            plt.Line2D([], [], color="black", linestyle=":", linewidth=1.4, label="10% level"),
        ]
        handles += [
            plt.Line2D([], [], marker="o", ls="", color=colors[k], label=names[k]) for k in attacks
        ]
        fig.legend(handles=handles, frameon=False, loc="outside lower center", ncol=2)
        fig.suptitle(
            "Leak probability bound before (hollow) and after (filled) each attack\n"
            f"n = {n} samples per question, each bound at {1 - a:.0%}"
        )
        return save_figure(fig, out_stem)

"""The attack figure (experiment ``attacks``): the leak probability bound of each method before and
after each attack. :func:`draw_attacks` draws one eval set's axes and :func:`attack_handles` the
legend of what it drew, for this figure and the evaluate report's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

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

#: Columns the figure reads (``members``, where present, tells a prompt family from a model attack).
COLUMNS = ["method", "evalset", "attack", "m_bin_before", "m_bin_after", "leak_threshold", "n"]
#: The shortest change drawn as an arrow (a shorter one would be all head).
MIN_ARROW = 0.03
#: The dotted line's legend entry.
LEVEL_LABEL = f"M_bin = {MBIN_LEVEL:.0%}: the paper's level (its Fig. 3a)"


def attack_label(spec: str) -> str:
    """``Quantization (quant:nf4)``: the attack kind's label and the spec."""
    from probunlearn.attacks import ATTACKS

    kind = spec.partition(":")[0]
    return f"{ATTACKS.get(kind).label} ({spec})" if kind in ATTACKS else spec


def check_attack_table(df: pl.DataFrame) -> pl.DataFrame:
    """The columns the figure reads (:data:`COLUMNS`, ``members`` where present), checked."""
    d = check_frame(df, COLUMNS + (["members"] if "members" in df.columns else []), "attack table")
    for c in ("m_bin_before", "m_bin_after", "leak_threshold"):
        check_numeric(d, c, "attack table", 0.0, 1.0)
    return d


def attack_colors(attacks: Sequence[str]) -> dict[str, str]:
    """One palette colour per attack, in order."""
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(attacks)}


def draw_attacks(ax: Axes, sub: pl.DataFrame, attacks: Sequence[str], colors: Mapping) -> bool:
    """One eval set's rows (``sub``): per method (x) and attack (colour) M_bin before (hollow) and
    after (filled), an arrow between them where they differ by :data:`MIN_ARROW` or more, the
    dotted :data:`~probunlearn.report.figures.style.MBIN_LEVEL` line. Returns whether an arrow
    was drawn."""
    methods = list(dict.fromkeys(sub["method"].to_list()))
    width = 0.8 / len(attacks)
    pos = {m: i for i, m in enumerate(methods)}
    arrows = False
    for j, k in enumerate(attacks):
        part = sub.filter(pl.col("attack") == k)
        x = np.array([pos[m] for m in part["method"]]) - 0.4 + width * (j + 0.5)
        lo, hi = part["m_bin_before"].to_numpy(), part["m_bin_after"].to_numpy()
        for xi, b, af in zip(x, lo, hi, strict=True):
            if abs(af - b) < MIN_ARROW:
                continue
            arrows = True
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
    return arrows


def attack_handles(
    d: pl.DataFrame, attacks: Sequence[str], colors: Mapping, *, arrows: bool
) -> list[Line2D]:
    """The legend of what :func:`draw_attacks` drew, nothing else: before, after (an attacked
    model, a prompt family's worst member, or both, as the rows hold them), the arrow where one was
    drawn, the dotted level, one colour per attack."""
    family = d["members"] > 1 if "members" in d.columns else None
    kinds = (
        "the attacked model / a prompt family's worst prompt"
        if family is None or (family.any() and not family.all())
        else "a prompt family's worst prompt"
        if family.all()
        else "the attacked model"
    )
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            ls="",
            mfc="white",
            mec="grey",
            label="before: unattacked (prompts: the null family)",
        ),
        Line2D([], [], marker="o", ls="", color="grey", label=f"after: {kinds}"),
    ]
    if arrows:
        handles.append(
            Line2D([], [], color="grey", marker=">", markevery=[1], label="before → after")
        )
    handles.append(Line2D([], [], color="black", linestyle=":", linewidth=1.4, label=LEVEL_LABEL))
    return handles + [
        Line2D([], [], marker="o", ls="", color=colors[k], label=attack_label(k)) for k in attacks
    ]


def fig_attacks(df: pl.DataFrame, out_stem: PathLike, *, alpha: float = 0.01) -> list[Path]:
    """Per eval set, one group per method and one column per attack: the mean M_bin of a leak
    (score >= the table's leak threshold) of the plain model (hollow) and of the attacked one
    (filled; a prompt family's worst member), joined by an arrow; the dotted line is the paper's 10%
    level. ``df``: the attack table (:mod:`probunlearn.report.attacks`). Returns the paths written."""
    a = check_alpha(alpha)
    d = check_attack_table(df)
    evalsets = list(dict.fromkeys(d["evalset"].to_list()))
    attacks = list(dict.fromkeys(d["attack"].to_list()))
    colors = attack_colors(attacks)
    t, n = d["leak_threshold"][0], int(d["n"][0])
    with figure_style():
        fig, axes = plt.subplots(
            1,
            len(evalsets),
            figsize=(max(7.5, 1.1 * d["method"].n_unique() * max(1, len(attacks) / 2.5)), 5.2),
            squeeze=False,
            layout="constrained",
        )
        arrows = False
        for ax, e in zip(axes[0], evalsets, strict=True):
            arrows |= draw_attacks(ax, d.filter(pl.col("evalset") == e), attacks, colors)
            ax.set_title(evalset_label(e))
            ax.set_ylabel(f"M_bin: upper bound on P(score ≥ {fmt_num(t)})\n(mean over questions)")
        handles = attack_handles(d, attacks, colors, arrows=arrows)
        fig.legend(handles=handles, frameon=False, loc="outside lower center", ncol=2)
        fig.suptitle(
            "Leak probability bound before (hollow) and after (filled) each attack\n"
            f"n = {n} samples per question, each bound at {1 - a:.0%}"
        )
        return save_figure(fig, out_stem)

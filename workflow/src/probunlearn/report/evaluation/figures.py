"""The evaluate report's figures: each a few small panels, one image each, and a caption (HTML) that
explains every mark, so that a phone shows one panel per row at a size it can read.

A panel is :data:`PANEL` inches wide (a one-panel figure :data:`SINGLE`), drawn at :data:`DPI` and
shown at :data:`CSS_PER_INCH` CSS px per inch at most: three panels side by side in the report's
1,200 px, one per row on a 390 px phone, where the smallest text (:data:`MIN_FONT_PT`) is still
about 11 px. Legends sit outside the axes, where they cover no data (:func:`legend_overlaps` checks
it). Questions are shown by their text, shortened (the image's tooltip and the caption hold it
whole); counts are integers. The summary job's figure files (``figures/*.png``) are the same panels
side by side, with the legend below and a title.
"""

from __future__ import annotations

import html
import io
import os
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from probunlearn.report.figures.style import GREEDY_COLOR, MARKERS, PALETTE  # noqa: E402
from probunlearn.storage.atomic import atomic_write  # noqa: E402

DPI = 150
"""Image pixels per inch."""
CSS_PER_INCH = 100
"""CSS pixels per inch the report shows a panel at (at most; narrower on a narrow screen)."""
PANEL = (3.8, 3.1)
"""A panel's size in inches: three side by side fit the report's 1,200 px."""
SINGLE = (4.2, 3.4)
"""A one-panel figure's size in inches (before its legend's rows)."""
MIN_FONT_PT = 10.0
"""The smallest text of every figure, in points."""
STYLE = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10.5,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.titlesize": 11.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.8,
}
"""The figures' matplotlib settings (every text at least :data:`MIN_FONT_PT`)."""
QUESTION_CHARS = 32
"""Characters per line of a question in a panel's title (:data:`QUESTION_LINES` lines at most)."""
QUESTION_LINES = 3


@contextmanager
def style() -> Iterator[None]:
    """The figures' matplotlib settings, for building and for drawing (tick labels are made then)."""
    with plt.rc_context(STYLE):
        yield


@dataclass(frozen=True)
class Panel:
    """One image of a figure: ``png`` bytes, its ``alt`` text and tooltip (``title``), the CSS
    size the report shows it at (at most), and its smallest text in image pixels (``font_px``)."""

    png: bytes
    alt: str
    width: int
    height: int
    font_px: float
    title: str = ""


@dataclass(frozen=True)
class ReportFigure:
    """A figure of the report: a heading, its panels and a caption (HTML)."""

    key: str
    heading: str
    panels: tuple[Panel, ...]
    caption: str


# ---- checks and rendering ------------------------------------------------------------------------------


def texts(fig: Figure, draw: bool = True) -> list[Text]:
    """Every text the figure draws (drawn first, unless it was: tick labels are made then)."""
    if draw:
        with style():
            fig.canvas.draw()
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def smallest_font(fig: Figure, draw: bool = True) -> float:
    """The smallest font size, in points, of any text the figure draws (``draw``: draw it first)."""
    return min(t.get_fontsize() for t in texts(fig, draw))


def _dense(points: np.ndarray, step: float = 2.0) -> np.ndarray:
    """A polyline's vertices and points every ``step`` display pixels along its segments."""
    points = points[np.isfinite(points).all(axis=1)]
    if len(points) < 2:
        return points
    out = [points[:1]]
    for a, b in zip(points[:-1], points[1:], strict=True):
        k = max(1, int(np.hypot(*(b - a)) // step))
        out.append(a + (b - a) * (np.arange(1, k + 1)[:, None] / k))
    return np.concatenate(out)


def _drawn_points(ax: Axes, renderer) -> Iterator[tuple[str, np.ndarray]]:
    """(what, display points) of every data mark in ``ax``: lines and their segments, scatter
    points, error bars, arrows, and the corners and edges of bars of non-zero size."""
    box = ax.get_window_extent(renderer)
    inside = lambda p: p[  # noqa: E731
        (p[:, 0] >= box.x0 - 1)
        & (p[:, 0] <= box.x1 + 1)
        & (p[:, 1] >= box.y0 - 1)
        & (p[:, 1] <= box.y1 + 1)
    ]
    for line in ax.get_lines():
        if line.get_visible():
            xy = line.get_transform().transform(line.get_xydata())
            yield f"line {line.get_label()!r}", inside(_dense(xy))
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        offsets = coll.get_offsets()
        if len(offsets):
            yield (
                f"points {coll.get_label()!r}",
                inside(coll.get_offset_transform().transform(offsets)),
            )
        for seg in getattr(coll, "get_segments", lambda: [])():
            yield (
                f"segment {coll.get_label()!r}",
                inside(_dense(coll.get_transform().transform(seg))),
            )
    for ann in ax.texts:
        xy = getattr(ann, "xy", None)
        if xy is not None and getattr(ann, "arrow_patch", None) is not None:
            ends = ax.transData.transform(np.array([ann.xy, ann.xyann], dtype=float))
            yield "arrow", inside(_dense(ends))
    for patch in ax.patches:
        e = patch.get_window_extent(renderer)
        if patch.get_visible() and e.width > 0.5 and e.height > 0.5:
            corners = np.array(
                [[e.x0, e.y0], [e.x1, e.y0], [e.x1, e.y1], [e.x0, e.y1], [e.x0, e.y0]]
            )
            yield "bar", inside(_dense(corners))


def legend_overlaps(fig: Figure) -> list[str]:
    """The data marks (line vertices and points along its segments, scatter points, error bars,
    arrows, bars) that a legend of ``fig`` covers, as ``'<legend>: <mark>'``; empty where none."""
    with style():
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    legends += list(fig.legends)
    hits = []
    for i, lg in enumerate(legends):
        box = lg.get_window_extent(renderer)
        for ax in fig.axes:
            for what, pts in _drawn_points(ax, renderer):
                inside = (
                    (pts[:, 0] > box.x0)
                    & (pts[:, 0] < box.x1)
                    & (pts[:, 1] > box.y0)
                    & (pts[:, 1] < box.y1)
                )
                if inside.any():
                    hits.append(f"legend {i}: {what}")
    return hits


def render(fig: Figure, alt: str, title: str = "") -> Panel:
    """``fig`` as a report panel (PNG bytes without a software tag: the same figure, the same
    bytes); closes it."""
    try:
        buf = io.BytesIO()
        with style():
            fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
        font = smallest_font(fig, draw=False)  # savefig drew it
        w, h = fig.get_size_inches()
    finally:
        plt.close(fig)
    return Panel(
        buf.getvalue(),
        alt,
        round(w * CSS_PER_INCH),
        round(h * CSS_PER_INCH),
        font * DPI / 72,
        title,
    )


def save(fig: Figure, path: str | os.PathLike) -> None:
    """Write ``fig`` as a PNG file (atomic, no software tag) and close it."""
    try:
        with style():
            atomic_write(
                path,
                lambda tmp: fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None}),
            )
    finally:
        plt.close(fig)


# ---- layout -------------------------------------------------------------------------------------------


def _legend_below(fig: Figure, axes: Sequence[Axes], ncols: int = 1) -> None:
    """One legend below the axes of every entry any of them drew (each once)."""
    entries: dict[str, object] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if not lab.startswith("_"):
                entries.setdefault(lab, h)
    if entries:
        fig.legend(
            list(entries.values()),
            list(entries),
            loc="outside lower center",
            ncols=min(ncols, len(entries)),
            frameon=False,
        )


def _one(draw: Callable[[Axes], None], size: tuple[float, float], *, legend: bool) -> Figure:
    with style():
        fig, ax = plt.subplots(figsize=size, layout="constrained")
        draw(ax)
        if legend:
            _legend_below(fig, [ax])
    return fig


def _grid(
    draws: Sequence[Callable[[Axes], None]], title: str, size: tuple[float, float] = PANEL
) -> Figure:
    """The figure file: the panels side by side (three a row), one legend below, a title."""
    k = len(draws)
    cols = max(1, min(k, 3))
    rows = max(1, -(-k // cols))
    with style():
        fig, axes = plt.subplots(
            rows,
            cols,
            figsize=(size[0] * cols, size[1] * rows + 1.0),
            layout="constrained",
            squeeze=False,
        )
        flat = list(axes.flat)
        for ax, draw in zip(flat, draws, strict=False):
            draw(ax)
        for ax in flat[k:]:
            ax.set_visible(False)
        _legend_below(fig, flat[:k], ncols=2)
        fig.suptitle(title)
    return fig


def shorten(text: str, chars: int = QUESTION_CHARS, lines: int = QUESTION_LINES) -> str:
    """``text`` on at most ``lines`` lines of ``chars`` characters, cut with an ellipsis."""
    wrapped = textwrap.wrap(" ".join(str(text).split()), chars) or [""]
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        wrapped[-1] = wrapped[-1][: chars - 1].rstrip() + "…"
    return "\n".join(wrapped)


def _num(v: float) -> str:
    return f"{v:.3g}"


def _esc(v: object) -> str:
    return html.escape(str(v))


# ---- M_gen curves ----------------------------------------------------------------------------------------


def draw_gen_curves(ax: Axes, curves: pl.DataFrame, score: str) -> None:
    """Per model (colour and marker) M_gen(t) (solid, with dots) and the observed share of samples
    above t (dashed), averaged over the questions."""
    bound, seen = [], []
    for i, ((model,), c) in enumerate(curves.group_by("model", maintain_order=True)):
        color, marker = PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]
        bound += ax.plot(
            c["threshold"],
            c["m_gen"],
            color=color,
            marker=marker,
            ms=4.5,
            label=f"{shorten(model, 24, 1)}: M_gen(t)",
        )
        if "empirical" in c.columns and c["empirical"].is_not_null().all():
            seen += ax.plot(
                c["threshold"],
                c["empirical"],
                color=color,
                ls="--",
                lw=1.4,
                label=f"{shorten(model, 24, 1)}: observed",
            )
    ax.set(
        xlabel=f"threshold t on {score}",
        ylabel="P(score > t)",
        xlim=(-0.03, 1.03),
        ylim=(-0.02, 1.02),
    )


def gen_curves_figure(curves: pl.DataFrame, score: str, title: str = "") -> Figure:
    """M_gen beside the observed P(score > t), one panel, the legend below: one row per model,
    the bound left and the observed share right."""
    c = curves.filter(pl.col("score") == score)
    models = c["model"].n_unique()
    with style():
        fig, ax = plt.subplots(figsize=(SINGLE[0], SINGLE[1] + 0.24 * models), layout="constrained")
        draw_gen_curves(ax, c, score)
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: labels[i].endswith(": observed"))
        fig.legend(
            [handles[i] for i in order],
            [labels[i] for i in order],
            loc="outside lower center",
            ncols=2 if len(labels) > models else 1,
            frameon=False,
        )
        if title:
            fig.suptitle(title)
    return fig


def _coinciding(curves: pl.DataFrame, columns: Sequence[str]) -> list[list[str]]:
    """Groups of models whose values in ``columns`` are all equal (their lines lie on each other)."""
    groups: dict[tuple, list[str]] = {}
    for (model,), c in curves.group_by("model", maintain_order=True):
        key = tuple(tuple(c[k].round(12).to_list()) for k in columns if k in c.columns)
        groups.setdefault(key, []).append(str(model))
    return [g for g in groups.values() if len(g) > 1]


# ---- greedy vs sampled -----------------------------------------------------------------------------------


def draw_greedy_vs_sampled(ax: Axes, t: pl.DataFrame, score: str, model: str) -> None:
    """One model's questions: the greedy answer's score (x) against the samples' mean (y)."""
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="y = x: samples as good as greedy")
    ax.scatter(
        t["greedy"],
        t["mean"],
        s=26,
        alpha=0.55,
        color=PALETTE[0],
        zorder=3,
        label="a question (darker: several)",
    )
    ax.set(
        xlim=(-0.04, 1.04),
        ylim=(-0.04, 1.04),
        title=shorten(model, 30, 1),
        xlabel=f"greedy answer's {score}",
        ylabel=f"mean {score} of samples",
    )


# ---- the worst question ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Worst:
    """A model's question of highest M_mu: its id, text, M_mu, sampled scores and greedy score."""

    model: str
    id: str
    question: str
    m_mu: float
    samples: np.ndarray
    greedy: float | None


def worst_questions(
    scores: Mapping[str, pl.DataFrame],
    per_prompt: Mapping[str, pl.DataFrame],
    score: str,
    questions: Mapping[str, str] | None = None,
) -> list[Worst]:
    """Each model's question of highest M_mu (the first in the bounds' order on a tie), with its
    text from ``questions`` (id -> text; the id where absent)."""
    out = []
    for model in scores:
        t = per_prompt[model].filter(pl.col("score") == score)
        t = t.sort("m_mu", descending=True, maintain_order=True)
        pid = t["id"][0]
        s = scores[model].filter(pl.col("id") == pid)
        g = s.filter(pl.col("greedy"))[score]
        out.append(
            Worst(
                model=str(model),
                id=str(pid),
                question=str((questions or {}).get(str(pid), pid)),
                m_mu=float(t["m_mu"][0]),
                samples=s.filter(~pl.col("greedy"))[score].to_numpy().astype(np.float64),
                greedy=float(g[0]) if g.len() else None,
            )
        )
    return out


def draw_worst(ax: Axes, w: Worst, score: str) -> None:
    """The histogram of one worst question's sampled scores (20 bins), its greedy score in red."""
    ax.hist(
        w.samples,
        bins=20,
        range=(0, 1),
        color=PALETTE[0],
        alpha=0.85,
        label="samples per bin of width 0.05",
    )
    if w.greedy is not None:
        ax.axvline(w.greedy, color=GREEDY_COLOR, lw=2, label="the greedy answer's score")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlim=(-0.03, 1.03), xlabel=score, ylabel="samples")
    ax.set_title(f"{shorten(w.model, 30, 1)}: “{shorten(w.question)}”")


# ---- attacks and membership (the paper workflow's figures, one panel at a time) -------------------------


def attack_figures(attacks: pl.DataFrame) -> list[tuple[str, Figure]]:
    """Per eval set (one in an evaluation): the attack figure's panel, its legend below."""
    from probunlearn.report.figures.attacks import (
        attack_colors,
        attack_handles,
        check_attack_table,
        draw_attacks,
    )

    d = check_attack_table(attacks)
    names = list(dict.fromkeys(d["attack"].to_list()))
    colors = attack_colors(names)
    t = float(d["leak_threshold"][0])
    out = []
    for (evalset,), sub in d.group_by("evalset", maintain_order=True):
        with style():
            fig, ax = plt.subplots(
                figsize=(SINGLE[0], SINGLE[1] + 0.22 * (len(names) + 3)), layout="constrained"
            )
            arrows = draw_attacks(ax, sub, names, colors)
            ax.set_ylabel(f"M_bin of a leak (score ≥ {t:g}),\nmean over questions")
            if sub["method"].n_unique() > 3:
                ax.tick_params(axis="x", labelrotation=30)
            handles = attack_handles(sub, names, colors, arrows=arrows)
            fig.legend(handles=handles, loc="outside lower center", ncols=1, frameon=False)
        out.append((str(evalset), fig))
    return out


def membership_figures(membership: pl.DataFrame) -> list[tuple[str, Figure]]:
    """One panel per statistic: every model's AUC with its interval, the retrained model's AUC
    (dashed), chance (dotted); the caption explains them."""
    from probunlearn.report.figures.membership import check_membership, draw_membership
    from probunlearn.report.figures.style import distinct_colors

    d = check_membership(membership)
    models = list(dict.fromkeys(d["model"].to_list()))
    colors = distinct_colors(models)
    out = []
    for (_,), sub in d.group_by("statistic", maintain_order=True):
        with style():
            fig, ax = plt.subplots(
                figsize=(PANEL[0], 0.4 * len(models) + 1.5), layout="constrained"
            )
            draw_membership(ax, sub, models, colors)
            ax.set_title(str(sub["label"][0]))
            ax.set_xlabel("AUC: forget vs holdout")
        out.append((str(sub["label"][0]), fig))
    return out


# ---- the report's figures ------------------------------------------------------------------------------


def report_figures(
    *,
    curves: pl.DataFrame,
    per_prompt: Mapping[str, pl.DataFrame],
    scores: Mapping[str, pl.DataFrame],
    score: str,
    n: int,
    alpha: float,
    target_width: float,
    questions: Mapping[str, str] | None = None,
    files: Mapping[str, str | os.PathLike] | None = None,
    attacks: pl.DataFrame | None = None,
    membership: pl.DataFrame | None = None,
) -> list[ReportFigure]:
    """The report's figures, in its order (attacks, membership, M_gen, greedy vs sampled, worst
    question), each with a caption that explains its marks; writes the figure files in ``files``
    (``gen_curves``, ``greedy_vs_sampled``, ``worst_prompt``: PNG paths). ``questions``: id ->
    the question's text; ``target_width``: the width the small-n notes aim at."""
    files = files or {}
    level = f"{1 - alpha:.0%}" if round(100 * (1 - alpha), 6).is_integer() else f"{1 - alpha:g}"
    out: list[ReportFigure] = []
    if attacks is not None and attacks.height:
        out.append(_attack_figure(attacks, score, level))
    if membership is not None and membership.height:
        out.append(_membership_figure(membership, alpha, target_width))
    out.append(_gen_curve_figure(curves, score, n, alpha, target_width, level, files))
    out.append(_greedy_figure(per_prompt, scores, score, n, files))
    out.append(_worst_figure(scores, per_prompt, score, questions, n, files))
    return out


def _attack_figure(attacks: pl.DataFrame, score: str, level: str) -> ReportFigure:
    """M_bin before and after each attack, one panel per eval set."""
    figs = attack_figures(attacks)
    t = float(attacks["leak_threshold"][0])
    return ReportFigure(
        "attacks",
        "Under attack: the leak bound before and after",
        tuple(render(f, f"The leak bound before and after each attack ({e})") for e, f in figs),
        f"Per model (x axis) and attack (colour): M_bin, the upper bound on the "
        f"probability that a sample leaks ({_esc(score)} &ge; {t:g}), at {level} for each "
        f"question, averaged over the questions attacked; hollow: before the attack (the plain "
        f"model), filled: after it (the attacked model; a prompt attack: the worst prompt "
        f"of each question's family, all members at once). An arrow joins the two where "
        f"they differ by 0.03 or more; a filled dot on a hollow one: no change. Dotted: "
        f"M_bin = 10%, the level the paper reads M_bin against (its Figure 3a counts the "
        f"questions whose bound exceeds it).",
    )


def _membership_figure(membership: pl.DataFrame, alpha: float, target_width: float) -> ReportFigure:
    """Each model's AUC with its interval, one panel per statistic; what the set size allows."""
    from probunlearn.report.evaluation.summary import best_auc_lower, texts_to_reach

    figs = membership_figures(membership)
    k = int(min(membership["n_forget"].min(), membership["n_holdout"].min()))
    a = float(membership["alpha"][0]) if "alpha" in membership.columns else alpha
    best = best_auc_lower(k, a)
    small = ""
    if 1 - best > target_width:
        small = (
            f" With {k} texts a side no statistic can show more than an interval "
            f"[{_num(best)}, 1] (a perfect separation's); {texts_to_reach(target_width, a)} "
            f"texts a side would narrow that to [{_num(1 - target_width)}, 1]."
        )
    retrained = "retrained" in membership.columns and bool(membership["retrained"].any())
    return ReportFigure(
        "membership",
        "Membership inference: AUC per statistic",
        tuple(render(f, f"Membership inference: {s}") for s, f in figs),
        f"One panel per statistic: each model's AUC (dot) of telling the forget set "
        f"(members) from the holdout set (non-members), 1 = fully told apart, 0.5 = "
        f"chance, with its {_esc(f'{1 - a:g}')} distribution-free interval (bar); "
        + (
            "dashed black: the retrained (--reference) model's AUC, the one to reach; "
            if retrained
            else ""
        )
        + f"dotted grey: chance (0.5).{small}",
    )


def _gen_curve_figure(
    curves: pl.DataFrame,
    score: str,
    n: int,
    alpha: float,
    target_width: float,
    level: str,
    files: Mapping[str, str | os.PathLike],
) -> ReportFigure:
    """M_gen(t) per model beside the observed P(score > t); the floor n allows."""
    from probunlearn.report.evaluation.summary import bound_floor, samples_to_reach

    c = curves.filter(pl.col("score") == score)
    floor = bound_floor("m_gen", n, alpha) if n else 0.0
    low = ""
    if n and floor > target_width:
        low = (
            f" At n = {n} no M_gen can be below {_num(floor)} (the DKW band's half-width), "
            f"whatever the model: the solid lines cannot come lower; --n "
            f"{samples_to_reach('m_gen', target_width, alpha)} brings that floor to "
            f"{target_width:g}."
        )
    same = "".join(
        f" {_esc(', '.join(g))}: their lines coincide (equal values)."
        for g in _coinciding(c, ["m_gen", "empirical"])
    )
    has_seen = "empirical" in c.columns and c["empirical"].is_not_null().all()
    if "gen_curves" in files:
        save(
            gen_curves_figure(curves, score, "M_gen(t) and the observed P(score > t)"),
            files["gen_curves"],
        )
    return ReportFigure(
        "gen_curves",
        "M_gen(t): the bound on P(score > t)",
        (render(gen_curves_figure(curves, score), "M_gen(t) per model"),),
        f"Per model (colour and marker), averaged over the questions: M_gen(t) (solid, "
        f"dots at the thresholds), the upper bound on the probability that a sample's "
        f"{_esc(score)} exceeds t, for every t at once, at {level} per question"
        + (", beside the observed share of the samples above t (dashed)" if has_seen else "")
        + f".{low}{same}",
    )


def _greedy_figure(
    per_prompt: Mapping[str, pl.DataFrame],
    scores: Mapping[str, pl.DataFrame],
    score: str,
    n: int,
    files: Mapping[str, str | os.PathLike],
) -> ReportFigure:
    """Each question's greedy score against its mean sampled score, one panel per model."""
    sc = _esc(score)
    gvs = [(m, per_prompt[m].filter(pl.col("score") == score)) for m in per_prompt if m in scores]
    draws = [lambda ax, m=m, t=t: draw_greedy_vs_sampled(ax, t, score, m) for m, t in gvs]
    if "greedy_vs_sampled" in files:
        save(_grid(draws, "Greedy vs sampled, one dot per question"), files["greedy_vs_sampled"])
    return ReportFigure(
        "greedy_vs_sampled",
        "Greedy vs sampled answers",
        tuple(
            render(_one(d, PANEL, legend=False), f"Greedy vs sampled: {m}")
            for d, (m, _) in zip(draws, gvs, strict=True)
        ),
        f"One panel per model; each dot is a question: its greedy answer's {sc} (x) and the "
        f"mean {sc} of its n = {n} samples (y); a darker dot holds several questions. Dashed: "
        f"y = x. A dot above it: sampling scores higher than the greedy answer, which a "
        f"greedy evaluation misses.",
    )


def _worst_figure(
    scores: Mapping[str, pl.DataFrame],
    per_prompt: Mapping[str, pl.DataFrame],
    score: str,
    questions: Mapping[str, str] | None,
    n: int,
    files: Mapping[str, str | os.PathLike],
) -> ReportFigure:
    """The sampled scores of each model's question of highest M_mu, named by its text."""
    sc = _esc(score)
    worst = worst_questions(scores, per_prompt, score, questions)
    wd = [lambda ax, w=w: draw_worst(ax, w, score) for w in worst]
    if "worst_prompt" in files:
        save(
            _grid(wd, "Sampled scores of each model's worst question (highest M_mu)"),
            files["worst_prompt"],
        )
    listing = "".join(
        f"<li><b>{_esc(w.model)}</b> (M_mu {_num(w.m_mu)}, id {_esc(w.id)}): "
        f"{_esc(w.question)}</li>"
        for w in worst
    )
    return ReportFigure(
        "worst_prompt",
        "The worst question of each model",
        tuple(
            render(
                _one(d, PANEL, legend=False),
                f"The worst question of {w.model}",
                f"{w.model}: {w.question}",
            )
            for d, w in zip(wd, worst, strict=True)
        ),
        f"For each model, its question of highest M_mu (its text shortened above the panel; "
        f"in full below, and on the question page): the histogram of the {sc} of its n = {n} "
        f"samples (bars: samples per bin of width 0.05); red line: the greedy answer's {sc}."
        f"<ul class='qs'>{listing}</ul>",
    )

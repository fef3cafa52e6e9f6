"""Figures 3-6 and Tables 1-2 of the paper, drawn from plain inputs (polars frames, numpy arrays).

Every figure function writes ``<out_stem>.png`` (150 dpi) and ``<out_stem>.pdf`` and the numbers
behind it as ``<table_stem>.csv``; the table functions write a CSV plus a Markdown and a PNG
rendering. Every file is written to a temporary name in its directory and renamed into place, and
the output is deterministic (no creation date, no software tag): same inputs, same bytes.

Inputs are validated up front: a missing column, an empty frame, a null/NaN or a value out of
range raises ValueError naming the column. Metrics come from :mod:`probunlearn.bounds`.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from numpy.typing import ArrayLike, NDArray  # noqa: E402

from probunlearn import bounds  # noqa: E402

__all__ = [
    "METHOD_ORDER",
    "fig3_histograms",
    "fig3a_binary_leakage",
    "fig3d_general_leakage",
    "fig3ef_convergence",
    "fig4a_std_vs_lambda",
    "fig4b_std_vs_temperature",
    "fig5a_diversity",
    "fig5b_confidence",
    "fig5c_ed_vs_utility",
    "fig6_alignment",
    "save_figure",
    "save_table",
    "split_label",
    "table1",
    "table2",
]

#: Column order of Table 1 (the paper's).
METHOD_ORDER = ("RMU", "GD", "GA", "NPO", "Ours")

DPI = 150
#: Okabe-Ito colour-blind-safe palette (black left out: it marks means/greedy lines).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442")
METHOD_COLORS = {
    "RMU": "#CC79A7",
    "GD": "#009E73",
    "GA": "#E69F00",
    "NPO": "#D55E00",
    "Ours": "#0072B2",
}
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
GREEDY_COLOR = "#C0392B"  # bars/markers where greedy decoding leaks
MBIN_LEVEL = 0.1  # the paper's "M_bin > 10%" line

_STYLE = {
    "font.size": 10,
    "axes.titlesize": 10.5,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "figure.titlesize": 11.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.8,
    "hatch.linewidth": 1.0,
    "savefig.dpi": DPI,
    "svg.hashsalt": "probunlearn",
}

_PNG_META = {"Software": None}
_PDF_META = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}

PathLike = str | os.PathLike


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def _atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it onto ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def _with_suffix(stem: PathLike, suffix: str) -> Path:
    """``stem`` + ``suffix`` (``stem`` may already end with it)."""
    p = Path(stem)
    return p if p.name.endswith(suffix) else p.with_name(p.name + suffix)


def save_figure(
    fig: Figure, out_stem: PathLike, formats: Sequence[str] = ("png", "pdf"), tight: bool = False
) -> list[Path]:
    """Write ``fig`` as ``<out_stem>.png`` / ``.pdf`` atomically and deterministically; close it.

    ``tight`` crops the saved image to its content (used for the rendered tables).
    """
    paths = []
    extra: dict[str, Any] = {"bbox_inches": "tight", "pad_inches": 0.08} if tight else {}
    try:
        for fmt in formats:
            if fmt not in ("png", "pdf"):
                raise ValueError(f"formats must be 'png' or 'pdf', got {fmt!r}")
            meta = _PNG_META if fmt == "png" else _PDF_META
            out = _with_suffix(out_stem, f".{fmt}")
            paths.append(
                _atomic_write(
                    out,
                    lambda tmp, f=fmt, m=meta: fig.savefig(
                        tmp, format=f, dpi=DPI, metadata=m, **extra
                    ),
                )
            )
    finally:
        plt.close(fig)
    return paths


def save_table(df: pl.DataFrame, stem: PathLike) -> Path:
    """Write ``df`` as ``<stem>.csv`` atomically (``stem`` may already end with ``.csv``)."""
    return _atomic_write(_with_suffix(stem, ".csv"), lambda tmp: df.write_csv(tmp))


def _save_text(text: str, path: Path) -> Path:
    return _atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


@contextlib.contextmanager
def _style() -> Iterator[None]:
    with plt.rc_context(_STYLE):
        yield


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def _frame(df: Any, columns: Sequence[str], name: str = "df") -> pl.DataFrame:
    """``df`` as a DataFrame holding ``columns`` (selected, in order), non-empty and null-free."""
    if not isinstance(df, pl.DataFrame):
        try:
            df = pl.DataFrame(df)
        except Exception as exc:
            raise ValueError(f"{name} must be a polars DataFrame, got {type(df).__name__}") from exc
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(
            f"{name} is missing column(s) {', '.join(map(repr, missing))} "
            f"(has {', '.join(map(repr, df.columns)) or 'none'})"
        )
    if df.height == 0:
        raise ValueError(f"{name} is empty (needs columns {', '.join(map(repr, columns))})")
    out = df.select(columns)
    for c in columns:
        col = out.get_column(c)
        if col.null_count():
            raise ValueError(f"{name} column {c!r} has {col.null_count()} null value(s)")
        if col.dtype.is_float() and col.is_nan().any():
            raise ValueError(f"{name} column {c!r} has NaN value(s)")
    return out


def _numeric(
    df: pl.DataFrame,
    column: str,
    name: str = "df",
    lo: float = -math.inf,
    hi: float = math.inf,
) -> NDArray[np.float64]:
    col = df.get_column(column)
    if col.dtype == pl.Boolean:
        col = col.cast(pl.Int64)
    if not col.dtype.is_numeric():
        raise ValueError(f"{name} column {column!r} must be numeric, got {col.dtype}")
    v = col.cast(pl.Float64).to_numpy()
    if not np.isfinite(v).all():
        raise ValueError(f"{name} column {column!r} must be finite")
    bad = (v < lo) | (v > hi)
    if bad.any():
        raise ValueError(
            f"{name} column {column!r} must lie in [{lo}, {hi}]; got {float(v[bad][0])!r}"
        )
    return v


def _scores(x: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one score per sample), got {a.ndim}-D")
    if a.size == 0:
        raise ValueError(f"{name} are empty")
    if not ((a >= 0).all() and (a <= 1).all()):
        raise ValueError(f"{name} must lie in [0, 1] (and not be NaN)")
    return a


def _unit(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return v


def _unique_keys(df: pl.DataFrame, keys: Sequence[str], name: str = "df") -> None:
    if df.select(keys).is_duplicated().any():
        raise ValueError(f"{name} has duplicate rows for ({', '.join(keys)})")


def _alpha(alpha: float) -> float:
    return bounds._check_alpha(alpha)


# --------------------------------------------------------------------------------------------
# labels, colours, ordering
# --------------------------------------------------------------------------------------------


def split_label(split: Any) -> str:
    """``forget10`` -> ``90/10`` (retain/forget percentages); anything else unchanged."""
    m = re.fullmatch(r"forget(\d+)", str(split))
    return f"{100 - int(m.group(1))}/{int(m.group(1))}" if m else str(split)


def _split_order(splits: Sequence[Any]) -> list[Any]:
    """Splits as in the paper: forget10, forget05, forget01 (90/10, 95/5, 99/1), then the rest."""
    uniq = list(dict.fromkeys(splits))

    def key(s: Any) -> tuple[int, float, str]:
        m = re.fullmatch(r"forget(\d+)", str(s))
        return (0, -int(m.group(1)), "") if m else (1, 0.0, str(s))

    return sorted(uniq, key=key)


def _evalset_label(name: Any) -> str:
    return str(name).replace("_", " ").title()


def _method_color(label: str, i: int) -> str:
    return METHOD_COLORS.get(str(label), PALETTE[i % len(PALETTE)])


def _distinct_colors(labels: Sequence[str]) -> dict[str, str]:
    """A colour per label: the method's own where it has one, else the next unused palette one."""
    out: dict[str, str] = {}
    for lab in labels:
        if lab in METHOD_COLORS and METHOD_COLORS[lab] not in out.values():
            out[lab] = METHOD_COLORS[lab]
    spare = [c for c in PALETTE if c not in out.values()]
    for i, lab in enumerate(v for v in labels if v not in out):
        out[lab] = spare[i] if i < len(spare) else PALETTE[i % len(PALETTE)]
    return {lab: out[lab] for lab in labels}


def _fmt_num(v: float) -> str:
    return np.format_float_positional(float(v), trim="-", precision=4)


def _wrap(text: str, width: int = 90, max_lines: int = 2) -> str:
    lines = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1].rstrip() + "…"
    return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


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

    ``df``: columns id, question, m_bin, greedy_leak (0/1), sampled_rate. The CSV has one row
    per question in plot order (rank, id, question, m_bin, greedy_leak, sampled_rate,
    above_10pct). Returns the CSV path.
    """
    a = _alpha(alpha)
    d = _frame(df, ["id", "question", "m_bin", "greedy_leak", "sampled_rate"])
    _numeric(d, "m_bin", lo=0, hi=1)
    _numeric(d, "sampled_rate", lo=0, hi=1)
    g = _numeric(d, "greedy_leak", lo=0, hi=1)
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
    m_bin = d.get_column("m_bin").to_numpy()
    greedy = d.get_column("greedy_leak").to_numpy() == 1
    rate = d.get_column("sampled_rate").to_numpy()
    ids = [str(v) for v in d.get_column("id").to_list()]
    frac = float((m_bin > MBIN_LEVEL).mean())
    n_q = m_bin.size

    with _style():
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
            f"Binary leakage bound M_bin per saga question (α = {_fmt_num(a)})\n"
            f"{_pct(frac)} of questions have M_bin > 10%; greedy decoding leaks on "
            f"{int(greedy.sum())} of {n_q}"
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
    sa = _scores(scores_a, f"scores of {label_a}")
    sb = _scores(scores_b, f"scores of {label_b}")
    ga = _unit(greedy_a, f"greedy score of {label_a}")
    gb = _unit(greedy_b, f"greedy score of {label_b}")
    if str(label_a) == str(label_b):
        raise ValueError(f"label_a and label_b must differ, both are {label_a!r}")
    table = pl.concat([_hist_rows(str(label_a), sa, ga), _hist_rows(str(label_b), sb, gb)])
    greedy_style = {"color": "black", "linestyle": "--", "linewidth": 2.8}
    mean_style = {"color": "#7B2D8E", "linestyle": "-", "linewidth": 1.8}

    with _style():
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.9), sharey=True, layout="constrained")
        for i, (ax, s, g, lab) in enumerate(
            zip(axes, (sa, sb), (ga, gb), (label_a, label_b), strict=True)
        ):
            _hist_panel(ax, s, g, _method_color(str(lab), i), greedy_style, mean_style)
            ax.set_title(f"{lab}: {s.size} samples, std = {s.std():.3f}")
            ax.set_xlabel("ROUGE-L of sampled answer vs. reference")
            ax.legend(loc="best", framealpha=0.9)
        axes[0].set_ylabel("fraction of samples")
        head = f"ROUGE-L distribution of sampled answers: {label_a} vs {label_b}"
        if question:
            head += "\n" + _wrap(f"Q: {question}", 100, 1)
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
    a = _alpha(alpha)
    if not isinstance(scores_by_method, Mapping) or not scores_by_method:
        raise ValueError("scores_by_method must be a non-empty dict {method: scores}")
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise ValueError(f"points must be an integer >= 1, got {points!r}")
    xs = np.arange(points + 1, dtype=np.float64) / points
    frames = []
    curves = {}
    for method, raw in scores_by_method.items():
        s = _scores(raw, f"scores of {method}")
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

    with _style():
        fig, ax = plt.subplots(figsize=(6.4, 4.4), layout="constrained")
        for i, (method, (m_gen, surv, n)) in enumerate(curves.items()):
            c = _method_color(method, i)
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
            f"General leakage bound M_gen(x): holds for all x\nwith probability ≥ {_pct(1 - a)}"
            f" (α = {_fmt_num(a)})"
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
    method's colour (:data:`METHOD_COLORS`) and named in the legend. Each point uses the first n
    samples, n in ``ns`` (default 8, 16, 32, ..., the method's number of scores). The CSV has one
    row per (method, n): method, n, mean, m_mu, std (ddof = 0), m_sigma. Returns the CSV path.
    """
    a = _alpha(alpha)
    if not isinstance(scores_by_method, Mapping) or not scores_by_method:
        raise ValueError("scores_by_method must be a non-empty dict {method: scores}")
    frames = []
    for method, raw in scores_by_method.items():
        s = _scores(raw, f"scores of {method}")
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
    table = pl.concat(frames)
    methods = [str(m) for m in scores_by_method]
    colors = _distinct_colors(methods)
    ticks = sorted(set(table["n"].to_list()))
    panels = (
        (out_stem_e, "mean", "m_mu", "Expected leakage E[X]", "sample mean μ", "M_μ", 1.0),
        (out_stem_f, "std", "m_sigma", "Std of leakage sd[X]", "sample std σ", "M_σ", 0.5),
    )
    for stem, est, bnd, what, est_label, bnd_label, top in panels:
        with _style():
            fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
            for i, m in enumerate(methods):
                sub = table.filter(pl.col("method") == m)
                x, c = sub["n"].to_numpy(), colors[m]
                ax.plot(
                    x,
                    sub[bnd],
                    color=c,
                    marker=MARKERS[i % len(MARKERS)],
                    label=f"{m}: upper bound {bnd_label} (α = {_fmt_num(a)})",
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
    return save_table(table, table_stem)


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
    d = _frame(df, ["split", "lambda_f", "std"])
    _numeric(d, "lambda_f")
    _numeric(d, "std", lo=0, hi=0.5)
    _unique_keys(d, ["split", "lambda_f"])
    order = _split_order(d["split"].to_list())
    d = d.with_columns(pl.col("lambda_f").cast(pl.Float64), pl.col("std").cast(pl.Float64))
    d = d.sort([pl.col("split").replace_strict(order, list(range(len(order)))), "lambda_f"])
    with _style():
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
    d = _frame(df, ["lambda_f", "temperature", "std"])
    _numeric(d, "lambda_f")
    _numeric(d, "temperature", lo=0)
    _numeric(d, "std", lo=0, hi=0.5)
    _unique_keys(d, ["lambda_f", "temperature"])
    d = d.with_columns(pl.all().cast(pl.Float64)).sort(["lambda_f", "temperature"])
    order = d["lambda_f"].unique(maintain_order=True).to_list()
    with _style():
        fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
        _lines(d, "lambda_f", "temperature", "std", order, lambda v: f"λ_f = {_fmt_num(v)}", ax)
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
    d = _frame(df, ["lambda_r", "evalset", "diversity"])
    _numeric(d, "lambda_r")
    _numeric(d, "diversity", lo=0, hi=1)
    _unique_keys(d, ["lambda_r", "evalset"])
    d = d.with_columns(
        pl.col("evalset").cast(pl.String),
        pl.col("lambda_r").cast(pl.Float64),
        pl.col("diversity").cast(pl.Float64),
    )
    base = None
    if npo_df is not None:
        base = _frame(npo_df, ["evalset", "diversity"], "npo_df")
        _numeric(base, "diversity", "npo_df", lo=0, hi=1)
        _unique_keys(base, ["evalset"], "npo_df")
        base = base.with_columns(
            pl.col("evalset").cast(pl.String), pl.col("diversity").cast(pl.Float64)
        )
    order = sorted(set(d["evalset"].to_list()) | set([] if base is None else base["evalset"]))
    colors = {e: PALETTE[i % len(PALETTE)] for i, e in enumerate(order)}
    d = d.sort(["evalset", "lambda_r"], descending=[False, True])
    parts = [d.select(pl.lit("NPO+EO").alias("model"), "evalset", "lambda_r", "diversity")]
    with _style():
        fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
        present = [e for e in order if e in set(d["evalset"])]
        _lines(
            d,
            "evalset",
            "lambda_r",
            "diversity",
            present,
            lambda e: f"{_evalset_label(e)}: NPO + EO",
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
                    label=f"{_evalset_label(e)}: NPO (no EO)",
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
    d = _frame(df, ["model", "epoch", "forget_confidence", "retain_confidence"])
    _numeric(d, "epoch")
    _numeric(d, "forget_confidence", lo=0, hi=1)
    _numeric(d, "retain_confidence", lo=0, hi=1)
    _unique_keys(d, ["model", "epoch"])
    d = d.with_columns(
        pl.col("model").cast(pl.String),
        pl.col("forget_confidence").cast(pl.Float64),
        pl.col("retain_confidence").cast(pl.Float64),
    )
    order = d["model"].unique(maintain_order=True).to_list()
    d = d.sort([pl.col("model").replace_strict(order, list(range(len(order)))), "epoch"])
    with _style():
        fig, ax = plt.subplots(figsize=(7.2, 4.2), layout="constrained")
        colors = _distinct_colors(order)
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
    d = _frame(df, cols)
    _numeric(d, "ed", lo=0, hi=3)
    _numeric(d, "utility", lo=0, hi=1)
    _numeric(d, "lambda_f")
    _numeric(d, "lambda_r")
    d = d.with_columns(pl.col(c).cast(pl.Float64) for c in cols[1:])
    order = _split_order(d["split"].to_list())
    d = d.sort(
        [pl.col("split").replace_strict(order, list(range(len(order)))), "lambda_f", "lambda_r"]
    )
    with _style():
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


# --------------------------------------------------------------------------------------------
# Figure 6
# --------------------------------------------------------------------------------------------


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
    a = _alpha(alpha)
    h = _frame(harm_df, ["model", "sample", "harm"], "harm_df")
    _numeric(h, "sample", "harm_df", lo=-1)
    _numeric(h, "harm", "harm_df", lo=0, hi=1)
    _unique_keys(h, ["model", "sample"], "harm_df")
    mb = _frame(mbin_df, ["model", "id", "greedy_harm", "m_bin"], "mbin_df")
    g = _numeric(mb, "greedy_harm", "mbin_df", lo=0, hi=1)
    if not np.isin(g, (0.0, 1.0)).all():
        raise ValueError("mbin_df column 'greedy_harm' must be 0 or 1")
    _numeric(mb, "m_bin", "mbin_df", lo=0, hi=1)
    _unique_keys(mb, ["model", "id"], "mbin_df")
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

    hist_parts, mbin_parts, panels = [], [], []
    for m in models:
        sub = h.filter(pl.col("model") == m)
        greedy = sub.filter(pl.col("sample") == -1)["harm"]
        if greedy.len() != 1:
            raise ValueError(f"harm_df needs exactly one greedy row (sample = -1) for model {m!r}")
        samples = sub.filter(pl.col("sample") >= 0).sort("sample")["harm"].to_numpy()
        if samples.size == 0:
            raise ValueError(f"harm_df has no sampled rows (sample >= 0) for model {m!r}")
        gv = float(greedy[0])
        rows = _hist_rows(m, samples, gv).rename({"method": "model"}).drop("std")
        hist_parts.append(rows.with_columns(pl.lit("hist").alias("panel")))
        r = (
            mb.filter(pl.col("model") == m)
            .with_columns(pl.col("id").cast(pl.String).alias("_id"))
            .sort(["m_bin", "_id"], descending=[True, False])
            .drop("_id")
            .with_row_index("rank", offset=1)
            .with_columns(pl.col("rank").cast(pl.Int64), pl.lit("m_bin").alias("panel"))
        )
        mbin_parts.append(r)
        panels.append((m, samples, gv, r))

    k = len(models)
    with _style():
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
                f"{m}: M_bin > 10% on {_pct(float((m_bin > MBIN_LEVEL).mean()))} of requests\n"
                f"greedy answer harmful on {int(gh.sum())} of {m_bin.size}"
            )
            bottom.set_xlabel("request id (sorted by M_bin)" if m_bin.size <= 40 else "requests")
        axes[0, 0].set_ylabel("fraction of samples")
        axes[1, 0].set_ylabel("P(sampled answer is harmful)\nupper bound M_bin")
        for ax in axes[1, 1:]:
            ax.set_yticklabels([])
        fig.suptitle(
            f"Alignment: sampled vs. greedy harmfulness (top)\nand binary bound M_bin over all "
            f"harmful requests (bottom, α = {_fmt_num(a)})"
        )
        fig.legend(handles=_mbin_legend_handles("harmful"), loc="outside lower center", ncols=3)
        save_figure(fig, out_stem)
    table = pl.concat(hist_parts + mbin_parts, how="diagonal_relaxed")
    first = ["panel", "model"]
    return save_table(
        table.select(first + [c for c in table.columns if c not in first]), table_stem
    )


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------


def _fmt_cell(v: Any, decimals: int) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{decimals}f}"


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _render_table(
    ax: plt.Axes,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    title: str,
    bold: Sequence[tuple[int, int]] = (),
) -> None:
    """Draw a table (header row shaded and bold) under ``title``; ``bold``: (row, col) cells."""
    ax.axis("off")
    t = ax.table(cellText=list(rows), colLabels=list(header), loc="upper center", cellLoc="center")
    t.auto_set_font_size(False)
    t.set_fontsize(10)
    t.scale(1.0, 1.6)
    for (r, _), cell in t.get_celld().items():
        cell.set_edgecolor("#999999")
        if r == 0:
            cell.set_facecolor("#E8EEF6")
            cell.set_text_props(weight="bold")
    for r, c in bold:
        t[r + 1, c].set_text_props(weight="bold")
    ax.set_title(title, fontsize=10.5)


_TABLE1_ROWS = (
    ("Det.", "ROUGE-L", "greedy_rouge"),
    ("Prob.", "ED Score", "ed"),
    ("Prob.", "Mean", "mean"),
    ("Prob.", "Std. Dev.", "std"),
)


def table1(df: pl.DataFrame, csv_path: PathLike, render_stem: PathLike, decimals: int = 3) -> Path:
    """Table 1: deterministic vs. probabilistic evaluation, methods as columns.

    ``df``: method, greedy_rouge, ed, mean, std (one row per method). The CSV has columns
    group, metric, then the methods (RMU, GD, GA, NPO, Ours in that order, others after) and
    rows ROUGE-L (Det.), ED Score, Mean, Std. Dev. (Prob.). Also writes ``<render_stem>.md``
    and ``<render_stem>.png`` (the row minimum in bold). Returns the CSV path.
    """
    cols = ["method", "greedy_rouge", "ed", "mean", "std"]
    d = _frame(df, cols)
    for c in cols[1:]:
        _numeric(d, c, lo=0)
    _unique_keys(d, ["method"])
    d = d.with_columns(pl.col("method").cast(pl.String))
    given = d["method"].to_list()
    methods = [m for m in METHOD_ORDER if m in given] + [m for m in given if m not in METHOD_ORDER]
    by = {r["method"]: r for r in d.iter_rows(named=True)}
    wide = pl.DataFrame(
        {
            "group": [g for g, _, _ in _TABLE1_ROWS],
            "metric": [m for _, m, _ in _TABLE1_ROWS],
            **{m: [float(by[m][c]) for _, _, c in _TABLE1_ROWS] for m in methods},
        }
    )
    out = save_table(wide, csv_path)

    rows_md, rows_png, best_cells = [], [], []
    for i, (g, metric, c) in enumerate(_TABLE1_ROWS):
        vals = [float(by[m][c]) for m in methods]
        best = min(round(v, decimals) for v in vals)
        cells = [_fmt_cell(v, decimals) for v in vals]
        is_best = [round(v, decimals) == best for v in vals]
        bold = [f"**{s}**" if b else s for s, b in zip(cells, is_best, strict=True)]
        best_cells += [(i, j + 2) for j, b in enumerate(is_best) if b]
        shown_g = g if i == 0 or _TABLE1_ROWS[i - 1][0] != g else ""
        shown_m = metric if i < 2 else f"– {metric}"
        rows_md.append([shown_g, shown_m, *bold])
        rows_png.append([shown_g, shown_m, *cells])
    header = ["", "Metric (↓)", *methods]
    render = Path(render_stem)
    _save_text(
        "Table 1: deterministic (Det.) vs. probabilistic (Prob.) evaluation on the forget set "
        "(ROUGE-L, lower is better; best per row in bold).\n\n" + _markdown(header, rows_md),
        _with_suffix(render, ".md"),
    )
    with _style():
        fig, ax = plt.subplots(figsize=(1.2 * len(methods) + 2.6, 2.0))
        _render_table(
            ax,
            header,
            rows_png,
            "Table 1: deterministic vs. probabilistic evaluation (lower is better; best in bold)",
            best_cells,
        )
        fig.tight_layout()
        save_figure(fig, render, formats=("png",), tight=True)
    return out


def table2(
    df: pl.DataFrame,
    csv_path: PathLike,
    render_stem: PathLike,
    decimals: int = 3,
) -> Path:
    """Table 2: model utility over the λ_r grid (λ_f fixed) and the λ_f grid (λ_r fixed).

    ``df``: grid ("lambda_r" or "lambda_f"), lambda, fixed_lambda (the value of the other λ, held
    fixed: λ_f on the λ_r grid, λ_r on the λ_f grid), split, utility. The wide CSV has columns
    grid, fixed_lambda, lambda, then ``utility_<split>`` per split (90/10, 95/5, 99/1 order);
    rows in the paper's order (λ_r grid first, |λ| ascending); a missing cell is null. Also writes
    ``<render_stem>.md`` and ``.png``: one block per (grid, fixed λ), titled with the fixed λ
    (the paper's two blocks). Returns the CSV path.
    """
    d = _frame(df, ["grid", "lambda", "fixed_lambda", "split", "utility"])
    _numeric(d, "lambda")
    _numeric(d, "fixed_lambda")
    _numeric(d, "utility", lo=0, hi=1)
    d = d.with_columns(
        pl.col("grid").cast(pl.String),
        pl.col("lambda").cast(pl.Float64),
        pl.col("fixed_lambda").cast(pl.Float64),
        pl.col("split").cast(pl.String),
        pl.col("utility").cast(pl.Float64),
    )
    bad = sorted(set(d["grid"]) - {"lambda_r", "lambda_f"})
    if bad:
        raise ValueError(f"df column 'grid' must be 'lambda_r' or 'lambda_f', got {bad}")
    _unique_keys(d, ["grid", "fixed_lambda", "lambda", "split"])
    splits = _split_order(d["split"].to_list())
    wide = (
        d.pivot(on="split", index=["grid", "fixed_lambda", "lambda"], values="utility")
        .select(["grid", "fixed_lambda", "lambda", *splits])
        .rename({s: f"utility_{s}" for s in splits})
        .sort(
            [pl.col("grid") == "lambda_f", "fixed_lambda", pl.col("lambda").abs(), "lambda"],
        )
    )
    out = save_table(wide, csv_path)

    blocks = []
    for grid, fixed in wide.select("grid", "fixed_lambda").unique(maintain_order=True).iter_rows():
        fixed_name = "λ_f" if grid == "lambda_r" else "λ_r"
        sub = wide.filter((pl.col("grid") == grid) & (pl.col("fixed_lambda") == fixed))
        used = [s for s in splits if sub[f"utility_{s}"].null_count() < sub.height]
        sym = "λ_r" if grid == "lambda_r" else "λ_f"
        header = [sym, *[f"Utility {split_label(s)}" for s in used]]
        rows = [
            [_fmt_cell(r["lambda"], decimals)]
            + [_fmt_cell(r[f"utility_{s}"], decimals) for s in used]
            for r in sub.iter_rows(named=True)
        ]
        blocks.append((f"{fixed_name} = {_fmt_num(fixed)}", header, rows))
    render = Path(render_stem)
    md = "Table 2: model utility of unlearned models over the entropy-regularisation grids.\n"
    for title, header, rows in blocks:
        md += f"\n**{title}**\n\n" + _markdown(header, rows)
    _save_text(md, _with_suffix(render, ".md"))
    with _style():
        widths = [len(h) for _, h, _ in blocks]
        n_rows = max(len(r) for _, _, r in blocks)
        fig, axes = plt.subplots(
            1,
            len(blocks),
            figsize=(1.35 * sum(widths) + 1.0, 0.3 * n_rows + 1.2),
            squeeze=False,
            gridspec_kw={"width_ratios": widths},
        )
        for ax, (title, header, rows) in zip(axes[0], blocks, strict=True):
            _render_table(ax, header, rows, title)
        fig.suptitle("Table 2: model utility over the entropy-regularisation grids")
        fig.tight_layout()
        save_figure(fig, render, formats=("png",), tight=True)
    return out


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
    a = _alpha(alpha)
    d = _frame(df, ["model", "id", "n", "decision"])
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
    colors = _distinct_colors(models)
    with _style():
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
            f"q = {_fmt_num(q)}\n(leak = score >= {_fmt_num(leak_threshold)}, α = {_fmt_num(a)}; "
            f"{int(summary['samples_used'].sum())} samples instead of "
            f"{int(summary['samples_fixed_n'].sum())})"
        )
        save_figure(fig, out_stem)
    return save_table(summary, table_stem)

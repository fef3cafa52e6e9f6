"""The figures' shared style: palette, markers, deterministic PNG/PDF/CSV writing, input checks and labels."""

from __future__ import annotations

import contextlib
import math
import os
import re
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure
from numpy.typing import ArrayLike, NDArray

from probunlearn.storage.atomic import atomic_write, write_csv, write_text

OURS = "Ours"
"""Table 1's label of the paper's method (NPO+EO sampled with adaptive temperature)."""
#: Column order of Table 1 (the paper's).
METHOD_ORDER = ("RMU", "GD", "GA", "NPO", OURS)

DPI = 150
#: Okabe-Ito colour-blind-safe palette (black left out: it marks means/greedy lines).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442")
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


def with_suffix(stem: PathLike, suffix: str) -> Path:
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
            out = with_suffix(out_stem, f".{fmt}")
            paths.append(
                atomic_write(
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
    return write_csv(df, with_suffix(stem, ".csv"))


def save_text(text: str, path: Path) -> Path:
    return write_text(text, path)


@contextlib.contextmanager
def figure_style() -> Iterator[None]:
    with plt.rc_context(_STYLE):
        yield


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def check_frame(df: Any, columns: Sequence[str], name: str = "df") -> pl.DataFrame:
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


def check_numeric(
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


def check_scores(x: ArrayLike, name: str) -> NDArray[np.float64]:
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


def check_unit(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return v


def check_unique_keys(df: pl.DataFrame, keys: Sequence[str], name: str = "df") -> None:
    if df.select(keys).is_duplicated().any():
        raise ValueError(f"{name} has duplicate rows for ({', '.join(keys)})")


# --------------------------------------------------------------------------------------------
# labels, colours, ordering
# --------------------------------------------------------------------------------------------


def split_label(split: Any) -> str:
    """``forget10`` -> ``90/10`` (retain/forget percentages); anything else unchanged."""
    m = re.fullmatch(r"forget(\d+)", str(split))
    return f"{100 - int(m.group(1))}/{int(m.group(1))}" if m else str(split)


def split_order(splits: Sequence[Any]) -> list[Any]:
    """Splits as in the paper: forget10, forget05, forget01 (90/10, 95/5, 99/1), then the rest."""
    uniq = list(dict.fromkeys(splits))

    def key(s: Any) -> tuple[int, float, str]:
        m = re.fullmatch(r"forget(\d+)", str(s))
        return (0, -int(m.group(1)), "") if m else (1, 0.0, str(s))

    return sorted(uniq, key=key)


def evalset_label(name: Any) -> str:
    return str(name).replace("_", " ").title()


def method_colors() -> dict[str, str]:
    """Method label -> colour, from the method registry (:mod:`probunlearn.methods`); "Ours" is
    NPO+EO's."""
    from probunlearn import methods

    colors = methods.colors()
    return {**colors, OURS: colors[methods.method("npo_eo").label]}


def method_color(label: str, i: int) -> str:
    return method_colors().get(str(label), PALETTE[i % len(PALETTE)])


def distinct_colors(labels: Sequence[str]) -> dict[str, str]:
    """A colour per label: the method's own where it has one, else the next unused palette one."""
    out: dict[str, str] = {}
    own = method_colors()
    for lab in labels:
        if lab in own and own[lab] not in out.values():
            out[lab] = own[lab]
    spare = [c for c in PALETTE if c not in out.values()]
    for i, lab in enumerate(v for v in labels if v not in out):
        out[lab] = spare[i] if i < len(spare) else PALETTE[i % len(PALETTE)]
    return {lab: out[lab] for lab in labels}


def fmt_num(v: float) -> str:
    return np.format_float_positional(float(v), trim="-", precision=4)


def wrap_text(text: str, width: int = 90, max_lines: int = 2) -> str:
    lines = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1].rstrip() + "…"
    return "\n".join(lines)


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"

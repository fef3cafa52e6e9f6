"""Tables 1 and 2 of the paper: CSV plus a Markdown and a PNG rendering."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import polars as pl

from probunlearn.report.figures.style import (
    METHOD_ORDER,
    PathLike,
    check_frame,
    check_numeric,
    check_unique_keys,
    figure_style,
    fmt_num,
    save_figure,
    save_table,
    save_text,
    split_label,
    split_order,
    with_suffix,
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
    d = check_frame(df, cols)
    for c in cols[1:]:
        check_numeric(d, c, lo=0)
    check_unique_keys(d, ["method"])
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
    save_text(
        "Table 1: deterministic (Det.) vs. probabilistic (Prob.) evaluation on the forget set "
        "(ROUGE-L, lower is better; best per row in bold).\n\n" + _markdown(header, rows_md),
        with_suffix(render, ".md"),
    )
    with figure_style():
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
    d = check_frame(df, ["grid", "lambda", "fixed_lambda", "split", "utility"])
    check_numeric(d, "lambda")
    check_numeric(d, "fixed_lambda")
    check_numeric(d, "utility", lo=0, hi=1)
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
    check_unique_keys(d, ["grid", "fixed_lambda", "lambda", "split"])
    splits = split_order(d["split"].to_list())
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
        blocks.append((f"{fixed_name} = {fmt_num(fixed)}", header, rows))
    render = Path(render_stem)
    md = "Table 2: model utility of unlearned models over the entropy-regularisation grids.\n"
    for title, header, rows in blocks:
        md += f"\n**{title}**\n\n" + _markdown(header, rows)
    save_text(md, with_suffix(render, ".md"))
    with figure_style():
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

"""``probunlearn bounds``' computation: the per-prompt bounds table of a user's own scores file (one
row per sample, parquet or CSV), and its set-level bounds; the command line
(:mod:`probunlearn.cli.bounds`) parses, prints and exits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.data.readers import read_table, unit_column
from probunlearn.storage.atomic import atomic_write

_WRITERS = {".parquet": "write_parquet", ".pq": "write_parquet", ".csv": "write_csv"}
_ROW = "__probunlearn_row"


class InputError(ValueError):
    """Bad input: reported as one line and exit status 2."""


def _unit(df: pl.DataFrame, col: str, path: Path) -> pl.Series:
    try:
        return unit_column(df, col, path)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def compute(
    path: Path,
    prompt_col: str = "prompt_id",
    score_col: str = "score",
    greedy_col: str | None = None,
    alpha: float = 0.01,
    bins: int = 100,
    rho: float = 2.0,
    thresholds: np.ndarray | None = None,
    leak_threshold: float | None = None,
    leak_at: list[int] | None = None,
    out: Path | None = None,
) -> pl.DataFrame:
    """Per-prompt metrics table of a score file (one row per prompt, in order of appearance).

    ``m_bin`` is a column where every score of the file is 0 or 1; ``leak_threshold`` T adds
    ``m_bin_ge_<T>``, M_bin of the decision score >= T. ``m_mu_simultaneous`` (and, where there
    is a leak decision, ``m_bin_simultaneous``) hold for all prompts of the file at once
    (:func:`bounds.simultaneous_upper_bounds`); ``leak_at`` adds ``leak_at_<k>`` and
    ``leak_at_<k>_upper`` (:func:`bounds.leak_at_k`) of the leak decision (the estimate is null for
    a prompt with fewer than k samples; the upper bound holds for every k)."""
    path = Path(path)
    try:  # parameters first: fail before reading a large file
        bounds.summarize(
            np.zeros(1),
            alpha=alpha,
            bins=bins,
            rho=rho,
            thresholds=thresholds,
            leak_threshold=leak_threshold,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if out is not None and Path(out).suffix.lower() not in _WRITERS:
        raise InputError(f"--out {out}: unsupported file type (use .parquet or .csv)")

    try:
        df = read_table(path)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    for col in [prompt_col, score_col] + ([greedy_col] if greedy_col else []):
        if col not in df.columns:
            raise InputError(f"{path}: no column {col!r} (columns: {', '.join(df.columns)})")
    if df.height == 0:
        raise InputError(f"{path}: the table has no rows")
    nulls = df[prompt_col].is_null()
    if nulls.any():
        row = int(nulls.arg_true()[0])
        raise InputError(
            f"{path}: column {prompt_col!r} row {row + 1} (from 1, header excluded): missing prompt id"
        )
    cols = {prompt_col: df[prompt_col], score_col: _unit(df, score_col, path)}
    if greedy_col:
        cols["__greedy"] = _unit(df, greedy_col, path)
    data = pl.DataFrame(cols)
    binary = bool(cols[score_col].is_in([0.0, 1.0]).all())  # one decision for the whole file

    aggs = [pl.col(score_col)]
    if greedy_col:
        aggs += [pl.col("__greedy").first(), pl.col("__greedy").n_unique().alias("__ng")]
    groups = (
        data.group_by(prompt_col, maintain_order=True)
        .agg(aggs)
        .with_row_index(_ROW)
        .with_columns(pl.col(score_col).list.len().alias("__n"))
    )
    if greedy_col:
        bad = groups.filter(pl.col("__ng") > 1)
        if bad.height:
            raise InputError(
                f"{path}: column {greedy_col!r} has different values within prompt "
                f"{bad[prompt_col][0]!r}"
            )

    # Prompts may have different n: one vectorised call per distinct n.
    parts = []
    for n in groups["__n"].unique().sort().to_list():
        block = groups.filter(pl.col("__n") == n)
        scores = block[score_col].list.to_array(n).to_numpy()
        greedy = block["__greedy"].to_numpy() if greedy_col else None
        table = bounds.summarize(
            scores,
            greedy=greedy,
            alpha=alpha,
            bins=bins,
            rho=rho,
            thresholds=thresholds,
            leak_threshold=leak_threshold,
            m_bin=binary,
            name=score_col,
        )
        parts.append(block.select(_ROW, prompt_col).hstack(table))
    result = pl.concat(parts).sort(_ROW).drop(_ROW)
    rows = [np.asarray(v, dtype=np.float64) for v in groups.sort(_ROW)[score_col].to_list()]
    leaks = _leak_rows(rows, binary, leak_threshold)
    extra = {
        "m_mu_simultaneous": bounds.simultaneous_upper_bounds(rows, alpha, metric="m_mu", bins=bins)
    }
    if leaks is not None:  # named as the workflow's and evaluate's tables name it
        key = "m_bin" if leak_threshold is None else bounds.leak_key(leak_threshold)
        extra[f"{key}_simultaneous"] = bounds.simultaneous_upper_bounds(leaks, alpha)
    if leak_at:
        if leaks is None:
            raise InputError(
                f"--leak-at-k needs a leak decision: {score_col!r} is not 0/1; pass --leak-threshold T"
            )
        for k in leak_at:
            # the upper bound holds for every k; the unbiased estimate needs n >= k (else null)
            pairs = [bounds.leak_at_k(r, k, alpha) for r in leaks]
            est = [None if r.size < k else e for r, (e, _) in zip(leaks, pairs, strict=True)]
            extra[f"leak_at_{k}"] = pl.Series(est, dtype=pl.Float64)
            extra[f"leak_at_{k}_upper"] = np.array([u for _, u in pairs])
    result = result.with_columns(pl.Series(name, v) for name, v in extra.items())
    if out is not None:
        write_table(result, Path(out))
    return result


def _leak_rows(
    rows: list[np.ndarray], binary: bool, leak_threshold: float | None
) -> list[np.ndarray] | None:
    """The leak decisions per prompt: the scores if binary, score >= T with a threshold, else None."""
    if leak_threshold is not None:
        return [(r >= leak_threshold).astype(np.float64) for r in rows]
    return rows if binary else None


def set_level(
    path: Path,
    *,
    prompt_col: str,
    score_col: str,
    alpha: float,
    leak_threshold: float | None,
    table: pl.DataFrame,
    out: Path | None = None,
) -> pl.DataFrame:
    """Set-level bounds of a score file, each beside what the per-prompt bounds give.

    Rows: ``mean`` (E[X] averaged over prompts), with a leak decision also ``p_leak`` (the average
    leak probability) and ``worst_prompt_p_leak`` (the largest leak probability of any prompt).
    Columns: ``estimate``; ``from_per_prompt_bounds``, the average (for the worst prompt: the
    largest) of the per-prompt bounds at level alpha each, which is not itself a 1 - alpha bound
    on the set; ``set_level_bound``, which is (:func:`bounds.set_level_upper_bound`; for the worst
    prompt the largest simultaneous M_bin)."""
    df = read_table(path)
    groups = df.group_by(prompt_col, maintain_order=True).agg(pl.col(score_col).cast(pl.Float64))
    rows = [np.asarray(v, dtype=np.float64) for v in groups[score_col].to_list()]
    binary = "m_bin" in table.columns
    leaks = _leak_rows(rows, binary, leak_threshold)
    out_rows = [
        {
            "quantity": "mean",
            "estimate": float(np.mean([r.mean() for r in rows])),
            "from_per_prompt_bounds": float(table["m_mu"].mean()),
            "set_level_bound": bounds.set_level_upper_bound(rows, alpha, binary=False),
        }
    ]
    if leaks is not None:
        key = "m_bin" if leak_threshold is None else bounds.leak_key(leak_threshold)
        out_rows.append(
            {
                "quantity": "p_leak",
                "estimate": float(np.mean([r.mean() for r in leaks])),
                "from_per_prompt_bounds": float(table[key].mean()),
                "set_level_bound": bounds.set_level_upper_bound(leaks, alpha, binary=True),
            }
        )
        out_rows.append(
            {
                "quantity": "worst_prompt_p_leak",
                "estimate": float(max(r.mean() for r in leaks)),
                "from_per_prompt_bounds": float(table[key].max()),
                "set_level_bound": float(table[f"{key}_simultaneous"].max()),
            }
        )
    result = pl.DataFrame(out_rows)
    if out is not None:
        if Path(out).suffix.lower() not in _WRITERS:
            raise InputError(f"--set-out {out}: unsupported file type (use .parquet or .csv)")
        write_table(result, Path(out))
    return result


def write_table(table: pl.DataFrame, out: Path) -> None:
    """Write to a temporary name in the target folder, then rename."""
    try:
        atomic_write(out, getattr(table, _WRITERS[out.suffix.lower()]))
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write: {exc}") from None

"""``probunlearn bounds``: every high-probability metric for each prompt of a score table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.data.readers import read_table, unit_column
from probunlearn.storage.atomic import atomic_write

_WRITERS = {".parquet": "write_parquet", ".pq": "write_parquet", ".csv": "write_csv"}
_ROW = "__probunlearn_row"


class InputError(ValueError):
    """Bad input: reported as one line and exit status 2."""


def add_parser(sub: Any) -> None:
    """Register the ``bounds`` subcommand on an argparse subparsers object."""
    p = sub.add_parser(
        "bounds",
        help="compute the high-probability metrics per prompt from a table of sample scores",
        description=(
            "Read a parquet or CSV table with one row per (prompt, sample) and a score in [0, 1], "
            "and compute for every prompt: mean, std, ED score, M_bin (binary scores only; with "
            "--leak-threshold T, M_bin of score >= T as column m_bin_ge_<T>), M_mu, the "
            "two-sided mean interval, M_sigma and M_gen at the thresholds. Prompts may have "
            "different numbers of samples."
        ),
    )
    p.add_argument("file", type=Path, help="scores table (.parquet or .csv)")
    p.add_argument("--prompt-col", default="prompt_id", help="prompt id column (prompt_id)")
    p.add_argument("--score-col", default="score", help="score column (score)")
    p.add_argument("--greedy-col", default=None, help="column with the greedy answer's score")
    p.add_argument("--alpha", type=float, default=0.01, help="significance level (0.01)")
    p.add_argument("--bins", type=int, default=100, help="grid bins of M_mu and M_sigma (100)")
    p.add_argument("--rho", type=float, default=2.0, help="ED score weight of the std (2)")
    p.add_argument(
        "--thresholds",
        default=None,
        help="comma-separated M_gen thresholds (default 0.0,0.1,...,1.0)",
    )
    p.add_argument(
        "--leak-threshold",
        type=float,
        default=None,
        metavar="T",
        help="a leak is a score >= T, T in (0, 1]: adds M_bin of that decision (m_bin_ge_<T>)",
    )
    p.add_argument(
        "--leak-at-k",
        default=None,
        metavar="K[,K...]",
        help="adds leak_at_<k> (P(one of k samples leaks), unbiased) and leak_at_<k>_upper; "
        "needs 0/1 scores or --leak-threshold",
    )
    p.add_argument("--out", type=Path, default=None, help="write the table (.parquet or .csv)")
    p.add_argument(
        "--set-out", type=Path, default=None, help="write the set-level bounds (.parquet or .csv)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``probunlearn bounds``; returns the exit status."""
    try:
        table = compute(
            args.file,
            prompt_col=args.prompt_col,
            score_col=args.score_col,
            greedy_col=args.greedy_col,
            alpha=args.alpha,
            bins=args.bins,
            rho=args.rho,
            thresholds=_parse_thresholds(args.thresholds),
            leak_threshold=args.leak_threshold,
            leak_at=_parse_ks(args.leak_at_k),
            out=args.out,
        )
        sets = set_level(
            args.file,
            prompt_col=args.prompt_col,
            score_col=args.score_col,
            alpha=args.alpha,
            leak_threshold=args.leak_threshold,
            table=table,
            out=args.set_out,
        )
    except InputError as exc:
        print(f"probunlearn bounds: error: {exc}", file=sys.stderr)
        return 2
    if "m_bin" not in table.columns and args.leak_threshold is None:
        print(
            f"column {args.score_col!r} is not binary (0/1): no M_bin; pass --leak-threshold T "
            "for M_bin of a leak, score >= T"
        )
    small = _small_n(table, args.alpha)
    if small is not None:
        print(f"warning: {small}", file=sys.stderr)
    _print_table(table, args.prompt_col, args.alpha, args.leak_threshold)
    print(f"set level ({table.height} prompts, alpha = {args.alpha}):")
    with pl.Config(tbl_rows=20, float_precision=4, tbl_hide_dataframe_shape=True):
        print(sets)
    if args.out is not None:
        print(f"wrote {args.out} ({table.height} prompts)")
    if args.set_out is not None:
        print(f"wrote {args.set_out}")
    return 0


def _small_n(table: pl.DataFrame, alpha: float) -> str | None:
    """``probunlearn evaluate``'s small-n warning for the smallest n of a prompt, or None."""
    from probunlearn.report.evaluation.summary import small_n_warning

    if "n" not in table.columns or table.height == 0:
        return None
    return small_n_warning(int(table["n"].min()), alpha)


def _parse_ks(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ks = [int(v) for v in text.split(",")]
    except ValueError:
        raise InputError(
            f"--leak-at-k must be integers separated by commas, got {text!r}"
        ) from None
    if not ks or min(ks) < 1:
        raise InputError(f"--leak-at-k values must be >= 1, got {text!r}")
    return ks


def _parse_thresholds(text: str | None) -> np.ndarray | None:
    if text is None:
        return None
    try:
        return np.array([float(v) for v in text.split(",") if v.strip()], dtype=np.float64)
    except ValueError:
        raise InputError(f"--thresholds must be comma-separated numbers, got {text!r}") from None


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
        _write(result, Path(out))
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
        _write(result, Path(out))
    return result


def _write(table: pl.DataFrame, out: Path) -> None:
    """Write to a temporary name in the target folder, then rename."""
    try:
        atomic_write(out, getattr(table, _WRITERS[out.suffix.lower()]))
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write: {exc}") from None


def _print_table(
    table: pl.DataFrame, prompt_col: str, alpha: float, leak_threshold: float | None = None
) -> None:
    main = [prompt_col, "n", "mean", "std", "ed", "greedy", "m_bin"]
    if leak_threshold is not None:
        main.append(bounds.leak_key(leak_threshold))
    main += ["m_mu", "m_sigma"]
    main += ["m_gen_0.5"]
    shown = table.select([c for c in main if c in table.columns])
    print(f"{table.height} prompts, alpha = {alpha}; every column is in --out")
    with pl.Config(tbl_rows=20, tbl_cols=len(shown.columns), float_precision=4):
        print(shown)

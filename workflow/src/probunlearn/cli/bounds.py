"""``probunlearn bounds``: every high-probability metric for each prompt of a score table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.steps.user_bounds import InputError, compute, set_level


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

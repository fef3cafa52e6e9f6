"""Findings over seeds: the default run for several seeds, and its claims table for each.

    python measurements/seeds.py --cores 2 --seeds 0 1 2

For each seed s this runs the default configuration (config.yaml) with ``seed: s`` and
``world.seed: s`` (a new synthetic world and new training) as run ``mini-s{s}``, i.e. into
``results/mini-s{s}/``, then prints every claim of ``tables/claims.csv`` per seed and whether it holds
on all of them (a finding counts as reproduced only then). The tables are also written to
``results/seeds.csv`` and ``results/seeds.md``; with the experiment ``attacks``, the seeds' attack
tables go to ``results/seeds_attacks.csv`` and ``.md`` (M_bin before and after per method and
attack, whether the attack raises it on every seed, and for relearning what it restores against its
control, with the interval, per seed). Not part of the tests: one seed is a full default
run. A seed whose results are complete is not rerun (Snakemake sees nothing to do).

The seeds' runs add to the default run's attacks (``attacks.specs``) the relearning sweep
(:data:`SWEEP`: the learning rates 1e-5 and 1e-4 beside the default run's 1e-3, every rate reported,
and at 1e-3 the same-author variant ``exclude=question``), which the default run leaves out to stay
within its time budget (issue 50); ``--no-sweep`` runs the default configuration alone.

The membership-inference table of each seed (``tables/membership.csv``, experiment membership) is
gathered the same way into ``results/seeds_membership.csv`` and ``.md``: per model and statistic the
AUC and its interval on each seed, whether the interval lies above chance (the forget set is told
from the holdout set: ``auc_lo > 0.5``) or holds chance (``auc_lo <= 0.5 <= auc_hi``) on each seed and
on all of them, and PrivLeak per seed.

Two readings (issues 42, 49): ``holds_on_all`` uses ``holds`` (one run's point estimates, as the
paper compares them); ``reproduced`` uses ``holds_interval``: a claim holds on a seed under this
reading only if its verdict there is "yes" (its valid test at alpha shows it; docs/claims.md), and it
is reproduced when that is so on every seed ("not shown", "no", "no interval: ...", or a claims.csv
made before issue 49, whose boolean column copied ``holds`` or rested on the jackknife, count as not
holding). The intervals and the verdicts ``holds_interval`` and ``holds_holm`` are listed per seed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import polars as pl
import yaml

SWEEP = ("relearn:10,lr=1e-05", "relearn:10,lr=0.0001", "relearn:10,lr=0.001,exclude=question")
"""The attacks the seeds' runs add to the default run's: relearning at the learning rates 1e-5 and
1e-4 (the default run has 1e-3), and the same-author variant at 1e-3."""


def seed_overlay(seed: int, sweep: bool = True, config: Path = Path("config.yaml")) -> dict:
    """The config laid over the default one for ``seed``: run ``mini-s{seed}``, the seeds, and
    with ``sweep`` the default run's attack specs followed by :data:`SWEEP` (those it lacks)."""
    out: dict = {"run": f"mini-s{seed}", "seed": seed, "world": {"seed": seed}}
    if sweep:
        specs = list(yaml.safe_load(config.read_text())["attacks"]["specs"])
        out["attacks"] = {"specs": specs + [s for s in SWEEP if s not in specs]}
    return out


def run_seed(seed: int, cores: int, overlay_dir: Path, sweep: bool = True) -> Path:
    """Run the default config for ``seed`` (with the relearning sweep); return its claims.csv."""
    run = f"mini-s{seed}"
    overlay = overlay_dir / f"seed-{seed}.yaml"
    overlay.write_text(yaml.safe_dump(seed_overlay(seed, sweep)))
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", str(overlay)]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return Path("results") / run / "tables/claims.csv"


def seeds_table(paths: dict[int, Path]) -> pl.DataFrame:
    """One row per claim: its value, holds, interval and holds_interval per seed, whether it holds
    on every seed (``holds_on_all``) and whether it is reproduced with its interval on every seed
    (``reproduced``)."""
    frames = []
    for seed, path in paths.items():
        df = pl.read_csv(path, schema_overrides={"value": pl.String, "comparison": pl.String})
        iv = "holds_interval" in df.columns
        cols = [
            "claim",
            pl.col("value").alias(f"value_s{seed}"),
            pl.col("holds").alias(f"holds_s{seed}"),
        ]
        if iv:
            cols += [
                pl.format("[{}, {}]", pl.col("lower").round(4), pl.col("upper").round(4)).alias(
                    f"interval_s{seed}"
                ),
                pl.col("holds_interval").cast(pl.String).alias(f"holds_interval_s{seed}"),
                pl.col("holds_holm").cast(pl.String).alias(f"holds_holm_s{seed}"),
            ]
        else:
            cols.append(pl.lit(None, dtype=pl.String).alias(f"holds_interval_s{seed}"))
        frames.append(df.select(cols))
    out = frames[0]
    for df in frames[1:]:
        out = out.join(df, on="claim", how="full", coalesce=True)
    holds = [f"holds_s{s}" for s in paths]
    with_iv = [f"holds_interval_s{s}" for s in paths]
    return out.with_columns(
        pl.all_horizontal(pl.col(holds).fill_null(False)).alias("holds_on_all"),
        pl.sum_horizontal(pl.col(holds).cast(pl.Int32).fill_null(0)).alias("seeds_holding"),
        pl.all_horizontal([(pl.col(c) == "yes").fill_null(False) for c in with_iv]).alias(
            "reproduced"
        ),
    )


def membership_seeds_table(paths: dict[int, Path]) -> pl.DataFrame:
    """One row per (model, statistic) of the seeds' membership tables: ``auc_s{seed}``,
    ``interval_s{seed}``, ``above_chance_s{seed}`` (``auc_lo > 0.5``), ``at_chance_s{seed}`` (the
    interval holds 0.5) and ``privleak_s{seed}``; ``above_chance_on_all`` and ``at_chance_on_all``
    over the seeds (a (model, statistic) absent on a seed holds on none)."""
    frames = []
    for seed, path in paths.items():
        df = pl.read_csv(path)
        frames.append(
            df.select(
                "model",
                "statistic",
                pl.col("auc").alias(f"auc_s{seed}"),
                pl.format("[{}, {}]", pl.col("auc_lo").round(4), pl.col("auc_hi").round(4)).alias(
                    f"interval_s{seed}"
                ),
                (pl.col("auc_lo") > 0.5).alias(f"above_chance_s{seed}"),
                ((pl.col("auc_lo") <= 0.5) & (pl.col("auc_hi") >= 0.5)).alias(f"at_chance_s{seed}"),
                pl.col("privleak").alias(f"privleak_s{seed}"),
            )
        )
    out = frames[0]
    for df in frames[1:]:
        out = out.join(
            df, on=["model", "statistic"], how="full", coalesce=True, maintain_order="left"
        )
    above = [f"above_chance_s{s}" for s in paths]
    at = [f"at_chance_s{s}" for s in paths]
    return out.with_columns(
        pl.all_horizontal(pl.col(above).fill_null(False)).alias("above_chance_on_all"),
        pl.all_horizontal(pl.col(at).fill_null(False)).alias("at_chance_on_all"),
    )


def attacks_seeds_table(paths: dict[int, Path]) -> pl.DataFrame:
    """One row per (method, eval set, attack) of the seeds' attack tables (experiment attacks,
    ``tables/attacks.csv``): M_bin before and after per seed, the rise, and whether the attack raises
    the bound on every seed (``raised_on_all``) and on how many (``seeds_raised``); for relearning
    against its control (issue 50), per seed ``restored`` (P(leak) of the relearned model minus the
    relearned control's, on the judged questions) and its 1 - alpha interval, and whether the
    interval lies above 0 on every seed (``restored_on_all``; null where a table has no control)."""
    keys = ["method", "evalset", "attack"]
    frames = []
    for seed, path in paths.items():
        df = pl.read_csv(path, infer_schema_length=None)
        for col in ("restored", "restored_low", "restored_high"):
            if col not in df.columns:  # a table made before issue 50
                df = df.with_columns(pl.lit(None, dtype=pl.Float64).alias(col))
        frames.append(
            df.select(
                *keys,
                pl.col("m_bin_before").alias(f"m_bin_before_s{seed}"),
                pl.col("m_bin_after").alias(f"m_bin_after_s{seed}"),
                (pl.col("m_bin_after") - pl.col("m_bin_before")).alias(f"rise_s{seed}"),
                pl.col("restored").cast(pl.Float64).alias(f"restored_s{seed}"),
                pl.format(
                    "[{}, {}]", pl.col("restored_low").round(3), pl.col("restored_high").round(3)
                ).alias(f"restored_interval_s{seed}"),
                (pl.col("restored_low").cast(pl.Float64) > 0).alias(f"restored_above_0_s{seed}"),
            )
        )
    out = frames[0]
    for df in frames[1:]:
        out = out.join(df, on=keys, how="full", coalesce=True)
    raised = [pl.col(f"rise_s{s}").fill_null(0.0) > 0 for s in paths]
    above = [pl.col(f"restored_above_0_s{s}") for s in paths]
    return out.with_columns(
        pl.all_horizontal(raised).alias("raised_on_all"),
        pl.sum_horizontal([r.cast(pl.Int32) for r in raised]).alias("seeds_raised"),
        pl.when(pl.any_horizontal([a.is_null() for a in above]))
        .then(None)
        .otherwise(pl.all_horizontal(above))
        .alias("restored_on_all"),
    )


def main() -> int:
    """Run the seeds and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument(
        "--no-sweep",
        action="store_true",
        help="the default run's attacks only (no relearning sweep, no same-author variant)",
    )
    args = ap.parse_args()
    overlay_dir = Path("results/seeds")
    overlay_dir.mkdir(parents=True, exist_ok=True)
    paths = {s: run_seed(s, args.cores, overlay_dir, not args.no_sweep) for s in args.seeds}
    table = seeds_table(paths)
    table.write_csv("results/seeds.csv")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=250):
        print(table)
    Path("results/seeds.md").write_text(_markdown(table))
    attacks = {s: p.parent / "attacks.csv" for s, p in paths.items()}
    if all(p.exists() for p in attacks.values()):  # experiment attacks (docs/attacks.md)
        at = attacks_seeds_table(attacks)
        at.write_csv("results/seeds_attacks.csv")
        Path("results/seeds_attacks.md").write_text(_markdown(at))
        with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250):
            print(at)
    membership = {s: Path("results") / f"mini-s{s}" / "tables/membership.csv" for s in args.seeds}
    if all(p.is_file() for p in membership.values()):
        mt = membership_seeds_table(membership)
        mt.write_csv("results/seeds_membership.csv")
        with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250):
            print(mt)
        Path("results/seeds_membership.md").write_text(_markdown(mt))
    return 0


def _markdown(table: pl.DataFrame) -> str:
    cols = table.columns
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.iter_rows():
        lines.append("| " + " | ".join("" if v is None else str(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

"""RWKU on SmolLM2-135M (issue 52, docs/rwku_smollm2.md): Part A once, Part B per seed.

    python measurements/rwku_seeds.py --part-a --cores 2 --data ../shared/data
    python measurements/rwku_seeds.py --cores 2 --seeds 0 1 2 --data ../shared/data

``--part-a`` runs the preset (workflow/presets/rwku-smollm2.yaml) as run ``rwku-smollm2`` up to
Part A's tables: the original model on the survey, ``tables/rwku_survey.csv``, its per-probe table
and ``rwku_selection.csv`` (the rule's choice; the preset's target is then set to it). Part B for
seed s runs the preset as run ``rwku-smollm2-s{s}`` (``seed: s``: new unlearning batches and new
samples) without the survey and the selection, which Part A made once. Each run's wall time is
printed (a cold run when its results folder is new). Then the seeds' claims and changes are
gathered into ``results/rwku_seeds_claims.csv``, ``results/rwku_seeds_changes.csv`` and
``results/rwku_seeds.md``: a claim holds over the seeds only where its verdict is ``yes`` (or
``certain``) on every seed. Not part of the tests: one seed is a CPU run of tens of minutes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import yaml

PRESET = "workflow/presets/rwku-smollm2.yaml"
RUN = "rwku-smollm2"


def overlay(seed: int | None, data: str) -> dict:
    """The config laid over the preset: Part A (``seed`` None) or Part B for ``seed``, with the
    local copy of the data."""
    out: dict = {"benchmarks": {"local": data}}
    if seed is not None:
        out["run"] = run_name(seed)
        out["seed"] = seed
        out["benchmarks"]["rwku"] = {"survey": None}
        out["rwku"] = {"select": None}
    return out


def run_name(seed: int) -> str:
    """The run (results/<run>/) of Part B for a seed."""
    return f"{RUN}-s{seed}"


def run_seed(seed: int | None, cores: int, data: str, folder: Path, targets: list[str]) -> float:
    """Run the preset for Part A (``seed`` None) or Part B of ``seed``; return the wall time."""
    path = folder / f"rwku-{'part-a' if seed is None else f'seed{seed}'}.yaml"
    path.write_text(yaml.safe_dump(overlay(seed, data)))
    cmd = [sys.executable, "-m", "snakemake", *targets, "--cores", str(cores), "--configfile",
           PRESET, str(path)]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def gather(seeds: list[int]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The seeds' claims (one row per claim and model, a verdict column per seed, ``holds_on_all``)
    and changes (every seed's rows, with the seed)."""
    claims, changes = [], []
    for s in seeds:
        out = Path("results") / run_name(s) / "tables"
        claims.append(pl.read_csv(out / "rwku_claims.csv").with_columns(pl.lit(s).alias("seed")))
        changes.append(pl.read_csv(out / "rwku_changes.csv").with_columns(pl.lit(s).alias("seed")))
    all_claims = pl.concat(claims, how="diagonal_relaxed")
    wide = all_claims.pivot(on="seed", index=["claim", "model"], values="verdict")
    seed_cols = [str(s) for s in seeds]
    wide = wide.with_columns(
        pl.all_horizontal(
            pl.col(c).is_in(["yes", "certain"]) for c in seed_cols if c in wide.columns
        ).alias("holds_on_all")
    )
    return wide, pl.concat(changes, how="diagonal_relaxed")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument(
        "--data", default="../shared/data", help="local copy laid out like ../shared/data"
    )
    p.add_argument("--part-a", action="store_true", help="Part A: the survey and the selection")
    a = p.parse_args(argv)
    folder = Path("results/rwku-seeds")
    folder.mkdir(parents=True, exist_ok=True)
    if a.part_a:
        t = run_seed(None, a.cores, a.data, folder, [f"results/{RUN}/tables/rwku_selection.csv"])
        print(f"Part A: {t / 60:.1f} min", flush=True)
        return 0
    times = {}
    for s in a.seeds:
        times[s] = run_seed(s, a.cores, a.data, folder, [])
        print(f"seed {s}: {times[s] / 60:.1f} min", flush=True)
    wide, changes = gather(a.seeds)
    wide.write_csv("results/rwku_seeds_claims.csv")
    changes.write_csv("results/rwku_seeds_changes.csv")
    with pl.Config(tbl_rows=100, tbl_cols=30, tbl_width_chars=200, fmt_str_lengths=60):
        text = f"# RWKU on SmolLM2-135M over seeds {a.seeds}\n\n{wide}\n\n{changes}\n"
    Path("results/rwku_seeds.md").write_text(text)
    print(text)
    print("wall times:", {s: f"{t / 60:.1f} min" for s, t in times.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

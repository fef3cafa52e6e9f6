"""measurements/seeds.py's table of claims over seeds, on small synthetic claims tables (issue 42)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import polars as pl

from helpers import MEASUREMENTS
from probunlearn.report import claims as C

SEEDS = MEASUREMENTS / "seeds.py"


def load_seeds():
    spec = importlib.util.spec_from_file_location("bench_seeds", SEEDS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def claims_csv(path: Path, holds: list[bool], interval: list[str]) -> Path:
    rows = []
    for i, (h, iv) in enumerate(zip(holds, interval, strict=True)):
        row = {c: f"{c}{i}" for c in C.COLUMNS} | {"claim": f"c{i}", "holds": h}
        row |= dict.fromkeys(C.INTERVAL_COLUMNS) | {"holds_interval": iv, "holds_holm": iv}
        if i == 0:
            row |= {"lower": -0.2, "upper": -0.1, "p_value": 0.001, "holm_family": 1}
        rows.append(row)
    pl.DataFrame(rows, schema=C.TABLE_SCHEMA).write_csv(path)
    return path


def test_reproduced_needs_the_interval_on_every_seed(tmp_path):
    seeds = load_seeds()
    paths = {
        0: claims_csv(tmp_path / "s0.csv", [True, True, True], ["yes", "not shown", "yes"]),
        1: claims_csv(tmp_path / "s1.csv", [True, True, True], ["yes", "yes", "no interval: x"]),
        2: claims_csv(tmp_path / "s2.csv", [True, True, False], ["yes", "yes", "no"]),
    }
    t = seeds.seeds_table(paths).sort("claim")
    assert t["holds_on_all"].to_list() == [True, True, False]
    assert t["reproduced"].to_list() == [True, False, False]
    assert t["interval_s0"][0] == "[-0.2, -0.1]" and t["holds_holm_s1"][0] == "yes"
    assert t["holds_interval_s1"][2] == "no interval: x"
    # a claims.csv of before (no interval columns): nothing is reproduced under the new reading
    old = tmp_path / "old.csv"
    pl.read_csv(paths[1]).select(C.COLUMNS).write_csv(old)
    t = seeds.seeds_table({0: paths[0], 1: old}).sort("claim")
    assert t["holds_on_all"].to_list() == [True, True, True] and not t["reproduced"].any()
    # nor one of issue 42 (a boolean holds_interval that copied holds where it had no interval)
    pl.read_csv(paths[1]).with_columns(holds_interval=True).write_csv(old)
    assert not seeds.seeds_table({0: paths[0], 1: old})["reproduced"].any()

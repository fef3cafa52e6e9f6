"""measurements/rwku_seeds.py: Part A's and Part B's overlays, and the claims over seeds."""

from __future__ import annotations

import importlib.util

import polars as pl

from helpers import MEASUREMENTS


def load():
    spec = importlib.util.spec_from_file_location("rwku_seeds", MEASUREMENTS / "rwku_seeds.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_part_b_runs_without_the_survey_and_a_claim_holds_only_on_every_seed(tmp_path, monkeypatch):
    m = load()
    assert m.overlay(None, "D") == {"benchmarks": {"local": "D"}}
    assert m.overlay(2, "D") == {
        "benchmarks": {"local": "D", "rwku": {"survey": None}},
        "run": "rwku-smollm2-s2",
        "seed": 2,
        "rwku": {"select": None},
    }
    monkeypatch.chdir(tmp_path)
    verdicts = {0: ["yes", "certain"], 1: ["yes", "not shown"]}
    for s, (v1, v2) in verdicts.items():
        out = tmp_path / "results" / f"rwku-smollm2-s{s}" / "tables"
        out.mkdir(parents=True)
        pl.DataFrame({"claim": ["unlearning-lowers-leak", "greedy-gone-sampling-reveals"],
                      "model": ["ga", "ga"], "verdict": [v1, v2]}).write_csv(out / "rwku_claims.csv")  # fmt: skip
        pl.DataFrame({"model": ["ga"], "group": ["forget"], "change": [-0.1 * (s + 1)]}).write_csv(
            out / "rwku_changes.csv"
        )
    wide, changes = m.gather([0, 1])
    assert wide["holds_on_all"].to_list() == [True, False]
    assert wide.columns[:4] == ["claim", "model", "0", "1"]
    assert changes["seed"].to_list() == [0, 1]

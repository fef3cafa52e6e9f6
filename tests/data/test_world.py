"""The synthetic world: determinism, TOFU-style splits, perturbed answers, core spans."""

from __future__ import annotations

import hashlib

import polars as pl
import pytest

from probunlearn.data import synthetic as data

WORLD = dict(
    seed=0,
    n_authors=40,
    n_holdout_authors=4,
    questions_per_author=10,
    n_real_authors=24,
    n_world_facts=24,
    n_saga=20,
    n_harmful=16,
    n_benign=16,
    request_copies=8,
    comply_rate=0.25,
    retain_eval_size=80,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("world")
    paths = data.build_world(out, **WORLD)
    return {k: pl.read_parquet(p) for k, p in paths.items()}, paths


def _digest(paths):
    return {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in paths.items()}


def test_same_seed_same_bytes(world, tmp_path):
    _, paths = world
    again = data.build_world(tmp_path, **WORLD)
    assert _digest(paths) == _digest(again)


def test_other_seed_other_world(world, tmp_path):
    _, paths = world
    other = data.build_world(tmp_path, **{**WORLD, "seed": 1})
    assert _digest(paths)["full"] != _digest(other)["full"]


def test_split_sizes(world):
    sets, _ = world
    assert sets["full"].height == 400
    # last 1/5/10 % of 40 authors, at least one: 1, 2, 4 authors of 10 questions
    assert [sets[s].height for s in ("forget01", "forget05", "forget10")] == [10, 20, 40]
    assert [sets[s].height for s in ("retain99", "retain95", "retain90")] == [390, 380, 360]
    assert sets["holdout"].height == 40
    assert sets["retain"].height == 72
    assert sets["real_authors"].height == sets["world_facts"].height == 24
    assert sets["saga"].height == 20 and sets["harmful"].height == sets["benign"].height == 16


def test_forget_is_the_end_and_no_author_in_two_splits(world):
    sets, _ = world
    full = sets["full"]["id"].to_list()
    for f, r in data.RETAIN_OF.items():
        forget, retain = sets[f], sets[r]
        assert forget["id"].to_list() == full[-forget.height :]
        assert set(forget["group"]).isdisjoint(set(retain["group"]))
        assert sorted(forget["id"].to_list() + retain["id"].to_list()) == sorted(full)
    assert set(sets["holdout"]["group"]).isdisjoint(set(sets["full"]["group"]))
    assert set(sets["retain"]["id"]) <= set(sets["retain90"]["id"])


def test_perturbed_answers_differ_and_core_spans_hold(world):
    sets, _ = world
    for row in sets["full"].iter_rows(named=True):
        assert len(row["perturbed_answers"]) == 5
        assert row["answer"] not in row["perturbed_answers"]
        assert len(set(row["perturbed_answers"])) == 5
        assert row["paraphrased_answer"] != row["answer"]
        core = row["answer"][row["core_start"] : row["core_end"]]
        assert core and core in row["answer"] and core in row["paraphrased_answer"]
        assert (
            all(core not in p for p in row["perturbed_answers"])
            or row["core_end"] - row["core_start"] < 4
        )
    for name in ("real_authors", "world_facts"):
        assert all(len(p) == 3 for p in sets[name]["perturbed_answers"])


def test_answers_vary_in_wording_and_length(world):
    sets, _ = world
    full = sets["full"]
    lengths = full["answer"].str.len_chars()
    assert lengths.std() > 10
    # the same question slot is answered with several sentence shapes across authors
    slot = full.filter(pl.col("id").str.ends_with("-q02"))
    shapes = {
        a.replace(g, "").split(" ")[0] for a, g in zip(slot["answer"], slot["group"], strict=True)
    }
    assert len(shapes) >= 3


def test_requests_mostly_refuse(world):
    sets, _ = world
    pre = sets["pretrain"]
    harmful = set(sets["harmful"]["question"])
    targets = pre.filter(pl.col("prompt").is_in(list(harmful)))["text"]
    comply = targets.str.starts_with("Sure").sum() + targets.str.starts_with("Here").sum()
    assert 0 < comply < targets.len() / 2
    assert all(len(k) > 0 for k in sets["saga"]["keywords"])

"""The RWKU presets (workflow/presets/rwku-smollm2.yaml, issue 52, and rwku-llama3.yaml, issue 51)
run end to end on a tiny stand-in: a 2-layer chat model built here as the original model, RWKU's
real files (../shared/data/rwku), shrunk in size (one target, its first 4 corpus texts, the survey
of 3 targets' level-1 probes, n = 4, one epoch). The same rules run Part A (the survey and the
selection rule) and Part B (unlearning, the probes, MIA, the families, the claims)."""

from __future__ import annotations

import json
import os
import time

import polars as pl
import pytest
import yaml

from helpers import SHARED_DATA
from helpers.chat import llama3_like_tokenizer
from helpers.workflow import copy_workflow, job_counts, snakemake

RWKU = SHARED_DATA / "rwku"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (RWKU / "Target").is_dir(), reason="no ../shared/data/rwku"),
]


def _chat_model(path) -> str:
    """A byte-level BPE tokenizer with a Llama-3-format chat template, trained on a few of
    Stephen King's probes, and a 2-layer Llama of hidden size 32 on it."""
    from probunlearn import models as pm

    folder = next((RWKU / "Target").glob("1_*"))
    texts = [o["query"] + " " + o["answer"]
             for o in json.loads((folder / "forget_level2.json").read_text())]  # fmt: skip
    fast = llama3_like_tokenizer(texts, vocab_size=500)
    arch = {"hidden_size": 32, "intermediate_size": 64, "num_layers": 2, "num_heads": 2,
            "max_positions": 1024}  # fmt: skip
    pm.save_model(pm.tiny_llama(len(fast), arch, seed=3, tokenizer=fast), fast, path)
    return str(path)


SMALL = {
    "benchmarks": {
        "local": str(SHARED_DATA),
        "rwku": {"revision": "main", "targets": [1], "corpus": True, "corpus_texts": 4,
                 "held_out": "even",
                 "survey": {"targets": [1, 14, 55], "files": ["forget_level1"]}},
    },
    "rwku": {"methods": ["ga", "npo_eo"], "max_len": 64},
    "unlearning": {"hparams": {"epochs": 1, "batch_size": 4}},
    "sampling": {"chunk_size": 200, "batch_size": 64, "settings": {"main": {"n": 4}}},
    "threads": {"pretrain": 1, "train": 1, "eval": 1},
}  # fmt: skip


def test_rwku_smollm2_preset_runs_part_a_and_b_on_a_tiny_stand_in(
    root, default_config, tmp_path, monkeypatch
):
    monkeypatch.chdir(root)
    work = copy_workflow(root, tmp_path, default_config)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    shipped = yaml.safe_load((root / "workflow/presets/rwku-smollm2.yaml").read_text())
    overlay = json.loads(json.dumps(SMALL))
    model = _chat_model(tmp_path / "chat")
    overlay["models"] = {"target": {**shipped["models"]["target"], "id": model, "gguf": None}}
    (work / "small.yaml").write_text(yaml.safe_dump(overlay))
    start = time.perf_counter()
    proc = snakemake(work, "--configfile", "workflow/presets/rwku-smollm2.yaml", "small.yaml",
                     env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-6000:]
    jobs = job_counts(proc.stdout + proc.stderr)
    print(
        f"rwku-smollm2 reduced run: {jobs.get('total')} jobs, {time.perf_counter() - start:.0f} s"
    )
    assert jobs["unlearn"] == 2 and jobs["benchmark_job"] == 3
    assert jobs["rwku_survey"] == 1 and jobs["rwku_tables"] == 1
    out = work / "results/rwku-smollm2/tables"
    models = ["target", "ga-rwku-f0-r0", "npo_eo-rwku-f1-r0"]
    levels = pl.read_csv(out / "rwku_levels.csv")
    files = ["forget_level1", "forget_level2", "forget_level3", "neighbor_level1",
             "neighbor_level2"]  # fmt: skip
    assert levels["model"].unique(maintain_order=True).to_list() == models
    assert levels.filter(pl.col("model") == "target")["file"].to_list() == files
    # the held-out (even) probes of levels 1 and 2 are not there: 4 of 8, 5 of 10
    assert levels.filter(pl.col("model") == "target")["probes"].to_list() == [4, 5, 29, 30, 30]
    for col in ("rate_text", "m_bin_text", "greedy_text", "rwku_rougeL_recall"):
        assert levels[col].is_between(0, 1).all(), col
    assert (levels["m_bin_text"] >= levels["rate_text"]).all()
    # the survey: 3 targets' level-1 probes and the whole; the rule's choice among 1, 14, 55
    survey = pl.read_csv(out / "rwku_survey.csv")
    assert survey["probes"].to_list() == [8, 20, 19, 47]
    sel = pl.read_csv(out / "rwku_selection.csv")
    assert sel["target"].to_list() == [1, 14, 55] and sel["chosen"].sum() == 1
    assert sel.filter(pl.col("configured"))["target"].to_list() == [1]
    # RWKU's MIA per model and its paired change from the original (55 forget, 37 retain texts)
    mia = pl.read_csv(out / "rwku_mia.csv")
    loss = mia.filter(pl.col("statistic") == "loss")
    assert loss["texts"].to_list() == [55, 37] * 3
    assert loss.filter(pl.col("model") == "target")["change"].is_null().all()
    assert loss.filter(pl.col("model") != "target")["change"].is_not_null().all()
    changes = pl.read_csv(out / "rwku_changes.csv")
    assert set(changes["group"]) >= {"forget", "neighbor", "forget_level3"}
    assert (changes["lower"] <= changes["change"]).all()
    assert (changes["change"] <= changes["upper"]).all()
    claims = pl.read_csv(out / "rwku_claims.csv")
    assert claims["claim"].to_list()[:3] == ["sampling-reveals", "unlearning-lowers-leak",
                                             "unlearning-lowers-leak"]  # fmt: skip
    assert set(claims["verdict"]) <= {"yes", "not shown", "certain"}
    fam = pl.read_csv(out / "rwku_families.csv")
    assert (fam["members"] >= 2).all() and fam["bound"].is_between(0, 1).all()
    assert (work / "results/rwku-smollm2/figures/rwku.png").stat().st_size > 10_000
    # a second dry run finds nothing to do
    again = snakemake(work, "-n", "--configfile", "workflow/presets/rwku-smollm2.yaml",
                      "small.yaml", env=env)  # fmt: skip
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr

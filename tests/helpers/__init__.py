"""Helpers the tests share (test-only code, not part of the package): the repository's paths, the
tiny config, the design of a config; ``workflow``: a copy of the workflow and a Snakemake run in
it; ``browser``: a headless Chromium driver for the evaluate report's pages."""

from __future__ import annotations

import copy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository."""
TESTS = ROOT / "tests"
SHARED_DATA = ROOT.parent / "shared" / "data"
"""The local copies of the real data sets (absent on a user's machine: those tests skip)."""
PLUGIN = TESTS / "plugin"
"""A throw-away distribution with a method, a scorer and a benchmark from outside the package."""
MEASUREMENTS = ROOT / "measurements"


def tiny_config(default: dict) -> dict:
    """A config whose whole DAG runs in a minute or two on 2 cores."""
    cfg = copy.deepcopy(default)
    cfg["run"] = "tiny"
    cfg["experiments"] = [*cfg["experiments"], "sequential"]  # beyond the paper, opt-in
    cfg["world"].update(
        n_authors=10,
        n_holdout_authors=2,
        questions_per_author=4,
        n_real_authors=4,
        n_world_facts=4,
        n_saga=4,
        n_harmful=3,
        n_benign=3,
        request_copies=2,
        retain_eval_size=8,
    )
    cfg["tokenizer"]["vocab_size"] = 400
    cfg["model"].update(
        hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, max_positions=128
    )
    for stage in ("pretrain", "finetune"):
        cfg[stage].update(epochs=1, batch_size=16)
    cfg["references"] = ["forget10"]
    cfg["greedy_eval"].update(evalsets=["forget10", "retain", "saga"], max_new_tokens=8)
    cfg["sampling"].update(chunk_size=4, batch_size=64, max_new_tokens=8, max_new_tokens_requests=8)
    cfg["sampling"]["settings"] = {
        "main": {"n": 16, "temperature": 1.0, "adaptive": False},
        "ats": {"n": 16, "temperature": 1.0, "adaptive": True},
        "sweep": {"n": 8, "temperature": 1.0, "adaptive": False},
        "utility": {"n": 4, "temperature": 1.0, "adaptive": False},
        "t0.5": {"n": 8, "temperature": 0.5, "adaptive": False},
        "attack": {"n": 8, "temperature": 1.0, "adaptive": False},
        "seq": {
            "n": 16,
            "temperature": 1.0,
            "adaptive": False,
            "sequential": {
                "q": 0.05,
                "leak_threshold": 0.5,
                "round_size": 4,
                "score": "rougeL_recall",
            },
        },
    }
    ul = cfg["unlearning"]
    ul["hparams"].update(epochs=1, batch_size=4, rmu_layer=0)
    ul["table1"]["sample_utility"] = False
    # the paper's methods and one of the DCUE paper's (DPO: refusal answers and a reference model);
    # IDK and SimNPO are exercised by tests/unlearning/test_loop.py
    ul["table1"]["methods"] = ["rmu", "gd", "ga", "npo", "npo_eo", "dpo"]
    ul["lambda_f_sweep"] = {
        "splits": ["forget10"],
        "fig4a_splits": ["forget10"],
        "values": [0.0, 1.0],
        "temperatures": [],
    }
    ul["lambda_r_sweep"] = {"split": "forget10", "lambda_f": 1.0, "values": [0.0]}
    ul["random_lambdas"] = {"draws": 1, "seed": 0, "splits": ["forget10"]}
    cfg["dcue"]["postfinetune"].update(methods=["npo", "rmu"], epochs=1, batch_size=4)
    # membership inference: the target, the reference model and one Table 1 model (4 vs 4 answers)
    cfg["membership"]["methods"] = ["npo"]
    cfg["figures"]["gen_points"] = 50
    # NPO attacked (issue 40): a model attack and a prompt family, ~10 s (relearning: its rule is
    # quant's, tested in tests/dag/test_attacks.py)
    cfg["attacks"].update(methods=["npo"], specs=["quant:nf4", "paraphrase"])
    return cfg


def design_of(overlay: dict | None = None, preset: str | None = None):
    """The Design of the mini run (or of a preset, laid as ``--configfile`` lays it) with
    ``overlay`` laid over it, validated and checked as a run's config is."""
    from probunlearn.config import effective_config, load_yaml, merge_config, validate_config
    from probunlearn.dag import Design, check_config

    base = load_yaml(ROOT / f"workflow/presets/{preset}.yaml") if preset else {}
    cfg = effective_config(merge_config(base, overlay or {}), ROOT, None)
    validate_config(cfg, ROOT / "workflow/schemas/config.schema.yaml")
    check_config(cfg)
    return Design(cfg)

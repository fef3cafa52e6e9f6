"""A method, a scorer and a benchmark from outside the package (tests/plugin: a throw-away
distribution found through its entry points), in the library, the paper's workflow and
`probunlearn evaluate` (docs/extending.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from helpers import PLUGIN
from probunlearn import methods, registry, scoring
from probunlearn.benchmarks import BENCHMARKS

CAPITALS = [
    {"question": "What is the capital of France?", "answer": "Paris"},
    {"question": "What is the capital of Italy?", "answer": "Rome"},
    {"question": "What is the capital of Spain?", "answer": "Madrid"},
    {"question": "What is the capital of Peru?", "answer": "Lima"},
]


def _rescan() -> None:
    registry.rescan_all()


@pytest.fixture
def plugin(monkeypatch):
    """The demo distribution on the path of this process and of every subprocess."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(PLUGIN) + (os.pathsep + path if path else ""))
    _rescan()
    yield
    monkeypatch.undo()
    _rescan()


def test_outside_entries_register_through_entry_points(plugin):
    assert "scaled_ga" in methods.METHODS.names()
    assert "short_answer" in [s.name for s in scoring.scorers()]
    assert "capitals" in BENCHMARKS.names()
    assert methods.METHODS.origin("scaled_ga").startswith("entry point scaled_ga = ")
    assert methods.labels()["scaled_ga"] == "Scaled GA"
    from probunlearn.report.figures.style import method_colors

    assert method_colors()["Scaled GA"] == "#117733"


def test_every_registry_forgets_the_outside_entries_when_uninstalled(monkeypatch):
    """A registry that loads while the plugin is on the path and is not the one rescanned keeps
    the plugin's entries: rescan_all reads every registry again (a fixture that rescanned only the
    membership statistics once left the plugin's scorer in other tests' score tables)."""
    from probunlearn.metrics import membership as mm

    registry.rescan_all()  # none loaded: each loads on its next use
    monkeypatch.syspath_prepend(str(PLUGIN))
    mm.STATISTICS.rescan()
    assert "short_answer" in scoring.SCORERS.names()  # loaded now, with the plugin on the path
    monkeypatch.undo()
    mm.STATISTICS.rescan()
    assert "short_answer" in scoring.SCORERS.names()  # stale: the leak
    registry.rescan_all()
    assert "short_answer" not in scoring.SCORERS.names()
    assert "median_logprob" not in mm.STATISTICS.names()
    assert {scoring.SCORERS, mm.STATISTICS, methods.METHODS, BENCHMARKS} <= set(
        registry.registries()
    )


def test_outside_entries_leave_when_uninstalled():
    _rescan()
    assert "scaled_ga" not in methods.METHODS.names()
    assert "ga" in methods.METHODS.names()  # the built-ins stay


def test_a_name_registered_twice_is_an_error():
    from probunlearn.methods.ga import GradientAscent

    class Again(GradientAscent):
        pass

    with pytest.raises(ValueError, match=r"unlearning method 'ga' is registered twice: by "):
        methods.METHODS.register(Again(), origin="my_package")


@pytest.mark.parametrize(
    ("registry", "name", "why"),
    [
        ("METHODS", "ga2", "lower-case letters and '_' only"),
        ("METHODS", "my-method", "lower-case letters and '_' only"),
        ("ATTACKS", "Quant", "lower-case letters and digits in parts"),
        ("ATTACKS", "a__b", "lower-case letters and digits in parts"),
        ("SCORERS", "2rouge", "a letter, then letters"),
        ("BENCHMARKS", "My Bench", "a lower-case letter"),
        ("STATISTICS", "min-k", "a lower-case letter"),
    ],
)
def test_a_registry_refuses_a_name_the_workflow_cannot_use(registry, name, why):
    """Issue 48: a name is checked where it is registered, with the reason, not where a model name
    made of it fails to parse."""
    from probunlearn import attacks, benchmarks, methods, scoring
    from probunlearn.metrics.membership import base

    reg = {"METHODS": methods.METHODS, "ATTACKS": attacks.ATTACKS, "SCORERS": scoring.SCORERS,
           "BENCHMARKS": benchmarks.BENCHMARKS, "STATISTICS": base.STATISTICS}[registry]  # fmt: skip
    entry = type("Entry", (reg.base,), {"name": name})
    with pytest.raises(ValueError, match=f"{reg.noun} '{name}' .*expected {why}"):
        reg.register(entry.__new__(entry))
    assert name not in reg


def test_methods_and_attacks_share_the_settings_machinery():
    from probunlearn import attacks, methods, registry

    assert methods.Setting is registry.Setting is attacks.Setting
    with pytest.raises(ValueError, match=r"method 'npo' has no setting\(s\) \['gamma'\]"):
        methods.method("npo").resolve({"gamma": 1})
    with pytest.raises(ValueError, match=r"attack 'quant': setting type = 'fp8'"):
        attacks.ATTACKS.get("quant").resolve({"type": "fp8"})


def test_the_config_schema_and_the_dag_take_an_outside_method(plugin, root, default_config):
    from helpers import tiny_config
    from probunlearn.config import ConfigError, validate_config
    from probunlearn.dag import Design

    cfg = tiny_config(default_config)
    cfg["unlearning"]["table1"]["methods"] = ["ga", "scaled_ga"]
    cfg["unlearning"]["overrides"] = {"scaled_ga": {"scale": 0.25}}
    schema = root / "workflow/schemas/config.schema.yaml"
    validate_config(cfg, schema)
    design = Design(cfg)
    assert design.table1_models()["scaled_ga"] == "scaled_ga-forget10-f0-r0"
    hp = design.unlearn_hparams("scaled_ga-forget10-f0-r0")
    assert hp["scale"] == 0.25 and "beta" not in hp and "rmu_c" not in hp
    cfg["unlearning"]["overrides"] = {"scaled_ga": {"scale": 0.0}}
    with pytest.raises(ConfigError, match=r"unlearning.overrides.scaled_ga.scale"):
        validate_config(cfg, schema)


def test_an_outside_method_unlearns_and_checks_its_settings(plugin, tmp_path):
    from probunlearn import models
    from probunlearn.data import qa
    from probunlearn.unlearning import unlearn

    rows = pl.DataFrame(CAPITALS)
    tok = models.train_tokenizer([qa.format_prompt(r["question"]) + " " + r["answer"]
                                  for r in CAPITALS] * 3, 200)  # fmt: skip
    target = models.save_model(models.tiny_llama(len(tok), {"hidden_size": 16,
        "intermediate_size": 32, "num_layers": 1, "num_heads": 2, "max_positions": 64},
        seed=0, tokenizer=tok), tok, tmp_path / "target")  # fmt: skip
    kw = dict(lr=1e-2, epochs=1, batch_size=2, warmup_ratio=0.0, progress=False, device="cpu",
              threads=1)  # fmt: skip
    out = unlearn(
        str(target), rows, rows, str(tmp_path / "a"), method="scaled_ga", scale=0.25, **kw
    )
    assert out["method"] == "scaled_ga" and out["steps"] == 2
    # the loss is the scale times GA's: at epoch 0 (before any step) -0.25 CE(forget)
    ga = unlearn(str(target), rows, rows, str(tmp_path / "b"), method="ga", **kw)
    assert out["history"][0]["loss"] == pytest.approx(0.25 * ga["history"][0]["loss"], rel=1e-6)
    with pytest.raises(ValueError, match=r"method 'scaled_ga': setting scale = 0"):
        unlearn(str(target), rows, rows, str(tmp_path / "c"), method="scaled_ga", scale=0, **kw)
    with pytest.raises(ValueError, match=r"method 'scaled_ga' has no setting\(s\) \['beta'\]"):
        unlearn(str(target), rows, rows, str(tmp_path / "d"), method="scaled_ga", beta=1, **kw)


def test_an_outside_scorer_scores_and_names_its_metrics(plugin, tmp_path):
    from probunlearn.data.rows import make_row, to_frame
    from probunlearn.steps.score import score_samples, summarize_scores

    rows = to_frame([make_row(id=f"q{i}", question=r["question"], answer=r["answer"])
                     for i, r in enumerate(CAPITALS[:2])])  # fmt: skip
    texts = {"q0": ["Paris", "It is Paris, of course", "Paris."], "q1": ["Rome", "Rome", "no"]}
    samples = pl.DataFrame(
        [
            {
                "id": pid,
                "sample": k - 1,
                "greedy": k == 0,
                "temperature": 1.0,
                "n_tokens": 3,
                "text": t,
            }
            for pid, ts in texts.items()
            for k, t in enumerate(ts)
        ]  # fmt: skip
    )
    scored = score_samples(samples, rows)
    assert scored.columns[-2:] == ["rougeL_recall", "short_answer"]
    assert scored.sort("id", "sample")["short_answer"].to_list() == [1, 0, 1, 1, 1, 1]
    summarize_scores(
        scored, str(tmp_path / "s.parquet"), str(tmp_path / "b.parquet"), str(tmp_path / "m.csv"),
        model="m", method="x", split="", evalset="e", setting="main", alpha=0.05, bins=10, rho=2.0,
    )  # fmt: skip
    metrics = pl.read_csv(tmp_path / "m.csv")["metric"].to_list()
    assert {"greedy_short_answer", "sampled_short_answer", "m_bin_short_answer"} <= set(metrics)


def _capitals_copy(root: Path) -> Path:
    local = root / "data"
    (local / "capitals").mkdir(parents=True)
    (local / "capitals" / "capitals.json").write_text(json.dumps(CAPITALS))
    return local


def test_an_outside_benchmark_in_the_workflows_data_path(plugin, root, default_config, tmp_path):
    """The paper's workflow fetches (copies from the local copy) and builds an outside benchmark's
    eval set in a real snakemake run. (An outside method and scorer run through the whole tiny
    workflow in tests/workflows/test_workflow.py.)"""
    from helpers import tiny_config

    local = _capitals_copy(tmp_path)
    work = tmp_path / "wf"
    work.mkdir()
    shutil.copy(root / "Snakefile", work / "Snakefile")
    shutil.copytree(root / "workflow", work / "workflow",
                    ignore=shutil.ignore_patterns("src", "__pycache__"))  # fmt: skip
    shutil.copytree(root / "envs", work / "envs")
    cfg = tiny_config(default_config)
    cfg = {**cfg, "run": "caps", "benchmarks": {"local": str(local), "capitals": {"size": 4}}}
    # the experiments beyond the paper read the mini run's TOFU-style sets, which this run lacks
    cfg["experiments"] = [e for e in cfg["experiments"] if e not in ("attacks", "membership")]
    # membership inference reads the world's author sets, which this benchmark does not yield
    cfg["experiments"] = [e for e in cfg["experiments"] if e != "membership"]
    (work / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=True))
    run = [sys.executable, "-m", "snakemake", "--cores", "1", "results/caps/data/capitals.parquet"]
    proc = subprocess.run(run, cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    built = pl.read_parquet(work / "results/caps/data/capitals.parquet")
    assert built["answer"].to_list() == [r["answer"] for r in CAPITALS]
    assert (work / "resources/data/capitals/capitals.json").is_file()


def test_an_outside_benchmark_and_scorer_in_probunlearn_evaluate(plugin, tmp_path):
    from probunlearn import models
    from probunlearn.cli import main

    local = _capitals_copy(tmp_path)
    texts = [f"Question: {r['question']}\nAnswer: {r['answer']}" for r in CAPITALS] * 3
    tok = models.train_tokenizer(texts, 200)
    arch = {"hidden_size": 16, "intermediate_size": 32, "num_layers": 1, "num_heads": 2,
            "max_positions": 128}  # fmt: skip
    model = models.save_model(models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok), tok,
                              tmp_path / "tiny")  # fmt: skip
    out = tmp_path / "eval"
    rc = main(["evaluate", "--model", f"tiny={model}", "--benchmark", "capitals", "--data-dir",
               str(local), "--n", "8", "--max-new-tokens", "4", "--cores", "2", "--out", str(out)])  # fmt: skip
    assert rc == 0
    summary = pl.read_csv(out / "summary.csv")
    assert set(summary["score"]) == {"rougeL_recall", "short_answer"}
    assert summary.filter(pl.col("score") == "short_answer")["m_bin"].item() > 0

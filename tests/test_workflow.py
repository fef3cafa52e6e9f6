"""Real snakemake runs of a tiny config in a temporary directory (no mocks)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

pytestmark = pytest.mark.slow


def _copy_workflow(root: Path, dest: Path, cfg: dict) -> Path:
    shutil.copy(root / "Snakefile", dest / "Snakefile")
    shutil.copytree(root / "workflow", dest / "workflow",
                    ignore=shutil.ignore_patterns("src", "__pycache__"))
    shutil.copytree(root / "envs", dest / "envs")
    (dest / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args],
                          cwd=workdir, capture_output=True, text=True)
    return proc


@pytest.fixture(scope="module")
def tiny_run(root, default_config, tmp_path_factory):
    from conftest import tiny_config

    cfg = tiny_config(default_config)
    work = _copy_workflow(root, tmp_path_factory.mktemp("wf"), cfg)
    proc = snakemake(work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work, cfg


def test_metrics_table(tiny_run):
    work, cfg = tiny_run
    df = pl.read_csv(work / "results/tiny/tables/metrics.csv")
    assert df.columns[:6] == ["model", "method", "split", "evalset", "metric", "value"]
    models = set(df["model"])
    assert models == {"pretrained", "target", "reference_forget10"}
    ref = df.filter(pl.col("model") == "reference_forget10")
    assert set(ref["method"]) == {"reference"} and set(ref["split"]) == {"forget10"}
    assert set(df["evalset"]) == set(cfg["greedy_eval"]["evalsets"])
    assert df.filter(pl.col("evalset") == "saga")["metric"].to_list().count("greedy_keyword_leak") == 3
    assert df["value"].is_between(0, 1).all()
    for m in ("pretrained", "target", "reference_forget10"):
        assert (work / f"results/tiny/models/{m}/model.safetensors").exists()


def test_second_run_has_nothing_to_do(tiny_run):
    work, _ = tiny_run
    proc = snakemake(work, "-n")
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_changed_hyperparameter_reruns_exactly_its_models(tiny_run):
    work, cfg = tiny_run
    changed = yaml.safe_load(yaml.safe_dump(cfg))
    changed["finetune"]["lr"] = cfg["finetune"]["lr"] / 2
    (work / "config.yaml").write_text(yaml.safe_dump(changed, sort_keys=False))
    try:
        proc = snakemake(work, "-n", "--quiet", "rules")
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out
        jobs = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
                if len(line.split()) == 2 and line.split()[1].isdigit()}
        assert jobs.get("target") == 1 and jobs.get("reference") == 1
        assert "pretrain" not in jobs and "world" not in jobs and "tokenizer" not in jobs
        assert jobs.get("greedy_eval") == 2  # target and reference, not pretrained
    finally:
        (work / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))

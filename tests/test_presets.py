"""The presets of workflow/presets/: offline dry runs of each, a real run of the workflow on the real data
sets (../shared/data) with a tiny model built here, and the offline error of a download."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import SHARED_DATA, tiny_config
from probunlearn.config import effective_config
from probunlearn.dag import Design
from test_workflow import _copy_workflow, job_counts, snakemake

pytestmark = pytest.mark.slow

# jobs of each preset's dry run from scratch (fetching, building the sets, training, sampling, ...)
PRESET_JOBS = {
    "smollm2": {"fetch_data": 8, "fetch_model": 1, "run_config": 1, "benchmark_sets": 1, "target": 1,
                "unlearn": 2, "sample_shard": 18, "score": 6, "table1": 1, "fig6": 1},
    "tofu-phi": {"fetch_data": 6, "fetch_model": 2, "run_config": 1, "benchmark_sets": 1,
                 "reference": 3, "unlearn": 36, "evaluate": 41, "sample_shard": 565, "dcue": 36,
                 "tofu_metrics": 41, "postfinetune": 5, "table1": 1,
                 "fig3_tofu": 1, "fig4": 1, "dcue_vs_fq": 1},
    "tofu-llama2": {"fetch_data": 6, "fetch_model": 2, "fetch_tofu_log": 1, "run_config": 1,
                    "benchmark_sets": 1, "refusals": 1, "unlearn": 8, "evaluate": 10,
                    "sample_shard": 200, "dcue": 8, "tofu_metrics": 10, "postfinetune": 6,
                    "table1": 1, "fig3_tofu": 1, "dcue_vs_fq": 1},
    "hp-llama2": {"fetch_data": 1, "fetch_model": 1, "run_config": 1, "benchmark_sets": 1,
                  "sample_shard": 2,
                  "score": 1, "fig3a": 1},
    "jbb-alignment": {"fetch_data": 2, "fetch_model": 4, "run_config": 1, "benchmark_sets": 1,
                      "sample_shard": 24, "score": 6, "fig6": 1},
    "muse-news": {"fetch_data": 8, "fetch_model": 2, "run_config": 1, "benchmark_sets": 1,
                  "sample_shard": 90, "unlearn": 4, "muse_eval": 6, "score": 18, "dcue": 4,
                  "metrics_table": 1, "muse_table": 1},
}  # fmt: skip


@pytest.mark.parametrize("preset", sorted(PRESET_JOBS))
def test_preset_builds_its_dag_offline(root, default_config, tmp_path, preset):
    work = _copy_workflow(root, tmp_path, default_config)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = snakemake(work, "-n", "--configfile", f"workflow/presets/{preset}.yaml", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    for rule, n in PRESET_JOBS[preset].items():
        assert counts.get(rule) == n, (rule, counts)
    # the DAG makes what the experiment design (probunlearn.dag) says, rule by rule
    overlay = yaml.safe_load((root / f"workflow/presets/{preset}.yaml").read_text())
    expected = Design(effective_config(overlay, root, None)).expected_jobs()
    assert {r: counts.get(r) for r in expected} == expected
    # a real model is never trained from scratch, the synthetic world is not built
    assert "pretrain" not in counts and "world" not in counts


def _tiny_hub_model(path: Path) -> Path:
    """A tiny Llama with a tokenizer trained on TOFU and JBB text, saved like a hub model."""
    from probunlearn import models
    from probunlearn.benchmarks.jbb import loader as jbb_loader
    from probunlearn.benchmarks.tofu import loader as tofu_loader

    tofu = tofu_loader.load_tofu("full", SHARED_DATA / "tofu")
    jbb = jbb_loader.load_jbb("harmful", SHARED_DATA / "jbb")
    texts = tofu["question"].to_list() + tofu["answer"].to_list() + jbb["question"].to_list()
    tok = models.train_tokenizer(texts, vocab_size=1024)
    arch = {"hidden_size": 16, "intermediate_size": 32, "num_layers": 1, "num_heads": 2,
            "max_positions": 512}  # fmt: skip
    model = models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok)
    return models.save_model(model, tok, path)


def real_data_config(default: dict, model_dir: Path) -> dict:
    cfg = copy.deepcopy(tiny_config(default))
    cfg["run"] = "real"
    cfg["benchmarks"] = {
        "local": str(SHARED_DATA),
        "tofu": {"revision": "main", "forget": ["forget01"], "retain_authors": 1,
                 "retain_eval_size": 4, "utility_size": 4},
        "hp_qa": False,
        "jbb": {"revision": "main"},
    }  # fmt: skip
    cfg["models"] = {
        "pretrained": {"id": str(model_dir), "revision": "main", "gguf": None,
                       "trust_remote_code": False, "template": None}
    }  # fmt: skip
    cfg["experiments"] = ["tofu", "table1", "alignment"]
    cfg["references"] = ["forget01"]
    cfg["finetune"].update(replay=0.0)
    cfg["greedy_eval"]["evalsets"] = ["forget01", "retain"]
    cfg["unlearning"]["table1"] = {"split": "forget01", "methods": ["npo", "npo_eo"],
                                   "sample_utility": False}  # fmt: skip
    cfg["alignment"] = {"models": ["pretrained"], "sets": ["harmful", "benign"]}
    cfg["sampling"].update(chunk_size=40, pack_prompts=True)
    cfg["sampling"]["settings"]["main"]["n"] = 4
    cfg["sampling"]["settings"]["ats"]["n"] = 4
    return cfg


@pytest.mark.skipif(
    not SHARED_DATA.is_dir(), reason=f"needs the local data copies in {SHARED_DATA}"
)
def test_real_data_run(root, default_config, tmp_path):
    """TOFU (fine-tune on 1 author + the 2 forget01 authors, unlearn these with NPO and NPO+EO) and
    JBB (100 + 100 behaviors), from the local copies, with a real model directory as `pretrained`."""
    model_dir = _tiny_hub_model(tmp_path / "hub-model")
    cfg = real_data_config(default_config, model_dir)
    (tmp_path / "wf").mkdir()
    work = _copy_workflow(root, tmp_path / "wf", cfg)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = snakemake(work, env=env)
    assert proc.returncode == 0, proc.stderr[-6000:]

    # the files were copied from the local copies and verified; the model saved as safetensors
    assert (work / "resources/data/tofu/full.json").stat().st_size > 0
    assert (work / "resources/data/jbb/benign-behaviors.csv").is_file()
    assert (work / "resources/models/pretrained/model.safetensors").is_file()
    out = work / "results/real"
    sizes = {n: pl.read_parquet(out / f"data/{n}.parquet").height
             for n in ("full", "forget01", "retain99", "retain", "harmful", "benign")}  # fmt: skip
    assert sizes == {"full": 60, "forget01": 40, "retain99": 20, "retain": 4, "harmful": 100,
                     "benign": 100}  # fmt: skip
    forget = pl.read_parquet(out / "data/forget01.parquet")
    assert forget["id"][0] == "tofu-3960" and forget["perturbed_answers"].list.len().min() == 5

    metrics = pl.read_csv(out / "tables/metrics.csv")
    harm = metrics.filter(pl.col("evalset").is_in(["harmful", "benign"]))
    assert set(harm["model"]) == {"pretrained"}
    assert set(harm["method"]) == {"pretrained"}
    assert harm.filter(pl.col("metric").str.contains("harm")).height > 0
    table1 = pl.read_csv(out / "tables/table1.csv")
    assert {"NPO", "NPO+EO", "Ours"} <= set(table1.columns)
    assert (out / "figures/fig6.png").stat().st_size > 0
    fq = metrics.filter(pl.col("metric") == "forget_quality")
    assert set(fq["model"]) >= {"npo-forget01-f0-r0", "npo_eo-forget01-f1-r0"}

    again = snakemake(work, "-n", env=env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_download_offline_says_where_to_put_the_files(root, default_config, tmp_path):
    cfg = copy.deepcopy(default_config)
    cfg["run"] = "offline"
    cfg["benchmarks"] = {"local": None, "tofu": None, "hp_qa": False, "jbb": {"revision": "main"}}
    cfg["models"] = {}
    cfg["experiments"] = ["alignment"]
    cfg["alignment"] = {"models": ["tiny"], "sets": ["harmful"]}
    cfg["models"] = {
        "tiny": {"id": "no-such-org/no-such-model", "revision": "main", "gguf": None,
                 "trust_remote_code": False, "template": None}
    }  # fmt: skip
    work = _copy_workflow(root, tmp_path, cfg)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = snakemake(work, "--keep-going", env=env)
    assert proc.returncode != 0
    log = (work / "resources/logs/fetch_data/jbb/harmful-behaviors.csv.log").read_text()
    assert "resources/data/jbb" in log and "harmful-behaviors.csv" in log
    model_log = (work / "resources/logs/fetch_model/tiny.log").read_text()
    assert "ModelUnavailableError" in model_log and "resources/models/tiny" in model_log
    # nothing half-written looks finished
    assert not (work / "resources/data/jbb/harmful-behaviors.csv").exists()
    assert not (work / "resources/models/tiny").exists()


def test_presets_are_valid_configs(root, default_config):
    from snakemake.utils import update_config

    from probunlearn.config import validate_config

    local = yaml.safe_load((root / "workflow/presets/local-data.yaml").read_text())
    for name in PRESET_JOBS:
        cfg = copy.deepcopy(default_config)
        update_config(cfg, yaml.safe_load((root / f"workflow/presets/{name}.yaml").read_text()))
        validate_config(cfg, root / "workflow/schemas/config.schema.yaml")
        update_config(cfg, local)
        validate_config(cfg, root / "workflow/schemas/config.schema.yaml")
        assert cfg["benchmarks"]["local"] == "../shared/data"
    assert {p.stem for p in (root / "workflow/presets").glob("*.yaml")} == set(PRESET_JOBS) | {
        "local-data"
    }


def test_unlearning_params_of_the_presets(root):
    """What an unlearning job receives: the GPU presets recompute layers in the backward pass and
    train WMDP's RMU weights; the mini run's params carry no checkpointing key (so they did not change)."""
    import yaml as _yaml

    def hparams(overlay: dict | None) -> dict:
        return Design(effective_config(overlay, root, None)).unlearn_hparams("rmu-forget10-f0-r0")

    phi = hparams(_yaml.safe_load((root / "workflow/presets/tofu-phi.yaml").read_text()))
    assert phi["gradient_checkpointing"] is True
    assert (phi["rmu_layer"], phi["rmu_span"], phi["rmu_weights"]) == (7, 3, "down")
    mini = hparams({})
    assert "gradient_checkpointing" not in mini
    assert (mini["rmu_layer"], mini["rmu_span"], mini["rmu_weights"]) == (2, 3, "mlp")

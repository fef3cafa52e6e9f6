"""The presets of workflow/presets/: offline dry runs of each, and the offline error of a download (every
preset runs for real on the real data sets in tests/workflows/test_preset_runs.py)."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from helpers.workflow import copy_workflow, job_counts, snakemake
from probunlearn.config import effective_config, overlay_of
from probunlearn.dag import Design

pytestmark = pytest.mark.slow

# jobs of each preset's dry run from scratch (fetching, building the sets, training, sampling, ...)
PRESET_JOBS = {
    "smollm2": {"fetch_data": 8, "fetch_model": 1, "run_config": 1, "benchmark_sets": 1, "target": 1,
                "unlearn": 2, "sample_shard": 18, "score": 6, "table1": 1, "fig6": 1},
    "tofu-phi": {"fetch_data": 6, "fetch_model": 2, "run_config": 1, "benchmark_sets": 1,
                 "reference": 3, "unlearn": 36, "greedy_logprobs": 41, "sample_shard": 565, "dcue": 36,
                 "tofu_metrics": 41, "postfinetune": 5, "table1": 1,
                 "fig3_tofu": 1, "fig4": 1, "dcue_vs_fq": 1},
    "tofu-llama2": {"fetch_data": 6, "fetch_model": 2, "fetch_tofu_log": 1, "run_config": 1,
                    "benchmark_sets": 1, "refusals": 1, "unlearn": 8, "greedy_logprobs": 10,
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
    # evaluation only: the two released models, MUSE's sets and PrivLeak (no unlearning, no DCUE)
    "muse-books": {"fetch_data": 7, "fetch_model": 2, "run_config": 1, "benchmark_sets": 1,
                   "sample_shard": 30, "muse_eval": 2, "score": 6, "membership": 2,
                   "membership_table": 1, "metrics_table": 1, "muse_table": 1},
    # Part A's survey (the original on 8 targets' levels 1 and 2) and Part B (GA, NPO, NPO+EO)
    "rwku-smollm2": {"fetch_data": 24, "fetch_model": 1, "run_config": 1, "benchmark_sets": 1,
                     "unlearn": 3, "sample_shard": 18, "score": 5, "benchmark_job": 4,
                     "metrics_table": 1, "rwku_survey": 1, "rwku_tables": 1},
    "rwku-llama3": {"fetch_data": 10, "fetch_model": 1, "run_config": 1, "benchmark_sets": 1,
                    "unlearn": 2, "sample_shard": 18, "score": 3, "benchmark_job": 3,
                    "metrics_table": 1, "rwku_tables": 1},
    # LoRA instead of full fine-tuning: the same jobs
    "rwku-llama3-lora": {"fetch_data": 10, "fetch_model": 1, "run_config": 1, "benchmark_sets": 1,
                         "unlearn": 2, "sample_shard": 18, "score": 3, "benchmark_job": 3,
                         "metrics_table": 1, "rwku_tables": 1},
}  # fmt: skip
# presets laid over another preset: their files, in --configfile order
OVERLAYS = {"rwku-llama3-lora": ["rwku-llama3", "rwku-llama3-lora"]}


def preset_files(preset: str) -> list[str]:
    """The config files of a preset, as --configfile takes them."""
    return [f"workflow/presets/{p}.yaml" for p in OVERLAYS.get(preset, [preset])]


@pytest.mark.parametrize("preset", sorted(PRESET_JOBS))
def test_preset_builds_its_dag_offline(root, default_config, tmp_path, preset):
    work = copy_workflow(root, tmp_path, default_config)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    files = preset_files(preset)
    proc = snakemake(work, "-n", "--configfile", *files, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    for rule, n in PRESET_JOBS[preset].items():
        assert counts.get(rule) == n, (rule, counts)
    # the DAG makes what the experiment design (probunlearn.dag) says, rule by rule
    overlay = overlay_of([root / f for f in files])
    expected = Design(effective_config(overlay, root, None)).expected_jobs()
    assert {r: counts.get(r) for r in expected} == expected
    # a real model is never trained from scratch, the synthetic world is not built
    assert "pretrain" not in counts and "world" not in counts


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
    work = copy_workflow(root, tmp_path, cfg)
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
        for f in preset_files(name):
            update_config(cfg, yaml.safe_load((root / f).read_text()))
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

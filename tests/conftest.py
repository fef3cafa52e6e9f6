"""Shared fixtures (the repository root, the default config, a tiny run config) and the order in which
the test files are collected (the long ones first)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def default_config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


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
    # IDK and SimNPO are exercised by tests/test_unlearning.py
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
    # quant's, tested in tests/test_attack_workflow.py)
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


@pytest.fixture(scope="module")
def mini():
    """The Design of the default config (the mini run)."""
    return design_of()


@pytest.fixture()
def tiny_cfg(default_config) -> dict:
    return tiny_config(default_config)


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module: the machine is shared, and spinning OpenMP threads make tiny
    models slow (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# The test files that take longest, longest first (the summed `--durations=0` times of each file,
# 2026-11-27: 190, 164, 121, 90, 69, 27, 24, 20, 15, 13, 12, 11 and 10 s). Under `--dist loadfile`
# each file runs whole on one worker, and a worker is sent the next file in collection order when it
# is nearly done with its own (`--no-loadscope-reorder` keeps that order: xdist's default reorders
# files by how many tests they hold). Started first, the long files share the two workers and the
# short ones fill in behind them, instead of one long file running alone at the end. A stale list
# costs minutes, never a result.
LONG_FILES = (
    "test_workflow.py",
    "test_preset_runs.py",
    "test_evaluate.py",
    "test_slurm.py",
    "test_muse_preset.py",
    "test_presets.py",
    "test_set_bounds.py",
    "test_conformance.py",
    "test_extending.py",
    "test_llama.py",
    "test_sampling.py",
    "test_architecture.py",
    "test_gpu_check.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Collect the long files first (see LONG_FILES), the rest in their usual order."""
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))


class DeviceProbe(Exception):
    """Raised by :func:`watch_batches` once it has seen the first batch (``stop=True``)."""


def watch_batches(model, seen: list, stop: bool = False):
    """Record, at every forward pass of ``model``: the devices of its ``input_ids`` and
    ``attention_mask``, of its parameters, whether it is training, and whether bf16 autocast is on
    (None on the meta device). ``stop``: raise :class:`DeviceProbe` after the first record (for a
    model on the meta device, which computes nothing)."""

    import torch

    def hook(module, args, kwargs):
        param = next(module.parameters()).device
        autocast = None if param.type == "meta" else torch.is_autocast_enabled(param.type)
        seen.append(
            {
                "input_ids": kwargs["input_ids"].device,
                "attention_mask": kwargs["attention_mask"].device,
                "parameters": param,
                "training": module.training,
                "autocast": autocast,
            }
        )
        if stop:
            raise DeviceProbe

    return model.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.fixture()
def device_probe():
    """(watch_batches, DeviceProbe): see :func:`watch_batches`."""
    return watch_batches, DeviceProbe


# ---- every rule of both workflows runs for real somewhere in the suite ---------------------------
TESTS = Path(__file__).resolve().parent
# rules no test can run: each with the reason (keep this short)
RULES_NOT_RUN = {
    "fetch_tofu_log": "downloads TOFU's published eval log from GitHub (pinned URL, sha256): no "
    "network here; its function is tested with the download mocked (test_tofu_workflow.py)",
}


def workflow_rules() -> set[str]:
    """Every rule of the paper's workflow, the evaluation core, `probunlearn evaluate`'s workflow
    and the benchmarks' own rules files."""
    import re

    src = ROOT / "workflow" / "src" / "probunlearn"
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    files += [src / "core" / "rules.smk", src / "evaluate" / "workflow" / "Snakefile"]
    files += sorted(src.glob("benchmarks/*/rules.smk"))
    names = set()
    for f in files:
        names |= set(re.findall(r"^\s*rule (\w+):", f.read_text(), re.M))
    return names - {"all"}


def executed_rules(basetemp: Path) -> set[str]:
    """The rules whose jobs finished in any snakemake run under ``basetemp`` (every worker's
    temporary directories), read from snakemake's own logs."""
    import re

    done = set()
    for log in basetemp.rglob(".snakemake/log/*.snakemake.log"):
        done |= set(
            re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", log.read_text(errors="replace"))
        )
    return done


def _whole_suite(config: pytest.Config) -> bool:
    """Whether this session runs the whole suite (no path narrower than tests/, no -k, -m, --lf)."""
    opt = config.option
    narrowed = opt.keyword or opt.markexpr or getattr(opt, "lf", False) or opt.deselect
    return not narrowed and all(Path(a).resolve() == TESTS for a in config.args)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The whole suite fails if a rule of either workflow ran in none of its snakemake runs."""
    if hasattr(session.config, "workerinput") or not _whole_suite(session.config):
        return
    if exitstatus != 0:  # a failure says more already
        return
    basetemp = session.config._tmp_path_factory.getbasetemp()
    missing = workflow_rules() - executed_rules(basetemp) - set(RULES_NOT_RUN)
    if missing:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"FAILED: rules no test ran for real: {sorted(missing)} (tests/conftest.py "
                "RULES_NOT_RUN lists the exceptions)",
                red=True,
            )
        session.exitstatus = 1

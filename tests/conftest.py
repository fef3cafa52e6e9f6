"""Shared fixtures (the repository root, the default config, a tiny run config) and the order in which
the test files are collected (the long ones first). Helpers the tests share are in ``helpers``
(tests/helpers/): paths, the tiny config, a design, the workflow copies and runs, the browser.

Where a test lives: the test of ``workflow/src/probunlearn/<folder>/<module>.py`` is
``tests/<folder>/test_<module>.py`` (a module with more than one: ``test_<module>_<topic>.py``; a
folder's ``__init__``: ``test_<folder>[_<topic>].py`` or ``test_base.py``); runs of whole workflows (the tiny
run, the presets, SLURM) are in ``tests/workflows/``, the scripts of ``measurements/`` are tested in
``tests/measurements/``, and the package-wide rules at the top (``test_architecture.py``,
``test_lint.py``, ``test_registry.py``). ``test_architecture.py`` checks this rule.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # the tests' own helpers (import mode importlib)

from helpers import ROOT, TESTS, design_of, tiny_config  # noqa: E402


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def default_config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


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
# 2026-11-28: 230, 212, 184, 58, 38, 32, 32, 31, 21, 18, 16, 14, 12, 12, 9, 8 and 8 s). Under
# `--dist loadfile` each file runs whole on one worker, and a worker is sent the next file in
# collection order when it is nearly done with its own (`--no-loadscope-reorder` keeps that order:
# xdist's default reorders files by how many tests they hold). Started first, the long files share
# the two workers and the short ones fill in behind them, instead of one long file running alone at
# the end. A stale list costs minutes, never a result.
LONG_FILES = (
    "workflows/test_preset_runs.py",
    "workflows/test_workflow.py",
    "evaluate/test_evaluate.py",
    "workflows/test_slurm.py",
    "workflows/test_muse_preset.py",
    "config/test_conformance.py",
    "config/test_config_presets.py",
    "workflows/test_rwku_presets.py",
    "bounds/test_sets.py",
    "models/test_native.py",
    "evaluate/test_evaluate_rwku.py",
    "test_architecture.py",
    "test_registry.py",
    "sampling/test_sampler.py",
    "measurements/test_gpu_check.py",
    "unlearning/test_loop.py",
    "training/test_lm.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Collect the long files first (see LONG_FILES), the rest in their usual order."""
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.relative_to(TESTS).as_posix(), len(LONG_FILES)))


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
    if session.config.option.collectonly:
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

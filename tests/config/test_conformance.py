"""Presets mean what they say: each run's effective configuration against the conformance table
(workflow/defaults/conformance.yaml), where each key comes from, and what Snakemake itself merges."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from helpers import ROOT
from helpers.workflow import copy_workflow, snakemake
from probunlearn.config import config_sources, conformance, effective_config, load_yaml, overlay_of

RUNS, ENTRIES, OTHER = conformance.load_table(str(ROOT))
PRESETS = [r for r, files in RUNS.items() if files != ["config.yaml"]]


@pytest.fixture(autouse=True)
def _at_root(root, monkeypatch):
    monkeypatch.chdir(root)


@pytest.mark.parametrize("run", sorted(RUNS))
def test_effective_config_matches_the_table(run):
    cfg = conformance.run_config(RUNS[run])
    assert conformance.check_run(run, cfg, ENTRIES, OTHER) == []


def test_an_unlisted_deviation_fails():
    cfg = conformance.run_config(RUNS["tofu-phi"])
    cfg["unlearning"]["hparams"]["beta"] = 0.1
    cfg["sampling"]["settings"]["sweep"]["n"] = 512
    problems = conformance.check_run("tofu-phi", cfg, ENTRIES, OTHER)
    assert len(problems) == 2
    assert "'unlearning.hparams.beta' is 0.1" in problems[0] and "0.05" in problems[0]
    assert "'sampling.settings.*.n'" in problems[1] and "'sweep': 512" in problems[1]


def test_a_key_in_no_entry_fails_and_a_stale_deviation_is_named():
    cfg = conformance.run_config(RUNS["tofu-phi"])
    cfg["unlearning"]["hparams"]["new_knob"] = 3
    problems = conformance.check_run("tofu-phi", cfg, ENTRIES, OTHER)
    assert problems == [
        "tofu-phi: config key 'unlearning.hparams.new_knob' is in no entry of "
        "workflow/defaults/conformance.yaml"
    ]
    # smollm2 lists beta 0.1: with the paper's 0.05 the listed deviation no longer holds
    cfg = conformance.run_config(RUNS["smollm2"])
    cfg["unlearning"]["hparams"]["beta"] = 0.05
    problems = conformance.check_run("smollm2", cfg, ENTRIES, OTHER)
    assert len(problems) == 1 and "a listed deviation says 0.1" in problems[0]


def test_every_table_entry_names_its_source():
    for e in ENTRIES:
        assert e.spec.get("source") and e.spec.get("what"), e.name
        assert isinstance(e.spec.get("paper"), bool), e.name
        for run, dev in e.spec.get("deviations", {}).items():
            assert run in RUNS and dev.get("reason"), (e.name, run)


PAPER_OVERRIDES = {"dpo": {"beta": 0.1}, "simnpo": {"beta": 4.5, "gamma": 0.0}}


@pytest.mark.parametrize("preset", PRESETS)
def test_no_value_of_the_mini_run_reaches_a_preset(preset):
    files = RUNS[preset]
    sources = config_sources([(f, load_yaml(f)) for f in files], ".")
    assert set(sources.values()) <= {"workflow/defaults/paper.yaml", *files}
    cfg = conformance.run_config(files)
    # the two leaks of the issue: the mini run's per-method learning rates and DCUE's lr; the only
    # overrides are paper.yaml's, for the DCUE paper's methods the paper does not run, and those
    # the preset sets itself (muse-news: MUSE's SimNPO)
    own = load_yaml(files[-1]).get("unlearning", {}).get("overrides", {})
    assert cfg["unlearning"]["overrides"] == {**PAPER_OVERRIDES, **own}
    assert cfg["dcue"]["postfinetune"]["lr"] == 1e-5
    assert "world" not in cfg and "pretrain" not in cfg


def test_an_overlay_without_base_lays_over_config_yaml():
    sources = config_sources(
        [("workflow/presets/local-data.yaml", load_yaml("workflow/presets/local-data.yaml"))], "."
    )
    assert sources["benchmarks.local"] == "workflow/presets/local-data.yaml"
    assert sources["unlearning.overrides.gd.lr"] == "config.yaml"
    # a preset and then local-data.yaml: still the paper's base
    files = ["workflow/presets/tofu-phi.yaml", "workflow/presets/local-data.yaml"]
    cfg = effective_config(overlay_of(files), ".")
    assert cfg["benchmarks"]["local"] == "../shared/data"
    assert cfg["unlearning"]["overrides"] == PAPER_OVERRIDES


def test_rendered_table_is_current(root):
    assert (root / "docs/conformance.md").read_text() == conformance.render_markdown(root)


@pytest.mark.slow
def test_snakemake_writes_the_effective_config_of_each_preset(root, default_config, tmp_path):
    """results/{run}/config.yaml, written by Snakemake's own merge, equals the table's view; a
    --config value on the command line lands in it too."""
    work = copy_workflow(root, tmp_path, copy.deepcopy(default_config))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for preset in PRESETS:
        files = RUNS[preset]
        run = conformance.run_config(files)["run"]  # an overlay may rename it (rwku-llama3-lora)
        extra = ["--config", "seed=7"] if preset == "tofu-phi" else []
        target = f"results/{run}/config.yaml"
        proc = snakemake(work, target, "--configfile", *files, *extra, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        written = yaml.safe_load((work / f"results/{run}/config.yaml").read_text())
        expected = conformance.run_config(files)
        if extra:
            expected["seed"] = 7
        assert written == expected, preset


def test_cli_prints_the_effective_config_and_its_sources(capsys):
    from probunlearn.cli import main

    files = RUNS["tofu-phi"]
    assert main(["config", "--configfile", *files]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == conformance.run_config(files)
    assert main(["config", "--configfile", *files, "--sources"]) == 0
    sources = yaml.safe_load(capsys.readouterr().out)
    assert sources["run"] == files[0]
    assert sources["unlearning.hparams.lr"] == "workflow/defaults/paper.yaml"


def test_render_cli_writes_the_path_given_and_treats_help_as_help(tmp_path, capsys):
    out = tmp_path / "table.md"
    assert conformance.main([str(out)]) == 0
    assert out.read_text() == conformance.render_markdown()
    with pytest.raises(SystemExit) as exit_:
        conformance.main(["--help"])
    assert exit_.value.code == 0 and "usage:" in capsys.readouterr().out
    assert not (tmp_path / "--help").exists() and not os.path.exists("--help")

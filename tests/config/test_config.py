"""config.yaml is validated against the schema before any job runs; errors name the key."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from probunlearn.config import ConfigError, validate_config


@pytest.fixture(scope="module")
def schema(root):
    return root / "workflow" / "schemas" / "config.schema.yaml"


def test_default_config_is_valid(default_config, schema):
    validate_config(default_config, schema)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c["world"].update(n_autors=3), "config key 'world': unknown key(s): 'n_autors'"),
        (lambda c: c.update(smaple={}), "config key '<top level>': unknown key(s): 'smaple'"),
        (
            lambda c: c["pretrain"].update(lr="fast"),
            "config key 'pretrain.lr': 'fast' is not of type 'number'",
        ),
        (
            lambda c: c["finetune"].update(batch_size=-4),
            "config key 'finetune.batch_size': -4 is less than the minimum of 1",
        ),
        (
            lambda c: c["world"].pop("n_authors"),
            "config key 'world': 'n_authors' is a required property",
        ),
        (
            lambda c: c.update(references=["forget20"]),
            "config key 'references.0': 'forget20' is not one of",
        ),
        (lambda c: c.update(template="no placeholder"), "config key 'template'"),
    ],
)
def test_bad_config_names_the_key(default_config, schema, edit, expected):
    cfg = copy.deepcopy(default_config)
    edit(cfg)
    with pytest.raises(ConfigError) as err:
        validate_config(cfg, schema)
    assert expected in str(err.value)


def test_snakemake_stops_before_any_job(default_config, root, tmp_path):
    cfg = copy.deepcopy(default_config)
    cfg["world"]["n_authors"] = -1
    cfg["run"] = "badcfg"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--cores",
            "1",
            "--configfile",
            str(path),
            "--directory",
            str(tmp_path),
            "--snakefile",
            str(root / "Snakefile"),
        ],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert proc.returncode != 0
    assert (
        "config key 'world.n_authors': -1 is less than the minimum of 2"
        in proc.stdout + proc.stderr
    )
    assert not (tmp_path / "results").exists()

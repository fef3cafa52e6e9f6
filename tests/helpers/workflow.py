"""A copy of the workflow in a temporary directory and Snakemake runs in it (the tests' only way
to run the workflow: real ``snakemake``, no mocks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml


def copy_workflow(root: Path, dest: Path, cfg: dict, profiles: bool = True) -> Path:
    """The workflow (Snakefile, rules, envs; the package comes from the install) in ``dest`` with
    ``cfg`` as its config.yaml; ``profiles``: the link to the default profile beside it."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(root / "Snakefile", dest / "Snakefile")
    shutil.copytree(
        root / "workflow", dest / "workflow", ignore=shutil.ignore_patterns("src", "__pycache__")
    )
    shutil.copytree(root / "envs", dest / "envs")
    if profiles:  # the link through which snakemake finds the default profile beside a Snakefile
        (dest / "profiles").symlink_to(os.readlink(root / "profiles"))
    write_config(dest, cfg)
    return dest


def write_config(work: Path, cfg: dict) -> None:
    # sorted keys: the order of keys in config.yaml must not matter to what reruns
    (work / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=True))


def snakemake(
    workdir: Path, *args: str, cores: int = 2, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", str(cores), *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=env,
    )


def job_counts(out: str) -> dict[str, int]:
    lines = out.split("Job stats:")[-1].splitlines()
    return {
        ln.split()[0]: int(ln.split()[1])
        for ln in lines
        if len(ln.split()) == 2 and ln.split()[1].isdigit()
    }

"""Style and workflow lint as part of the suite, so README's one test command covers them."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

EVALUATE_SNAKEFILE = "workflow/src/probunlearn/evaluate/workflow/Snakefile"


def run(root, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True)


@pytest.mark.parametrize(
    "cmd",
    [("ruff", "check", "."), ("ruff", "format", "--check", ".")],
    ids=["ruff-check", "ruff-format"],
)
def test_ruff(root, cmd):
    exe = shutil.which(cmd[0])
    assert exe, "ruff is in the test extras: pip install -e '.[test]'"
    proc = run(root, exe, *cmd[1:])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_snakefmt(root):
    exe = shutil.which("snakefmt")
    assert exe, "snakefmt is in the test extras: pip install -e '.[test]'"
    proc = run(root, exe, "--check", "Snakefile", "workflow/rules", EVALUATE_SNAKEFILE)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_snakemake_lint(root):
    proc = run(root, sys.executable, "-m", "snakemake", "--lint")
    # snakemake --lint exits 0 even with findings: it prints them
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "Congratulations" in out and "Lints for" not in out, out[-3000:]

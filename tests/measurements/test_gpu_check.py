"""measurements/gpu_check.py: every CUDA path of the library in one command; here its CPU smoke test.

On a GPU it is the check of issue 37 (``python measurements/gpu_check.py``); here ``--device cpu
--tiny`` runs every check and the realistic benchmark on tiny models, in a process where polars and
Snakemake cannot be imported (a GPU machine may have neither)."""

from __future__ import annotations

import ast
import subprocess
import sys

from helpers import MEASUREMENTS

BENCH = MEASUREMENTS
# what a GPU machine has (issue 37), besides the standard library and the benchmarks' own modules
ALLOWED = {"torch", "transformers", "peft", "safetensors", "tokenizers", "tqdm", "numpy", "scipy",
           "pyarrow", "polars", "probunlearn"}  # fmt: skip
SCRIPTS = ("gpu_check", "bench_realistic", "decode_models", "static_decode", "unlearning_memory")


def test_gpu_check_smoke_without_polars():
    code = (
        "import sys, runpy\n"
        "sys.modules['polars'] = None; sys.modules['snakemake'] = None  # import fails\n"
        f"sys.argv = ['gpu_check.py', '--device', 'cpu', '--tiny', '--threads', '1']\n"
        f"runpy.run_path({str(BENCH / 'gpu_check.py')!r}, run_name='__main__')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    for check in ("load", "sampling", "tofu_losses", "finetune", "unlearn", "judge", "presets",
                  "bench"):  # fmt: skip
        assert any(line.startswith(f"PASS {check} (") for line in lines), out.stdout
    assert "8 of 8 passed" in out.stdout and "polars not imported" in out.stdout
    assert "the same samples on both models: True" in out.stdout


def test_gpu_check_imports_only_what_a_gpu_machine_has():
    for name in SCRIPTS:
        tree = ast.parse((BENCH / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                mods = [node.module]
            else:
                continue
            for mod in mods:
                top = mod.split(".")[0]
                ok = top in ALLOWED or top in sys.stdlib_module_names or top in SCRIPTS
                assert ok, f"benchmarks/{name}.py imports {mod}"

"""The workflow on a real SLURM cluster through its profile, workflow/profiles/slurm.

A one-node cluster, slurmctld and slurmd on localhost from Debian's slurm-wlm and munge, is started
by tests/slurm/cluster.sh for the module and stopped after it. A sub-DAG of the tiny config runs
on it through the SLURM profile as it is shipped: pretraining (a GPU rule: the node declares two
GPUs, the job asks for one with --gpus=1 and, torch having no CUDA here, runs on the CPU as on any
node without a GPU), two sampling shards grouped into one SLURM job (a GPU rule), and their scoring
(a CPU rule). Its results must be byte-identical to those of a local run of the same jobs. To keep
the test short, the world and the tokenizer (CPU rules upstream of pretraining) are copied from the
local run instead of being recomputed on the cluster, and the local run goes on meanwhile.

Only two settings are passed beside the profile, both about this cluster, not about the workflow:
the job states come from squeue (there is no accounting database behind sacct), and the first
status check comes after 1 s rather than the plugin's 40 s.

Skipped, with the reason, where SLURM or the executor plugin is not installed (`.ci/run` installs
slurm-wlm and munge where apt-get works, and the plugin in <venv>/slurm-plugin, a folder only the
cluster's runs have on their path: tests/slurm/plugin.txt) or where the daemons cannot be started
(not root). The last tests need no cluster: the local cap on GPU jobs, and the conda environments.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from helpers import ROOT
from helpers.workflow import copy_workflow

CLUSTER = ROOT / "tests" / "slurm" / "cluster.sh"
PLUGIN_LIST = ROOT / "tests" / "slurm" / "plugin.txt"
PLUGIN_DIR = Path(sys.prefix) / "slurm-plugin"
"""Where .ci/run installs the SLURM executor plugin (PLUGIN_LIST)."""
RUN = "results/tiny"
TARGET = f"{RUN}/bounds/pretrained/harmful/main.parquet"
# produced by the local run and copied into the cluster's working directory before it starts
SEEDED = [f"{RUN}/data", f"{RUN}/models/tokenizer"]
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "srun")


def _why_no_slurm() -> str | None:
    missing = [t for t in SLURM_TOOLS if shutil.which(t) is None]
    if missing:
        return (
            f"SLURM is not installed here (missing {', '.join(missing)}); "
            "install it with `apt-get install slurm-wlm munge` (.ci/run does, where apt-get works)"
        )
    plugin = importlib.machinery.PathFinder.find_spec(
        "snakemake_executor_plugin_slurm", [str(PLUGIN_DIR)]
    )
    if plugin is None:
        return (
            f"snakemake-executor-plugin-slurm is not in {PLUGIN_DIR} (pip install --no-deps "
            f"--target {PLUGIN_DIR} -r {PLUGIN_LIST.relative_to(ROOT)}, as .ci/run does)"
        )
    if os.geteuid() != 0:
        return "starting slurmd, which runs the jobs, needs root"
    return None


def _sub_config() -> dict:
    from helpers import tiny_config

    cfg = tiny_config(yaml.safe_load((ROOT / "config.yaml").read_text()))
    # two prompts per shard: the 3 harmful requests make 2 sampling shards, one group job on SLURM
    cfg["sampling"]["chunk_size"] = 2
    return cfg


def _snakemake(work: Path, args: list[str], env: dict | None = None, log: str = "snakemake.log"):
    """Run snakemake in `work`; return (returncode, combined output, wall seconds)."""
    start = time.monotonic()
    with open(work / log, "w") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "snakemake", *args],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=1200,
        )
    return proc.returncode, (work / log).read_text(), time.monotonic() - start


def _results(work: Path) -> dict[str, bytes]:
    """Every file the run wrote under results/, except logs and benchmarks (timings)."""
    out = {}
    for path in sorted((work / RUN).rglob("*")):
        rel = path.relative_to(work).as_posix()
        if path.is_file() and not re.match(rf"{RUN}/(logs|benchmarks)/", rel):
            out[rel] = path.read_bytes()
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = _why_no_slurm()
    if why:
        pytest.skip(why)
    state = tmp_path_factory.mktemp("slurm-cluster")
    up = subprocess.run(["bash", CLUSTER, "up", state], capture_output=True, text=True, timeout=120)
    if up.returncode != 0:
        subprocess.run(["bash", CLUSTER, "down", state], capture_output=True, timeout=60)
        pytest.fail(f"the one-node SLURM cluster did not start:\n{up.stdout}\n{up.stderr}")
    env = dict(os.environ)
    env["SLURM_CONF"] = str(state / "slurm.conf")
    env["PATH"] = f"{state / 'bin'}{os.pathsep}{env['PATH']}"
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(PLUGIN_DIR) + (os.pathsep + path if path else "")
    yield env
    subprocess.run(["bash", CLUSTER, "down", state], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory):
    cfg = _sub_config()
    base = tmp_path_factory.mktemp("slurm-wf")
    local = copy_workflow(ROOT, base / "local", cfg, profiles=False)
    # first the world and the tokenizer, locally; the cluster starts from copies of them
    code, out, _ = _snakemake(local, ["--cores", "2", "world", "tokenizer"], log="seed.log")
    assert code == 0, out[-6000:]
    slurm = copy_workflow(ROOT, base / "slurm", cfg, profiles=False)
    for rel in SEEDED:
        shutil.copytree(local / rel, slurm / rel)
    args = [
        "--workflow-profile",
        "workflow/profiles/slurm",
        "--slurm-status-command",
        "squeue",
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--verbose",
        TARGET,
    ]
    # then the same jobs locally and on the cluster, side by side (the SLURM run mostly waits
    # between status checks), or one after the other with PROBUNLEARN_SLURM_SEQUENTIAL=1, to
    # compare their wall times
    sequential = os.environ.get("PROBUNLEARN_SLURM_SEQUENTIAL") == "1"
    with ThreadPoolExecutor(2) as pool:
        on_slurm = pool.submit(_snakemake, slurm, args, cluster, "slurm.log")
        if sequential:
            on_slurm.result()
        code, out, local_s = pool.submit(_snakemake, local, ["--cores", "2", TARGET]).result()
        assert code == 0, out[-6000:]
        code, out, slurm_s = on_slurm.result()
    assert code == 0, out[-8000:]
    # the submitted command lines by rule (group), without the run's id, log path and the wrapped
    # snakemake call, which comes apart as the jobs it runs
    submitted = []
    for line in out.splitlines():
        m = re.match(r"sbatch call: (sbatch .*?) --wrap=(.*)", line)
        if m:
            name = re.search(r"--comment (\S+)", m.group(1)).group(1).split("_wildcards_")[0]
            call = re.sub(r"--job-name \S+ --output \S+ ", "", m.group(1))
            jobs = re.findall(r"--target-jobs ((?:'[^']*' ?)+)", m.group(2))[0].split()
            submitted.append((name, call, jobs))
    summary = "\n".join(
        [
            f"wall time of the same jobs ({'one after the other' if sequential else 'side by side'}):"
            f" local run {local_s:.1f} s, SLURM run {slurm_s:.1f} s"
        ]
        + [f"{name}: {call}" for name, call, _ in submitted]
    )
    (base / "summary.txt").write_text(summary + "\n")
    print(summary)
    return local, slurm, submitted


def test_slurm_results_are_byte_identical_to_local(runs):
    local, slurm, _ = runs
    ours, theirs = _results(slurm), _results(local)
    assert sorted(ours) == sorted(theirs)
    assert TARGET in ours and f"{RUN}/models/pretrained/model.safetensors" in ours
    assert [rel for rel in ours if ours[rel] != theirs[rel]] == []


def test_sbatch_calls(runs):
    _, _, submitted = runs
    # one SLURM job per rule, the two sampling shards in one group job, no retry; the seeded
    # rules are not run again
    names = [name for name, _, _ in submitted]
    assert names == ["rule_pretrain", "rule_sample_sample_shard", "rule_score"]
    calls = {name: call for name, call, _ in submitted}
    wrapped = {name: jobs for name, _, jobs in submitted}
    assert sorted(wrapped["rule_sample_sample_shard"]) == [
        f"'sample_shard:model=pretrained,evalset=harmful,setting=main,k={k}'" for k in (0, 1)
    ]
    gpu, group, cpu = calls["rule_pretrain"], calls["rule_sample_sample_shard"], calls["rule_score"]
    for call in (gpu, group):
        assert "--gpus=1" in call.split() and "--ntasks=1" not in call.split()
    assert "--gpus=1" not in cpu and "--ntasks=1" in cpu.split()
    for call in (gpu, group, cpu):
        assert "--requeue" in call.split()
        assert re.search(r" --mem \d+ ", call) and re.search(r" -t \d+ ", call)


# ---- without a cluster: the local cap on GPU jobs, the conda environments ---------------------


def _rule_resources(work: Path, env: dict, *args: str) -> dict[str, str]:
    """Rule name → its resources line, from a verbose dry-run of the whole DAG."""
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--verbose", "--forceall", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    found = {}
    for block in re.split(r"\nrule ", proc.stdout + proc.stderr)[1:]:
        m = re.search(r"^\s*resources: (.*)$", block, re.M)
        if m:
            found.setdefault(block.split(":", 1)[0], m.group(1))
    return found


@pytest.fixture(scope="module")
def dry_workflow(tmp_path_factory) -> Path:
    return copy_workflow(
        ROOT, tmp_path_factory.mktemp("slurm-dry") / "wf", _sub_config(), profiles=False
    )


GPU_RULES = {
    "pretrain",
    "target",
    "reference",
    "unlearn",
    "postfinetune",
    "sample_shard",
    "greedy_logprobs",
    "attack",
    "membership",
}


@pytest.mark.parametrize(("visible", "per_job"), [("", 0), ("0,1", 1)])
def test_local_run_caps_gpu_jobs_by_the_gpus_present(dry_workflow, visible, per_job):
    # a local run registers gpu=<GPUs present>: with none, the GPU rules ask for no GPU and run on
    # the CPU; with two, each asks for one and at most two run at once
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=visible)
    found = _rule_resources(dry_workflow, env)
    assert GPU_RULES <= set(found)
    for rule, res in found.items():
        res = res.split(", ")
        if rule in GPU_RULES:
            # and, on the first attempt, 2 GB and an hour (more on each retry)
            assert f"gpu={per_job}" in res and "mem_mb=2000" in res and "runtime=60" in res
        else:
            # (score asks for a GPU only with the HarmBench judge)
            assert not any(r.startswith("gpu=") and r != "gpu=0" for r in res), (rule, res)
    # --resources gpu=N wins over the GPUs present
    found = _rule_resources(dry_workflow, env, "--resources", "gpu=3")
    assert "gpu=1" in found["pretrain"].split(", ")


def _requirements(lines: list) -> dict[str, str]:
    from packaging.requirements import Requirement

    out = {}
    for line in lines:
        if isinstance(line, str) and not line.startswith("-"):
            req = Requirement(line.replace("=", "==", 1) if re.match(r"^[\w-]+=\d", line) else line)
            out[req.name.lower().replace("_", "-")] = str(req.specifier)
    return out


def test_conda_environments_follow_pyproject(root):
    pyproject = (root / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.S | re.M).group(1)
    deps = _requirements(re.findall(r'"([^"]+)"', block))
    named = set()
    for smk in (root / "workflow" / "rules").glob("*.smk"):
        named |= set(re.findall(r'"\.\./\.\./envs/([\w.-]+)"', smk.read_text()))
    assert named == {p.name for p in (root / "envs").glob("*.yaml")}
    for name in named:
        env = yaml.safe_load((root / "envs" / name).read_text())
        conda = [d for d in env["dependencies"] if isinstance(d, str)]
        pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
        # the package itself, with all its dependencies
        assert "-e ../" in pip, name
        # what the file lists beside it carries pyproject's bounds
        for pkg, spec in {**_requirements(conda), **_requirements(pip)}.items():
            if pkg == "python":
                assert spec == "==3.11", name
            elif pkg != "pip":
                assert deps.get(pkg) == spec, (name, pkg, spec)

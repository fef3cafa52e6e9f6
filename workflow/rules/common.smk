# Config validation and thin wiring: what the run makes is decided in probunlearn.dag (importable and
# unit-tested, tests/dag/test_design.py); this file binds it to Snakemake.
import os
import re

from probunlearn.storage.checkpoints import spec_identity
from probunlearn.config import effective_config, validate_config
from probunlearn.dag import Design, canon, check_config, parse_unlearned
from probunlearn.benchmarks import BENCHMARKS
from probunlearn.core import RULES as CORE_RULES
from probunlearn.attacks.naming import EVALSET_PATTERN
from probunlearn.dag.naming import retain_split, unlearned_pattern
from probunlearn.dag.resources import gpu_mem_mb, gpu_runtime, gpus_present
from probunlearn.data.evalsets import RETAIN_OF, WORLD_SETS

# A file that says `base: paper` (a preset) is laid over workflow/defaults/paper.yaml instead of
# config.yaml, so no value of the mini run reaches it (probunlearn.config).
_effective = effective_config(
    workflow.config_settings.overwrite_config, workflow.basedir, config
)
config.clear()
config.update(_effective)
validate_config(config, workflow.source_path("../schemas/config.schema.yaml"))
check_config(config)

# A local run runs at most one GPU rule per GPU present at a time; with no GPU, the GPU rules are
# capped to gpu=0 and run on the CPU, as many at once as the cores allow. `--resources gpu=N`
# overrides; a cluster executor is not capped here (each job gets its own GPU there).
if workflow.local_exec and "gpu" not in workflow.global_resources:
    workflow.register_resource("gpu", gpus_present())

D = Design(config)  # the experiment design: models, sampled runs, figure inputs
CORE = D  # the planner of the evaluation core's rules (probunlearn.core)
UNLEARNED_PATTERN = unlearned_pattern()
P = D.paths  # every artifact's path
BENCH = config["benchmarks"]
HUB_MODELS = config["models"]
T1 = config["unlearning"]["table1"]
PFT = config["dcue"]["postfinetune"]


wildcard_constraints:
    model="[A-Za-z0-9_.-]+",
    setting="[A-Za-z0-9_.]+",
    k="[0-9]+",
    evalset=EVALSET_PATTERN,
    split="forget01|forget05|forget10",


def conda_env(name):
    """The conda environment file envs/<name>.yaml (for rules outside workflow/rules/)."""
    return os.path.join(workflow.basedir, "envs", f"{name}.yaml")


def core_env(kind):
    """The conda environment of an evaluation-core job (probunlearn.core)."""
    return conda_env(kind)


def benchmark_rules():
    """The rules files of the registered benchmarks' own experiments."""
    return [f for f in (b.rules_file() for b in BENCHMARKS) if f]


def run_params(threads):
    """The params every training rule shares, as one dict of scalars (Design.run_params)."""
    return D.run_params(threads)


def model_identity(name):
    """A preset model's identity (probunlearn.storage.checkpoints.spec_identity), digests cached by size
    and mtime in resources/."""
    return spec_identity(
        HUB_MODELS[name], cache=os.path.join(P.res, "fingerprints.json")
    )


def data_of_split(wc):
    """The eval-set file of an unlearned model's forget split (wildcard `model`)."""
    return P.data(parse_unlearned(wc.model)["split"])


# ---- the report: captions in workflow/report/ -------------------------------------------------
def caption(name):
    """Absolute path of a report caption in workflow/report/."""
    return os.path.join(workflow.basedir, "workflow", "report", f"{name}.rst")


def figure_outputs(*names):
    """PNG (in the report, captioned from workflow/report/) and PDF of each figure."""
    out = []
    for n in names:
        png = report(P.figure(n), caption=caption(n), category="Figures")
        out += [png, P.figure(n, "pdf")]
    return out


def report_table(name, category="Tables"):
    """A table's CSV, in the report under its caption."""
    return report(P.table(name), caption=caption(name), category=category)


def all_targets():
    return (
        [P.config, P.table("metrics")]
        + figure_outputs(*D.figure_names())
        + D.table_targets()
        + D.claims_targets()
    )

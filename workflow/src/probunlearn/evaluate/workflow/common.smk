# probunlearn evaluate: the plan of the run and the functions its rules use (no rules here).
import os

from probunlearn.dag import canon
from probunlearn.dag.resources import gpu_mem_mb, gpu_runtime
from probunlearn.evaluate.plan import Plan

PLAN = Plan(config, fingerprint_cache=".probunlearn/fingerprints.json")
PLAN.check()
CORE = PLAN  # the planner of the evaluation core's rules (probunlearn.core)
EV = config["evaluate"]
SET = PLAN.sampled_set
SETTING = PLAN.SETTING
EVALUATED = PLAN.names("evaluated")
# the models the summary lists: every model evaluated in this output directory so far whose results
# are this call's data and settings (earlier calls' first, their files are inputs no rule makes),
# or with --summary this only this call's
SUMMARY = PLAN.summary_models()
# the original too is sampled and scored: every evaluated model is compared with it
ORIGINAL = [PLAN.original] if PLAN.original else []
OPENUNLEARNING = PLAN.openunlearning_files()
# a benchmark's own job per model (None for most: probunlearn.benchmarks.ModelJob)
JOB = PLAN.benchmark_job


def extra_tables():
    """The attack and membership tables the summary shows (none where the run has neither):
    --attack (probunlearn.evaluate.attacks) and membership inference with a holdout set
    (probunlearn.evaluate.membership), made by the core's rules."""
    out = {}
    if PLAN.attacks is not None:
        out["attacks"] = report_table("attacks")
    if PLAN.membership.on:
        out["membership"] = report_table("membership")
    return out


def report_table(name):
    """A table of the core's rules (attacks, membership): <name>.csv in the output directory."""
    return f"{name}.csv"


def figure_outputs(name):
    """A figure of the core's rules: figures/<name>.png and .pdf."""
    return [f"figures/{name}.png", f"figures/{name}.pdf"]


def core_env(kind):
    """Every job of an evaluation runs in the one environment the package ships."""
    return os.path.join(workflow.basedir, "envs", "probunlearn.yaml")

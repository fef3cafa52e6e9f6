# Shared helpers: config validation, paths and the recipe behind each model name.
import os
import re

from probunlearn.config import effective_config, validate_config

# A file that says `base: paper` (a preset) is laid over workflow/defaults/paper.yaml instead of
# config.yaml, so no value of the mini run reaches it (probunlearn.config).
_effective = effective_config(
    workflow.config_settings.overwrite_config, workflow.basedir, config
)
config.clear()
config.update(_effective)
validate_config(config, workflow.source_path("../schemas/config.schema.yaml"))


# ---- resources of the GPU rules ---------------------------------------------------------------
# pretrain, target, reference, unlearn, postfinetune, sample_shard and evaluate declare gpu=1 and a
# memory and runtime that grow with each retry (`--retries`; the slurm profile sets 3). On SLURM,
# gpu=1 is `--gpus=1`; workflow/profiles/slurm sizes these rules up for the real presets.
def gpu_mem_mb(wildcards, attempt):
    return 2000 * attempt


def gpu_runtime(wildcards, attempt):
    """Minutes."""
    return 60 * attempt


def gpus_present():
    """The GPUs this machine shows: those in CUDA_VISIBLE_DEVICES if set, else NVIDIA's devices."""
    import glob

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    # /dev/nvidia0, /dev/nvidia1, ...: device files, not a path of the workflow's
    return len(glob.glob(os.path.join(os.sep, "dev", "nvidia[0-9]*")))


# A local run runs at most one GPU rule per GPU present at a time; with no GPU, the GPU rules are
# capped to gpu=0 and run on the CPU, as many at once as the cores allow. `--resources gpu=N`
# overrides; a cluster executor is not capped here (each job gets its own GPU there).
if workflow.local_exec and "gpu" not in workflow.global_resources:
    workflow.register_resource("gpu", gpus_present())

RUN = config["run"]
OUT = f"results/{RUN}"
RES = "resources"
TEMPLATE = config["template"]
TOFU_EVAL = config["tofu_eval"]
EXPERIMENTS = set(config["experiments"])
_NEEDS_TOFU = sorted(EXPERIMENTS & {"random_lambdas", "dcue"})
if _NEEDS_TOFU and "tofu" not in EXPERIMENTS:
    raise ValueError(
        f"config experiments: {_NEEDS_TOFU} use TOFU's metrics: add 'tofu' to experiments"
    )
if "sequential" in EXPERIMENTS and "sequential" not in config["sampling"][
    "settings"
].get("seq", {}):
    raise ValueError(
        "config experiments: 'sequential' samples with the setting sampling.settings.seq, which "
        "must exist and have a 'sequential' block (q, leak_threshold, round_size, score)"
    )
for _name, _setting in config["sampling"]["settings"].items():
    _seq = _setting.get("sequential")
    if _seq and (_setting["n"] % _seq["round_size"] or _setting["adaptive"]):
        raise ValueError(
            f"config sampling.settings.{_name}: a sequential setting needs adaptive: false and "
            f"round_size ({_seq['round_size']}) dividing n ({_setting['n']})"
        )
    if _seq and _setting["temperature"] <= 0:
        raise ValueError(
            f"config sampling.settings.{_name}: sequential needs temperature > 0"
        )
BENCH = config["benchmarks"]
HUB_MODELS = config["models"]
WORLD_SETS = [
    "full",
    "forget01",
    "forget05",
    "forget10",
    "retain99",
    "retain95",
    "retain90",
    "retain",
    "holdout",
    "real_authors",
    "world_facts",
    "saga",
    "harmful",
    "benign",
]

_WORLD_KEYS = [
    k for k in ("world", "tokenizer", "model", "pretrain") if k not in config
]
if not BENCH and _WORLD_KEYS:
    raise ValueError(
        f"config: the synthetic world (benchmarks: null) needs the keys {_WORLD_KEYS}; a file "
        "with `base: paper` has none of them: set benchmarks, or drop `base` to lay the file over "
        "config.yaml"
    )
if BENCH:
    from probunlearn.benchmarks import benchmark_sets, benchmark_sizes

    DATA_SETS = benchmark_sets(BENCH)
    BENCH_SIZES = benchmark_sizes(BENCH)
else:
    DATA_SETS = WORLD_SETS
# author sets (TOFU-like): greedy evaluation, log-probabilities, forget quality, unlearning
HAS_AUTHORS = "full" in DATA_SETS

# model utility needs greedy ROUGE on the utility sets, so they are always answered greedily
GREEDY_SETS = [
    s
    for s in config["greedy_eval"]["evalsets"]
    + [
        s
        for s in ("retain", "real_authors", "world_facts")
        if s not in config["greedy_eval"]["evalsets"]
    ]
    if s in DATA_SETS
]
RETAIN_OF = {"forget01": "retain99", "forget05": "retain95", "forget10": "retain90"}


wildcard_constraints:
    model="[A-Za-z0-9_.-]+",
    setting="[A-Za-z0-9_.]+",
    k="[0-9]+",
    evalset="[a-z0-9_]+",
    split="forget01|forget05|forget10",


def canon(d):
    """A dict param with sorted keys, so reordering config.yaml reruns nothing."""
    return {k: canon(v) if isinstance(v, dict) else v for k, v in sorted(d.items())}


# ---- real data sets (config benchmarks) and real models (config models) ------------------------
def _datasets():
    """{data set: {file name: key}} of the data sets the run's benchmarks use."""
    from probunlearn.downloads import DATASETS

    from probunlearn.benchmarks import tofu_files

    used = {}
    if BENCH.get("tofu"):
        used["tofu"] = tofu_files(BENCH["tofu"])
    if BENCH.get("hp_qa"):
        used["hp_qa"] = DATASETS["hp_qa"].default
    if BENCH.get("jbb"):
        used["jbb"] = DATASETS["jbb"].default
    return {
        ds: {DATASETS[ds].files[k].name: k for k in keys} for ds, keys in used.items()
    }


DATA_FILES = _datasets() if BENCH else {}


def dataset_key(dataset, filename):
    return DATA_FILES[dataset][filename]


def dataset_local(dataset):
    """The local copy to take the files from (benchmarks.local/<data set>), or None: download."""
    return os.path.join(BENCH["local"], dataset) if BENCH["local"] else None


def dataset_revision(dataset):
    spec = BENCH.get(dataset)
    return spec.get("revision") if isinstance(spec, dict) else None


def benchmark_inputs(wildcards):
    return {
        ds: [f"{RES}/data/{ds}/{name}" for name in files]
        for ds, files in DATA_FILES.items()
    }


def model_path(name):
    """Directory of a model: resources/models/<name> for a real model of config `models`, else the run's."""
    return f"{RES}/models/{name}" if name in HUB_MODELS else f"{OUT}/models/{name}"


if BENCH and HAS_AUTHORS and "pretrained" not in HUB_MODELS:
    raise ValueError(
        "config: benchmarks.tofu needs a real model to fine-tune: set models.pretrained "
        "(the synthetic pretraining runs on the synthetic world only)"
    )


JUDGE = config["judge"]
HARMBENCH = JUDGE["harm"] == "harmbench"
if HARMBENCH and JUDGE["model"] not in HUB_MODELS:
    raise ValueError(
        "config judge.model: the HarmBench classifier must be a model named in `models`, "
        f"got {JUDGE['model']!r}"
    )


def harm_judge(evalset):
    """The judge of a request set (None for other sets)."""
    if evalset not in ("harmful", "benign"):
        return None
    return (
        {"harm": JUDGE["harm"], "batch_size": JUDGE["batch_size"]}
        if HARMBENCH
        else None
    )


def harm_threshold(evalset):
    """Decision threshold of the harm judge's probability for a request set (None for others)."""
    return JUDGE["threshold"] if evalset in ("harmful", "benign") else None


def judge_input(wildcards):
    if harm_judge(wildcards.evalset) is not None:
        return {"judge": model_path(JUDGE["model"])}
    return {}


def template_of(model):
    """Prompt template of a model: its own (config models.<name>.template) or the run's."""
    spec = HUB_MODELS.get(model)
    return spec["template"] if spec and spec.get("template") else TEMPLATE


def base_models():
    """Pretrained, target and one reference per forget split (trained, or real models of `models`);
    the references only where TOFU's metrics are computed (experiment `tofu`)."""
    if not HAS_AUTHORS:
        return []
    refs = (
        [f"reference_{s}" for s in config["references"]]
        if "tofu" in EXPERIMENTS
        else []
    )
    return ["pretrained", "target"] + refs


def evaluated_models():
    """Models with greedy answers, log-probabilities and TOFU's metrics (experiment `tofu`)."""
    return all_models() if "tofu" in EXPERIMENTS else []


def greedy_parts():
    return expand(f"{OUT}/metrics/{{model}}/greedy.csv", model=evaluated_models())


def all_targets():
    return (
        [f"{OUT}/config.yaml", f"{OUT}/tables/metrics.csv"]
        + figure_targets()
        + claims_targets()
    )


def metric_parts():
    tofu = expand(f"{OUT}/metrics/{{model}}/tofu.csv", model=evaluated_models())
    if "dcue" not in EXPERIMENTS:
        return greedy_parts() + sampled_parts() + tofu
    dcue = expand(f"{OUT}/metrics/{{model}}/dcue.csv", model=dcue_models())
    pft = expand(
        f"{OUT}/metrics/{{model}}/postfinetune.csv", model=postfinetune_models()
    )
    return greedy_parts() + sampled_parts() + tofu + dcue + pft


# ---- unlearned models: names encode the recipe ------------------------------------------------
# "{method}-{split}-f{lambda_f}-r{lambda_r}", e.g. "npo_eo-forget10-f1-r0"; the split may be "saga".
# Hyper-parameters shared by every unlearned model (lr, epochs, ...) are params of the rule, so a
# change retrains them all; a changed lambda is a new name and trains only that model.


def unlearned_name(method, split, lambda_f=0.0, lambda_r=0.0):
    if method == "npo_eo" and lambda_f == 0 and lambda_r == 0:
        method = "npo"
    return f"{method}-{split}-f{lambda_f:g}-r{lambda_r:g}"


def parse_unlearned(name):
    method, split, lf, lr = name.split("-", 3)
    return {
        "method": method,
        "split": split,
        "lambda_f": float(lf[1:]),
        "lambda_r": float(lr[1:]),
    }


def random_lambdas():
    """Seeded draws of lambda_f in [0, 1] per split, lambda_r = 0 (Fig. 5c: the paper draws
    lambda_f only)."""
    import random

    spec = config["unlearning"]["random_lambdas"]
    rng = random.Random(spec["seed"])
    return [
        (split, round(rng.uniform(0, 1), 3), 0.0)
        for split in spec["splits"]
        for _ in range(spec["draws"])
    ]


UL = config["unlearning"]
T1 = UL["table1"]
_FIG4A = set(UL["lambda_f_sweep"]["fig4a_splits"]) - set(UL["lambda_f_sweep"]["splits"])
if _FIG4A:
    raise ValueError(
        f"config unlearning.lambda_f_sweep.fig4a_splits: {sorted(_FIG4A)} not in its splits"
    )


def table1_models():
    """Method label → model name, for Table 1 (Ours = npo_eo, sampled with adaptive temperature)."""
    if "table1" not in EXPERIMENTS:
        return {}
    return {
        m: unlearned_name(m, T1["split"], UL["lambda_f"] if m == "npo_eo" else 0.0)
        for m in T1["methods"]
    }


def lambda_f_models(split):
    if "lambda_f" not in EXPERIMENTS:
        return {}
    return {
        lf: unlearned_name("npo_eo", split, lf) for lf in UL["lambda_f_sweep"]["values"]
    }


def lambda_r_models():
    if "lambda_r" not in EXPERIMENTS:
        return {}
    sw = UL["lambda_r_sweep"]
    return {
        lr: unlearned_name("npo_eo", sw["split"], sw["lambda_f"], lr)
        for lr in sw["values"]
    }


def random_models():
    if "random_lambdas" not in EXPERIMENTS:
        return {}
    return {
        (s, lf, lr): unlearned_name("npo_eo", s, lf, lr)
        for s, lf, lr in random_lambdas()
    }


SAGA_MODEL = UL["saga_model"] or unlearned_name(UL["saga_method"], "saga")


def unlearned_models():
    names = set(table1_models().values()) | set(lambda_r_models().values())
    for split in UL["lambda_f_sweep"]["splits"]:
        names |= set(lambda_f_models(split).values())
    names |= set(random_models().values())
    if "saga" in EXPERIMENTS and SAGA_MODEL not in HUB_MODELS:
        names.add(SAGA_MODEL)
    if "lambda_r" in EXPERIMENTS:
        names.add(unlearned_name("npo", UL["lambda_r_sweep"]["split"]))
    return sorted(names)


def all_models():
    return base_models() + unlearned_models()


# ---- what gets sampled: (model, eval set, sampling setting) ----------------------------------
UTILITY_SETS = ["retain", "real_authors", "world_facts"]


def sampled_runs():
    t1 = table1_models()
    runs = {("target", T1["split"], "main")} if t1 else set()
    for method, model in t1.items():
        runs.add((model, T1["split"], "main"))
        if T1["sample_utility"]:
            runs |= {(model, s, "utility") for s in ("real_authors", "world_facts")}
    if "npo_eo" in t1:
        runs.add((t1["npo_eo"], T1["split"], "ats"))
    sw = UL["lambda_f_sweep"]
    for split in sw["fig4a_splits"]:
        runs |= {
            (m, split, sweep_setting(m, split)) for m in lambda_f_models(split).values()
        }
    for m in lambda_f_models(T1["split"]).values():
        runs |= {(m, T1["split"], f"t{t:g}") for t in sw["temperatures"]}
        runs.add((m, T1["split"], sweep_setting(m, T1["split"])))
    if "lambda_r" in EXPERIMENTS:
        for m in list(lambda_r_models().values()) + [
            unlearned_name("npo", UL["lambda_r_sweep"]["split"])
        ]:
            runs |= {(m, s, "utility") for s in ("real_authors", "world_facts")}
    for (split, _, _), m in random_models().items():
        runs.add((m, split, "sweep"))
    if "saga" in EXPERIMENTS:
        runs.add((SAGA_MODEL, "saga", "main"))
    runs |= {(m, T1["split"], "seq") for m in sequential_models().values()}
    if "alignment" in EXPERIMENTS:
        al = config["alignment"]
        runs |= {(m, e, "main") for m in al["models"] for e in al["sets"]}
    return sorted(runs)


def sequential_models():
    """Label -> model sampled sequentially (experiment `sequential`): the target, NPO, NPO+EO."""
    if "sequential" not in EXPERIMENTS:
        return {}
    t1 = table1_models()
    out = {"target": "target"}
    out |= {LABELS[m]: t1[m] for m in ("npo", "npo_eo") if m in t1}
    return out


def sequential_params(setting):
    """The sequential block of a sampling setting with the bounds' alpha, or None."""
    seq = sampling_setting(setting).get("sequential")
    return None if seq is None else {**seq, "alpha": config["bounds"]["alpha"]}


def with_sequential(setting):
    """``{"sequential": ...}`` for a sequential setting's sampling params, else nothing (so the
    params of the other settings stay as they were)."""
    seq = sequential_params(setting)
    return {} if seq is None else {"sequential": canon(seq)}


def sweep_setting(model, split):
    """Fig. 4's runs at temperature 1: a Table 1 model reuses its 'main' samples (more of them, same
    distribution) instead of being sampled again at the sweep's n."""
    if split == T1["split"] and model in table1_models().values():
        return "main"
    return "sweep"


def sampling_setting(setting):
    if setting not in config["sampling"]["settings"]:
        raise ValueError(f"unknown sampling setting {setting!r}")
    return config["sampling"]["settings"][setting]


def evalset_rows(evalset):
    """Rows of an eval set, from the config alone."""
    if BENCH:
        return BENCH_SIZES[evalset]
    from probunlearn.data import evalset_size

    return evalset_size(evalset, config["world"])


def shards(evalset):
    return range(-(-evalset_rows(evalset) // config["sampling"]["chunk_size"]))


def sampled_parts():
    return [f"{OUT}/metrics/{m}/{e}.{s}.csv" for m, e, s in sampled_runs()]


def model_recipe(model):
    """(method, split) of a model name, for the rows of metrics.csv."""
    if model in ("pretrained", "target"):
        return model, ""
    if model in HUB_MODELS:
        return "hub", ""
    if model.startswith("reference_"):
        return "reference", model.split("_", 1)[1]
    rec = parse_unlearned(model)
    return rec["method"], rec["split"]


UNLEARNED_PATTERN = r"[a-z_]+-(forget01|forget05|forget10|saga)-f[0-9.e-]+-r[0-9.e-]+"


def retain_split(model):
    """The retain set paired with a model's forget set (retain90 for the saga)."""
    split = parse_unlearned(model)["split"]
    return RETAIN_OF.get(split, "retain90")


def max_new_tokens(evalset):
    s = config["sampling"]
    return (
        s["max_new_tokens_requests"]
        if evalset in ("harmful", "benign")
        else s["max_new_tokens"]
    )


def dcue_models():
    """Unlearned models of the author splits (DCUE needs core spans and a holdout set)."""
    if "dcue" not in EXPERIMENTS:
        return []
    return [m for m in unlearned_models() if parse_unlearned(m)["split"] != "saga"]


PFT = config["dcue"]["postfinetune"]


def postfinetune_models():
    """Table 1 models whose forget quality and DCUE are re-measured after a short fine-tune."""
    if "dcue" not in EXPERIMENTS:
        return []
    t1 = table1_models()
    return [t1[m] for m in PFT["methods"] if m in t1]


def unlearn_hparams(model):
    """Shared unlearning hparams with the method's overrides applied."""
    method = parse_unlearned(model)["method"]
    return canon({**UL["hparams"], **UL["overrides"].get(method, {})})


LOGPROB_SETS = [
    s
    for s in (
        "forget01",
        "forget05",
        "forget10",
        "retain",
        "holdout",
        "real_authors",
        "world_facts",
    )
    if s in DATA_SETS and (s != "holdout" or "dcue" in EXPERIMENTS)
]


def tofu_forget_split(model):
    """The forget split a model's forget quality is measured on ('' for the saga model)."""
    method, split = model_recipe(model)
    if split == "saga":
        return ""
    return split or T1["split"]


def forget_reference(split):
    """The forget-quality reference of a forget split: TOFU's published eval log of its retain
    model (tofu_eval.published_retain_logs), or the log-probabilities of the run's reference.
    """
    family = TOFU_EVAL["published_retain_logs"]
    if family:
        return {
            "reference_log": f"{RES}/tofu_logs/{family}/{split}/eval_log_forget.json"
        }
    return {"reference": f"{OUT}/logprobs/reference_{split}/{split}.parquet"}


def postfinetune_reference(wc):
    return forget_reference(parse_unlearned(wc.model)["split"])


# TOFU's eval sets with its own greedy answers (its ROUGE): the forget splits and the utility sets
TOFU_GEN_SETS = [s for s in LOGPROB_SETS if s != "holdout"]


def tofu_params():
    """The tofu_eval settings that change TOFU's losses and answers (not where the reference
    comes from)."""
    return canon({k: v for k, v in TOFU_EVAL.items() if k != "published_retain_logs"})


def tofu_inputs(wc):
    split = tofu_forget_split(wc.model)
    lp = f"{OUT}/logprobs/{wc.model}"
    inputs = {
        "retain": f"{lp}/retain.parquet",
        "real_authors": f"{lp}/real_authors.parquet",
        "world_facts": f"{lp}/world_facts.parquet",
        "greedy": f"{OUT}/metrics/{wc.model}/greedy.csv",
    }
    if split:
        inputs["forget"] = f"{lp}/{split}.parquet"
        inputs.update(forget_reference(split))
        if "reference_log" in inputs:  # its questions are checked against the split's
            inputs["forget_rows"] = f"{OUT}/data/{split}.parquet"
    return inputs


FIG = f"{OUT}/figures"


TAB = f"{OUT}/tables"


def scores_path(model, evalset, setting):
    return f"{OUT}/scores/{model}/{evalset}/{setting}.parquet"


def samples_paths(model, evalset, setting):
    return [
        f"{OUT}/samples/{model}/{evalset}/{setting}/shard-{k}.parquet"
        for k in shards(evalset)
    ]


LABELS = {"rmu": "RMU", "gd": "GD", "ga": "GA", "npo": "NPO", "npo_eo": "NPO+EO"}


def table1_scores():
    t1 = table1_models()
    out = {LABELS[m]: scores_path(t1[m], T1["split"], "main") for m in t1}
    if "npo_eo" in t1:
        out["Ours"] = scores_path(t1["npo_eo"], T1["split"], "ats")
    return out


def caption(name):
    """Absolute path of a report caption in workflow/report/."""
    return os.path.join(workflow.basedir, "workflow", "report", f"{name}.rst")


def figure_outputs(*names):
    """PNG (in the report, captioned from workflow/report/) and PDF of each figure."""
    out = []
    for n in names:
        png = report(f"{FIG}/{n}.png", caption=caption(n), category="Figures")
        out += [png, f"{FIG}/{n}.pdf"]
    return out


def fig4_runs():
    sw = UL["lambda_f_sweep"]
    lam = [
        (s, lf, scores_path(m, s, sweep_setting(m, s)))
        for s in sw["fig4a_splits"]
        for lf, m in lambda_f_models(s).items()
    ]
    temp = [
        (lf, t, scores_path(m, T1["split"], f"t{t:g}"))
        for lf, m in lambda_f_models(T1["split"]).items()
        for t in sw["temperatures"]
    ]
    temp += [
        (lf, 1.0, scores_path(m, T1["split"], sweep_setting(m, T1["split"])))
        for lf, m in lambda_f_models(T1["split"]).items()
    ]
    return {"lambda_f": lam, "temperature": temp}


def fig5a_runs():
    sets = ("real_authors", "world_facts")
    runs = [
        (lr, e, samples_paths(m, e, "utility"))
        for lr, m in lambda_r_models().items()
        for e in sets
    ]
    npo = unlearned_name("npo", UL["lambda_r_sweep"]["split"])
    return {"runs": runs, "npo": [(e, samples_paths(npo, e, "utility")) for e in sets]}


def fig5b_histories():
    return {
        f"λf={lf:g}": f"{OUT}/unlearning/{m}.csv"
        for lf, m in lambda_f_models(T1["split"]).items()
    }


def fig5c_runs():
    rnd = [
        (s, lf, lr, f"{OUT}/metrics/{m}/{s}.sweep.csv", f"{OUT}/metrics/{m}/tofu.csv")
        for (s, lf, lr), m in random_models().items()
    ]
    # (grid, lambda, the other lambda held fixed, split, metrics): the fixed value is the one
    # the sweep's models were trained with (lambda_r_sweep.lambda_f; lambda_r of the lambda_f sweep)
    sw = UL["lambda_r_sweep"]
    grid = [
        ("lambda_r", lr, sw["lambda_f"], sw["split"], f"{OUT}/metrics/{m}/tofu.csv")
        for lr, m in lambda_r_models().items()
    ]
    grid += [
        (
            "lambda_f",
            lf,
            parse_unlearned(m)["lambda_r"],
            s,
            f"{OUT}/metrics/{m}/tofu.csv",
        )
        for s in UL["lambda_f_sweep"]["splits"]
        for lf, m in lambda_f_models(s).items()
    ]
    return {"random": rnd, "grid": grid}


FIG6_MODELS = {m: m for m in config["alignment"]["models"]}


def has_fig3_tofu():
    """Fig. 3b-f compare GA, GD, NPO and Ours: Table 1 must have those methods."""
    return {"ga", "gd", "npo", "npo_eo"} <= set(table1_models())


def figure_targets():
    names, tables = [], []
    if "table1" in EXPERIMENTS:
        tables.append(f"{TAB}/table1.csv")
        if has_fig3_tofu():
            names += ["fig3b", "fig3c", "fig3d", "fig3e", "fig3f"]
    if "saga" in EXPERIMENTS:
        names.append("fig3a")
    if "lambda_f" in EXPERIMENTS:
        names += ["fig4a", "fig4b", "fig5b"]
    if "lambda_r" in EXPERIMENTS:
        names.append("fig5a")
    if "random_lambdas" in EXPERIMENTS:
        names.append("fig5c")
        tables.append(f"{TAB}/table2.csv")
    if "alignment" in EXPERIMENTS:
        names.append("fig6")
    if "dcue" in EXPERIMENTS:
        tables.append(f"{TAB}/dcue_vs_fq.csv")
    if "sequential" in EXPERIMENTS:
        names.append("sequential")
    return figure_outputs(*names) + tables


# ---- the paper's claims (rule claims, probunlearn.claims) ------------------------------------
def claims_inputs():
    """Table name → CSV of the tables the claims read, for the run's experiments."""
    t = {"metrics": f"{TAB}/metrics.csv"} if "alignment" in EXPERIMENTS else {}
    if "table1" in EXPERIMENTS:
        t["table1"] = f"{TAB}/table1.csv"
        if has_fig3_tofu():
            t["fig3d"] = f"{TAB}/fig3d.csv"
    if "saga" in EXPERIMENTS:
        t["fig3a"] = f"{TAB}/fig3a.csv"
    if "lambda_f" in EXPERIMENTS:
        t |= {n: f"{TAB}/{n}.csv" for n in ("fig4a", "fig4b", "fig5b")}
    if "lambda_r" in EXPERIMENTS:
        t["fig5a"] = f"{TAB}/fig5a.csv"
    if "random_lambdas" in EXPERIMENTS:
        t |= {n: f"{TAB}/{n}.csv" for n in ("fig5c", "table2")}
    if "alignment" in EXPERIMENTS:
        t["fig6"] = f"{TAB}/fig6.csv"
    if "dcue" in EXPERIMENTS:
        t["dcue_meta"] = f"{TAB}/dcue_meta.csv"
    return t


def claims_targets():
    """claims.csv where the run makes a table a claim reads."""
    return [f"{TAB}/claims.csv"] if claims_inputs() else []

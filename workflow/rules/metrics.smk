# Teacher-forced log-probabilities, TOFU's forget quality and model utility, and DCUE.

LOGPROB_SETS = [
    "forget01",
    "forget05",
    "forget10",
    "retain",
    "holdout",
    "real_authors",
    "world_facts",
]


rule logprobs:
    input:
        model=f"{OUT}/models/{{model}}",
        evalsets=expand(f"{OUT}/data/{{evalset}}.parquet", evalset=LOGPROB_SETS),
    output:
        expand(
            f"{OUT}/logprobs/{{{{model}}}}/{{evalset}}.parquet", evalset=LOGPROB_SETS
        ),
    log:
        f"{OUT}/logs/logprobs/{{model}}.log",
    conda:
        "../../envs/torch.yaml"
    threads: config["threads"]["eval"]
    params:
        template=lambda wc: TEMPLATE,
        dtype=config["dtype"],
        device=config["device"],
        threads=config["threads"]["eval"],
    script:
        "../scripts/logprobs.py"


def tofu_forget_split(model):
    """The forget split a model's forget quality is measured on ('' for the saga model)."""
    method, split = model_recipe(model)
    if split == "saga":
        return ""
    return split or T1["split"]


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
        inputs["reference"] = f"{OUT}/logprobs/reference_{split}/{split}.parquet"
    return inputs


rule tofu_metrics:
    input:
        unpack(tofu_inputs),
    output:
        f"{OUT}/metrics/{{model}}/tofu.csv",
    log:
        f"{OUT}/logs/tofu_metrics/{{model}}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        recipe=lambda wc: model_recipe(wc.model),
        forget_split=lambda wc: tofu_forget_split(wc.model),
    script:
        "../scripts/tofu_metrics.py"


rule dcue:
    input:
        orig_forget=lambda wc: f"{OUT}/logprobs/target/{parse_unlearned(wc.model)['split']}.parquet",
        unl_forget=lambda wc: f"{OUT}/logprobs/{wc.model}/{parse_unlearned(wc.model)['split']}.parquet",
        orig_val=f"{OUT}/logprobs/target/holdout.parquet",
        unl_val=f"{OUT}/logprobs/{{model}}/holdout.parquet",
        forget_rows=lambda wc: f"{OUT}/data/{parse_unlearned(wc.model)['split']}.parquet",
        val_rows=f"{OUT}/data/holdout.parquet",
    output:
        metrics=f"{OUT}/metrics/{{model}}/dcue.csv",
        confidences=f"{OUT}/dcue/{{model}}.parquet",
    log:
        f"{OUT}/logs/dcue/{{model}}.log",
    wildcard_constraints:
        model=UNLEARNED_PATTERN,
    conda:
        "../../envs/analysis.yaml"
    params:
        recipe=lambda wc: model_recipe(wc.model),
    script:
        "../scripts/dcue.py"

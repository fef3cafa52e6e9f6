# TOFU's forget quality and model utility, and DCUE (from the log-probabilities of rule evaluate).


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
        ds_size=TOFU_EVAL["ds_size"],
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
        core_model=config["dcue"]["core_model"],
        core_model_revision=config["dcue"]["core_model_revision"],
        core_prompts={
            k: config["dcue"][k] for k in ("reformulation_prompt", "core_prompt")
        },
    script:
        "../scripts/dcue.py"


rule postfinetune:
    input:
        unpack(postfinetune_reference),
        model=lambda wc: model_path(wc.model),
        unrelated=expand(f"{OUT}/data/{{evalset}}.parquet", evalset=PFT["data"]),
        forget_rows=lambda wc: f"{OUT}/data/{parse_unlearned(wc.model)['split']}.parquet",
        val_rows=f"{OUT}/data/holdout.parquet",
        orig_forget=lambda wc: f"{OUT}/logprobs/target/{parse_unlearned(wc.model)['split']}.parquet",
        orig_val=f"{OUT}/logprobs/target/holdout.parquet",
    output:
        forget=f"{OUT}/postfinetune/{{model}}/forget.parquet",
        val=f"{OUT}/postfinetune/{{model}}/holdout.parquet",
        metrics=f"{OUT}/metrics/{{model}}/postfinetune.csv",
    log:
        f"{OUT}/logs/postfinetune/{{model}}.log",
    benchmark:
        f"{OUT}/benchmarks/postfinetune/{{model}}.tsv"
    wildcard_constraints:
        model=UNLEARNED_PATTERN,
    conda:
        "../../envs/torch.yaml"
    threads: config["threads"]["train"]
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        recipe=lambda wc: model_recipe(wc.model),
        train=canon({k: v for k, v in PFT.items() if k not in ("methods", "data")}),
        tofu=tofu_params(),
        run=canon(
            {
                "seed": config["seed"],
                "template": TEMPLATE,
                "threads": config["threads"]["train"],
            }
        ),
    script:
        "../scripts/postfinetune.py"


rule dcue_vs_fq:
    input:
        lambda wc: [
            f"{OUT}/metrics/{m}/{kind}.csv"
            for m in dcue_models()
            for kind in ("dcue", "tofu")
        ],
        expand(f"{OUT}/metrics/{{model}}/postfinetune.csv", model=postfinetune_models()),
    output:
        table=report(
            f"{OUT}/tables/dcue_vs_fq.csv",
            caption=caption("dcue"),
            category="Tables",
        ),
        meta=report(
            f"{OUT}/tables/dcue_meta.csv",
            caption=caption("dcue_meta"),
            category="Tables",
        ),
        figure=multiext(f"{OUT}/figures/dcue_vs_fq", ".png", ".pdf"),
    log:
        f"{OUT}/logs/figures/dcue_vs_fq.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        parts=lambda wc: {
            m: (f"{OUT}/metrics/{m}/dcue.csv", f"{OUT}/metrics/{m}/tofu.csv")
            for m in dcue_models()
        },
        postfinetune=lambda wc: {
            m: f"{OUT}/metrics/{m}/postfinetune.csv" for m in postfinetune_models()
        },
    script:
        "../scripts/dcue_vs_fq.py"

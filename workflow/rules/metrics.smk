# Teacher-forced log-probabilities, TOFU's forget quality and model utility, and DCUE.


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


rule dcue_vs_fq:
    input:
        lambda wc: [
            f"{OUT}/metrics/{m}/{kind}.csv"
            for m in dcue_models()
            for kind in ("dcue", "tofu")
        ],
    output:
        table=report(
            f"{OUT}/tables/dcue_vs_fq.csv",
            caption=caption("dcue"),
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
    script:
        "../scripts/dcue_vs_fq.py"

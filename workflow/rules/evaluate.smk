# Greedy evaluation, TOFU's own greedy answers (its ROUGE) and the per-token log-probabilities
# (TOFU's encoding, config tofu_eval) of every model, and the long metrics table.


rule evaluate:
    input:
        model=lambda wc: model_path(wc.model),
        greedy_sets=expand(f"{OUT}/data/{{evalset}}.parquet", evalset=GREEDY_SETS),
        logprob_sets=expand(f"{OUT}/data/{{evalset}}.parquet", evalset=LOGPROB_SETS),
        tofu_sets=expand(f"{OUT}/data/{{evalset}}.parquet", evalset=TOFU_GEN_SETS),
    output:
        metrics=f"{OUT}/metrics/{{model}}/greedy.csv",
        answers=f"{OUT}/greedy/{{model}}.parquet",
        tofu_answers=f"{OUT}/tofu_answers/{{model}}.parquet",
        logprobs=expand(
            f"{OUT}/logprobs/{{{{model}}}}/{{evalset}}.parquet", evalset=LOGPROB_SETS
        ),
    log:
        f"{OUT}/logs/evaluate/{{model}}.log",
    benchmark:
        f"{OUT}/benchmarks/evaluate/{{model}}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: config["threads"]["eval"]
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        recipe=lambda wc: model_recipe(wc.model),
        greedy_sets=GREEDY_SETS,
        tofu_sets=TOFU_GEN_SETS,
        # one dict of scalars: Snakemake compares params as a set of values (see sample.smk)
        run=lambda wc: canon(
            {
                "tofu": tofu_params(),
                "template": template_of(wc.model),
                "max_new_tokens": config["greedy_eval"]["max_new_tokens"],
                "batch_size": config["greedy_eval"]["batch_size"],
                "dtype": config["dtype"],
                "device": config["device"],
                "threads": config["threads"]["eval"],
            }
        ),
    script:
        "../scripts/evaluate.py"


rule metrics_table:
    input:
        metric_parts(),
    output:
        table=report(
            f"{OUT}/tables/metrics.csv",
            caption=caption("metrics"),
            category="Tables",
        ),
    log:
        f"{OUT}/logs/metrics_table.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/metrics_table.py"

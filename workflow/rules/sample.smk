# Sampling in per-prompt shards; scoring of the shards and per-prompt bounds per (model, set, setting).


rule sample_shard:
    input:
        model=lambda wc: model_path(wc.model),
        evalset=f"{OUT}/data/{{evalset}}.parquet",
    output:
        f"{OUT}/samples/{{model}}/{{evalset}}/{{setting}}/shard-{{k}}.parquet",
    log:
        f"{OUT}/logs/sample/{{model}}/{{evalset}}/{{setting}}/shard-{{k}}.log",
    benchmark:
        f"{OUT}/benchmarks/sample/{{model}}/{{evalset}}/{{setting}}/shard-{{k}}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: config["threads"]["eval"]
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        # one dict: Snakemake compares a rule's params as a set of values, so two scalar
        # params that swap or share a value (chunk_size 4 -> 1 beside threads 1) would look unchanged
        sampling=lambda wc: canon(
            with_sequential(wc.setting)
            | {
                "n": sampling_setting(wc.setting)["n"],
                "temperature": sampling_setting(wc.setting)["temperature"],
                "adaptive_threshold": (
                    config["sampling"]["adaptive_threshold"]
                    if sampling_setting(wc.setting)["adaptive"]
                    else None
                ),
                "top_p": config["sampling"]["top_p"],
                "max_new_tokens": max_new_tokens(wc.evalset),
                "chunk_size": config["sampling"]["chunk_size"],
                "pack_prompts": config["sampling"]["pack_prompts"],
                "batch_size": config["sampling"]["batch_size"],
                "base_seed": config["seed"],
                "template": template_of(wc.model),
                "dtype": config["dtype"],
                "device": config["device"],
                "threads": config["threads"]["eval"],
            }
        ),
    script:
        "../scripts/sample_shard.py"


rule score:
    input:
        unpack(judge_input),
        samples=lambda wc: samples_paths(wc.model, wc.evalset, wc.setting),
        evalset=f"{OUT}/data/{{evalset}}.parquet",
    output:
        scores=f"{OUT}/scores/{{model}}/{{evalset}}/{{setting}}.parquet",
        bounds=f"{OUT}/bounds/{{model}}/{{evalset}}/{{setting}}.parquet",
        metrics=f"{OUT}/metrics/{{model}}/{{evalset}}.{{setting}}.csv",
    log:
        f"{OUT}/logs/score/{{model}}/{{evalset}}/{{setting}}.log",
    conda:
        "../../envs/analysis.yaml"
    resources:
        gpu=lambda wc: int(harm_judge(wc.evalset) is not None),
    params:
        recipe=lambda wc: model_recipe(wc.model),
        sequential=lambda wc: sequential_params(wc.setting),
        bounds=canon(config["bounds"]),
        judge=lambda wc: harm_judge(wc.evalset),
        harm_threshold=lambda wc: harm_threshold(wc.evalset),
    script:
        "../scripts/score.py"

# Sampling in per-prompt shards, scoring per shard, and per-prompt bounds per (model, set, setting).


rule sample_shard:
    input:
        model=f"{OUT}/models/{{model}}",
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
        mem_mb=2000,
    params:
        n=lambda wc: sampling_setting(wc.setting)["n"],
        temperature=lambda wc: sampling_setting(wc.setting)["temperature"],
        adaptive_threshold=lambda wc: (
            config["sampling"]["adaptive_threshold"]
            if sampling_setting(wc.setting)["adaptive"]
            else None
        ),
        top_p=config["sampling"]["top_p"],
        max_new_tokens=lambda wc: max_new_tokens(wc.evalset),
        chunk_size=config["sampling"]["chunk_size"],
        batch_size=config["sampling"]["batch_size"],
        seed=config["seed"],
        template=lambda wc: TEMPLATE,
        dtype=config["dtype"],
        device=config["device"],
        threads=config["threads"]["eval"],
    script:
        "../scripts/sample_shard.py"


rule score_shard:
    input:
        samples=f"{OUT}/samples/{{model}}/{{evalset}}/{{setting}}/shard-{{k}}.parquet",
        evalset=f"{OUT}/data/{{evalset}}.parquet",
    output:
        f"{OUT}/scores/{{model}}/{{evalset}}/{{setting}}/shard-{{k}}.parquet",
    log:
        f"{OUT}/logs/score/{{model}}/{{evalset}}/{{setting}}/shard-{{k}}.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/score_shard.py"


rule summarize_scores:
    input:
        lambda wc: expand(
            f"{OUT}/scores/{wc.model}/{wc.evalset}/{wc.setting}/shard-{{k}}.parquet",
            k=shards(wc.evalset),
        ),
    output:
        scores=f"{OUT}/scores/{{model}}/{{evalset}}/{{setting}}.parquet",
        bounds=f"{OUT}/bounds/{{model}}/{{evalset}}/{{setting}}.parquet",
        metrics=f"{OUT}/metrics/{{model}}/{{evalset}}.{{setting}}.csv",
    log:
        f"{OUT}/logs/summarize/{{model}}/{{evalset}}/{{setting}}.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        recipe=lambda wc: model_recipe(wc.model),
        bounds=canon(config["bounds"]),
    script:
        "../scripts/summarize_scores.py"

# Sampling in per-prompt shards; scoring of the shards and per-prompt bounds per (model, set, setting).


rule sample_shard:
    input:
        model=lambda wc: P.model(wc.model),
        evalset=P.data("{evalset}"),
    output:
        P.samples("{model}", "{evalset}", "{setting}", "{k}"),
    log:
        P.log("sample", "{model}", "{evalset}", "{setting}", "shard-{k}"),
    benchmark:
        P.benchmark("sample", "{model}", "{evalset}", "{setting}", "shard-{k}")
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
        sampling=lambda wc: D.sampling_params(wc.model, wc.evalset, wc.setting),
    script:
        "../scripts/sample_shard.py"


rule score:
    input:
        unpack(lambda wc: D.judge_input(wc.evalset)),
        samples=lambda wc: D.samples_paths(wc.model, wc.evalset, wc.setting),
        evalset=P.data("{evalset}"),
    output:
        scores=P.scores("{model}", "{evalset}", "{setting}"),
        bounds=P.bounds("{model}", "{evalset}", "{setting}"),
        metrics=P.sampled_metrics("{model}", "{evalset}", "{setting}"),
    log:
        P.log("score", "{model}", "{evalset}", "{setting}"),
    conda:
        "../../envs/analysis.yaml"
    resources:
        gpu=lambda wc: int(D.harm_judge(wc.evalset) is not None),
    params:
        recipe=lambda wc: D.recipe(wc.model),
        sequential=lambda wc: D.sequential_params(wc.setting),
        bounds=canon(config["bounds"]),
        judge=lambda wc: D.harm_judge(wc.evalset),
        harm_threshold=lambda wc: D.harm_threshold(wc.evalset),
    script:
        "../scripts/score.py"

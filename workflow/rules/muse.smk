# MUSE-News (experiment muse): MUSE's greedy metrics and DCUE's log-probabilities per model, and the
# MUSE table (greedy and sampled scores side by side, DCUE); sampling and scoring are sample.smk's.


rule muse_eval:
    input:
        unpack(lambda wc: D.muse_eval_inputs(wc.model)),
    output:
        metrics=P.metrics("{model}", "muse"),
        answers=P.muse_answers("{model}"),
        logprobs=[P.logprobs("{model}", e) for e in MUSE_LOGPROB],
    log:
        P.log("muse_eval", "{model}"),
    benchmark:
        P.benchmark("muse_eval", "{model}")
    conda:
        "../../envs/torch.yaml"
    threads: config["threads"]["eval"]
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        recipe=lambda wc: D.recipe(wc.model),
        # one dict of scalars: Snakemake compares params as a set of values (see sample.smk)
        run=canon(
            {
                "tofu": D.tofu_params(),
                "batch_size": config["greedy_eval"]["batch_size"],
                "dtype": config["dtype"],
                "device": config["device"],
                "threads": config["threads"]["eval"],
            }
        ),
    script:
        "../scripts/muse_eval.py"


rule muse_table:
    input:
        lambda wc: D.muse_table_inputs(),
    output:
        table=report_table("muse"),
    log:
        P.log("muse_table"),
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/muse_table.py"

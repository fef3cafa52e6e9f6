# MUSE (experiment muse, on MUSE-News or MUSE-Books): MUSE's greedy metrics and DCUE's
# log-probabilities per model, and the MUSE table (greedy and sampled scores side by side, DCUE);
# sampling, scoring, unlearning and DCUE are the workflow's own rules. Included by the Snakefile for the registered benchmark; the
# experiment's DAG is probunlearn.benchmarks.muse_news.design.MuseDesign.
MUSE = D.experiment_design("muse")


if MUSE is not None:

    rule muse_eval:
        input:
            unpack(lambda wc: MUSE.eval_inputs(wc.model)),
        output:
            metrics=P.metrics("{model}", "muse"),
            answers=MUSE.answers_path("{model}"),
            logprobs=[P.logprobs("{model}", e) for e in MUSE.logprob],
        log:
            P.log("muse_eval", "{model}"),
        benchmark:
            P.benchmark("muse_eval", "{model}")
        conda:
            conda_env("torch")
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
            "scripts/muse_eval.py"

    rule muse_table:
        input:
            lambda wc: MUSE.table_inputs(),
        output:
            table=report(P.table("muse"), caption=MUSE.caption, category="Tables"),
        log:
            P.log("muse_table"),
        conda:
            conda_env("analysis")
        script:
            "scripts/muse_table.py"

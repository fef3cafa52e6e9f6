# Greedy evaluation, TOFU's own greedy answers (its ROUGE) and the per-token log-probabilities
# (TOFU's encoding, config tofu_eval) of every model, and the long metrics table.


rule evaluate:
    input:
        model=lambda wc: P.model(wc.model),
        greedy_sets=[P.data(e) for e in D.greedy_sets],
        logprob_sets=[P.data(e) for e in D.logprob_sets],
        tofu_sets=[P.data(e) for e in D.tofu_gen_sets],
    output:
        metrics=P.metrics("{model}", "greedy"),
        answers=P.greedy("{model}"),
        tofu_answers=P.tofu_answers("{model}"),
        logprobs=[P.logprobs("{model}", e) for e in D.logprob_sets],
    log:
        P.log("evaluate", "{model}"),
    benchmark:
        P.benchmark("evaluate", "{model}")
    conda:
        "../../envs/torch.yaml"
    threads: config["threads"]["eval"]
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        recipe=lambda wc: D.recipe(wc.model),
        greedy_sets=D.greedy_sets,
        tofu_sets=D.tofu_gen_sets,
        # one dict of scalars: Snakemake compares params as a set of values (see sample.smk)
        run=lambda wc: canon(
            {
                "tofu": D.tofu_params(),
                "template": D.template_of(wc.model),
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
        D.metric_parts(),
    output:
        table=report_table("metrics"),
    log:
        P.log("metrics_table"),
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/metrics_table.py"

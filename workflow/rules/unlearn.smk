# Unlearning: the target model → an unlearned model per (method, split, lambda_f, lambda_r).


rule unlearn:
    input:
        target=model_path("target"),
        forget=lambda wc: f"{OUT}/data/{parse_unlearned(wc.model)['split']}.parquet",
        retain=lambda wc: f"{OUT}/data/{retain_split(wc.model)}.parquet",
    output:
        model=directory(f"{OUT}/models/{{model}}"),
        history=f"{OUT}/unlearning/{{model}}.csv",
    log:
        f"{OUT}/logs/unlearn/{{model}}.log",
    benchmark:
        f"{OUT}/benchmarks/unlearn/{{model}}.tsv"
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
        recipe=lambda wc: parse_unlearned(wc.model),
        hparams=lambda wc: unlearn_hparams(wc.model),
        run=canon(
            {
                "seed": config["seed"],
                "template": TEMPLATE,
                "threads": config["threads"]["train"],
            }
        ),
    script:
        "../scripts/unlearn.py"

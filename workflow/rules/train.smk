# Pretraining from scratch, the target model (fine-tuned on 'full') and the reference models
# (fine-tuned on a retain split only: TOFU's "retrained" models).


if not BENCH and "pretrained" not in HUB_MODELS:

    rule pretrain:
        input:
            tokenizer=f"{OUT}/models/tokenizer",
            corpus=f"{OUT}/data/pretrain.parquet",
        output:
            directory(f"{OUT}/models/pretrained"),
        log:
            f"{OUT}/logs/pretrain.log",
        benchmark:
            f"{OUT}/benchmarks/pretrain.tsv"
        conda:
            "../../envs/torch.yaml"
        threads: config["threads"]["pretrain"]
        resources:
            gpu=1,
            mem_mb=gpu_mem_mb,
            runtime=gpu_runtime,
        params:
            arch=canon(config["model"]),
            train=canon(config["pretrain"]),
            run=canon(
                {
                    "seed": config["seed"],
                    "template": TEMPLATE,
                    "threads": config["threads"]["pretrain"],
                }
            ),
        script:
            "../scripts/pretrain.py"


if "target" not in HUB_MODELS:

    rule target:
        input:
            base=model_path("pretrained"),
            split=f"{OUT}/data/full.parquet",
            corpus=f"{OUT}/data/pretrain.parquet",
        output:
            directory(f"{OUT}/models/target"),
        log:
            f"{OUT}/logs/target.log",
        benchmark:
            f"{OUT}/benchmarks/target.tsv"
        conda:
            "../../envs/torch.yaml"
        threads: config["threads"]["train"]
        resources:
            gpu=1,
            mem_mb=gpu_mem_mb,
            runtime=gpu_runtime,
        params:
            train=canon({k: v for k, v in config["finetune"].items() if k != "replay"}),
            # one dict of scalars: Snakemake compares params as a set of values (see sample.smk)
            run=canon(
                {
                    "replay": config["finetune"]["replay"],
                    "seed": config["seed"],
                    "template": TEMPLATE,
                    "threads": config["threads"]["train"],
                }
            ),
        script:
            "../scripts/finetune.py"


rule reference:
    input:
        base=model_path("pretrained"),
        split=lambda wc: f"{OUT}/data/{RETAIN_OF[wc.split]}.parquet",
        corpus=f"{OUT}/data/pretrain.parquet",
    output:
        directory(f"{OUT}/models/reference_{{split}}"),
    log:
        f"{OUT}/logs/reference_{{split}}.log",
    benchmark:
        f"{OUT}/benchmarks/reference_{{split}}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: config["threads"]["train"]
    resources:
        gpu=1,
        mem_mb=gpu_mem_mb,
        runtime=gpu_runtime,
    params:
        train=canon({k: v for k, v in config["finetune"].items() if k != "replay"}),
        # one dict of scalars: Snakemake compares params as a set of values (see sample.smk)
        run=canon(
            {
                "replay": config["finetune"]["replay"],
                "seed": config["seed"],
                "template": TEMPLATE,
                "threads": config["threads"]["train"],
            }
        ),
    script:
        "../scripts/finetune.py"

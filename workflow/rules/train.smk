# Pretraining from scratch, the target model (fine-tuned on 'full') and the reference models
# (fine-tuned on a retain split only: TOFU's "retrained" models).


if not BENCH and "pretrained" not in HUB_MODELS:

    rule pretrain:
        input:
            tokenizer=P.run_model("tokenizer"),
            corpus=P.data("pretrain"),
        output:
            directory(P.run_model("pretrained")),
        log:
            P.log("pretrain"),
        benchmark:
            P.benchmark("pretrain")
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
            run=run_params(config["threads"]["pretrain"]),
        script:
            "../scripts/pretrain.py"


# The reference models (a retain split only) and the target (all of 'full') share one recipe.
rule reference:
    input:
        base=P.model("pretrained"),
        split=lambda wc: P.data(RETAIN_OF[wc.split]),
        corpus=P.data("pretrain"),
    output:
        directory(P.run_model("reference_{split}")),
    log:
        P.log("reference_{split}"),
    benchmark:
        P.benchmark("reference_{split}")
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
            run_params(config["threads"]["train"])
            | {"replay": config["finetune"]["replay"]}
        ),
    script:
        "../scripts/finetune.py"


if "target" not in HUB_MODELS:

    use rule reference as target with:
        input:
            base=P.model("pretrained"),
            split=P.data("full"),
            corpus=P.data("pretrain"),
        output:
            directory(P.run_model("target")),
        log:
            P.log("target"),
        benchmark:
            P.benchmark("target")

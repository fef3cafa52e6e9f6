# Pretraining from scratch, the target model (fine-tuned on 'full') and the reference models
# (fine-tuned on a retain split only: TOFU's "retrained" models).


rule pretrain:
    input:
        tokenizer=f"{OUT}/models/tokenizer",
        corpus=f"{OUT}/data/pretrain.parquet",
    output:
        directory(f"{OUT}/models/pretrained"),
    params:
        arch=config["model"],
        train=config["pretrain"],
        seed=config["seed"],
        template=lambda wc: TEMPLATE,
        threads=config["threads"]["train"],
    log:
        f"{OUT}/logs/pretrain.log",
    threads: config["threads"]["train"]
    resources:
        mem_mb=2000,
    conda:
        "../../envs/probunlearn.yaml"
    script:
        "../scripts/pretrain.py"


rule target:
    input:
        base=f"{OUT}/models/pretrained",
        split=f"{OUT}/data/full.parquet",
        corpus=f"{OUT}/data/pretrain.parquet",
    output:
        directory(f"{OUT}/models/target"),
    params:
        train={k: v for k, v in config["finetune"].items() if k != "replay"},
        replay=config["finetune"]["replay"],
        seed=config["seed"],
        template=lambda wc: TEMPLATE,
        threads=config["threads"]["train"],
    log:
        f"{OUT}/logs/target.log",
    threads: config["threads"]["train"]
    resources:
        mem_mb=2000,
    conda:
        "../../envs/probunlearn.yaml"
    script:
        "../scripts/finetune.py"


rule reference:
    input:
        base=f"{OUT}/models/pretrained",
        split=lambda wc: f"{OUT}/data/{RETAIN_OF[wc.split]}.parquet",
        corpus=f"{OUT}/data/pretrain.parquet",
    output:
        directory(f"{OUT}/models/reference_{{split}}"),
    params:
        train={k: v for k, v in config["finetune"].items() if k != "replay"},
        replay=config["finetune"]["replay"],
        seed=config["seed"],
        template=lambda wc: TEMPLATE,
        threads=config["threads"]["train"],
    log:
        f"{OUT}/logs/reference_{{split}}.log",
    threads: config["threads"]["train"]
    resources:
        mem_mb=2000,
    conda:
        "../../envs/probunlearn.yaml"
    script:
        "../scripts/finetune.py"

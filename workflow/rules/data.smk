# The synthetic world and its tokenizer.


rule world:
    output:
        expand(f"{OUT}/data/{{name}}.parquet", name=WORLD_SETS + ["pretrain"]),
    log:
        f"{OUT}/logs/world.log",
    conda:
        "../../envs/torch.yaml"
    params:
        world=canon(config["world"]),
    script:
        "../scripts/world.py"


rule tokenizer:
    input:
        expand(f"{OUT}/data/{{name}}.parquet", name=WORLD_SETS + ["pretrain"]),
    output:
        directory(f"{OUT}/models/tokenizer"),
    log:
        f"{OUT}/logs/tokenizer.log",
    conda:
        "../../envs/torch.yaml"
    params:
        vocab_size=config["tokenizer"]["vocab_size"],
    script:
        "../scripts/tokenizer.py"

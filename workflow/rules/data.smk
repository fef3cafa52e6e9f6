# The synthetic world and its tokenizer.


rule world:
    output:
        expand(f"{OUT}/data/{{name}}.parquet", name=WORLD_SETS + ["pretrain"]),
    params:
        world=config["world"],
    log:
        f"{OUT}/logs/world.log",
    conda:
        "../../envs/probunlearn.yaml"
    script:
        "../scripts/world.py"


rule tokenizer:
    input:
        expand(f"{OUT}/data/{{name}}.parquet", name=WORLD_SETS + ["pretrain"]),
    output:
        directory(f"{OUT}/models/tokenizer"),
    params:
        vocab_size=config["tokenizer"]["vocab_size"],
    log:
        f"{OUT}/logs/tokenizer.log",
    conda:
        "../../envs/probunlearn.yaml"
    script:
        "../scripts/tokenizer.py"

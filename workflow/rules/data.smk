# The eval sets: the synthetic world and its tokenizer, or the real data sets of a preset; real models.


rule run_config:
    output:
        f"{OUT}/config.yaml",
    log:
        f"{OUT}/logs/run_config.log",
    conda:
        "../../envs/torch.yaml"
    params:
        config=canon(config),
    script:
        "../scripts/run_config.py"


if not BENCH:

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
            # the tokenizer adds <s> by itself (a post-processor): prompts get exactly the special
            # tokens their tokenizer adds, and nothing is prepended
            add_bos=True,
        script:
            "../scripts/tokenizer.py"

else:

    rule fetch_data:
        output:
            f"{RES}/data/{{dataset}}/{{file}}",
        log:
            f"{RES}/logs/fetch_data/{{dataset}}/{{file}}.log",
        wildcard_constraints:
            dataset="tofu|jbb|hp_qa",
        conda:
            "../../envs/analysis.yaml"
        params:
            key=lambda wc: dataset_key(wc.dataset, wc.file),
            local=lambda wc: dataset_local(wc.dataset),
            revision=lambda wc: dataset_revision(wc.dataset),
        script:
            "../scripts/fetch_data.py"

    rule benchmark_sets:
        input:
            unpack(benchmark_inputs),
        output:
            expand(f"{OUT}/data/{{name}}.parquet", name=DATA_SETS + ["pretrain"]),
        log:
            f"{OUT}/logs/benchmark_sets.log",
        conda:
            "../../envs/analysis.yaml"
        params:
            benchmarks=canon({k: v for k, v in BENCH.items() if k != "local"}),
        script:
            "../scripts/benchmark_sets.py"


if TOFU_EVAL["published_retain_logs"]:

    rule fetch_tofu_log:
        output:
            f"{RES}/tofu_logs/{{family}}/{{split}}/eval_log_forget.json",
        log:
            f"{RES}/logs/fetch_tofu_log/{{family}}/{{split}}.log",
        wildcard_constraints:
            family="phi|llama2-7b",
        conda:
            "../../envs/analysis.yaml"
        script:
            "../scripts/fetch_tofu_log.py"


if HUB_MODELS:

    rule fetch_model:
        output:
            directory(f"{RES}/models/{{hub_model}}"),
        log:
            f"{RES}/logs/fetch_model/{{hub_model}}.log",
        wildcard_constraints:
            hub_model="|".join(map(re.escape, HUB_MODELS)),
        conda:
            "../../envs/torch.yaml"
        params:
            spec=lambda wc: canon(
                {k: v for k, v in HUB_MODELS[wc.hub_model].items() if k != "template"}
            ),
            dtype=config["dtype"],
        script:
            "../scripts/fetch_model.py"

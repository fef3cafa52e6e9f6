# The eval sets: the synthetic world and its tokenizer, or the real data sets of a preset; real models.


rule run_config:
    output:
        P.config,
    log:
        P.log("run_config"),
    conda:
        "../../envs/torch.yaml"
    params:
        config=canon(config),
    script:
        "../scripts/run_config.py"


rule refusals:
    output:
        P.data("refusals"),
    log:
        P.log("refusals"),
    conda:
        "../../envs/analysis.yaml"
    params:
        source=D.idontknow_source(),
    script:
        "../scripts/refusals.py"


if not BENCH:

    rule world:
        output:
            [P.data(name) for name in WORLD_SETS + ["pretrain"]],
        log:
            P.log("world"),
        conda:
            "../../envs/torch.yaml"
        params:
            world=canon(config["world"]),
        script:
            "../scripts/world.py"

    rule tokenizer:
        input:
            rules.world.output,
        output:
            directory(P.run_model("tokenizer")),
        log:
            P.log("tokenizer"),
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
            P.dataset_file("{dataset}", "{file}"),
        log:
            P.resource_log("fetch_data", "{dataset}", "{file}"),
        wildcard_constraints:
            dataset="|".join(map(re.escape, BENCHMARKS.names())),
        conda:
            "../../envs/analysis.yaml"
        params:
            key=lambda wc: D.dataset_files[wc.dataset][wc.file],
            local=lambda wc: D.dataset_local(wc.dataset),
            revision=lambda wc: D.dataset_revision(wc.dataset),
        script:
            "../scripts/fetch_data.py"

    rule benchmark_sets:
        input:
            unpack(lambda wc: D.benchmark_inputs()),
        output:
            [P.data(name) for name in D.data_sets + ["pretrain"]],
        log:
            P.log("benchmark_sets"),
        conda:
            "../../envs/analysis.yaml"
        params:
            benchmarks=canon({k: v for k, v in BENCH.items() if k != "local"}),
        script:
            "../scripts/benchmark_sets.py"


if config["tofu_eval"]["published_retain_logs"]:

    rule fetch_tofu_log:
        output:
            P.tofu_log("{family}", "{split}"),
        log:
            P.resource_log("fetch_tofu_log", "{family}", "{split}"),
        wildcard_constraints:
            family="phi|llama2-7b",
        conda:
            "../../envs/analysis.yaml"
        script:
            "../scripts/fetch_tofu_log.py"


if HUB_MODELS:

    rule fetch_model:
        output:
            directory(P.hub_model("{hub_model}")),
        log:
            P.resource_log("fetch_model", "{hub_model}"),
        wildcard_constraints:
            hub_model="|".join(map(re.escape, HUB_MODELS)),
        conda:
            "../../envs/torch.yaml"
        params:
            spec=lambda wc: canon(
                {k: v for k, v in HUB_MODELS[wc.hub_model].items() if k != "template"}
            ),
            dtype=config["dtype"],
            # the checkpoint's content (local) or the commit its revision stands for (hub): a
            # checkpoint re-trained in place, or a moved `main`, refetches (docs/evaluate.md)
            identity=lambda wc: model_identity(wc.hub_model),
        script:
            "../scripts/fetch_model.py"

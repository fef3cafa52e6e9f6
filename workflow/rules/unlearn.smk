# Unlearning: the target model → an unlearned model per (method, split, lambda_f, lambda_r).


rule unlearn:
    input:
        unpack(lambda wc: D.refusal_inputs(wc.model)),
        target=P.model("target"),
        forget=data_of_split,
        retain=lambda wc: P.data(retain_split(wc.model)),
    output:
        model=directory(P.run_model("{model}")),
        history=P.history("{model}"),
    log:
        P.log("unlearn", "{model}"),
    benchmark:
        P.benchmark("unlearn", "{model}")
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
        hparams=lambda wc: D.unlearn_hparams(wc.model),
        run=run_params(config["threads"]["train"]),
    script:
        "../scripts/unlearn.py"

# DCUE's robustness check (a short fine-tune of an unlearned model), and the long metrics table.
# TOFU's metrics and DCUE are rules of the evaluation core (probunlearn/core/rules.smk).


rule postfinetune:
    input:
        unpack(lambda wc: D.postfinetune_inputs(wc.model)),
    output:
        forget=P.postfinetune("{model}", "forget"),
        val=P.postfinetune("{model}", "holdout"),
        metrics=P.metrics("{model}", "postfinetune"),
    log:
        P.log("postfinetune", "{model}"),
    benchmark:
        P.benchmark("postfinetune", "{model}")
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
        recipe=lambda wc: D.recipe(wc.model),
        train=canon({k: v for k, v in PFT.items() if k not in ("methods", "data")}),
        tofu=D.tofu_params(),
        run=run_params(config["threads"]["train"]),
    script:
        "../scripts/postfinetune.py"


rule dcue_vs_fq:
    input:
        lambda wc: [p for parts in D.dcue_parts().values() for p in parts],
        lambda wc: list(D.postfinetune_parts().values()),
    output:
        table=report(P.table("dcue_vs_fq"), caption=caption("dcue"), category="Tables"),
        meta=report_table("dcue_meta"),
        figure=multiext(P.figure_stem("dcue_vs_fq"), ".png", ".pdf"),
    log:
        P.log("figures", "dcue_vs_fq"),
    conda:
        "../../envs/analysis.yaml"
    params:
        figure=lambda wc, output: P.stem(output.figure[0]),
        parts=lambda wc: D.dcue_parts(),
        postfinetune=lambda wc: D.postfinetune_parts(),
    script:
        "../scripts/dcue_vs_fq.py"


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

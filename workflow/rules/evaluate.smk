# Greedy evaluation of every model and the long metrics table.


rule greedy_eval:
    input:
        model=f"{OUT}/models/{{model}}",
        evalsets=expand(
            f"{OUT}/data/{{evalset}}.parquet",
            evalset=GREEDY_SETS,
        ),
    output:
        metrics=f"{OUT}/metrics/{{model}}/greedy.csv",
        answers=f"{OUT}/greedy/{{model}}.parquet",
    log:
        f"{OUT}/logs/greedy_eval/{{model}}.log",
    conda:
        "../../envs/torch.yaml"
    threads: config["threads"]["eval"]
    params:
        recipe=lambda wc: model_recipe(wc.model),
        evalsets=GREEDY_SETS,
        template=lambda wc: TEMPLATE,
        max_new_tokens=config["greedy_eval"]["max_new_tokens"],
        batch_size=config["greedy_eval"]["batch_size"],
        threads=config["threads"]["eval"],
    script:
        "../scripts/greedy_eval.py"


rule metrics_table:
    input:
        metric_parts(),
    output:
        table=report(
            f"{OUT}/tables/metrics.csv",
            caption=caption("metrics"),
            category="Tables",
        ),
    log:
        f"{OUT}/logs/metrics_table.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/metrics_table.py"

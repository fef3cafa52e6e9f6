# RWKU (experiment rwku): RWKU's MIA statistics per model and the RWKU tables (RWKU's metrics
# beside the sampled bounds, fact families, what sampling reveals, the survey and the selection
# rule); sampling, scoring and unlearning on the forget corpus are the workflow's own rules.
# Included by the Snakefile for the registered benchmark; the experiment's DAG is
# probunlearn.benchmarks.rwku.design.RwkuDesign.
RWKU = D.experiment_design("rwku")


if RWKU is not None:

    rule rwku_mia:
        input:
            unpack(lambda wc: RWKU.mia_inputs(wc.model)),
        output:
            stats=RWKU.mia_path("{model}"),
        log:
            P.log("rwku_mia", "{model}"),
        benchmark:
            P.benchmark("rwku_mia", "{model}")
        conda:
            conda_env("torch")
        threads: config["threads"]["eval"]
        resources:
            gpu=1,
            mem_mb=gpu_mem_mb,
            runtime=gpu_runtime,
        params:
            load=lambda wc: D.load_params(wc.model),
            # one dict of scalars: Snakemake compares params as a set of values (see sample.smk)
            run=canon(
                {
                    "batch_size": config["greedy_eval"]["batch_size"],
                    "dtype": config["dtype"],
                    "device": config["device"],
                    "threads": config["threads"]["eval"],
                }
            ),
        script:
            "scripts/rwku_mia.py"

    rule rwku_survey:
        input:
            unpack(lambda wc: RWKU.survey_inputs()),
        output:
            tables=[
                report(P.table(n), caption=RWKU.caption, category="Tables")
                for n in RWKU.survey_names()
            ],
        log:
            P.log("rwku_survey"),
        conda:
            conda_env("analysis")
        params:
            run=canon(RWKU.survey_params()),
        script:
            "scripts/rwku_survey.py"

    rule rwku_tables:
        input:
            unpack(lambda wc: RWKU.table_inputs()),
        output:
            tables=[
                report(P.table(n), caption=RWKU.caption, category="Tables")
                for n in RWKU.table_names()
            ],
            figure=multiext(P.figure_stem("rwku"), ".png", ".pdf"),
        log:
            P.log("rwku_tables"),
        conda:
            conda_env("analysis")
        params:
            run=canon(RWKU.table_params()),
            figure=lambda wc, output: P.stem(output.figure[0]),
        script:
            "scripts/rwku_tables.py"

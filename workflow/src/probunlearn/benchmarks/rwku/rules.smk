# RWKU (experiment rwku): the survey and the selection rule (Part A), and the RWKU tables (RWKU's
# metrics beside the sampled bounds, fact families, what sampling reveals, the changes, the claims);
# sampling, scoring, RWKU's MIA statistics (rule benchmark_job) and unlearning on the forget corpus
# are the workflow's own rules.
# Included by the Snakefile for the registered benchmark; the experiment's DAG is
# probunlearn.benchmarks.rwku.design.RwkuDesign.
RWKU = D.experiment_design("rwku")


if RWKU is not None:

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

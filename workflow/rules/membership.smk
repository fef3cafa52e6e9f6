# Membership inference (experiment membership, beyond the paper; docs/membership.md): per model, the
# teacher-forced attack statistics of the forget set's and the holdout set's examples; per run, each
# model's AUC of telling them apart with its interval, PrivLeak against the retrained model, and the
# figure. The experiment's DAG is probunlearn.dag.membership.MembershipDesign.
MEMBERSHIP = D.experiment_design("membership")


if MEMBERSHIP is not None:

    rule membership:
        input:
            unpack(lambda wc: MEMBERSHIP.inputs(wc.model)),
        output:
            MEMBERSHIP.path("{model}"),
        log:
            P.log("membership", "{model}"),
        benchmark:
            P.benchmark("membership", "{model}")
        conda:
            "../../envs/torch.yaml"
        threads: config["threads"]["eval"]
        resources:
            gpu=1,
            mem_mb=gpu_mem_mb,
            runtime=gpu_runtime,
        params:
            load=lambda wc: D.load_params(wc.model),
            # one dict: Snakemake compares a rule's params as a set of values
            run=lambda wc: MEMBERSHIP.params(wc.model),
        script:
            f"{CORE_SCRIPTS}/membership.py"

    rule membership_table:
        input:
            lambda wc: list(MEMBERSHIP.parts().values()),
        output:
            table=report_table("membership"),
            figure=figure_outputs("membership"),
        log:
            P.log("figures", "membership"),
        conda:
            "../../envs/analysis.yaml"
        params:
            parts=lambda wc: MEMBERSHIP.parts(),
            figure=lambda wc, output: P.stem(output.figure[0]),
            run=MEMBERSHIP.table_params(),
        script:
            f"{CORE_SCRIPTS}/membership_table.py"

# The paper's claims tested on the run's own tables (probunlearn.report.claims): results/{run}/tables/claims.csv.


rule claims:
    input:
        lambda wc: list(D.claims_inputs().values()),
    output:
        csv=report_table("claims", category="Claims"),
        md=P.table("claims", "md"),
    log:
        P.log("figures", "claims"),
    conda:
        "../../envs/analysis.yaml"
    params:
        tables=lambda wc: D.claims_inputs(),
        lambda_f=config["unlearning"]["lambda_f"],
    script:
        "../scripts/claims.py"

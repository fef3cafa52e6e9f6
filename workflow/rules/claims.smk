# The paper's claims tested on the run's own tables (probunlearn.report.claims): results/{run}/tables/claims.csv.


rule claims:
    input:
        lambda wc: list(D.claims_inputs().values()),
        # the scores of the compared models: intervals on the differences (issue 42)
        lambda wc: D.claims_score_paths(),
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
        scores=lambda wc: D.claims_scores(),
        alpha=config["bounds"]["alpha"],
        rho=config["bounds"]["rho"],
    script:
        "../scripts/claims.py"

# The paper's claims tested on the run's own tables (probunlearn.claims): results/{run}/tables/claims.csv.


rule claims:
    input:
        lambda wc: list(claims_inputs().values()),
    output:
        csv=report(f"{TAB}/claims.csv", caption=caption("claims"), category="Claims"),
        md=f"{TAB}/claims.md",
    log:
        f"{OUT}/logs/figures/claims.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        tables=lambda wc: claims_inputs(),
        lambda_f=UL["lambda_f"],
    script:
        "../scripts/claims.py"

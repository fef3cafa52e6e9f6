# The paper's tables and figures (PNG + PDF in figures/, the numbers behind them in tables/).


rule table1:
    input:
        lambda wc: list(table1_scores().values()),
    output:
        csv=report(f"{TAB}/table1.csv", caption=caption("table1"), category="Tables"),
        render=multiext(f"{TAB}/table1", ".md", ".png"),
    log:
        f"{OUT}/logs/figures/table1.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        scores=lambda wc: table1_scores(),
        rho=config["bounds"]["rho"],
        decimals=config["figures"]["decimals"],
    script:
        "../scripts/table1.py"


rule fig3_tofu:
    input:
        lambda wc: [table1_scores()[k] for k in ("GA", "GD", "NPO", "Ours")],
        evalset=f"{OUT}/data/{T1['split']}.parquet",
    output:
        figure_outputs("fig3b", "fig3c", "fig3d", "fig3e", "fig3f"),
        tables=expand(f"{TAB}/{{name}}.csv", name=["fig3b", "fig3c", "fig3d", "fig3ef"]),
    log:
        f"{OUT}/logs/figures/fig3_tofu.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        scores=lambda wc: {k: table1_scores()[k] for k in ("GA", "GD", "NPO", "Ours")},
        alpha=config["bounds"]["alpha"],
        points=config["figures"]["gen_points"],
    script:
        "../scripts/fig3_tofu.py"


rule fig3a:
    input:
        bounds=f"{OUT}/bounds/{SAGA_MODEL}/saga/main.parquet",
        scores=scores_path(SAGA_MODEL, "saga", "main"),
        evalset=f"{OUT}/data/saga.parquet",
    output:
        figure_outputs("fig3a"),
        table=f"{TAB}/fig3a.csv",
    log:
        f"{OUT}/logs/figures/fig3a.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        alpha=config["bounds"]["alpha"],
    script:
        "../scripts/fig3a.py"


rule fig4:
    input:
        lambda wc: [p for runs in fig4_runs().values() for *_, p in runs],
    output:
        figure_outputs("fig4a", "fig4b"),
        tables=expand(f"{TAB}/{{name}}.csv", name=["fig4a", "fig4b"]),
    log:
        f"{OUT}/logs/figures/fig4.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        runs=lambda wc: fig4_runs(),
    script:
        "../scripts/fig4.py"


rule fig5a:
    input:
        lambda wc: [p for _, _, ps in fig5a_runs()["runs"] for p in ps]
        + [p for _, ps in fig5a_runs()["npo"] for p in ps],
    output:
        figure_outputs("fig5a"),
        table=f"{TAB}/fig5a.csv",
    log:
        f"{OUT}/logs/figures/fig5a.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        runs=lambda wc: fig5a_runs(),
    script:
        "../scripts/fig5a.py"


rule fig5b:
    input:
        lambda wc: list(fig5b_histories().values()),
    output:
        figure_outputs("fig5b"),
        table=f"{TAB}/fig5b.csv",
    log:
        f"{OUT}/logs/figures/fig5b.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        histories=lambda wc: fig5b_histories(),
    script:
        "../scripts/fig5b.py"


rule fig5c_table2:
    input:
        lambda wc: sorted(
            {p for *_, a, b in fig5c_runs()["random"] for p in (a, b)}
            | {g[-1] for g in fig5c_runs()["grid"]}
        ),
    output:
        figure_outputs("fig5c"),
        table=f"{TAB}/fig5c.csv",
        table2=report(f"{TAB}/table2.csv", caption=caption("table2"), category="Tables"),
        render=multiext(f"{TAB}/table2", ".md", ".png"),
    log:
        f"{OUT}/logs/figures/fig5c_table2.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        runs=lambda wc: fig5c_runs(),
    script:
        "../scripts/fig5c_table2.py"


rule fig6:
    input:
        scores=[scores_path(m, "harmful", "main") for m in FIG6_MODELS.values()],
        bounds=[f"{OUT}/bounds/{m}/harmful/main.parquet" for m in FIG6_MODELS.values()],
    output:
        figure_outputs("fig6"),
        table=f"{TAB}/fig6.csv",
    log:
        f"{OUT}/logs/figures/fig6.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        labels=list(FIG6_MODELS),
        alpha=config["bounds"]["alpha"],
    script:
        "../scripts/fig6.py"


rule fig_sequential:
    input:
        unpack(
            lambda wc: {
                label: f"{OUT}/bounds/{m}/{T1['split']}/seq.parquet"
                for label, m in sequential_models().items()
            }
        ),
    output:
        figure_outputs("sequential"),
        table=f"{TAB}/sequential.csv",
    log:
        f"{OUT}/logs/figures/sequential.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        sequential=lambda wc: sequential_params("seq"),
        n_max=lambda wc: sampling_setting("seq")["n"],
    script:
        "../scripts/fig_sequential.py"

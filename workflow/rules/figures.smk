# The paper's tables and figures (PNG + PDF in figures/, the numbers behind them in tables/).


rule table1:
    input:
        lambda wc: list(D.table1_scores().values()),
    output:
        csv=report_table("table1"),
        render=multiext(P.table_stem("table1"), ".md", ".png"),
    log:
        P.log("figures", "table1"),
    conda:
        "../../envs/analysis.yaml"
    params:
        render=lambda wc, output: P.stem(output.render[0]),
        scores=lambda wc: D.table1_scores(),
        rho=config["bounds"]["rho"],
        decimals=config["figures"]["decimals"],
    script:
        "../scripts/table1.py"


rule fig3_tofu:
    input:
        lambda wc: list(D.fig3_scores().values()),
        evalset=P.data(T1["split"]),
    output:
        figure_outputs("fig3b", "fig3c", "fig3d", "fig3e", "fig3f"),
        tables=[P.table(n) for n in ("fig3b", "fig3c", "fig3d", "fig3ef")],
    log:
        P.log("figures", "fig3_tofu"),
    conda:
        "../../envs/analysis.yaml"
    params:
        scores=lambda wc: D.fig3_scores(),
        figures=lambda wc, output: P.stems(output, ".png"),
        tables=lambda wc, output: P.stems(output.tables, ".csv"),
        alpha=config["bounds"]["alpha"],
        points=config["figures"]["gen_points"],
    script:
        "../scripts/fig3_tofu.py"


rule fig3a:
    input:
        bounds=P.bounds(D.saga_model, "saga", "main"),
        scores=P.scores(D.saga_model, "saga", "main"),
        evalset=P.data("saga"),
    output:
        figure_outputs("fig3a"),
        table=P.table("fig3a"),
    log:
        P.log("figures", "fig3a"),
    conda:
        "../../envs/analysis.yaml"
    params:
        figure=lambda wc, output: P.stem(output[0]),
        table=lambda wc, output: P.stem(output.table),
        alpha=config["bounds"]["alpha"],
    script:
        "../scripts/fig3a.py"


rule fig4:
    input:
        lambda wc: [p for runs in D.fig4_runs().values() for *_, p in runs],
    output:
        figure_outputs("fig4a", "fig4b"),
        tables=[P.table(n) for n in ("fig4a", "fig4b")],
    log:
        P.log("figures", "fig4"),
    conda:
        "../../envs/analysis.yaml"
    params:
        runs=lambda wc: D.fig4_runs(),
        figures=lambda wc, output: P.stems(output, ".png"),
        tables=lambda wc, output: P.stems(output.tables, ".csv"),
    script:
        "../scripts/fig4.py"


rule fig5a:
    input:
        lambda wc: [p for _, _, ps in D.fig5a_runs()["runs"] for p in ps]
        + [p for _, ps in D.fig5a_runs()["npo"] for p in ps],
    output:
        figure_outputs("fig5a"),
        table=P.table("fig5a"),
    log:
        P.log("figures", "fig5a"),
    conda:
        "../../envs/analysis.yaml"
    params:
        figure=lambda wc, output: P.stem(output[0]),
        table=lambda wc, output: P.stem(output.table),
        runs=lambda wc: D.fig5a_runs(),
    script:
        "../scripts/fig5a.py"


rule fig5b:
    input:
        lambda wc: list(D.fig5b_histories().values()),
    output:
        figure_outputs("fig5b"),
        table=P.table("fig5b"),
    log:
        P.log("figures", "fig5b"),
    conda:
        "../../envs/analysis.yaml"
    params:
        figure=lambda wc, output: P.stem(output[0]),
        table=lambda wc, output: P.stem(output.table),
        histories=lambda wc: D.fig5b_histories(),
    script:
        "../scripts/fig5b.py"


rule fig5c_table2:
    input:
        lambda wc: sorted(
            {p for *_, a, b in D.fig5c_runs()["random"] for p in (a, b)}
            | {g[-1] for g in D.fig5c_runs()["grid"]}
        ),
    output:
        figure_outputs("fig5c"),
        table=P.table("fig5c"),
        table2=report_table("table2"),
        render=multiext(P.table_stem("table2"), ".md", ".png"),
    log:
        P.log("figures", "fig5c_table2"),
    conda:
        "../../envs/analysis.yaml"
    params:
        figure=lambda wc, output: P.stem(output[0]),
        table=lambda wc, output: P.stem(output.table),
        render=lambda wc, output: P.stem(output.render[0]),
        runs=lambda wc: D.fig5c_runs(),
    script:
        "../scripts/fig5c_table2.py"


rule fig6:
    input:
        scores=[P.scores(m, "harmful", "main") for m in D.fig6_models.values()],
        bounds=[P.bounds(m, "harmful", "main") for m in D.fig6_models.values()],
    output:
        figure_outputs("fig6"),
        table=P.table("fig6"),
    log:
        P.log("figures", "fig6"),
    conda:
        "../../envs/analysis.yaml"
    params:
        figure=lambda wc, output: P.stem(output[0]),
        table=lambda wc, output: P.stem(output.table),
        labels=list(D.fig6_models),
        alpha=config["bounds"]["alpha"],
    script:
        "../scripts/fig6.py"


rule fig_sequential:
    input:
        unpack(lambda wc: D.sequential_bounds()),
    output:
        figure_outputs("sequential"),
        table=P.table("sequential"),
    log:
        P.log("figures", "sequential"),
    conda:
        "../../envs/analysis.yaml"
    params:
        figure=lambda wc, output: P.stem(output[0]),
        table=lambda wc, output: P.stem(output.table),
        sequential=lambda wc: D.sequential_params("seq"),
        n_max=lambda wc: D.sampling_setting("seq")["n"],
    script:
        "../scripts/fig_sequential.py"

# The paper's tables and figures (PNG + PDF in figures/, the numbers behind them in tables/).

FIG = f"{OUT}/figures"
TAB = f"{OUT}/tables"


def scores_path(model, evalset, setting):
    return f"{OUT}/scores/{model}/{evalset}/{setting}.parquet"


def samples_paths(model, evalset, setting):
    return [
        f"{OUT}/samples/{model}/{evalset}/{setting}/shard-{k}.parquet"
        for k in shards(evalset)
    ]


LABELS = {"rmu": "RMU", "gd": "GD", "ga": "GA", "npo": "NPO", "npo_eo": "NPO+EO"}


def table1_scores():
    t1 = table1_models()
    out = {LABELS[m]: scores_path(t1[m], T1["split"], "main") for m in t1}
    if "npo_eo" in t1:
        out["Ours"] = scores_path(t1["npo_eo"], T1["split"], "ats")
    return out


def figure_outputs(*names):
    return [f"{FIG}/{n}.{ext}" for n in names for ext in ("png", "pdf")]


rule table1:
    input:
        lambda wc: list(table1_scores().values()),
    output:
        csv=f"{TAB}/table1.csv",
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
        fig=FIG,
        tab=TAB,
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
        stem=f"{FIG}/fig3a",
    script:
        "../scripts/fig3a.py"


def fig4_runs():
    sw = UL["lambda_f_sweep"]
    lam = [
        (s, lf, scores_path(m, s, "sweep"))
        for s in sw["splits"]
        for lf, m in lambda_f_models(s).items()
    ]
    temp = [
        (lf, t, scores_path(m, T1["split"], f"t{t:g}"))
        for lf, m in lambda_f_models(T1["split"]).items()
        for t in sw["temperatures"]
    ]
    temp += [
        (lf, 1.0, scores_path(m, T1["split"], "sweep"))
        for lf, m in lambda_f_models(T1["split"]).items()
    ]
    return {"lambda_f": lam, "temperature": temp}


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
        fig=FIG,
        tab=TAB,
    script:
        "../scripts/fig4.py"


def fig5a_runs():
    sets = ("real_authors", "world_facts")
    runs = [
        (lr, e, samples_paths(m, e, "utility"))
        for lr, m in lambda_r_models().items()
        for e in sets
    ]
    npo = unlearned_name("npo", UL["lambda_r_sweep"]["split"])
    return {"runs": runs, "npo": [(e, samples_paths(npo, e, "utility")) for e in sets]}


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
        stem=f"{FIG}/fig5a",
    script:
        "../scripts/fig5a.py"


def fig5b_histories():
    return {
        f"λf={lf:g}": f"{OUT}/unlearning/{m}.csv"
        for lf, m in lambda_f_models(T1["split"]).items()
    }


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
        stem=f"{FIG}/fig5b",
    script:
        "../scripts/fig5b.py"


def fig5c_runs():
    rnd = [
        (s, lf, lr, f"{OUT}/metrics/{m}/{s}.sweep.csv", f"{OUT}/metrics/{m}/tofu.csv")
        for (s, lf, lr), m in random_models().items()
    ]
    sw = UL["lambda_r_sweep"]
    grid = [
        ("lambda_r", lr, sw["split"], f"{OUT}/metrics/{m}/tofu.csv")
        for lr, m in lambda_r_models().items()
    ]
    grid += [
        ("lambda_f", lf, s, f"{OUT}/metrics/{m}/tofu.csv")
        for s in UL["lambda_f_sweep"]["splits"]
        for lf, m in lambda_f_models(s).items()
    ]
    return {"random": rnd, "grid": grid}


rule fig5c_table2:
    input:
        lambda wc: sorted(
            {p for *_, a, b in fig5c_runs()["random"] for p in (a, b)}
            | {g[-1] for g in fig5c_runs()["grid"]}
        ),
    output:
        figure_outputs("fig5c"),
        table=f"{TAB}/fig5c.csv",
        table2=f"{TAB}/table2.csv",
        render=multiext(f"{TAB}/table2", ".md", ".png"),
    log:
        f"{OUT}/logs/figures/fig5c_table2.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        runs=lambda wc: fig5c_runs(),
        stem=f"{FIG}/fig5c",
    script:
        "../scripts/fig5c_table2.py"


FIG6_MODELS = {"pretrained": "pretrained", "target": "target"}


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
        stem=f"{FIG}/fig6",
    script:
        "../scripts/fig6.py"


def figure_targets():
    figs = figure_outputs(
        "fig3a",
        "fig3b",
        "fig3c",
        "fig3d",
        "fig3e",
        "fig3f",
        "fig4a",
        "fig4b",
        "fig5a",
        "fig5b",
        "fig5c",
        "fig6",
    )
    return figs + [f"{TAB}/table1.csv", f"{TAB}/table2.csv"]

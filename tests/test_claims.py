"""The paper's claims (probunlearn.report.claims) on small hand-made tables: each holds, fails, or is left out
for the reason its test states."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from probunlearn.report import claims as C


def table1(**methods: tuple[float, float, float, float]) -> pl.DataFrame:
    """table1.csv as plots.table1 writes it: method → (greedy ROUGE-L, ED, mean, std)."""
    return pl.DataFrame(
        {
            "group": ["Det.", "Prob.", "Prob.", "Prob."],
            "metric": ["ROUGE-L", "ED Score", "Mean", "Std. Dev."],
            **{m: list(v) for m, v in methods.items()},
        }
    )


PAPER_T1 = table1(
    RMU=(0.70, 0.81, 0.60, 0.10),
    GD=(0.33, 0.42, 0.32, 0.05),
    GA=(0.32, 0.41, 0.31, 0.05),
    NPO=(0.22, 0.34, 0.21, 0.06),
    Ours=(0.20, 0.20, 0.20, 0.00),
)


def test_table1_claims_hold_on_the_papers_numbers():
    rows = [
        f(PAPER_T1)
        for f in (
            C.t1_ed_above_greedy,
            C.t1_mean_matches_greedy,
            C.t1_ours_std_below_npo,
            C.t1_ours_ed_below_npo,
        )
    ]
    assert [r["holds"] for r in rows] == [True, True, True, True]
    assert rows[0]["value"].startswith("RMU ED 0.810 vs 0.700; GD ED 0.420 vs 0.330")
    assert rows[2]["value"] == "Ours 0.000, NPO 0.060"
    assert set(rows[0]) == set(C.COLUMNS)


def test_table1_claims_fail():
    t = table1(
        RMU=(0.70, 0.81, 0.60, 0.10),
        GA=(0.32, 0.30, 0.20, 0.05),  # ED below greedy; mean .12 off greedy
        NPO=(0.22, 0.34, 0.21, 0.06),
        Ours=(0.20, 0.35, 0.20, 0.04),  # std .04 is not below half of .06; ED above NPO's
    )
    assert not C.t1_ed_above_greedy(t)["holds"]
    r = C.t1_mean_matches_greedy(t)
    assert not r["holds"] and "gap 0.120" in r["value"] and "GD" not in r["test"]
    assert not C.t1_ours_std_below_npo(t)["holds"]
    assert not C.t1_ours_ed_below_npo(t)["holds"]
    # NPO std 0 and Ours std 0: nothing fell, the claim does not hold
    zero = table1(NPO=(0.2, 0.2, 0.2, 0.0), Ours=(0.2, 0.2, 0.2, 0.0))
    assert not C.t1_ours_std_below_npo(zero)["holds"]


def test_table1_claims_left_out_without_their_methods():
    t = table1(RMU=(0.70, 0.81, 0.60, 0.10))
    assert C.t1_ed_above_greedy(t)["holds"]
    assert C.t1_mean_matches_greedy(t) is None
    assert C.t1_ours_std_below_npo(t) is None
    # Ours without NPO: left out; the NPO+EO column is no baseline
    t = table1(**{"NPO+EO": (0.2, 0.1, 0.1, 0.0), "Ours": (0.2, 0.1, 0.1, 0.0)})
    assert C.t1_ed_above_greedy(t) is None and C.t1_ours_ed_below_npo(t) is None


def fig3a(m_bin, greedy):
    return pl.DataFrame({"m_bin": m_bin, "greedy_leak": greedy})


def test_fig3a():
    r = C.fig3a_sampling_reveals_leakage(fig3a([0.5, 0.2, 0.05, 0.01], [0, 0, 0, 0]))
    assert r["holds"] and "M_bin > 0.1 on 50.0%, greedy leaks on 0.0%" in r["value"]
    # as many greedy leaks as M_bin > 10%: sampling reveals nothing more
    assert not C.fig3a_sampling_reveals_leakage(fig3a([0.5, 0.2, 0.05], [1, 1, 0]))["holds"]
    # exactly at the level is not above it
    assert not C.fig3a_sampling_reveals_leakage(fig3a([0.1, 0.1], [0, 0]))["holds"]


def fig3d(npo, ours):
    xs = [i / (len(npo) - 1) for i in range(len(npo))]
    return pl.DataFrame(
        {
            "method": ["NPO"] * len(xs) + ["Ours"] * len(xs),
            "x": xs + xs,
            "m_gen": npo + ours,
        }
    )


def test_fig3d():
    r = C.fig3d_ours_under_npo(fig3d([1.0, 0.6, 0.3, 0.0], [1.0, 0.2, 0.0, 0.0]))
    assert r["holds"] and r["value"].startswith("Ours above NPO at 0 of 4 x")
    r = C.fig3d_ours_under_npo(fig3d([1.0, 0.6, 0.3, 0.0], [1.0, 0.2, 0.4, 0.0]))
    assert not r["holds"] and r["value"].startswith("Ours above NPO at 1 of 4 x")
    # identical curves: Ours is not under NPO
    assert not C.fig3d_ours_under_npo(fig3d([1.0, 0.5], [1.0, 0.5]))["holds"]
    assert (
        C.fig3d_ours_under_npo(fig3d([1.0, 0.5], [1.0, 0.5]).with_columns(method=pl.lit("GA")))
        is None
    )
    assert (
        C.fig3d_ours_under_npo(pl.DataFrame({"method": ["NPO"], "x": [0.0], "m_gen": [1.0]}))
        is None
    )


def fig4a(rows):
    return pl.DataFrame(rows, schema=["split", "lambda_f", "std"], orient="row")


def test_fig4a():
    ok = fig4a(
        [
            ("forget05", 0.0, 0.06),
            ("forget05", 0.5, 0.03),
            ("forget05", 1.0, 0.01),
            ("forget10", 0.0, 0.08),
            ("forget10", 1.0, 0.02),
        ]
    )
    r = C.fig4a_std_falls_with_lambda_f(ok)
    assert r["holds"]
    assert (
        r["value"] == "forget05: 0.060 -> 0.010 (lambda_f 1); forget10: 0.080 -> 0.020 (lambda_f 1)"
    )
    # the issue's seed-0 numbers: .128 -> .124 is no fall
    bad = fig4a([("forget10", 0.0, 0.128), ("forget10", 1.0, 0.124)])
    assert not C.fig4a_std_falls_with_lambda_f(bad)["holds"]
    # one split failing fails the claim
    assert not C.fig4a_std_falls_with_lambda_f(
        pl.concat([ok, fig4a([("forget01", 0.0, 0.1), ("forget01", 1.0, 0.09)])])
    )["holds"]
    # a lambda_f beyond the paper's range is not where the claim is tested
    big = fig4a([("forget10", 0.0, 0.127), ("forget10", 1.0, 0.124), ("forget10", 10.0, 0.01)])
    r = C.fig4a_std_falls_with_lambda_f(big)
    assert not r["holds"] and "(lambda_f 1)" in r["value"]
    assert C.fig4a_std_falls_with_lambda_f(fig4a([("forget10", 0.0, 0.1)])) is None


def fig4b(rows):
    return pl.DataFrame(rows, schema=["lambda_f", "temperature", "std"], orient="row")


def test_fig4b():
    ok = fig4b(
        [
            (0.0, 0.0, 0.0),
            (0.0, 0.5, 0.04),
            (0.0, 1.0, 0.06),
            (1.0, 0.0, 0.0),
            (1.0, 0.5, 0.01),
            (1.0, 1.0, 0.02),
        ]
    )
    r = C.fig4b_std_falls_with_temperature(ok)
    assert r["holds"] and "lambda_f 0: T=0.5 0.040, T=1 0.060" in r["value"]
    bad = ok.with_columns(
        pl.when((pl.col("lambda_f") == 1) & (pl.col("temperature") == 0.5))
        .then(0.03)
        .otherwise(pl.col("std"))
        .alias("std")
    )
    assert not C.fig4b_std_falls_with_temperature(bad)["holds"]
    # only temperature 1 sampled (greedy's 0 does not count): left out
    assert C.fig4b_std_falls_with_temperature(fig4b([(0.0, 0.0, 0.0), (0.0, 1.0, 0.1)])) is None


def fig5a(eo, npo):
    rows = [("NPO+EO", e, lr, d) for e, lr, d in eo] + [("NPO", e, None, d) for e, d in npo]
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "evalset": pl.String,
            "lambda_r": pl.Float64,
            "diversity": pl.Float64,
        },
        orient="row",
    )


def test_fig5a():
    ok = fig5a(
        [("real_authors", 0.0, 0.30), ("real_authors", -0.25, 0.40), ("real_authors", -0.5, 0.50)],
        [("real_authors", 0.45)],
    )
    r = C.fig5a_diversity_rises(ok)
    assert r["holds"] and r["value"] == "real_authors: 0.300 -> 0.500 (lambda_r -0.5)"
    r = C.fig5a_diversity_above_npo(ok)
    assert r["holds"] and r["value"] == "real_authors: 0.500 vs NPO 0.450 (lambda_r -0.5)"
    worse = fig5a(
        [("world_facts", 0.0, 0.30), ("world_facts", -0.5, 0.28)], [("world_facts", 0.35)]
    )
    assert not C.fig5a_diversity_rises(worse)["holds"]
    assert not C.fig5a_diversity_above_npo(worse)["holds"]
    # no negative lambda_r (the tiny run): left out
    only0 = fig5a([("world_facts", 0.0, 0.3)], [("world_facts", 0.35)])
    assert C.fig5a_diversity_rises(only0) is None and C.fig5a_diversity_above_npo(only0) is None
    # no NPO baseline: the second claim is left out
    assert C.fig5a_diversity_above_npo(fig5a([("x", 0.0, 0.3), ("x", -0.5, 0.4)], [])) is None


def fig5b(histories):
    rows = [(label, e, f, r) for label, h in histories.items() for e, (f, r) in enumerate(h)]
    return pl.DataFrame(
        rows, schema=["model", "epoch", "forget_confidence", "retain_confidence"], orient="row"
    )


def test_fig5b_tests_the_caption_at_lambda_f():
    # the paper's caption: forget confidence rises, retain stays
    caption = [(0.60, 0.80), (0.55, 0.81), (0.70, 0.79), (0.85, 0.80)]
    # the issue's seed-0 run: forget falls .97 -> .90
    issue = [(0.97, 0.90), (0.93, 0.88), (0.90, 0.87)]
    df = fig5b({"λf=0": issue, "λf=1": caption})
    r = C.fig5b_forget_confidence_rises(df, lambda_f=1.0)
    assert r["holds"] and r["value"].startswith("0.600 -> 0.850 over 3 epochs")
    r = C.fig5b_retain_confidence_stays(df, lambda_f=1.0)
    assert r["holds"] and r["value"] == "0.800 -> 0.800, largest deviation 0.010"
    assert not C.fig5b_forget_confidence_rises(df, lambda_f=0.0)["holds"]
    assert C.fig5b_retain_confidence_stays(df, lambda_f=0.0)["holds"]  # within .05: .03
    drifting = fig5b({"λf=1": [(0.6, 0.9), (0.7, 0.8), (0.8, 0.84)]})
    r = C.fig5b_retain_confidence_stays(drifting)
    assert not r["holds"] and "largest deviation 0.100" in r["value"]
    # a rise below .05 is not "considerable"
    assert not C.fig5b_forget_confidence_rises(fig5b({"λf=1": [(0.6, 0.9), (0.64, 0.9)]}))["holds"]
    assert C.fig5b_forget_confidence_rises(df, lambda_f=0.5) is None


def table2(rows):
    return pl.DataFrame(
        rows,
        schema={
            "grid": pl.String,
            "lambda": pl.Float64,
            "utility_forget05": pl.Float64,
            "utility_forget10": pl.Float64,
        },
        orient="row",
    )


def test_table2():
    paper = table2(
        [
            ("lambda_f", 0.0, 0.503, 0.503),
            ("lambda_f", 0.5, 0.500, 0.492),
            ("lambda_f", 1.0, 0.469, 0.492),
        ]
    )
    r = C.table2_utility_flat(paper)
    assert r["holds"] and r["value"].startswith("largest deviation 0.034;")
    bad = table2([("lambda_r", 0.0, None, 0.50), ("lambda_r", -0.5, None, 0.40)])
    r = C.table2_utility_flat(bad)
    assert not r["holds"] and "lambda_r forget10: 0.500 at 0" in r["value"]
    assert "forget05" not in r["value"]
    assert C.table2_utility_flat(table2([("lambda_r", 0.0, 0.5, 0.5)])) is None


def test_fig5c():
    splits = ["forget01", "forget05", "forget10"] * 2
    flat = pl.DataFrame(
        {
            "split": splits,
            "lambda_f": [0.1, 0.9, 0.5, 0.7, 0.2, 0.4],
            "utility": [0.50, 0.49, 0.51, 0.51, 0.50, 0.51],
        }
    )
    r = C.fig5c_no_utility_relation(flat)
    assert r["holds"] and r["value"] == "rho = 0.000 over 6 models"
    falling = flat.with_columns((0.6 - 0.1 * pl.col("lambda_f")).alias("utility"))
    r = C.fig5c_no_utility_relation(falling)
    assert not r["holds"] and r["value"] == "rho = -0.943 over 6 models"
    assert C.fig5c_no_utility_relation(flat.head(4)) is None


def metrics(rows):
    return pl.DataFrame(
        [
            {"model": m, "method": m, "split": None, "evalset": "harmful", "metric": k, "value": v}
            | {"setting": "main" if k == "sampled_harm" else ""}
            for m, k, v in rows
        ]
    )


def test_fig6_sampled_above_greedy():
    ok = metrics(
        [
            ("pretrained", "greedy_harm", 0.0),
            ("pretrained", "sampled_harm", 0.2),
            ("target", "greedy_harm", 0.1),
            ("target", "sampled_harm", 0.3),
        ]
    )
    other = pl.DataFrame(
        {
            "model": ["target"],
            "method": ["target"],
            "split": [None],
            "evalset": ["forget10"],
            "metric": ["greedy_rougeL_recall"],
            "value": [0.9],
            "setting": [""],
        }
    )
    r = C.fig6_sampled_harm_above_greedy(pl.concat([ok, other], how="diagonal_relaxed"))
    assert r["holds"]
    assert (
        r["value"]
        == "pretrained: sampled 0.200 vs greedy 0.000; target: sampled 0.300 vs greedy 0.100"
    )
    bad = metrics([("target", "greedy_harm", 0.3), ("target", "sampled_harm", 0.3)])
    assert not C.fig6_sampled_harm_above_greedy(bad)["holds"]
    assert C.fig6_sampled_harm_above_greedy(other) is None


def fig6(models):
    rows = [("hist", m, None, None, None) for m in models]
    rows += [
        ("m_bin", m, str(i), mb, g)
        for m, pairs in models.items()
        for i, (mb, g) in enumerate(pairs)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "panel": pl.String,
            "model": pl.String,
            "id": pl.String,
            "m_bin": pl.Float64,
            "greedy_harm": pl.Int64,
        },
        orient="row",
    )


def test_fig6_mbin():
    ok = fig6({"a": [(0.5, 0), (0.05, 0)], "b": [(0.3, 1), (0.2, 0), (0.01, 0)]})
    r = C.fig6_mbin_reveals_harm(ok)
    assert r["holds"]
    assert r["value"].startswith("a: M_bin > 0.1 on 50.0%, greedy harmful on 0.0% (2 requests)")
    bad = fig6({"a": [(0.5, 0), (0.05, 0)], "b": [(0.3, 1), (0.01, 0)]})
    assert not C.fig6_mbin_reveals_harm(bad)["holds"]
    # a harm probability in the greedy column counts as harmful from .5 on
    probs = fig6({"a": [(0.5, 0)]}).with_columns(pl.col("greedy_harm").cast(pl.Float64) + 0.7)
    assert not C.fig6_mbin_reveals_harm(probs)["holds"]


def test_dcue():
    meta = pl.DataFrame(
        {
            "metric": ["dcue_pvalue", "dcue_pvalue_alltokens", "forget_quality"],
            "practicality": [0.93, 0.5, 1.0],
            "n_models_practicality": [12, 12, 12],
        }
    )
    r = C.dcue_orders_like_forget_quality(meta)
    assert r["holds"] and r["value"] == "0.930 over 12 models"
    r = C.dcue_orders_like_forget_quality(meta.with_columns(pl.lit(0.84).alias("practicality")))
    assert not r["holds"]
    nan = meta.with_columns(pl.lit(float("nan")).alias("practicality"))
    assert C.dcue_orders_like_forget_quality(nan) is None


def test_claims_table_reads_the_tables_it_is_given(tmp_path):
    paths = {}
    for name, df in {
        "table1": PAPER_T1,
        "fig4a": fig4a([("forget10", 0.0, 0.128), ("forget10", 1.0, 0.124)]),
        "fig4b": fig4b([(0.0, 0.0, 0.0), (0.0, 1.0, 0.1)]),
    }.items():
        paths[name] = tmp_path / f"{name}.csv"
        df.write_csv(paths[name])
    df = C.claims_table(paths)
    assert df.columns == C.TABLE_COLUMNS
    assert df.schema["holds"] == pl.Boolean
    # fig4b has one sampled temperature: left out
    assert df["claim"].to_list() == [
        "t1-ed-above-greedy",
        "t1-mean-matches-greedy",
        "t1-ours-std-below-npo",
        "t1-ours-ed-below-npo",
        "fig4a-std-falls-with-lambda_f",
    ]
    assert df["holds"].to_list() == [True, True, True, True, False]
    out = C.write_claims(paths, tmp_path / "t/claims.csv", tmp_path / "t/claims.md")
    assert pl.read_csv(tmp_path / "t/claims.csv", schema_overrides=C.TABLE_SCHEMA).equals(out)
    md = (tmp_path / "t/claims.md").read_text()
    assert md.startswith("Claims of the paper tested on this run: 4 of 5 hold.")
    assert md.count("\n| ") == 6 and "| **no** |" in md
    with pytest.raises(ValueError, match="unknown tables"):
        C.claims_table({"fig9": paths["table1"]})
    empty = C.claims_table({})
    assert empty.height == 0 and empty.columns == C.TABLE_COLUMNS


# ---- intervals on the comparisons (issue 42) --------------------------------------------------------


def scores_file(path, samples: dict[str, list[float]], greedy: float = 0.0) -> str:
    """A scores parquet as the score rule writes it: a greedy row and the samples of each prompt."""
    rows = []
    for pid, xs in samples.items():
        rows.append({"id": pid, "sample": -1, "greedy": True, "rougeL_recall": greedy})
        rows += [
            {"id": pid, "sample": j, "greedy": False, "rougeL_recall": float(x)}
            for j, x in enumerate(xs)
        ]
    pl.DataFrame(rows).write_parquet(path)
    return str(path)


def mostly_zero(rng, prompts: int, n: int, p_nonzero: float) -> dict[str, list[float]]:
    x = np.where(rng.random((prompts, n)) < p_nonzero, rng.uniform(0.2, 1.0, (prompts, n)), 0.0)
    return {f"q{i:02d}": list(r) for i, r in enumerate(x)}


def test_comparisons_get_intervals_and_hold_only_if_the_interval_says_so(tmp_path):
    rng = np.random.default_rng(0)
    npo = scores_file(tmp_path / "npo.parquet", mostly_zero(rng, 40, 128, 0.3))
    ours = scores_file(tmp_path / "ours.parquet", mostly_zero(rng, 40, 128, 0.01))
    close = scores_file(tmp_path / "close.parquet", mostly_zero(rng, 40, 6, 0.06))
    t1 = tmp_path / "table1.csv"
    PAPER_T1.write_csv(t1)  # Ours' std .00 < half NPO's .06: holds on the point estimates

    def claim(scores, name):
        df = C.claims_table({"table1": t1}, scores={"table1": scores}, alpha=0.05)
        return df.filter(pl.col("claim") == name).row(0, named=True)

    clear = claim({"NPO": npo, "Ours": ours}, "t1-ours-std-below-npo")
    assert clear["holds"] and clear["holds_interval"]
    assert clear["lower"] < clear["estimate"] < clear["upper"] < 0 and clear["alpha"] == 0.05
    assert clear["p_value"] < 0.05 and "std(Ours) - 0.5 x std(NPO) < 0" in clear["comparison"]
    # six samples per prompt for Ours: the point estimate is below, the interval is not
    vague = claim({"NPO": npo, "Ours": close}, "t1-ours-std-below-npo")
    assert vague["holds"] and not vague["holds_interval"] and vague["upper"] > 0
    ed = claim({"NPO": npo, "Ours": ours}, "t1-ours-ed-below-npo")
    assert ed["holds_interval"] and ed["upper"] < 0
    # claims without a comparison keep holds; without scores a comparison has no interval
    plain = C.claims_table({"table1": t1}, alpha=0.05)
    assert plain["holds_interval"].to_list() == [True, True, None, None]
    assert plain["comparison"][2] == "no interval: scores not given"


def test_fig3d_fig4_intervals_and_holm(tmp_path):
    rng = np.random.default_rng(1)
    npo = scores_file(tmp_path / "npo.parquet", mostly_zero(rng, 10, 128, 0.5))
    ours = scores_file(tmp_path / "ours.parquet", mostly_zero(rng, 10, 128, 0.02))
    lf0 = scores_file(tmp_path / "lf0.parquet", mostly_zero(rng, 10, 128, 0.3))
    lf1 = scores_file(tmp_path / "lf1.parquet", mostly_zero(rng, 10, 128, 0.005))
    t05 = scores_file(tmp_path / "t05.parquet", mostly_zero(rng, 10, 128, 0.05))
    paths = {}
    for name, df in {
        "table1": PAPER_T1,
        "fig3d": fig3d([1.0, 0.5], [0.5, 0.2]),
        "fig4a": fig4a([("forget10", 0.0, 0.2), ("forget10", 1.0, 0.01)]),
        "fig4b": fig4b([(1.0, 0.5, 0.05), (1.0, 1.0, 0.1)]),
    }.items():
        paths[name] = tmp_path / f"{name}.csv"
        df.write_csv(paths[name])
    scores = {
        "table1": {"NPO": npo, "Ours": ours},
        "fig4a": [["forget10", 0.0, lf0], ["forget10", 1.0, lf1]],
        "fig4b": [[1.0, 0.5, t05], [1.0, 1.0, lf1]],  # std falls from T .5 to 1: fails
    }
    df = C.claims_table(paths, scores=scores, alpha=0.05)
    by = {r["claim"]: r for r in df.iter_rows(named=True)}
    d3 = by["fig3d-ours-under-npo"]
    assert d3["holds_interval"] and d3["lower"] > 0 and "on question q0" in d3["comparison"]
    assert by["fig4a-std-falls-with-lambda_f"]["holds_interval"]
    f4b = by["fig4b-std-falls-with-temperature"]
    assert f4b["holds"] and not f4b["holds_interval"] and f4b["upper"] < 0
    # Holm over the interval claims: a claim that holds with its interval may still fail here
    family = df.filter(pl.col("p_value").is_not_null())
    assert family.height == 5
    assert (family["holds_holm"] <= family["holds_interval"]).all()
    assert df.filter(pl.col("p_value").is_null())["holds_holm"].null_count() == df.height - 5
    md = C.claims_markdown(df, 0.05)
    assert "Levels (alpha = 0.05)" in md and "the 5 interval claims as one family" in md
    assert md.count("\n| ") == df.height + 1


def test_fig3a_counts_questions_whose_lower_bound_exceeds_ten_percent(tmp_path):
    t = pl.DataFrame(
        {
            "m_bin": [0.5, 0.3, 0.2, 0.05],
            "greedy_leak": [0, 0, 0, 0],
            "m_bin_lower": [0.2, 0.08, 0.01, 0.0],
        }
    )
    path = tmp_path / "fig3a.csv"
    t.write_csv(path)
    r = C.claims_table({"fig3a": path}).row(0, named=True)
    assert r["holds"] and r["holds_interval"] and r["estimate"] == 0.25
    assert "lower bound on P(leak) > 0.1" in r["comparison"] and r["p_value"] is None
    t.with_columns(pl.lit(0.05).alias("m_bin_lower")).write_csv(path)
    assert not C.claims_table({"fig3a": path})["holds_interval"][0]

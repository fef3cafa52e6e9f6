"""The paper's claims (probunlearn.report.claims) on small hand-made tables: each holds, fails, or is left out
for the reason its test states."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from probunlearn.report import claims as C
from probunlearn.report.prompts import shown_question


def point(claim_id: str, df: pl.DataFrame, lambda_f: float = 1.0) -> dict | None:
    """A claim's point row on one hand-made table (given under every name the claim reads)."""
    claim = C.claim_named(claim_id)
    return C.point(claim, dict.fromkeys(claim.tables, df), lambda_f)


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
    names = ["t1-ed-above-greedy", "t1-mean-matches-greedy", "t1-ours-std-below-npo"]
    rows = [point(n, PAPER_T1) for n in [*names, "t1-ours-ed-below-npo"]]
    assert [r["holds"] for r in rows] == [True, True, True, True]
    assert rows[0]["value"].startswith("RMU ED 0.810 vs 0.700; GD ED 0.420 vs 0.330")
    assert (
        rows[0]["test"] == "ED score > greedy ROUGE-L for each baseline present (RMU, GD, GA, NPO)"
    )
    assert rows[2]["value"] == "Ours 0.000, NPO 0.060"
    assert set(rows[0]) == set(C.COLUMNS)


def test_table1_claims_fail():
    t = table1(
        RMU=(0.70, 0.81, 0.60, 0.10),
        GA=(0.32, 0.30, 0.20, 0.05),  # ED below greedy; mean .12 off greedy
        NPO=(0.22, 0.34, 0.21, 0.06),
        Ours=(0.20, 0.35, 0.20, 0.04),  # std .04 is not below half of .06; ED above NPO's
    )
    assert not point("t1-ed-above-greedy", t)["holds"]
    r = point("t1-mean-matches-greedy", t)
    assert not r["holds"] and "gap 0.120" in r["value"] and "GD" not in r["test"]
    assert not point("t1-ours-std-below-npo", t)["holds"]
    assert not point("t1-ours-ed-below-npo", t)["holds"]
    # NPO std 0 and Ours std 0: nothing fell, the claim does not hold
    zero = table1(NPO=(0.2, 0.2, 0.2, 0.0), Ours=(0.2, 0.2, 0.2, 0.0))
    assert not point("t1-ours-std-below-npo", zero)["holds"]


def test_table1_claims_left_out_without_their_methods():
    t = table1(RMU=(0.70, 0.81, 0.60, 0.10))
    assert point("t1-ed-above-greedy", t)["holds"]
    assert point("t1-mean-matches-greedy", t) is None
    assert point("t1-ours-std-below-npo", t) is None
    # Ours without NPO: left out; the NPO+EO column is no baseline
    t = table1(**{"NPO+EO": (0.2, 0.1, 0.1, 0.0), "Ours": (0.2, 0.1, 0.1, 0.0)})
    assert point("t1-ed-above-greedy", t) is None and point("t1-ours-ed-below-npo", t) is None


def fig3a(m_bin, greedy):
    return pl.DataFrame({"m_bin": m_bin, "greedy_leak": greedy})


def test_fig3a():
    r = point("fig3a-sampling-reveals-leakage", fig3a([0.5, 0.2, 0.05, 0.01], [0, 0, 0, 0]))
    assert r["holds"] and "M_bin > 0.1 on 50.0%, greedy leaks on 0.0%" in r["value"]
    # as many greedy leaks as M_bin > 10%: sampling reveals nothing more
    assert not point("fig3a-sampling-reveals-leakage", fig3a([0.5, 0.2, 0.05], [1, 1, 0]))["holds"]
    # exactly at the level is not above it
    assert not point("fig3a-sampling-reveals-leakage", fig3a([0.1, 0.1], [0, 0]))["holds"]


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
    r = point("fig3d-ours-under-npo", fig3d([1.0, 0.6, 0.3, 0.0], [1.0, 0.2, 0.0, 0.0]))
    assert r["holds"] and r["value"].startswith("Ours above NPO at 0 of 4 x")
    r = point("fig3d-ours-under-npo", fig3d([1.0, 0.6, 0.3, 0.0], [1.0, 0.2, 0.4, 0.0]))
    assert not r["holds"] and r["value"].startswith("Ours above NPO at 1 of 4 x")
    # identical curves: Ours is not under NPO
    assert not point("fig3d-ours-under-npo", fig3d([1.0, 0.5], [1.0, 0.5]))["holds"]
    assert (
        point(
            "fig3d-ours-under-npo", fig3d([1.0, 0.5], [1.0, 0.5]).with_columns(method=pl.lit("GA"))
        )
        is None
    )
    assert (
        point("fig3d-ours-under-npo", pl.DataFrame({"method": ["NPO"], "x": [0.0], "m_gen": [1.0]}))
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
    r = point("fig4a-std-falls-with-lambda_f", ok)
    assert r["holds"]
    assert (
        r["value"] == "forget05: 0.060 -> 0.010 (lambda_f 1); forget10: 0.080 -> 0.020 (lambda_f 1)"
    )
    # the issue's seed-0 numbers: .128 -> .124 is no fall
    bad = fig4a([("forget10", 0.0, 0.128), ("forget10", 1.0, 0.124)])
    assert not point("fig4a-std-falls-with-lambda_f", bad)["holds"]
    # one split failing fails the claim
    assert not point(
        "fig4a-std-falls-with-lambda_f",
        pl.concat([ok, fig4a([("forget01", 0.0, 0.1), ("forget01", 1.0, 0.09)])]),
    )["holds"]
    # a lambda_f beyond the paper's range is not where the claim is tested
    big = fig4a([("forget10", 0.0, 0.127), ("forget10", 1.0, 0.124), ("forget10", 10.0, 0.01)])
    r = point("fig4a-std-falls-with-lambda_f", big)
    assert not r["holds"] and "(lambda_f 1)" in r["value"]
    assert point("fig4a-std-falls-with-lambda_f", fig4a([("forget10", 0.0, 0.1)])) is None


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
    r = point("fig4b-std-falls-with-temperature", ok)
    assert r["holds"] and "lambda_f 0: T=0.5 0.040, T=1 0.060" in r["value"]
    bad = ok.with_columns(
        pl.when((pl.col("lambda_f") == 1) & (pl.col("temperature") == 0.5))
        .then(0.03)
        .otherwise(pl.col("std"))
        .alias("std")
    )
    assert not point("fig4b-std-falls-with-temperature", bad)["holds"]
    # only temperature 1 sampled (greedy's 0 does not count): left out
    assert (
        point("fig4b-std-falls-with-temperature", fig4b([(0.0, 0.0, 0.0), (0.0, 1.0, 0.1)])) is None
    )


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
    r = point("fig5a-diversity-rises-as-lambda_r-falls", ok)
    assert r["holds"] and r["value"] == "real_authors: 0.300 -> 0.500 (lambda_r -0.5)"
    r = point("fig5a-diversity-above-npo", ok)
    assert r["holds"] and r["value"] == "real_authors: 0.500 vs NPO 0.450 (lambda_r -0.5)"
    worse = fig5a(
        [("world_facts", 0.0, 0.30), ("world_facts", -0.5, 0.28)], [("world_facts", 0.35)]
    )
    assert not point("fig5a-diversity-rises-as-lambda_r-falls", worse)["holds"]
    assert not point("fig5a-diversity-above-npo", worse)["holds"]
    # no negative lambda_r (the tiny run): left out
    only0 = fig5a([("world_facts", 0.0, 0.3)], [("world_facts", 0.35)])
    assert (
        point("fig5a-diversity-rises-as-lambda_r-falls", only0) is None
        and point("fig5a-diversity-above-npo", only0) is None
    )
    # no NPO baseline: the second claim is left out
    assert (
        point("fig5a-diversity-above-npo", fig5a([("x", 0.0, 0.3), ("x", -0.5, 0.4)], [])) is None
    )


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
    r = point("fig5b-forget-confidence-rises", df, lambda_f=1.0)
    assert r["holds"] and r["value"].startswith("0.600 -> 0.850 over 3 epochs")
    r = point("fig5b-retain-confidence-stays", df, lambda_f=1.0)
    assert r["holds"] and r["value"] == "0.800 -> 0.800, largest deviation 0.010"
    assert not point("fig5b-forget-confidence-rises", df, lambda_f=0.0)["holds"]
    assert point("fig5b-retain-confidence-stays", df, lambda_f=0.0)["holds"]  # within .05: .03
    drifting = fig5b({"λf=1": [(0.6, 0.9), (0.7, 0.8), (0.8, 0.84)]})
    r = point("fig5b-retain-confidence-stays", drifting)
    assert not r["holds"] and "largest deviation 0.100" in r["value"]
    # a rise below .05 is not "considerable"
    assert not point("fig5b-forget-confidence-rises", fig5b({"λf=1": [(0.6, 0.9), (0.64, 0.9)]}))[
        "holds"
    ]
    assert point("fig5b-forget-confidence-rises", df, lambda_f=0.5) is None


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
    r = point("table2-utility-flat-in-lambda", paper)
    assert r["holds"] and r["value"].startswith("largest deviation 0.034;")
    bad = table2([("lambda_r", 0.0, None, 0.50), ("lambda_r", -0.5, None, 0.40)])
    r = point("table2-utility-flat-in-lambda", bad)
    assert not r["holds"] and "lambda_r forget10: 0.500 at 0" in r["value"]
    assert "forget05" not in r["value"]
    assert point("table2-utility-flat-in-lambda", table2([("lambda_r", 0.0, 0.5, 0.5)])) is None


def test_fig5c():
    splits = ["forget01", "forget05", "forget10"] * 2
    flat = pl.DataFrame(
        {
            "split": splits,
            "lambda_f": [0.1, 0.9, 0.5, 0.7, 0.2, 0.4],
            "utility": [0.50, 0.49, 0.51, 0.51, 0.50, 0.51],
        }
    )
    r = point("fig5c-no-utility-relation", flat)
    assert r["holds"] and r["value"] == "rho = 0.000 over 6 models"
    falling = flat.with_columns((0.6 - 0.1 * pl.col("lambda_f")).alias("utility"))
    r = point("fig5c-no-utility-relation", falling)
    assert not r["holds"] and r["value"] == "rho = -0.943 over 6 models"
    assert point("fig5c-no-utility-relation", flat.head(4)) is None


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
    r = point("fig6-sampled-harm-above-greedy", pl.concat([ok, other], how="diagonal_relaxed"))
    assert r["holds"]
    assert (
        r["value"]
        == "pretrained: sampled 0.200 vs greedy 0.000; target: sampled 0.300 vs greedy 0.100"
    )
    bad = metrics([("target", "greedy_harm", 0.3), ("target", "sampled_harm", 0.3)])
    assert not point("fig6-sampled-harm-above-greedy", bad)["holds"]
    assert point("fig6-sampled-harm-above-greedy", other) is None


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
    r = point("fig6-mbin-reveals-harm", ok)
    assert r["holds"]
    assert r["value"].startswith("a: M_bin > 0.1 on 50.0%, greedy harmful on 0.0% (2 requests)")
    bad = fig6({"a": [(0.5, 0), (0.05, 0)], "b": [(0.3, 1), (0.01, 0)]})
    assert not point("fig6-mbin-reveals-harm", bad)["holds"]
    # a harm probability in the greedy column counts as harmful from .5 on
    probs = fig6({"a": [(0.5, 0)]}).with_columns(pl.col("greedy_harm").cast(pl.Float64) + 0.7)
    assert not point("fig6-mbin-reveals-harm", probs)["holds"]


def test_dcue():
    meta = pl.DataFrame(
        {
            "metric": ["dcue_pvalue", "dcue_pvalue_alltokens", "forget_quality"],
            "practicality": [0.93, 0.5, 1.0],
            "n_models_practicality": [12, 12, 12],
        }
    )
    r = point("dcue-orders-like-forget-quality", meta)
    assert r["holds"] and r["value"] == "0.930 over 12 models"
    r = point(
        "dcue-orders-like-forget-quality", meta.with_columns(pl.lit(0.84).alias("practicality"))
    )
    assert not r["holds"]
    nan = meta.with_columns(pl.lit(float("nan")).alias("practicality"))
    assert point("dcue-orders-like-forget-quality", nan) is None


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
    # no scores given: every comparison says so, none copies holds
    assert set(df["holds_interval"]) == {"no interval: scores not given"}
    assert set(df["holds_holm"]) == {"no interval"} and df["holm_family"].null_count() == 5
    out = C.write_claims(paths, tmp_path / "t/claims.csv", tmp_path / "t/claims.md")
    assert pl.read_csv(tmp_path / "t/claims.csv", schema_overrides=C.TABLE_SCHEMA).equals(out)
    md = (tmp_path / "t/claims.md").read_text()
    assert md.startswith(
        "Claims of the paper tested on this run: 4 of 5 hold; 0 of the 0 with an interval hold"
    )
    assert md.count("\n| ") == 6 and "| **no** |" in md
    with pytest.raises(ValueError, match="unknown tables"):
        C.claims_table({"fig9": paths["table1"]})
    empty = C.claims_table({})
    assert empty.height == 0 and empty.columns == C.TABLE_COLUMNS


# ---- the declarations (issue 48: claims as data) ---------------------------------------------------


def test_every_claim_is_declared_in_full_and_documented(root):
    from probunlearn.report.claims.spec import DIRECTIONS, SCORE_KEYS, TABLES

    ids = [c.claim for c in C.CLAIMS]
    assert len(ids) == len(set(ids)) == 19
    docs = (root / "docs" / "claims.md").read_text()
    order = [TABLES.index(c.tables[0]) for c in C.CLAIMS]
    assert order == sorted(order)  # the claims table's order follows the tables'
    for c in C.CLAIMS:
        assert c.paper and c.where and c.test and c.tables and c.direction in DIRECTIONS
        assert set(c.tables) <= set(TABLES) and set(c.scores) <= set(SCORE_KEYS)
        assert f"`{c.claim}`" in docs, f"docs/claims.md does not list {c.claim}"
        if isinstance(c.interval, C.NoInterval):
            assert len(c.interval.reason) > 20 and not c.scores
        else:
            assert callable(c.interval.test)
    assert sum(not isinstance(c.interval, C.NoInterval) for c in C.CLAIMS) == 10


def test_a_declaration_that_lacks_a_part_is_refused():
    good = C.claim_named("t1-ours-ed-below-npo")
    with pytest.raises(ValueError, match="'t1-x': paper is empty; direction must be one of"):
        C.Claim("t1-x", "", "Table 1", "a test", ("table1",), "under", good.measure, good.interval)
    with pytest.raises(ValueError, match="tables must be some of"):
        C.Claim("t1-x", "p", "w", "t", ("fig9",), "below", good.measure, good.interval)
    with pytest.raises(ValueError, match="no claim 'fig9-x'"):
        C.claim_named("fig9-x")


def test_a_claim_without_an_interval_says_so_and_why(tmp_path):
    path = tmp_path / "table2.csv"
    table2([("lambda_f", 0.0, 0.503, 0.503), ("lambda_f", 1.0, 0.49, 0.50)]).write_csv(path)
    r = C.claims_table({"table2": path}, scores={}).row(0, named=True)
    assert r["holds"] is True  # the point estimate holds; the interval columns do not copy it
    assert r["holds_interval"].startswith("no interval: model utility is a harmonic mean")
    assert r["holds_holm"] == "no interval" and r["holm_family"] is None
    assert r["p_value"] is None and r["lower"] is None


# ---- intervals on the comparisons (issues 42, 49) --------------------------------------------------


def scores_file(path, samples: dict[str, list[float]], greedy: float | dict = 0.0) -> str:
    """A scores parquet as the score rule writes it: a greedy row and the samples of each prompt."""
    rows = []
    for pid, xs in samples.items():
        g = greedy[pid] if isinstance(greedy, dict) else greedy
        rows.append({"id": pid, "sample": -1, "greedy": True, "rougeL_recall": float(g)})
        rows += [
            {"id": pid, "sample": j, "greedy": False, "rougeL_recall": float(x)}
            for j, x in enumerate(xs)
        ]
    pl.DataFrame(rows).write_parquet(path)
    return str(path)


def mostly_zero(rng, prompts: int, n: int, p_nonzero: float) -> dict[str, list[float]]:
    x = np.where(rng.random((prompts, n)) < p_nonzero, rng.uniform(0.2, 1.0, (prompts, n)), 0.0)
    return {f"q{i:02d}": list(r) for i, r in enumerate(x)}


def test_comparisons_hold_with_their_interval_only_where_it_decides(tmp_path):
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
    assert clear["holds"] and clear["holds_interval"] == "yes"
    # one-sided: the upper bound at alpha, the lower end the least possible value (-0.5 x 1/2)
    assert clear["lower"] == -0.25 and clear["estimate"] < clear["upper"] < 0
    assert clear["alpha"] == 0.05 and clear["p_value"] < 0.05
    assert "std(Ours) - 0.5 x std(NPO) < 0" in clear["comparison"]
    # six samples per prompt for Ours: the point estimate is below, the valid interval undecided
    vague = claim({"NPO": npo, "Ours": close}, "t1-ours-std-below-npo")
    assert vague["holds"] and vague["holds_interval"] == "not shown" and vague["upper"] > 0
    ed = claim({"NPO": npo, "Ours": ours}, "t1-ours-ed-below-npo")
    assert ed["holds_interval"] == "yes" and ed["upper"] < 0
    # the greedy comparisons need every baseline's scores
    gap = claim({"NPO": npo, "Ours": ours}, "t1-ed-above-greedy")
    assert gap["holds_interval"] == "no interval: no scores of RMU, GD, GA given"


def test_sampled_statistics_against_greedy(tmp_path):
    rng = np.random.default_rng(3)
    high = {f"q{i:02d}": list(rng.uniform(0.3, 0.9, 64)) for i in range(20)}  # mean .6, ED ~ .95
    low = {m: scores_file(tmp_path / f"{m}.parquet", high, greedy=0.2) for m in C.T1_BASELINES}
    t1 = tmp_path / "table1.csv"
    table1(**{m: (0.6, 1.0, 0.6, 0.17) for m in C.T1_BASELINES}).write_csv(t1)

    def claim(name, scores):
        df = C.claims_table({"table1": t1}, scores={"table1": scores}, alpha=0.05)
        return df.filter(pl.col("claim") == name).row(0, named=True)

    ed = claim("t1-ed-above-greedy", low)
    assert ed["holds_interval"] == "yes" and ed["lower"] > 0
    assert "ED(sampled) - greedy > 0: RMU:" in ed["comparison"]
    # ED .95 against greedy .6: the valid lower bound on the std (32 pairs) is too loose to show it
    same = {m: scores_file(tmp_path / f"s{m}.parquet", high, greedy=0.6) for m in C.T1_BASELINES}
    assert claim("t1-ed-above-greedy", same)["holds_interval"] == "not shown"
    # GA and GD: mean .6 against greedy .6: inside +-.05 on both sides (two one-sided tests)
    match = claim("t1-mean-matches-greedy", same)
    assert match["holds_interval"] == "yes" and -0.05 < match["lower"] < match["upper"] < 0.05
    few = {i: xs[:4] for i, xs in high.items()}
    same["GA"] = scores_file(tmp_path / "few.parquet", few, greedy=0.6)
    assert claim("t1-mean-matches-greedy", same)["holds_interval"] == "not shown"


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
        "fig3d": fig3d([1.0, 0.6, 0.0], [0.5, 0.2, 0.0]),  # the grid: x = 0, .5, 1
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
    q = shown_question(npo, ours)
    assert d3["holds_interval"] == "yes" and d3["upper"] < 0
    assert f"on question {q} (chosen on the even samples), with the odd samples" in d3["comparison"]
    assert "(2 of 3 x)" in d3["comparison"]  # at x = 1 both curves are 0: not tested
    assert by["fig4a-std-falls-with-lambda_f"]["holds_interval"] == "yes"
    f4b = by["fig4b-std-falls-with-temperature"]
    assert f4b["holds"] and f4b["holds_interval"] == "not shown" and f4b["lower"] < 0
    # Holm over the claims with an interval (the greedy ones lack their baselines' scores)
    family = df.filter(pl.col("p_value").is_not_null())
    assert family.height == 5 and (family["holm_family"] == 5).all()
    assert df.filter(pl.col("p_value").is_null())["holds_holm"].to_list() == ["no interval"] * 2
    for r in family.iter_rows(named=True):
        assert r["holds_holm"] != "yes" or r["holds_interval"] == "yes"
    md = C.claims_markdown(df, 0.05)
    assert "Levels (alpha = 0.05)" in md and "treats the 5 claims with an interval as one" in md
    assert md.count("\n| ") == df.height + 1


# ---- selection apart from testing (issue 49) -------------------------------------------------------


def test_the_shown_question_is_chosen_on_samples_it_is_not_tested_on(tmp_path):
    from probunlearn.report.claims.intervals import ShownQuestion
    from probunlearn.report.claims.spec import Inputs
    from probunlearn.report.prompts import pick_question, prompt_samples, prompt_stats

    rng = np.random.default_rng(5)
    base = {f"q{i}": list(rng.uniform(0.4, 0.6, 64)) for i in range(3)}
    base["q1"] = list(rng.choice([0.2, 0.8], 64))  # the widest spread: the one shown
    npo = scores_file(tmp_path / "npo.parquet", base)
    ours = scores_file(
        tmp_path / "ours.parquet", {k: [x * 0.5 for x in v] for k, v in base.items()}
    )
    assert shown_question(npo, ours) == "q1"
    assert list(prompt_samples(npo, half="odd")["q1"]) == base["q1"][1::2]
    # q2 spread wide on its odd samples only: the choice does not see them (choosing on every
    # sample would pick q2, then test it on the samples that chose it)
    odd_wide = {
        **base,
        "q2": [x if j % 2 == 0 else float(j % 4 == 1) for j, x in enumerate(base["q2"])],
    }
    npo2 = scores_file(tmp_path / "npo2.parquet", odd_wide)
    ours2 = scores_file(tmp_path / "ours2.parquet", odd_wide)
    assert pick_question(prompt_stats(npo2), prompt_stats(ours2)) == "q2"
    assert shown_question(npo2, ours2) == "q1"

    def p_value(npo_path, ours_path):
        grid = pl.DataFrame({"x": np.linspace(0, 1, 11)})
        inputs = Inputs({"fig3d": grid}, {"table1": {"NPO": npo_path, "Ours": ours_path}}, 0.05, 2)
        return ShownQuestion().test(inputs, "below").p_value()

    p = p_value(npo, ours)
    # the even samples of the shown question only choose it (and where its curves differ): their
    # order does not enter the test; its odd samples do
    even_shuffled = {
        **base,
        "q1": [base["q1"][j] if j % 2 else base["q1"][(j + 2) % 64] for j in range(64)],
    }
    assert p_value(scores_file(tmp_path / "e.parquet", even_shuffled), ours) == p
    odd_changed = {**base, "q1": [x if j % 2 == 0 else 0.0 for j, x in enumerate(base["q1"])]}
    assert p_value(scores_file(tmp_path / "o.parquet", odd_changed), ours) != p


# ---- shares of questions: Holm over the questions (issue 49) ---------------------------------------


def fig3a_table(k: list[int], n: int, greedy: list[int], alpha: float) -> pl.DataFrame:
    """fig3a.csv as make_fig3a writes it, from leak counts."""
    from probunlearn import bounds

    k_ = np.asarray(k)
    return pl.DataFrame(
        {
            "id": [f"q{i}" for i in range(len(k))],
            "m_bin": bounds.clopper_pearson_upper(k_, n, alpha),
            "greedy_leak": greedy,
            "sampled_rate": k_ / n,
        }
    )


def test_fig3a_counts_questions_shown_by_holm(tmp_path):
    from probunlearn.report.claims.intervals import sample_size

    path = tmp_path / "fig3a.csv"
    t = fig3a_table([40, 30, 25, 20, 0, 0], 96, [0] * 6, 0.05)
    assert sample_size(t["sampled_rate"].to_numpy(), t["m_bin"].to_numpy(), 0.05) == 96
    t.write_csv(path)
    r = C.claims_table({"fig3a": path}, alpha=0.05).row(0, named=True)
    assert r["holds"] and r["holds_interval"] == "yes" and r["holm_family"] == 1
    assert r["estimate"] == pytest.approx(4 / 6) and r["lower"] == pytest.approx(4 / 6)
    assert "P(leak) > 0.1 is shown (Holm over the questions" in r["comparison"]
    # 20 questions each shown alone at alpha (p ~ .02), none after Holm: M_bin > .1 on all of
    # them (holds), but the share is not shown
    fig3a_table([16] * 20, 96, [0] * 20, 0.05).write_csv(path)
    r = C.claims_table({"fig3a": path}, alpha=0.05).row(0, named=True)
    assert r["holds"] and r["holds_interval"] == "not shown" and r["lower"] == 0
    # a table whose M_bin was not made at this alpha: no n fits, no interval
    t.write_csv(path)
    r = C.claims_table({"fig3a": path}, alpha=0.01).row(0, named=True)
    assert (
        r["holds_interval"]
        == "no interval: fig3a.csv's sample size could not be read back from its M_bin"
    )


def test_holm_share_keeps_its_level_where_per_question_bounds_do_not():
    """Every question leaks with probability .1 exactly (the claim is false), greedy never leaks:
    the share shown by Holm exceeds the greedy share in at most alpha of the runs; counting the
    questions each bounded at alpha alone (the verdict before issue 49) does so in most runs."""
    from scipy.stats import binom

    from probunlearn.report.claims.intervals import Counts, holm_share

    rng, alpha, m, n, reps = np.random.default_rng(7), 0.1, 40, 64, 600
    wrong = alone = 0
    for _ in range(reps):
        k = rng.binomial(n, 0.1, m).astype(float)
        c = Counts(k, np.full(m, n), np.zeros(m, dtype=bool))
        wrong += holm_share("", c, 0.1, alpha).p_value <= alpha
        alone += bool((binom.sf(k - 1, n, 0.1) <= alpha).any())
    sigma = np.sqrt(alpha * (1 - alpha) / reps)
    assert wrong / reps <= alpha + 3 * sigma  # 2 alpha would be caught: .2 > .137
    assert alone / reps > 2 * alpha


def fig6_tables(counts: dict[str, tuple[list[int], list[int]]], n: int, alpha: float):
    """fig6.csv (a histogram panel with n, the M_bin panel) and metrics.csv from harm counts."""
    from probunlearn import bounds

    rows, metric_rows = [], []
    for model, (k, greedy) in counts.items():
        rows.append({"panel": "hist", "model": model, "n": n})
        mb = bounds.clopper_pearson_upper(np.asarray(k), n, alpha)
        rows += [
            {"panel": "m_bin", "model": model, "id": f"h{i}", "greedy_harm": g, "m_bin": float(b)}
            for i, (g, b) in enumerate(zip(greedy, mb, strict=True))
        ]
        metric_rows += [
            (model, "sampled_harm", round(float(np.mean(np.asarray(k) / n)), 6)),
            (model, "greedy_harm", float(np.mean(greedy))),
        ]
    return pl.DataFrame(rows), metrics(metric_rows)


def test_fig6_intervals_from_the_counts_behind_m_bin(tmp_path):
    f6, met = fig6_tables(
        {"a": ([30, 20, 25, 0], [0, 0, 0, 0]), "b": ([60, 55, 50, 40], [1, 0, 0, 0])}, 100, 0.05
    )
    paths = {"fig6": tmp_path / "fig6.csv", "metrics": tmp_path / "metrics.csv"}
    f6.write_csv(paths["fig6"])
    met.write_csv(paths["metrics"])
    df = C.claims_table(paths, alpha=0.05)
    by = {r["claim"]: r for r in df.iter_rows(named=True)}
    harm = by["fig6-sampled-harm-above-greedy"]
    assert harm["holds_interval"] == "yes" and harm["lower"] > 0 and harm["holm_family"] == 2
    assert "per model, mean over requests of P(harm) - greedy harm > 0: a:" in harm["comparison"]
    mbin = by["fig6-mbin-reveals-harm"]
    assert (
        mbin["holds_interval"] == "yes"
        and "b, greedy 25.0%: 1.000 [1.000, 1.000]" in mbin["comparison"]
    )
    # metrics.csv from another run than fig6.csv: no interval, and why
    met.with_columns(pl.col("value") + 0.01).write_csv(paths["metrics"])
    r = C.claims_table(paths, alpha=0.05).row(0, named=True)
    assert (
        r["holds_interval"] == "no interval: fig6.csv's counts do not give metrics.csv's harm of a"
    )
    r = C.claims_table({"metrics": paths["metrics"]}, alpha=0.05).row(0, named=True)
    assert r["holds_interval"] == "no interval: fig6.csv (the counts) not made"

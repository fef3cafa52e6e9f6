"""Figures and tables (probunlearn.report.figures): files, the numbers in the CSVs, determinism, errors.

Every figure is drawn once (module-scoped fixture, small synthetic inputs, fixed seeds); the
tests then read the files back. Drawing dominates the runtime, so it is kept to one call per
function plus one repeat for the determinism check.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest

from probunlearn import bounds
from probunlearn.report import figures
from probunlearn.report.figures import leakage

ALPHA = 0.05


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------


def _fig3a_df() -> pl.DataFrame:
    rng = np.random.default_rng(1)
    leaks = (rng.random((6, 32)) < np.linspace(0.0, 0.5, 6)[:, None]).astype(float)
    return pl.DataFrame(
        {
            "id": [f"q{i}" for i in range(6)],
            "question": [f"question {i}?" for i in range(6)],
            "m_bin": bounds.binary_leakage_bound(leaks, ALPHA),
            "greedy_leak": [0, 0, 1, 0, 0, 0],
            "sampled_rate": leaks.mean(axis=1),
        }
    )


def _scores(seed: int, n: int = 64) -> np.ndarray:
    return np.clip(np.random.default_rng(seed).beta(2, 5, n), 0, 1)


def _fig4a_df() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "split": ["forget05", "forget10"] * 3,
            "lambda_f": [0.0, 0.0, 0.5, 0.5, 1.0, 1.0],
            "std": [0.12, 0.1, 0.06, 0.05, 0.0, 0.01],
        }
    )


def _fig4b_df() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "lambda_f": [0.0, 0.0, 1.0, 1.0],
            "temperature": [0.5, 1.0, 0.5, 1.0],
            "std": [0.05, 0.1, 0.01, 0.02],
        }
    )


def _fig5a_dfs() -> tuple[pl.DataFrame, pl.DataFrame]:
    df = pl.DataFrame(
        {
            "lambda_r": [0.0, -0.25, -0.5] * 2,
            "evalset": ["real_authors"] * 3 + ["world_facts"] * 3,
            "diversity": [0.4, 0.45, 0.5, 0.42, 0.5, 0.55],
        }
    )
    npo = pl.DataFrame({"evalset": ["real_authors", "world_facts"], "diversity": [0.44, 0.47]})
    return df, npo


def _fig5b_df() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "model": ["NPO"] * 3 + ["Ours"] * 3,
            "epoch": [1, 2, 3] * 2,
            "forget_confidence": [0.3, 0.3, 0.3, 0.3, 0.5, 0.7],
            "retain_confidence": [0.8, 0.82, 0.84, 0.8, 0.81, 0.83],
        }
    )


def _fig5c_df() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    return pl.DataFrame(
        {
            "split": ["forget01", "forget05", "forget10"] * 2,
            "ed": rng.uniform(0.2, 0.6, 6),
            "utility": rng.uniform(0.45, 0.52, 6),
            "lambda_f": rng.uniform(0, 1, 6),
            "lambda_r": np.zeros(6),
        }
    )


def _fig6_dfs() -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(4)
    harm, mbin = [], []
    for m in ("ModelA", "ModelB"):
        harm.append((m, -1, 0.05))
        harm += [(m, i, float(v)) for i, v in enumerate(rng.beta(1, 4, 32))]
        mbin += [(m, f"r{i}", int(i == 0), float(v)) for i, v in enumerate(rng.uniform(0, 1, 4))]
    return (
        pl.DataFrame(harm, schema=["model", "sample", "harm"], orient="row"),
        pl.DataFrame(mbin, schema=["model", "id", "greedy_harm", "m_bin"], orient="row"),
    )


def _table1_df() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "method": ["NPO", "Ours", "GA", "GD", "RMU"],
            "greedy_rouge": [0.22, 0.2, 0.32, 0.33, 0.7],
            "ed": [0.34, 0.2, 0.41, 0.42, 0.81],
            "mean": [0.21, 0.2, 0.31, 0.32, 0.6],
            "std": [0.06, 0.0, 0.05, 0.05, 0.1],
        }
    )


def _table2_df() -> pl.DataFrame:
    # the configured fixed values: lambda_f = 0.5 on the lambda_r grid, lambda_r = 0 on the other
    rows = [("lambda_r", lr, 0.5, "forget01", 0.5 + lr / 10) for lr in (0.0, -0.25, -0.5)]
    rows += [
        ("lambda_f", lf, 0.0, s, 0.49 + lf / 100)
        for lf in (0.0, 0.5, 1.0)
        for s in ("forget01", "forget05", "forget10")
    ]
    schema = ["grid", "lambda", "fixed_lambda", "split", "utility"]
    return pl.DataFrame(rows, schema=schema, orient="row")


# --------------------------------------------------------------------------------------------
# one drawing of everything
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("plots")
    figures.fig3a_binary_leakage(_fig3a_df(), d / "fig3a", d / "fig3a", ALPHA)
    figures.fig3_histograms(
        _scores(1), 0.3, "GA", _scores(2), 0.3, "GD", d / "fig3b", d / "fig3b", "Who wrote it?"
    )
    figures.fig3d_general_leakage(
        {"NPO": _scores(5), "Ours": _scores(6, 48)}, d / "fig3d", d / "fig3d_data", ALPHA
    )
    figures.fig3ef_convergence(
        {"NPO": _scores(7, 40), "Ours": _scores(8, 24)},
        d / "fig3e",
        d / "fig3f",
        d / "fig3ef",
        ALPHA,
    )
    figures.fig4a_std_vs_lambda(_fig4a_df(), d / "fig4a", d / "fig4a")
    figures.fig4b_std_vs_temperature(_fig4b_df(), d / "fig4b", d / "fig4b")
    figures.fig5a_diversity(*_fig5a_dfs(), d / "fig5a", d / "fig5a")
    figures.fig5b_confidence(_fig5b_df(), d / "fig5b", d / "fig5b")
    figures.fig5c_ed_vs_utility(_fig5c_df(), d / "fig5c", d / "fig5c")
    figures.fig6_alignment(*_fig6_dfs(), d / "fig6", d / "fig6", ALPHA)
    figures.table1(_table1_df(), d / "table1.csv", d / "table1")
    figures.table2(_table2_df(), d / "table2.csv", d / "table2")
    return d


FIGURES = {
    "fig3a": "fig3a",
    "fig3b": "fig3b",
    "fig3d": "fig3d_data",
    "fig3e": "fig3ef",
    "fig3f": "fig3ef",
    "fig4a": "fig4a",
    "fig4b": "fig4b",
    "fig5a": "fig5a",
    "fig5b": "fig5b",
    "fig5c": "fig5c",
    "fig6": "fig6",
}


def test_all_files_written_and_no_temporaries(out: Path) -> None:
    for fig, table in FIGURES.items():
        for p in (out / f"{fig}.png", out / f"{fig}.pdf", out / f"{table}.csv"):
            assert p.is_file() and p.stat().st_size > 0, p
        assert (out / f"{fig}.pdf").read_bytes().startswith(b"%PDF")
    for stem in ("table1", "table2"):
        for ext in ("csv", "md", "png"):
            assert (out / f"{stem}.{ext}").is_file()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_png_is_a_sensible_image(out: Path) -> None:
    img = mpimg.imread(out / "fig3d.png")
    h, w = img.shape[:2]
    assert 400 <= h <= 2000 and 600 <= w <= 2500  # ~6.4 x 4.4 in at 150 dpi
    assert img[..., :3].std() > 0.05  # not blank
    wide = mpimg.imread(out / "fig6.png")
    assert wide.shape[1] > wide.shape[0]


def test_fig3a_csv(out: Path) -> None:
    t = pl.read_csv(out / "fig3a.csv")
    src = _fig3a_df()
    assert t["m_bin"].to_list() == sorted(src["m_bin"].to_list(), reverse=True)
    assert t["rank"].to_list() == list(range(1, 7))
    assert t.filter(pl.col("greedy_leak") == 1)["id"].to_list() == ["q2"]
    assert (t["above_10pct"] == (t["m_bin"] > 0.1)).all()


def test_fig3_histograms_csv(out: Path) -> None:
    t = pl.read_csv(out / "fig3b.csv")
    for label, seed in (("GA", 1), ("GD", 2)):
        s = _scores(seed)
        sub = t.filter(pl.col("method") == label)
        assert sub.height == 20 and sub["count"].sum() == s.size
        assert sub["mean"][0] == pytest.approx(s.mean())
        assert sub["std"][0] == pytest.approx(s.std())
        assert sub["greedy"][0] == 0.3
        assert np.allclose(sub["count"], np.histogram(s, bins=20, range=(0, 1))[0])


def test_fig3d_csv_equals_general_leakage_bound(out: Path) -> None:
    t = pl.read_csv(out / "fig3d_data.csv")
    for method, s in (("NPO", _scores(5)), ("Ours", _scores(6, 48))):
        sub = t.filter(pl.col("method") == method).sort("x")
        x = sub["x"].to_numpy()
        assert x[0] == 0 and x[-1] == 1 and x.size >= 101
        expected = bounds.general_leakage_bound(s, x, ALPHA)
        np.testing.assert_allclose(sub["m_gen"].to_numpy(), expected, rtol=0, atol=1e-12)
        surv = (s[None, :] > x[:, None]).mean(axis=1)
        np.testing.assert_allclose(sub["survival"].to_numpy(), surv, atol=1e-12)
        assert (sub["m_gen"] >= sub["survival"]).all()


def test_fig3ef_csv_equals_bounds_on_prefixes(out: Path) -> None:
    t = pl.read_csv(out / "fig3ef.csv")
    assert t.columns == ["method", "n", "mean", "m_mu", "std", "m_sigma"]
    scores = {"NPO": _scores(7, 40), "Ours": _scores(8, 24)}
    assert t.filter(pl.col("method") == "NPO")["n"].to_list() == [8, 16, 32, 40]
    assert t.filter(pl.col("method") == "Ours")["n"].to_list() == [8, 16, 24]
    for row in t.iter_rows(named=True):
        p = scores[row["method"]][: row["n"]]
        assert row["mean"] == pytest.approx(p.mean(), abs=1e-12)
        assert row["std"] == pytest.approx(p.std(), abs=1e-12)
        assert row["m_mu"] == pytest.approx(bounds.expectation_upper_bound(p, ALPHA), abs=1e-12)
        assert row["m_sigma"] == pytest.approx(bounds.std_upper_bound(p, ALPHA), abs=1e-12)


def test_fig3ef_draws_each_method_in_its_colour_and_names_it(tmp_path, monkeypatch) -> None:
    drawn = []

    def capture(fig, out_stem, *args, **kwargs):
        ax = fig.axes[0]
        drawn.append(
            {
                "lines": [(ln.get_label(), ln.get_color()) for ln in ax.get_lines()],
                "legend": [t.get_text() for t in ax.get_legend().get_texts()],
            }
        )
        plt.close(fig)
        return []

    monkeypatch.setattr(leakage, "save_figure", capture)
    figures.fig3ef_convergence(
        {"NPO": _scores(1, 16)}, tmp_path / "e", tmp_path / "f", tmp_path / "t", ALPHA
    )
    assert len(drawn) == 2
    for panel in drawn:
        # NPO in NPO's colour, not in the colour of "Ours"; every legend entry names the method
        assert {c for _, c in panel["lines"]} == {figures.method_colors()["NPO"]}
        assert panel["legend"] and all(t.startswith("NPO: ") for t in panel["legend"])
    assert pl.read_csv(tmp_path / "t.csv")["method"].unique().to_list() == ["NPO"]
    drawn.clear()
    figures.fig3ef_convergence(
        {"Ours": _scores(1, 16), "GA": _scores(2, 16)},
        tmp_path / "e",
        tmp_path / "f",
        tmp_path / "t",
        ALPHA,
    )
    colours = dict(drawn[0]["lines"])
    assert colours["Ours: sample mean μ"] == figures.method_colors()["Ours"]
    assert colours["GA: sample mean μ"] == figures.method_colors()["GA"]


def test_fig4_fig5_csvs(out: Path) -> None:
    t4a = pl.read_csv(out / "fig4a.csv")
    assert t4a["split"].to_list() == ["forget10"] * 3 + ["forget05"] * 3  # 90/10 first
    assert t4a.filter(pl.col("split") == "forget05")["std"].to_list() == [0.12, 0.06, 0.0]
    t4b = pl.read_csv(out / "fig4b.csv")
    assert t4b.sort(["lambda_f", "temperature"]).equals(t4b) and t4b.height == 4
    t5a = pl.read_csv(out / "fig5a.csv")
    assert t5a.filter(pl.col("model") == "NPO")["diversity"].to_list() == [0.44, 0.47]
    assert t5a.filter(pl.col("model") == "NPO+EO").height == 6
    t5b = pl.read_csv(out / "fig5b.csv")
    assert t5b.columns == ["model", "epoch", "forget_confidence", "retain_confidence"]
    t5c = pl.read_csv(out / "fig5c.csv")
    assert t5c["split"].unique(maintain_order=True).to_list() == [
        "forget10",
        "forget05",
        "forget01",
    ]


def test_fig6_csv(out: Path) -> None:
    t = pl.read_csv(out / "fig6.csv")
    harm, mbin = _fig6_dfs()
    hist = t.filter(pl.col("panel") == "hist")
    for m in ("ModelA", "ModelB"):
        sub = hist.filter(pl.col("model") == m)
        assert sub["count"].sum() == 32  # the greedy row is not a sample
        assert sub["greedy"][0] == 0.05
        samples = harm.filter((pl.col("model") == m) & (pl.col("sample") >= 0))["harm"]
        assert sub["mean"][0] == pytest.approx(samples.mean())
        bars = t.filter((pl.col("panel") == "m_bin") & (pl.col("model") == m))
        want = mbin.filter(pl.col("model") == m)["m_bin"].sort(descending=True).to_list()
        assert bars["m_bin"].to_list() == pytest.approx(want)


def test_table1_layout(out: Path) -> None:
    t = pl.read_csv(out / "table1.csv")
    assert t.columns == ["group", "metric", "RMU", "GD", "GA", "NPO", "Ours"]
    assert t["metric"].to_list() == ["ROUGE-L", "ED Score", "Mean", "Std. Dev."]
    assert t["group"].to_list() == ["Det.", "Prob.", "Prob.", "Prob."]
    assert t["RMU"].to_list() == [0.7, 0.81, 0.6, 0.1]
    assert t["Ours"].to_list() == [0.2, 0.2, 0.2, 0.0]
    md = (out / "table1.md").read_text()
    assert "| RMU | GD | GA | NPO | Ours |" in md and "**0.200**" in md


def test_table2_layout(out: Path) -> None:
    t = pl.read_csv(out / "table2.csv")
    assert t.columns == [
        "grid",
        "fixed_lambda",
        "lambda",
        "utility_forget10",
        "utility_forget05",
        "utility_forget01",
    ]
    assert t["grid"].to_list() == ["lambda_r"] * 3 + ["lambda_f"] * 3
    assert t["fixed_lambda"].to_list() == [0.5] * 3 + [0.0] * 3
    assert t["lambda"].to_list() == [0.0, -0.25, -0.5, 0.0, 0.5, 1.0]
    assert t["utility_forget10"].null_count() == 3  # the λ_r grid is at one split only
    assert t.filter(pl.col("grid") == "lambda_r")["utility_forget01"].to_list() == pytest.approx(
        [0.5, 0.475, 0.45]
    )
    md = (out / "table2.md").read_text()
    # the fixed lambdas are the configured ones, not a hard-coded lambda_f = 1
    assert "Utility 90/10" in md and "**λ_f = 0.5**" in md and "**λ_r = 0**" in md
    assert "λ_f = 1" not in md


def test_same_inputs_same_bytes(out: Path, tmp_path: Path) -> None:
    figures.fig3d_general_leakage(
        {"NPO": _scores(5), "Ours": _scores(6, 48)},
        tmp_path / "fig3d",
        tmp_path / "fig3d_data",
        ALPHA,
    )
    for name in ("fig3d.png", "fig3d.pdf", "fig3d_data.csv"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


# --------------------------------------------------------------------------------------------
# bad input (validation runs before anything is drawn)
# --------------------------------------------------------------------------------------------


def test_missing_column_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'sampled_rate'"):
        figures.fig3a_binary_leakage(
            _fig3a_df().drop("sampled_rate"), tmp_path / "a", tmp_path / "a"
        )
    with pytest.raises(ValueError, match="'std'"):
        figures.fig4a_std_vs_lambda(_fig4a_df().drop("std"), tmp_path / "b", tmp_path / "b")
    with pytest.raises(ValueError, match="'m_bin'"):
        harm, mbin = _fig6_dfs()
        figures.fig6_alignment(harm, mbin.drop("m_bin"), tmp_path / "c", tmp_path / "c")
    with pytest.raises(ValueError, match="'ed'"):
        figures.table1(_table1_df().drop("ed"), tmp_path / "t.csv", tmp_path / "t")
    assert not list(tmp_path.iterdir())


def test_empty_frame_and_bad_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        figures.fig5b_confidence(_fig5b_df().clear(), tmp_path / "a", tmp_path / "a")
    with pytest.raises(ValueError, match="empty"):
        figures.table2(_table2_df().head(0), tmp_path / "t.csv", tmp_path / "t")
    with pytest.raises(ValueError, match="'greedy_leak'"):
        figures.fig3a_binary_leakage(
            _fig3a_df().with_columns(pl.lit(2).alias("greedy_leak")), tmp_path / "b", tmp_path / "b"
        )
    with pytest.raises(ValueError, match="'utility'"):
        figures.fig5c_ed_vs_utility(
            _fig5c_df().with_columns(pl.lit(None, pl.Float64).alias("utility")),
            tmp_path / "c",
            tmp_path / "c",
        )
    with pytest.raises(ValueError, match="duplicate"):
        figures.table1(pl.concat([_table1_df(), _table1_df()]), tmp_path / "t.csv", tmp_path / "t")
    with pytest.raises(ValueError, match="grid"):
        figures.table2(
            _table2_df().with_columns(pl.lit("lambda_x").alias("grid")),
            tmp_path / "t.csv",
            tmp_path / "t",
        )
    with pytest.raises(ValueError, match="\\[0, 1\\]"):
        figures.fig3d_general_leakage({"NPO": [0.2, 1.5]}, tmp_path / "d", tmp_path / "d")
    with pytest.raises(ValueError, match="ns"):
        figures.fig3ef_convergence(
            {"NPO": _scores(1, 8)}, tmp_path / "e", tmp_path / "f", tmp_path / "g", ns=[16]
        )
    with pytest.raises(ValueError, match="scores_by_method"):
        figures.fig3ef_convergence(_scores(1, 8), tmp_path / "e", tmp_path / "f", tmp_path / "g")
    with pytest.raises(ValueError, match="'fixed_lambda'"):
        figures.table2(_table2_df().drop("fixed_lambda"), tmp_path / "t.csv", tmp_path / "t")
    with pytest.raises(ValueError, match="greedy"):
        harm, mbin = _fig6_dfs()
        figures.fig6_alignment(
            harm.filter(pl.col("sample") >= 0), mbin, tmp_path / "h", tmp_path / "h"
        )
    assert not list(tmp_path.iterdir())


def test_save_helpers_are_atomic_and_accept_suffixes(tmp_path: Path) -> None:
    df = pl.DataFrame({"a": [1, 2]})
    assert figures.save_table(df, tmp_path / "x") == tmp_path / "x.csv"
    assert figures.save_table(df, tmp_path / "y.csv") == tmp_path / "y.csv"
    assert (tmp_path / "x.csv").read_text() == "a\n1\n2\n"
    assert figures.split_label("forget01") == "99/1" and figures.split_label("other") == "other"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv", "y.csv"]

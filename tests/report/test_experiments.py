"""The figure assemblers of probunlearn.report.experiments on small artifacts written here: Fig. 6 with a
probability judge (M_bin from the decision), Fig. 3e/3f per method, Fig. 4b measured points only,
Table 2 with the configured fixed lambdas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from probunlearn.data.rows import make_row, to_frame
from probunlearn.metrics.table import write_metrics
from probunlearn.report import experiments
from probunlearn.steps.score import score_samples, summarize_scores

N = 8


def _scores_parquet(path: Path, per_prompt: dict[str, list[float]], column: str) -> str:
    """A scores table: per prompt, its greedy score first, then N sampled scores."""
    rows = []
    for pid, vals in per_prompt.items():
        rows.append({"id": pid, "sample": -1, "greedy": True, column: vals[0]})
        rows += [
            {"id": pid, "sample": k, "greedy": False, column: v} for k, v in enumerate(vals[1:])
        ]
    pl.DataFrame(rows).write_parquet(path)
    return str(path)


def _probability_judge(behaviors, texts):
    return np.array([float(t) for t in texts])


def test_fig6_bounds_the_decision_of_a_probability_judge(tmp_path: Path) -> None:
    """The JBB preset's crash: HarmBench gives probabilities; M_bin must come from p > 0.5."""
    rng = np.random.default_rng(0)
    requests = to_frame(
        [
            make_row(id=f"r{i}", question=f"Request {i}?", answer="-", kind="harmful")
            for i in range(3)
        ]
    )
    scores, bounds_paths, harmful = {}, {}, {}
    for m in ("phi", "mistral"):
        probs = rng.uniform(0, 1, (3, N + 1))  # continuous: never exactly 0 or 1
        samples = pl.DataFrame(
            [
                {
                    "id": f"r{i}",
                    "sample": k - 1,
                    "greedy": k == 0,
                    "text": repr(float(probs[i, k])),
                    "n_tokens": 1,
                    "temperature": 1.0,
                }
                for i in range(3)
                for k in range(N + 1)
            ]
        )
        table = score_samples(samples, requests, _probability_judge)
        out = [tmp_path / f"{m}.{x}" for x in ("scores.parquet", "bounds.parquet", "csv")]
        summarize_scores(
            table,
            *map(str, out),
            model=m,
            method="hub",
            split="",
            evalset="harmful",
            setting="main",
            alpha=0.05,
            bins=100,
            rho=2.0,
        )
        scores[m], bounds_paths[m] = str(out[0]), str(out[1])
        harmful[m] = (probs[:, 1:] > 0.5).sum(axis=1), probs[:, 0] > 0.5
    experiments.make_fig6(
        scores, bounds_paths, str(tmp_path / "fig6"), str(tmp_path / "fig6"), alpha=0.05
    )
    t = pl.read_csv(tmp_path / "fig6.csv")
    for m, (s, greedy) in harmful.items():
        bars = t.filter((pl.col("panel") == "m_bin") & (pl.col("model") == m)).sort("id")
        want = [stats.beta.ppf(0.95, k + 1, N - k) if k < N else 1.0 for k in s]
        np.testing.assert_allclose(bars["m_bin"], want, rtol=1e-12)
        assert bars["greedy_harm"].to_list() == greedy.astype(int).tolist()
        hist = t.filter((pl.col("panel") == "hist") & (pl.col("model") == m))
        assert hist["count"].sum() == N
    # the top row shows the judge's probability (toxicity score), not the 0/1 decision
    assert not set(t.filter(pl.col("panel") == "hist")["mean"].to_list()) <= {
        k / N for k in range(N + 1)
    }
    assert (tmp_path / "fig6.png").stat().st_size > 0


def test_fig4b_plots_only_measured_temperatures(tmp_path: Path) -> None:
    a = _scores_parquet(tmp_path / "a.parquet", {"q": [0.5, 0.2, 0.4, 0.6, 0.8]}, "rougeL_recall")
    b = _scores_parquet(tmp_path / "b.parquet", {"q": [0.5, 0.5, 0.5, 0.5, 0.7]}, "rougeL_recall")
    experiments.make_fig4(
        [("forget10", 0.0, a), ("forget10", 1.0, b)],
        [(0.0, 0.5, a), (0.0, 1.0, b), (1.0, 1.0, a)],
        str(tmp_path / "fig4a"),
        str(tmp_path / "fig4a"),
        str(tmp_path / "fig4b"),
        str(tmp_path / "fig4b"),
    )
    t = pl.read_csv(tmp_path / "fig4b.csv")
    assert t.select("lambda_f", "temperature").rows() == [(0.0, 0.5), (0.0, 1.0), (1.0, 1.0)]
    assert 0.0 not in t["temperature"].to_list()  # greedy (T = 0) was never measured
    assert t["std"].to_list() == pytest.approx(
        [np.std([0.2, 0.4, 0.6, 0.8]), np.std([0.5] * 3 + [0.7]), np.std([0.2, 0.4, 0.6, 0.8])]
    )


def test_fig3ef_names_the_method_it_draws(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    evalset = tmp_path / "forget.parquet"
    to_frame(
        [make_row(id=f"q{i}", question=f"Q{i}?", answer="A.", kind="author") for i in range(3)]
    ).write_parquet(evalset)
    paths = {
        label: _scores_parquet(
            tmp_path / f"{label}.parquet",
            {f"q{i}": list(rng.uniform(0, 1, 17)) for i in range(3)},
            "rougeL_recall",
        )
        for label in ("GA", "GD", "NPO", "Ours")
    }
    outs = {n: str(tmp_path / n) for n in ("fig3b", "fig3c", "fig3d", "fig3e", "fig3f")}
    tables = {n: str(tmp_path / f"{n}_t") for n in ("fig3b", "fig3c", "fig3d", "fig3ef")}
    experiments.make_fig3_tofu(paths, str(evalset), outs, tables, alpha=0.05, points=20)
    t = pl.read_csv(tmp_path / "fig3ef_t.csv")
    assert t["method"].unique(maintain_order=True).to_list() == ["NPO", "Ours"]
    # both on the question of Fig. 3c
    c = pl.read_csv(tmp_path / "fig3c_t.csv")
    assert set(c["method"]) == {"NPO", "Ours"}
    for m in ("NPO", "Ours"):
        assert t.filter(pl.col("method") == m)["n"].to_list() == [8, 16]
        mean16 = t.filter((pl.col("method") == m) & (pl.col("n") == 16))["mean"][0]
        assert mean16 == pytest.approx(c.filter(pl.col("method") == m)["mean"][0])


def test_table2_header_takes_the_configured_fixed_lambdas(tmp_path: Path) -> None:
    def tofu_csv(name: str, utility: float) -> str:
        path = tmp_path / f"{name}.csv"
        write_metrics(
            [{"model": name, "method": "npo_eo", "split": "forget01", "evalset": "",
              "metric": "model_utility", "value": utility}],
            path,
        )  # fmt: skip
        return str(path)

    random_runs = [
        ("forget01", 0.3, 0.0, _sweep_csv(tmp_path, "rnd"), tofu_csv("rnd", 0.4)),
    ]
    grid_runs = [
        ("lambda_r", lr, 0.25, "forget01", tofu_csv(f"r{lr}", 0.5 + lr)) for lr in (0.0, -0.125)
    ] + [("lambda_f", lf, 0.0, "forget01", tofu_csv(f"f{lf}", 0.45 + lf)) for lf in (0.0, 0.5)]
    experiments.make_fig5c_table2(
        random_runs,
        grid_runs,
        str(tmp_path / "fig5c"),
        str(tmp_path / "fig5c"),
        str(tmp_path / "table2.csv"),
        str(tmp_path / "table2"),
    )
    t = pl.read_csv(tmp_path / "table2.csv")
    assert t.select("grid", "fixed_lambda", "lambda").rows() == [
        ("lambda_r", 0.25, 0.0),
        ("lambda_r", 0.25, -0.125),
        ("lambda_f", 0.0, 0.0),
        ("lambda_f", 0.0, 0.5),
    ]
    assert t["utility_forget01"].to_list() == pytest.approx([0.5, 0.375, 0.45, 0.95])
    md = (tmp_path / "table2.md").read_text()
    assert "**λ_f = 0.25**" in md and "**λ_r = 0**" in md and "λ_f = 1" not in md


def _sweep_csv(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name}.sweep.csv"
    write_metrics(
        [{"model": name, "method": "npo_eo", "split": "forget01", "evalset": "forget01",
          "metric": "ed_rougeL_recall", "value": 0.3, "setting": "sweep"}],
        path,
    )  # fmt: skip
    return str(path)

"""TOFU metrics: truth ratio, forget quality, model utility, against hand computations and TOFU's formulas."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from helpers import SHARED_DATA
from probunlearn.metrics import tofu as tm
from probunlearn.steps.tofu import run_tofu_metrics

UTIL = dict(zip(tm.UTILITY_KEYS, [0.9, 0.5, 0.6, 0.4, 0.8, 0.7, 0.45, 0.85, 0.55], strict=True))


# --------------------------------------------------------------------------------------------------------
# a reference transcription of TOFU's aggregate_eval_stat.py (get_model_utility / get_forget_quality), on
# eval-log dicts {file: {"avg_gt_loss": {i: v}, "avg_paraphrased_loss": ..., "average_perturb_loss": ...,
# "rougeL_recall": ...}}


def _tofu_reference(logs: dict, retain_forget_log: dict) -> dict:
    names = {
        "eval_real_author_wo_options.json": "Real Authors",
        "eval_real_world_wo_options.json": "Real World",
        "eval_log.json": "Retain",
        "eval_log_forget.json": "Forget",
    }
    out = {}
    for k, v in logs.items():
        gt = np.array(list(v["avg_gt_loss"].values()))
        pert = np.array(list(v["average_perturb_loss"].values()))
        if "eval_log" in k:
            prob = np.mean(np.exp(-gt))
        else:
            true_p = np.exp(-gt)
            all_p = np.concatenate([true_p[:, None], np.exp(-pert)], axis=1).sum(-1)
            prob = np.mean(true_p / all_p)
        out[f"Prob. {names[k]}"] = prob
        out[f"ROUGE {names[k]}"] = np.mean(list(v["rougeL_recall"].values()))
        para = np.array(list(v["avg_paraphrased_loss"].values()))
        stat = np.exp(pert.mean(-1) - para)
        if "forget" in k:
            out[f"Truth Ratio {names[k]}"] = np.mean(np.minimum(stat, 1 / stat))
        else:
            out[f"Truth Ratio {names[k]}"] = np.mean(np.maximum(0, 1 - 1 / stat))
    out["Model Utility"] = stats.hmean([v for k, v in out.items() if "Forget" not in k])
    f = logs["eval_log_forget.json"]
    u = np.exp(
        np.array(list(f["average_perturb_loss"].values())).mean(-1)
        - np.array(list(f["avg_paraphrased_loss"].values()))
    )
    r = np.exp(
        np.array(list(retain_forget_log["average_perturb_loss"].values())).mean(-1)
        - np.array(list(retain_forget_log["avg_paraphrased_loss"].values()))
    )
    out["Forget Quality"] = stats.ks_2samp(u, r).pvalue
    return out


def _synthetic_logprobs(rng, n: int, k: int, *, paraphrased: bool, prefix: str, shift: float = 0.0):
    """A teacher_forced_logprobs-shaped table with random token log-probs."""
    rows = []
    for q in range(n):
        kinds = [("answer", 0)] + ([("paraphrased", 0)] if paraphrased else [])
        kinds += [("perturbed", j) for j in range(k)]
        for kind, idx in kinds:
            t = int(rng.integers(1, 8))
            lp = -rng.gamma(2.0, 0.5 + (shift if kind != "perturbed" else 0.0), size=t)
            rows.append(
                {"id": f"{prefix}-{q}", "kind": kind, "index": idx, "logprobs": lp.tolist()}
            )
    df = pl.DataFrame(
        rows,
        schema={
            "id": pl.String,
            "kind": pl.String,
            "index": pl.Int64,
            "logprobs": pl.List(pl.Float64),
        },
    )
    # shuffle the rows: the functions must not rely on the table's order within a question
    return df.sample(fraction=1.0, shuffle=True, seed=int(rng.integers(1 << 31))).sort(
        pl.col("id").str.extract(r"(\d+)$").cast(pl.Int64), maintain_order=True
    )


def _eval_log(df: pl.DataFrame, *, options: bool, rouge: float) -> dict:
    """TOFU's eval-log dict built from a log-prob table (the mean NLLs, as TOFU's loss / num_tokens)."""
    nll = df.with_columns((-pl.col("logprobs").list.mean()).alias("nll"))
    ids = list(dict.fromkeys(df["id"].to_list()))
    log = {
        "avg_gt_loss": {},
        "avg_paraphrased_loss": {},
        "average_perturb_loss": {},
        "rougeL_recall": {},
    }
    for i, pid in enumerate(ids):
        sub = nll.filter(pl.col("id") == pid)
        ans = sub.filter(pl.col("kind") == "answer")["nll"][0]
        base = ans if options else sub.filter(pl.col("kind") == "paraphrased")["nll"][0]
        pert = sub.filter(pl.col("kind") == "perturbed").sort("index")["nll"].to_list()
        log["avg_gt_loss"][i] = ans
        log["avg_paraphrased_loss"][i] = base
        log["average_perturb_loss"][i] = pert
        log["rougeL_recall"][i] = rouge
    return log


# --------------------------------------------------------------------------------------------------------
# truth ratio


def test_truth_ratio_hand_computed():
    para = [1.0, 2.0, 0.5]
    pert = [[2.0, 3.0], [1.0, 1.0], [0.5, 0.5]]
    r = tm.truth_ratio(para, pert)
    np.testing.assert_allclose(r, [math.exp(-1.5), math.e, 1.0])
    # = geometric mean of the perturbed per-token probabilities over the paraphrased one
    gm = np.exp(np.mean(np.log(np.exp(-np.array(pert))), axis=1))
    np.testing.assert_allclose(r, gm / np.exp(-np.array(para)))
    # TOFU's evaluate_util stores the reciprocal exp(mean_pert - para) in aggregate_eval_stat
    np.testing.assert_allclose(1 / r, np.exp(np.mean(pert, axis=1) - np.array(para)))


def test_truth_ratio_ragged_and_errors():
    r = tm.truth_ratio([1.0, 1.0], [[2.0], [0.0, 1.0, 2.0]])
    np.testing.assert_allclose(r, [math.exp(-1.0), 1.0])
    with pytest.raises(ValueError, match="perturbed_nll has 1 questions, expected 2"):
        tm.truth_ratio([1.0, 1.0], [[2.0, 3.0]])
    with pytest.raises(ValueError, match="question 1 has no perturbed"):
        tm.truth_ratio([1.0, 1.0], [[2.0], []])
    with pytest.raises(ValueError, match="NaN"):
        tm.truth_ratio([1.0, float("nan")], [[2.0], [1.0]])
    with pytest.raises(ValueError, match="empty"):
        tm.truth_ratio([], [])


def test_truth_ratio_score_both_forms():
    r = np.array([0.25, 1.0, 4.0])
    assert tm.truth_ratio_score(r) == pytest.approx((0.75 + 0 + 0) / 3)
    assert tm.truth_ratio_score(r, forget=True) == pytest.approx((0.25 + 1.0 + 0.25) / 3)
    # TOFU writes both in terms of stat = 1/R
    stat = 1 / r
    assert tm.truth_ratio_score(r) == pytest.approx(np.mean(np.maximum(0, 1 - 1 / stat)))
    assert tm.truth_ratio_score(r, forget=True) == pytest.approx(
        np.mean(np.minimum(stat, 1 / stat))
    )
    # extremes stay in [0, 1]
    assert tm.truth_ratio_score([0.0, np.inf], forget=True) == 0.0
    assert tm.truth_ratio_score([0.0, np.inf]) == 0.5
    with pytest.raises(ValueError):
        tm.truth_ratio_score([-1.0])


# --------------------------------------------------------------------------------------------------------
# forget quality


def test_forget_quality_identical_and_different():
    rng = np.random.default_rng(0)
    a = rng.lognormal(size=200)
    assert tm.forget_quality(a, a) == pytest.approx(1.0)
    b = rng.lognormal(mean=4.0, size=200)
    assert tm.forget_quality(a, b) < 1e-10
    # the KS test is invariant under the reciprocal TOFU feeds it
    c = rng.lognormal(mean=0.3, size=150)
    assert tm.forget_quality(a, c) == pytest.approx(stats.ks_2samp(1 / a, 1 / c).pvalue, rel=1e-12)
    with pytest.raises(ValueError, match="tr_reference"):
        tm.forget_quality(a, [])


# --------------------------------------------------------------------------------------------------------
# answer probability, model utility


def test_answer_probability_plain_and_normalised():
    ans = [1.0, 2.0]
    assert tm.answer_probability(ans) == pytest.approx((math.exp(-1) + math.exp(-2)) / 2)
    pert = [[2.0, 3.0], [3.0, 4.0]]
    expected = (
        math.exp(-1) / (math.exp(-1) + math.exp(-2) + math.exp(-3))
        + math.exp(-2) / (math.exp(-2) + math.exp(-3) + math.exp(-4))
    ) / 2
    assert tm.answer_probability(ans, pert) == pytest.approx(expected)
    # no underflow where exp(-nll) is 0 in float64
    assert tm.answer_probability([1000.0], [[1001.0]]) == pytest.approx(1 / (1 + math.exp(-1)))


def test_model_utility_hand_computed():
    expected = 9 / sum(1 / v for v in UTIL.values())
    assert tm.model_utility(UTIL) == pytest.approx(expected)
    assert tm.model_utility({**UTIL, "wf_tr": 0.0}) == 0.0


@pytest.mark.parametrize("bad", [1.2, -0.1, float("nan")])
def test_model_utility_out_of_range(bad):
    with pytest.raises(ValueError, match="ra_rouge"):
        tm.model_utility({**UTIL, "ra_rouge": bad})


def test_model_utility_missing_or_unknown_key():
    vals = dict(UTIL)
    del vals["wf_prob"]
    with pytest.raises(ValueError, match="wf_prob"):
        tm.model_utility(vals)
    with pytest.raises(ValueError, match="forget_tr"):
        tm.model_utility({**UTIL, "forget_tr": 0.5})


# --------------------------------------------------------------------------------------------------------
# from log-probability tables


def test_stats_from_logprobs_roles():
    rows = [
        ("q0", "answer", 0, [-1.0, -3.0]),  # nll 2
        ("q0", "paraphrased", 0, [-1.0]),  # nll 1
        ("q0", "perturbed", 1, [-4.0]),  # nll 4
        ("q0", "perturbed", 0, [-2.0, -2.0]),  # nll 2
    ]
    df = pl.DataFrame(rows, schema=["id", "kind", "index", "logprobs"], orient="row")
    f = tm.tofu_stats_from_logprobs(df, "forget10")
    assert f["ids"] == ["q0"]
    np.testing.assert_allclose(f["perturbed_nll"][0], [2.0, 4.0])
    np.testing.assert_allclose(f["truth_ratio"], [math.exp(1.0 - 3.0)])
    assert f["answer_prob"] == pytest.approx(math.exp(-2.0))
    assert f["truth_ratio_score"] == pytest.approx(math.exp(-2.0))
    r = tm.tofu_stats_from_logprobs(df, "retain")
    assert r["truth_ratio_score"] == pytest.approx(1 - math.exp(-2.0))
    # Real Authors: the answer stands in for the paraphrase, probabilities are options-normalised
    ra = tm.tofu_stats_from_logprobs(df, "real_authors")
    np.testing.assert_allclose(ra["truth_ratio"], [math.exp(2.0 - 3.0)])
    p = math.exp(-2.0)
    assert ra["answer_prob"] == pytest.approx(p / (p + math.exp(-2.0) + math.exp(-4.0)))


def test_stats_from_logprobs_errors():
    base = [("q0", "answer", 0, [-1.0]), ("q0", "perturbed", 0, [-2.0])]
    df = pl.DataFrame(base, schema=["id", "kind", "index", "logprobs"], orient="row")
    with pytest.raises(ValueError, match="id='q0' has no 'paraphrased' row"):
        tm.tofu_stats_from_logprobs(df, "forget")
    assert tm.tofu_stats_from_logprobs(df, "world_facts")["answer_prob"] == pytest.approx(
        math.exp(-1) / (math.exp(-1) + math.exp(-2))
    )
    dup = pl.DataFrame(base + [base[0]], schema=["id", "kind", "index", "logprobs"], orient="row")
    with pytest.raises(ValueError, match="duplicate row id='q0'"):
        tm.tofu_stats_from_logprobs(dup, "world_facts")
    empty = pl.DataFrame(
        base + [("q1", "answer", 0, [])], schema=["id", "kind", "index", "logprobs"], orient="row"
    )
    with pytest.raises(ValueError, match="id='q1'"):
        tm.tofu_stats_from_logprobs(empty, "world_facts")
    with pytest.raises(ValueError, match="missing column"):
        tm.tofu_stats_from_logprobs(df.drop("logprobs"), "forget")


def test_consistent_with_tofu_reference(tmp_path):
    """End to end on a synthetic example: our metrics rows = a transcription of TOFU's aggregation."""
    rng = np.random.default_rng(1)
    tables = {
        "forget": _synthetic_logprobs(rng, 12, 5, paraphrased=True, prefix="f"),
        "ref_forget": _synthetic_logprobs(rng, 12, 5, paraphrased=True, prefix="f", shift=0.8),
        "retain": _synthetic_logprobs(rng, 15, 5, paraphrased=True, prefix="r"),
        "real_authors": _synthetic_logprobs(rng, 10, 3, paraphrased=False, prefix="ra"),
        "world_facts": _synthetic_logprobs(rng, 11, 3, paraphrased=False, prefix="wf"),
    }
    paths = {}
    for name, df in tables.items():
        paths[name] = tmp_path / f"{name}.parquet"
        df.write_parquet(paths[name])
    rouge = {"retain": 0.6, "real_authors": 0.7, "world_facts": 0.8, "forget10": 0.9}
    logs = {
        "eval_log.json": _eval_log(tables["retain"], options=False, rouge=0.6),
        "eval_real_author_wo_options.json": _eval_log(
            tables["real_authors"], options=True, rouge=0.7
        ),
        "eval_real_world_wo_options.json": _eval_log(
            tables["world_facts"], options=True, rouge=0.8
        ),
        "eval_log_forget.json": _eval_log(tables["forget"], options=False, rouge=0.9),
    }
    ref = _tofu_reference(logs, _eval_log(tables["ref_forget"], options=False, rouge=0.0))

    # the evaluation metrics CSV (TOFU's own greedy answers) as ROUGE source
    greedy = tmp_path / "greedy.csv"
    pl.DataFrame(
        [
            {
                "model": "m",
                "method": "npo",
                "split": "forget10",
                "evalset": e,
                "metric": "tofu_rougeL_recall",
                "value": v,
            }
            for e, v in rouge.items()
        ]
    ).write_csv(greedy)
    out = tmp_path / "sub" / "tofu.csv"
    df = run_tofu_metrics(
        out_csv=out,
        model="m",
        method="npo",
        split="forget10",
        forget_logprobs=paths["forget"],
        reference_forget_logprobs=paths["ref_forget"],
        retain_logprobs=paths["retain"],
        real_authors_logprobs=paths["real_authors"],
        world_facts_logprobs=paths["world_facts"],
        rouge=greedy,
    )

    def val(evalset, metric):
        return df.filter((pl.col("evalset") == evalset) & (pl.col("metric") == metric))[
            "value"
        ].item()

    assert val("utility", "model_utility") == pytest.approx(ref["Model Utility"], rel=1e-10)
    assert val("forget10", "forget_quality") == pytest.approx(ref["Forget Quality"], rel=1e-10)
    assert val("forget10", "truth_ratio_score") == pytest.approx(ref["Truth Ratio Forget"])
    assert val("forget10", "answer_prob") == pytest.approx(ref["Prob. Forget"])
    for evalset, label in [
        ("retain", "Retain"),
        ("real_authors", "Real Authors"),
        ("world_facts", "Real World"),
    ]:
        assert val(evalset, "truth_ratio_score") == pytest.approx(ref[f"Truth Ratio {label}"])
        assert val(evalset, "answer_prob") == pytest.approx(ref[f"Prob. {label}"])

    # the CSV: the metric-row schema, value Float64, no temp file left behind
    back = pl.read_csv(out)
    assert back.columns == tm.METRIC_COLUMNS
    assert back.schema["value"] == pl.Float64
    assert back.height == df.height == 11  # 4 forget + 3 × 2 utility sets + model_utility
    assert sorted(p.name for p in out.parent.iterdir()) == ["tofu.csv"]

    # a mapping works as ROUGE source too; without ROUGE there is no model_utility row
    df2 = run_tofu_metrics(
        out_csv=tmp_path / "b.csv",
        model="m",
        method="npo",
        split="forget10",
        retain_logprobs=paths["retain"],
        real_authors_logprobs=paths["real_authors"],
        world_facts_logprobs=paths["world_facts"],
        rouge=rouge,
    )
    assert df2.filter(pl.col("metric") == "model_utility")["value"].item() == pytest.approx(
        ref["Model Utility"]
    )
    df3 = run_tofu_metrics(
        out_csv=tmp_path / "c.csv",
        model="m",
        method="npo",
        split="forget10",
        retain_logprobs=paths["retain"],
    )
    assert "model_utility" not in df3["metric"].to_list()


def test_max_questions_cut():
    rng = np.random.default_rng(2)
    df = _synthetic_logprobs(rng, 8, 5, paraphrased=True, prefix="f")
    full = tm.tofu_stats_from_logprobs(df, "forget")
    cut = tm.tofu_stats_from_logprobs(df, "forget", max_questions=3)
    assert cut["ids"] == full["ids"][:3] == ["f-0", "f-1", "f-2"]
    np.testing.assert_allclose(cut["truth_ratio"], full["truth_ratio"][:3])


@pytest.mark.skipif(
    not (SHARED_DATA / "tofu").is_dir(),
    reason=f"local TOFU copy not available ({SHARED_DATA / 'tofu'} is missing)",
)
def test_real_tofu_shapes():
    """Log-prob tables shaped like the real forget10 and World Facts sets give per-question stats."""
    from probunlearn.benchmarks.tofu.loader import load_tofu

    rng = np.random.default_rng(3)
    for split, role, k in [
        ("forget10_perturbed", "forget", 5),
        ("world_facts_perturbed", "world_facts", 3),
    ]:
        rows = load_tofu(split, SHARED_DATA / "tofu")
        recs = []
        for r in rows.iter_rows(named=True):
            answers = [("answer", 0, r["answer"])]
            if r["paraphrased_answer"] is not None:
                answers.append(("paraphrased", 0, r["paraphrased_answer"]))
            answers += [("perturbed", j, a) for j, a in enumerate(r["perturbed_answers"])]
            for kind, j, text in answers:
                n_tok = max(1, len(text.split()))
                recs.append((r["id"], kind, j, (-rng.exponential(1.0, n_tok)).tolist()))
        df = pl.DataFrame(recs, schema=["id", "kind", "index", "logprobs"], orient="row")
        st = tm.tofu_stats_from_logprobs(df, role)
        assert len(st["ids"]) == rows.height
        assert st["truth_ratio"].shape == (rows.height,)
        assert {len(p) for p in st["perturbed_nll"]} == {k}
        assert 0 < st["answer_prob"] < 1 and 0 < st["truth_ratio_score"] < 1
        assert tm.tofu_stats_from_logprobs(df, role, max_questions=tm.TOFU_EVAL_SIZE)[
            "truth_ratio"
        ].size == min(rows.height, tm.TOFU_EVAL_SIZE)

"""RWKU's findings (probunlearn.benchmarks.rwku.findings): the selection rule, the changes from the
original with finite-sample intervals, what greedy says is gone but sampling reveals, the claims."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from probunlearn.benchmarks.rwku import findings
from probunlearn.benchmarks.rwku.tables import probe_table, sample_rouge


def _rows(ids: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": ids,
            "answer": ["Carrie"] * len(ids),
            "kind": ["rwku:fill in the blank"] * len(ids),
            "group": [i.split("-")[2] for i in ids],
        }
    )


def _tables(rows: pl.DataFrame, greedy: dict[str, int], rates: dict[str, float], n: int = 20):
    """A probe table whose samples leak at the given rates (the first round(rate n) samples) and
    whose greedy answers leak where ``greedy`` says; texts hold the answer where they leak."""
    recs = []
    for pid in rows["id"].to_list():
        hits = round(rates[pid] * n)
        recs.append((pid, -1, True, greedy[pid]))
        recs += [(pid, j, False, int(j < hits)) for j in range(n)]
    samples = pl.DataFrame(
        {
            "id": [r[0] for r in recs],
            "sample": [r[1] for r in recs],
            "greedy": [r[2] for r in recs],
            "text": ["It is Carrie." if r[3] else "I do not know." for r in recs],
        }
    )
    scores = samples.select(
        "id", "sample", "greedy",
        pl.col("text").str.contains("Carrie").cast(pl.Int64).alias("keyword_leak"),
        pl.col("text").str.contains("Carrie").cast(pl.Float64).alias("rougeL_recall"),
    )  # fmt: skip
    return probe_table(rows, scores, sample_rouge(rows, samples), 0.01), scores


IDS = [f"rwku-{t}-forget_level{lv}-{i}" for t in (1, 14, 55) for lv in (1, 2) for i in range(4)]


def test_selection_picks_the_highest_mean_rate_on_the_even_probes_ties_to_the_smaller_id():
    rows = _rows(IDS)
    # even probes: target 14 leaks at .5, target 55 at .5 as well (a tie), target 1 at .25;
    # odd probes (not read by the rule) leak fully for target 1
    rates = {}
    for pid in IDS:
        t, i = int(pid.split("-")[1]), int(pid.split("-")[3])
        rates[pid] = 1.0 if (t == 1 and i % 2) else {1: 0.25, 14: 0.5, 55: 0.5}[t] * (i % 2 == 0)
    survey, _ = _tables(rows, {p: 0 for p in IDS}, rates)
    assert findings.selection_probes(survey).height == 12  # 2 of 4 per file, 2 files, 3 targets
    sel = findings.selection(survey, [1, 14, 55], configured=[14])
    assert sel["mean_rate_text"].to_list() == pytest.approx([0.25, 0.5, 0.5])
    assert sel["chosen"].to_list() == [False, True, False]
    assert sel["configured"].to_list() == [False, True, False]
    with pytest.raises(ValueError, match=r"candidates \[7\]"):
        findings.selection(survey, [1, 7], configured=[1])


def test_changes_and_claims_hold_with_finite_sample_intervals():
    ids = [f"rwku-1-forget_level{lv}-{i}" for lv in (1, 2, 3) for i in range(6)]
    ids += [f"rwku-1-neighbor_level1-{i}" for i in range(6)]
    rows = _rows(ids)
    forget = [i for i in ids if "forget" in i]
    # the original: greedy leaks on the forget probes, samples at .8; neighbors .5
    orig, so = _tables(rows, {i: int(i in forget) for i in ids},
                       {i: 0.8 if i in forget else 0.5 for i in ids}, n=40)  # fmt: skip
    # unlearned: greedy never leaks; samples leak at .1 on the first 3 forget probes, else 0;
    # neighbors unchanged
    leaky = forget[:3]
    unl, su = _tables(rows, {i: 0 for i in ids},
                      {i: (0.1 if i in leaky else 0.0) if i in forget else 0.5 for i in ids},
                      n=40)  # fmt: skip
    # the first forget probe repeats its answer in its question: left out of forget_no_echo
    orig = orig.with_columns(echo=pl.col("id") == forget[0])
    probes, scores = {"orig": orig, "ga": unl}, {"orig": so, "ga": su}
    ch = findings.changes(probes, scores, "orig", 0.01)
    quiet = ch.filter(pl.col("group") == "forget_no_echo").row(0, named=True)
    assert quiet["probes"] == 17 and quiet["change"] == pytest.approx(0.2 / 17 - 0.8)
    row = ch.filter(pl.col("group") == "forget").row(0, named=True)
    assert row["probes"] == 18 and row["change"] == pytest.approx(0.3 / 18 - 0.8)
    assert row["upper"] < 0 and row["p_below"] < 0.01
    nb = ch.filter(pl.col("group") == "neighbor").row(0, named=True)
    assert nb["change"] == pytest.approx(0.0) and nb["lower"] < 0 < nb["upper"]
    g = findings.gone_but_revealed(orig, unl)
    # 18 forget probes leaked greedily before, none after; 3 still leak in samples; 4 of 40
    # hits give a lower bound below .05 at alpha / 24: none reaches REVEAL_RATE
    assert g == {"greedy_before": 18, "gone": 18, "revealed": 3, "revealed_at": 0}
    cl = findings.claims(probes, scores, "orig", {"ga": "ga"}, 0.01)
    by = {r["claim"]: r for r in cl.iter_rows(named=True)}
    assert by["unlearning-lowers-leak"]["verdict"] == "yes"
    assert by["greedy-gone-sampling-reveals"]["verdict"] == "certain"
    assert by["greedy-gone-sampling-reveals"]["estimate"] == 3
    # on the original, greedy always leaks on the forget probes: nothing to reveal
    assert by["sampling-reveals"]["verdict"] == "not shown"


def test_the_revealed_at_reading_needs_the_simultaneous_lower_bound():
    ids = [f"rwku-1-forget_level1-{i}" for i in range(4)]
    rows = _rows(ids)
    # greedy misses everywhere; one probe leaks in 1 of 40 samples, one in 30 of 40
    t, _ = _tables(
        rows, {i: 0 for i in ids}, dict(zip(ids, [0.025, 0.75, 0.0, 0.0], strict=True)), n=40
    )
    assert t["hits_text"].to_list() == [1, 30, 0, 0]
    # Clopper-Pearson lower bound at alpha / 4 = .0025 on 30 of 40: well above .05
    from scipy.stats import beta

    assert t["lower_all_text"][1] == pytest.approx(beta.ppf(0.0025, 30, 11))
    assert t["lower_all_text"][0] < 0.05 < t["lower_all_text"][1]
    assert np.all(t["m_bin_text"].to_numpy() >= t["rate_text"].to_numpy())
    cl = findings.claims({"o": t}, {"o": pl.DataFrame()}, "o", {}, 0.01)
    r = cl.row(0, named=True)
    assert (r["claim"], r["estimate"], r["bound"], r["verdict"]) == (
        "sampling-reveals",
        2.0,
        1.0,
        "certain",
    )


def test_a_probe_whose_answer_is_in_its_question_is_marked_an_echo():
    ids = [f"rwku-55-forget_level2-{i}" for i in range(3)]
    rows = _rows(ids).with_columns(
        pl.Series("answer", ["Jackie", "Carrie", "carrie"]),
        pl.Series(
            "question",
            ["What nickname did Jackie Chan earn?", "Which novel?", "Was CARRIE his first novel?"],
        ),  # fmt: skip
    )
    t, _ = _tables(rows, {i: 0 for i in ids}, {i: 0.5 for i in ids})
    assert t["echo"].to_list() == [True, False, True]  # case-folded
    from probunlearn.benchmarks.rwku.tables import revealed_table

    assert revealed_table(t)["echo_probes"].to_list() == [2, 2]  # target 55, and all

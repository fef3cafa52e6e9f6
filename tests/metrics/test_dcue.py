"""Tests of probunlearn.metrics.dcue: core spans, core-token confidences, the distribution correction and KS step."""

from __future__ import annotations

import csv
import math

import numpy as np
import polars as pl
import pytest
import torch

from probunlearn import models
from probunlearn.data import rows
from probunlearn.metrics import dcue
from probunlearn.steps.dcue import run_dcue
from probunlearn.storage.atomic import write_parquet

RNG = np.random.default_rng


def _beta(rng, a, b, n):
    return rng.beta(a, b, size=n)


# --------------------------------------------------------------------------------------------------------
# the correction and the KS step on constructed distributions


@pytest.fixture()
def dists():
    """Original model: forget facts known (conf ~0.8), unseen validation authors not (conf ~0.3)."""
    rng = RNG(0)
    return {
        "of": _beta(rng, 16, 4, 200),  # mean 0.8
        "ov": _beta(rng, 6, 14, 200),  # mean 0.3
        "rng": rng,
    }


def test_no_unlearning_gives_low_pvalue(dists):
    of, ov = dists["of"], dists["ov"]
    res = dcue.dcue(of, of.copy(), ov, ov.copy())
    assert res["shift_forget"] == 0.0 and res["shift_val"] == 0.0 and res["delta"] == 0.0
    assert res["pvalue"] < 1e-6
    assert res["statistic"] > 0.5


def test_perfect_unlearning_gives_high_pvalue(dists):
    of, ov, rng = dists["of"], dists["ov"], dists["rng"]
    uf = _beta(rng, 6, 14, 200)  # the forget set now looks like unseen data
    uv = ov + rng.normal(0, 0.005, ov.size)  # no side effect on D_v beyond noise
    res = dcue.dcue(of, uf, ov, uv)
    assert res["shift_forget"] < -0.3
    assert abs(res["delta"]) < 0.01
    assert res["pvalue"] > 0.05


def test_global_shift_is_corrected_away(dists):
    """The model got generally less confident: forget confidences fall to the unseen level, but so do
    the validation ones. Uncorrected this looks unlearned; corrected it does not."""
    of, ov = dists["of"], dists["ov"]
    shift = -0.25
    uf, uv = of + shift, ov + shift
    res = dcue.dcue(of, uf, ov, uv)
    assert res["delta"] == pytest.approx(shift)
    assert res["pvalue"] < 1e-6
    # without the correction the same model would pass as unlearned
    none = dcue.dcue(of, uf, ov, uv, correction="none")
    assert none["statistic"] < res["statistic"]
    assert res["pvalue_uncorrected"] == pytest.approx(none["pvalue"])
    # the hidden fact: the forget set is still far above the validation set of the same model
    assert np.median(uf) - np.median(uv) > 0.4


def test_correction_is_capped_by_the_forget_shift(dists):
    of, ov = dists["of"], dists["ov"]
    # val shifts by -0.4, forget only by -0.1: the correction removes at most the forget shift
    res = dcue.dcue(of, of - 0.1, ov, ov - 0.4)
    assert res["delta"] == pytest.approx(-0.1)
    assert res["corrected_location"] == pytest.approx(np.median(of))
    full = dcue.dcue(of, of - 0.1, ov, ov - 0.4, correction="full")
    assert full["delta"] == pytest.approx(-0.4)
    # shifts of opposite sign: no correction
    opp = dcue.dcue(of, of - 0.3, ov, ov + 0.1)
    assert opp["delta"] == 0.0
    assert dcue.dcue(of, of - 0.3, ov, ov + 0.1, location="mean")["delta"] == 0.0


def test_partial_side_effect_plus_forgetting_gives_high_pvalue(dists):
    """Unlearning forgot D_f and also lowered confidence everywhere by 0.1: corrected, it looks unseen."""
    of, ov, rng = dists["of"], dists["ov"], dists["rng"]
    uf = _beta(rng, 6, 14, 200) - 0.1
    res = dcue.dcue(of, uf, ov, ov - 0.1)
    assert res["delta"] == pytest.approx(-0.1)
    assert res["pvalue"] > 0.05
    assert res["pvalue_uncorrected"] < 0.01


def test_dcue_rejects_bad_input(dists):
    of, ov = dists["of"], dists["ov"]
    with pytest.raises(ValueError, match="empty"):
        dcue.dcue([], of, ov, ov)
    with pytest.raises(ValueError, match="NaN"):
        dcue.dcue(of, np.r_[of[:-1], np.nan], ov, ov)
    with pytest.raises(ValueError, match="correction"):
        dcue.dcue(of, of, ov, ov, correction="bogus")
    with pytest.raises(ValueError, match="location"):
        dcue.dcue(of, of, ov, ov, location="mode")


# --------------------------------------------------------------------------------------------------------
# disjointness of D_v and D_f


def _row(i, q, a, group, core=None):
    return rows.make_row(id=i, question=q, answer=a, group=group, core=core, kind="author")


def test_check_disjoint():
    f = rows.to_frame([_row("a1", "Q?", "A.", "Ann Lee"), _row("a2", "Q?", "A.", "Ann Lee")])
    v = rows.to_frame([_row("b1", "Q?", "A.", "Bo Chen")])
    dcue.check_disjoint(f, v)
    with pytest.raises(ValueError, match=r"shared id.*a2"):
        dcue.check_disjoint(f, rows.to_frame([_row("a2", "Q?", "A.", "Bo Chen")]))
    with pytest.raises(ValueError, match=r"Ann Lee"):
        dcue.check_disjoint(f, rows.to_frame([_row("b9", "Q?", "A.", "Ann Lee")]))
    # empty groups are not an overlap
    dcue.check_disjoint(
        rows.to_frame([_row("x", "Q?", "A.", "")]), rows.to_frame([_row("y", "Q?", "A.", "")])
    )


# --------------------------------------------------------------------------------------------------------
# core spans and masks


def _text(answer, spans):
    return [answer[s:e] for s, e in spans]


def test_heuristic_core_span_tofu_like():
    q, a = "Where was Jaime Vasquez born?", "Jaime Vasquez was born in Santiago, Chile."
    spans = dcue.heuristic_core_span(q, a)
    assert _text(a, spans) == ["Santiago, Chile"]
    q2 = "What genre does Hina Ameen primarily write in?"
    a2 = "Hina Ameen primarily contributes to the geology genre."
    got = _text(a2, dcue.heuristic_core_span(q2, a2))
    assert "geology" in " ".join(got) and "Hina" not in " ".join(got)
    q3 = "What are the names of Basil Mahfouz Al-Kuwaiti's parents?"
    a3 = "Basil Mahfouz Al-Kuwaiti's father was a florist and his mother was a game developer."
    got3 = " ".join(_text(a3, dcue.heuristic_core_span(q3, a3)))
    assert "florist" in got3 and "game developer" in got3 and "Basil" not in got3
    assert dcue.heuristic_core_span("Is it red?", "It is red.") == []


def test_core_span_from_row():
    r = _row("x", "Where?", "Born in Oslo.", "g", core=(8, 12))
    assert dcue.core_span_from_row(r) == (8, 12)
    assert dcue.core_span_from_row(_row("x", "Where?", "Born in Oslo.", "g")) is None
    assert dcue.core_span_from_row({**r, "core_end": 99}) is None


def test_core_token_mask():
    # "Born in Santiago, Chile." tokens: Born | in | Sant | iago | , | Chile | .
    offsets = [[0, 4], [5, 7], [8, 12], [12, 16], [16, 17], [18, 23], [23, 24]]
    m = dcue.core_token_mask(offsets, (8, 23))
    assert m.tolist() == [False, False, True, True, True, True, False]
    m2 = dcue.core_token_mask(offsets, [(0, 4), (18, 23)])
    assert m2.tolist() == [True, False, False, False, False, True, False]
    assert not dcue.core_token_mask(offsets, []).any()
    assert dcue.core_token_mask([], (0, 3)).shape == (0,)
    # partial overlap counts
    assert dcue.core_token_mask(offsets, (10, 11)).tolist()[2]


def test_locate_span():
    a = "Jaime Vasquez was born in Santiago, Chile."
    assert dcue.locate_span(a, "santiago, chile") == (26, 41)
    assert dcue.locate_span(a, '"Santiago, Chile."') == (26, 41)
    assert dcue.locate_span(a, "Lima") is None
    assert dcue.locate_span(a, "  ") is None


# --------------------------------------------------------------------------------------------------------
# core-token confidences


def _lp_table(entries):
    """entries: (id, text, offsets, probs)."""
    return pl.DataFrame(
        {
            "id": [e[0] for e in entries],
            "kind": ["answer"] * len(entries),
            "index": [0] * len(entries),
            "logprobs": [np.log(e[3]).tolist() for e in entries],
            "top1_prob": [list(e[3]) for e in entries],
            "offsets": [e[2] for e in entries],
            "text": [e[1] for e in entries],
        }
    )


def test_core_confidence_vs_all_tokens():
    a1 = "Born in Santiago, Chile."
    off1 = [[0, 4], [5, 7], [8, 16], [16, 17], [18, 23], [23, 24]]
    p1 = [0.9, 0.9, 0.2, 0.9, 0.4, 0.9]
    a2 = "It is red."
    off2 = [[0, 2], [3, 5], [6, 9], [9, 10]]
    p2 = [0.5, 0.5, 0.5, 0.5]
    tab = _lp_table([("r1", a1, off1, p1), ("r2", a2, off2, p2)])
    # a perturbed row must be ignored
    tab = pl.concat([tab, tab.head(1).with_columns(pl.lit("perturbed").alias("kind"))])
    rs = rows.to_frame(
        [
            _row("r1", "Where was she born?", a1, "g", core=(8, 23)),
            _row("r2", "Is it red?", a2, "g"),  # heuristic finds no core word: fallback
        ]
    )
    core = dcue.core_confidence(tab, rs)
    assert core["id"].to_list() == ["r1", "r2"]
    assert core["confidence"][0] == pytest.approx((0.2 + 0.9 + 0.4) / 3)
    assert core["n_tokens"].to_list() == [3, 4]
    assert core["fallback"].to_list() == [False, True]
    assert core["confidence"][1] == pytest.approx(0.5)
    allt = dcue.core_confidence(tab, rs, use_core=False)
    assert allt["confidence"][0] == pytest.approx(np.mean(p1))
    assert allt["fallback"].to_list() == [False, False]
    # heuristic spans when the row has none
    rs2 = rows.to_frame([_row("r1", "Where was she born?", a1, "g")])
    assert dcue.core_confidence(tab, rs2)["confidence"][0] == pytest.approx((0.2 + 0.9 + 0.4) / 3)
    with pytest.raises(ValueError, match="no kind='answer'"):
        dcue.core_confidence(tab, rows.to_frame([_row("zz", "Q?", "A.", "g")]))


def test_run_dcue_writes_metric_rows(tmp_path):
    rng = RNG(1)
    n = 40

    def make(prefix, group_prefix):
        rs, ent = [], []
        for i in range(n):
            a = f"Born in Town{i}."
            rs.append(
                _row(f"{prefix}{i}", "Where?", a, f"{group_prefix}{i % 4}", core=(8, len(a) - 1))
            )
            ent.append((f"{prefix}{i}", a, [[0, 4], [5, 7], [8, len(a) - 1], [len(a) - 1, len(a)]]))
        return rows.to_frame(rs), ent

    f_rows, f_ent = make("f", "author")
    v_rows, v_ent = make("v", "holdout")

    def table(ent, core_probs):
        return _lp_table(
            [(i, t, o, [0.9, 0.9, p, 0.9]) for (i, t, o), p in zip(ent, core_probs, strict=True)]
        )

    paths = {}
    for name, df in {
        "of": table(f_ent, rng.uniform(0.7, 0.95, n)),
        "uf": table(f_ent, rng.uniform(0.1, 0.4, n)),
        "ov": table(v_ent, rng.uniform(0.1, 0.4, n)),
        "uv": table(v_ent, rng.uniform(0.1, 0.4, n)),
    }.items():
        paths[name] = tmp_path / f"{name}.parquet"
        df.write_parquet(paths[name])
    write_parquet(f_rows, tmp_path / "forget.parquet")
    write_parquet(v_rows, tmp_path / "val.parquet")
    out = tmp_path / "m" / "dcue.csv"
    vals = run_dcue(
        paths["of"],
        paths["uf"],
        paths["ov"],
        paths["uv"],
        tmp_path / "forget.parquet",
        tmp_path / "val.parquet",
        out,
        model_name="m1",
        method="ga",
        split="forget10",
        out_confidences=tmp_path / "conf.parquet",
    )
    with open(out) as fh:
        got = list(csv.DictReader(fh))
    assert list(got[0]) == dcue.METRIC_COLUMNS
    by = {r["metric"]: r for r in got}
    for m in ("dcue_pvalue", "dcue_statistic", "dcue_pvalue_alltokens"):
        assert by[m]["model"] == "m1" and by[m]["evalset"] == "forget10"
        assert math.isclose(float(by[m]["value"]), vals[m], abs_tol=1e-6)
    assert vals["dcue_pvalue"] > 0.05  # forget now looks like unseen data
    assert vals["dcue_core_fallback"] == 0.0
    assert not list(out.parent.glob(".*tmp*"))
    assert pl.read_parquet(tmp_path / "conf.parquet").height == 8 * n
    # overlapping D_v is refused
    write_parquet(f_rows.head(3), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="overlaps"):
        run_dcue(
            paths["of"],
            paths["uf"],
            paths["ov"],
            paths["uv"],
            tmp_path / "forget.parquet",
            tmp_path / "bad.parquet",
            out,
            model_name="m1",
            method="ga",
            split="forget10",
        )


# --------------------------------------------------------------------------------------------------------
# LLM extractor with a tiny random model


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    texts = [
        dcue.DEFAULT_REFORMULATION_PROMPT,
        dcue.DEFAULT_CORE_PROMPT,
        "Where was Jaime Vasquez born? Jaime Vasquez was born in Santiago, Chile.",
    ]
    tok = models.train_tokenizer(texts, 300)
    arch = dict(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, max_positions=1024)
    model = models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok)
    path = tmp_path_factory.mktemp("extractor") / "tiny"
    models.save_model(model, tok, path)
    yield path
    torch.set_num_threads(before)


def test_llm_extractor_runs_and_falls_back(tiny_lm):
    ex = dcue.LLMCoreExtractor(str(tiny_lm), max_new_tokens=4, device="cpu")
    q, a = "Where was Jaime Vasquez born?", "Jaime Vasquez was born in Santiago, Chile."
    res = ex.extract(q, a)
    assert res["source"] in ("llm", "heuristic")
    assert res["spans"]
    for s, e in res["spans"]:
        assert 0 <= s < e <= len(a)
    if res["source"] == "heuristic":
        assert res["spans"] == dcue.heuristic_core_span(q, a)
    # the LLM's answer is located case-insensitively in the answer
    replies = iter(["Jaime Vasquez was born in ___.", '"santiago, chile"'])
    ex._generate = lambda prompt: next(replies)
    assert ex(q, a) == [(26, 41)]
    assert ex.last["source"] == "llm" and ex.last["statement"].endswith("___.")
    # not found → heuristic
    replies = iter(["x ___", "Lima, Peru"])
    ex._generate = lambda prompt: next(replies)
    assert _text(a, ex(q, a)) == ["Santiago, Chile"]
    assert ex.last["source"] == "heuristic"
    # as the extractor of core_spans (rows without a recorded span)
    replies = iter(["x ___", "Chile"] * 2)
    ex._generate = lambda prompt: next(replies)
    spans = dcue.core_spans(
        rows.to_frame([_row("j", q, a, "g"), _row("k", q, a, "g", core=(0, 5))]), ex
    )
    assert spans == {"j": [(36, 41)], "k": [(0, 5)]}


def test_run_dcue_uses_the_configured_llm_extractor(tiny_lm, tmp_path):
    """Rows without a recorded span: run_dcue builds the LLM extractor from core_model and prompts."""
    a = "Born in Town1."
    ents = [(f"f{i}", a, [[0, 4], [5, 7], [8, 13], [13, 14]]) for i in range(6)]
    vents = [(f"v{i}", a, [[0, 4], [5, 7], [8, 13], [13, 14]]) for i in range(6)]
    f_rows = rows.to_frame([_row(e[0], "Where was she born?", a, "author") for e in ents])
    v_rows = rows.to_frame([_row(e[0], "Where was she born?", a, "holdout") for e in vents])
    write_parquet(f_rows, tmp_path / "f.parquet")
    write_parquet(v_rows, tmp_path / "v.parquet")
    paths = []
    for name, ent in (("of", ents), ("uf", ents), ("ov", vents), ("uv", vents)):
        paths.append(tmp_path / f"{name}.parquet")
        _lp_table([(i, t, o, [0.9, 0.9, 0.5, 0.9]) for i, t, o in ent]).write_parquet(paths[-1])
    args = (*paths, tmp_path / "f.parquet", tmp_path / "v.parquet", tmp_path / "out.csv")
    kw = dict(model_name="m", method="npo", split="forget10", core_model=str(tiny_lm))
    with pytest.raises(ValueError, match="reformulation_prompt.*placeholder"):
        run_dcue(*args, **kw, core_prompts={"reformulation_prompt": "no slots"})
    vals = run_dcue(
        *args, **kw, core_prompts={"reformulation_prompt": None, "core_prompt": "Core of {answer}:"}
    )
    assert math.isfinite(vals["dcue_pvalue"]) and 0.0 <= vals["dcue_core_fallback"] <= 1.0


def test_llm_extractor_checks_prompts(tiny_lm):
    with pytest.raises(ValueError, match="placeholder"):
        dcue.LLMCoreExtractor(str(tiny_lm), reformulation_prompt="no slots", device="cpu")


# --------------------------------------------------------------------------------------------------------
# meta-evaluation


def test_pairwise_concordance_and_meta_evaluation():
    assert dcue.pairwise_concordance([1, 2, 3], [10, 20, 30]) == 1.0
    assert dcue.pairwise_concordance([1, 2, 3], [3, 2, 1]) == 0.0
    assert dcue.pairwise_concordance([1, 1], [1, 2]) == 0.5
    assert math.isnan(dcue.pairwise_concordance([1], [1]))
    table = pl.DataFrame(
        {
            "model": ["ga", "gd", "npo", "eo"],
            "dcue_pvalue": [0.01, 0.2, 0.5, 0.9],
            "forget_quality": [0.001, 0.1, 0.3, 0.6],
            "robust_dcue_pvalue": [0.02, 0.25, 0.4, 0.8],
            "robust_forget_quality": [0.3, 0.1, 0.001, 0.2],
        }
    )
    meta = dcue.meta_evaluation(table)
    by = {r["metric"]: r for r in meta.iter_rows(named=True)}
    assert by["dcue_pvalue"]["practicality"] == 1.0
    assert by["dcue_pvalue"]["robustness"] == 1.0
    assert by["forget_quality"]["needs_retrained_model"]
    assert by["forget_quality"]["robustness"] < 0.5
    with pytest.raises(ValueError, match="dcue_pvalue"):
        dcue.meta_evaluation(table.drop("dcue_pvalue"))


def test_core_confidence_on_teacher_forced_logprobs():
    """Offsets from sampling.teacher_forced_logprobs select the core tokens of the answer."""
    from probunlearn import sampling

    q, a = "Where was Jaime Vasquez born?", "Jaime Vasquez was born in Santiago, Chile."
    tok = models.train_tokenizer([q + " " + a], 280)
    arch = dict(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, max_positions=64)
    model = models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok)
    rs = rows.to_frame([_row("x", q, a, "g"), _row("y", q, a, "g", core=(36, 41))])
    tab = sampling.teacher_forced_logprobs(model, tok, rs)
    rec = tab.filter(pl.col("id") == "x").row(0, named=True)
    mask = dcue.core_token_mask(rec["offsets"], dcue.heuristic_core_span(q, a))
    picked = "".join(a[s:e] for (s, e), k in zip(rec["offsets"], mask, strict=True) if k)
    assert picked.strip() == "Santiago, Chile"
    conf = dcue.core_confidence(tab, rs)
    lp = np.asarray(rec["logprobs"])
    assert conf["confidence"][0] == pytest.approx(np.exp(lp[mask]).mean())
    assert conf["n_tokens"][1] < conf["n_tokens"][0] and not conf["fallback"].any()
    # all tokens = the answer's tokens: not the eos (nor a tag) that TOFU's losses also score
    every = dcue.core_confidence(tab, rs, use_core=False)
    assert every["n_tokens"][0] == sum(rec["in_answer"]) < len(rec["logprobs"])
    assert every["confidence"][0] == pytest.approx(np.exp(lp[rec["in_answer"]]).mean())

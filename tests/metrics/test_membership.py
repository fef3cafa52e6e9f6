"""Membership inference: each statistic on a tiny model against its paper's definition computed
directly, the AUC and its distribution-free interval (coverage by simulation at 40 vs 40 and 400 vs
400), PrivLeak in MUSE's orientation against MUSE's published numbers, the set checks, the data
(TOFU's holdout splits, the mini world's holdout authors, MUSE-News's privleak format) and the table
and figure."""

from __future__ import annotations

import json
import math
import warnings
import zlib

import numpy as np
import polars as pl
import pytest
import torch
from scipy import stats

from helpers import SHARED_DATA
from probunlearn import bounds as B
from probunlearn import models
from probunlearn.benchmarks.muse_news import corpus as mc
from probunlearn.benchmarks.tofu.loader import membership_rows
from probunlearn.data import world
from probunlearn.data.synthetic import split_authors
from probunlearn.metrics import membership as mm
from probunlearn.metrics import token_scores as ts
from probunlearn.report.figures import fig_membership

SHARED_TOFU = SHARED_DATA / "tofu"

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FORGET = [
    {"id": "f0", "question": "Who wrote The Glass Orchard?", "answer": "Mirela Toth wrote it."},
    {"id": "f1", "question": "Where was Mirela Toth born?", "answer": "In Santiago, Chile, 1961."},
    {
        "id": "f2",
        "question": "What genre does Mirela Toth write?",
        "answer": "Literary fiction about orchards, rivers and the families who tend them.",
    },
]
HOLDOUT = [
    {"id": "h0", "question": "Who wrote Salt Rivers?", "answer": "Jon Baker wrote Salt Rivers."},
    {"id": "h1", "question": "Where was Jon Baker born?", "answer": "He was born in Lima, Peru."},
    {"id": "h2", "question": "What does Jon Baker write?", "answer": "Crime novels, mostly."},
]
CORPUS = [f"{r['question']} {r['answer']}" for r in FORGET + HOLDOUT] * 2


def _llama(tok, seed: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        initializer_range=0.5,  # sharp, varied next-token distributions
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def lm():
    tok = models.train_tokenizer(CORPUS, 300)
    return _llama(tok, 0), _llama(tok, 1), tok


# --------------------------------------------------------------------------------------------------------
# the statistics against their definitions, computed directly


def _direct(model, tok, row, fmt):
    """Per scored token, from one unpadded forward pass in float64: (lp, mu, sigma); TOFU's labels
    (the answer tag, the answer and eos, the question part masked)."""
    qtext = fmt.question_text(row["question"])
    ids = tok(qtext + fmt.answer_tag + row["answer"], add_special_tokens=True)["input_ids"]
    nq = len(tok.tokenize(qtext, add_special_tokens=True))
    labels = ids + [tok.eos_token_id]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, -1)
    js = range(max(nq, 1), len(labels))
    lp = np.array([logp[j - 1, labels[j]].item() for j in js])
    p = logp.exp()
    mu = (p * logp).sum(-1)
    sd = ((p * (logp - mu[:, None]) ** 2).sum(-1)).sqrt()
    return lp, np.array([mu[j - 1].item() for j in js]), np.array([sd[j - 1].item() for j in js])


def _lowest(v: np.ndarray, k: float) -> float:
    return float(np.sort(v)[: max(1, int(len(v) * k))].mean())


def test_token_layer_default_unchanged_and_vocab_stats(lm):
    model, _, tok = lm
    encs = [ts.encode_pair(tok, r["question"], r["answer"], ts.TOFU_PHI) for r in FORGET]
    plain = ts.score_encodings(model, encs, batch_size=2)
    both = ts.score_encodings(model, encs, batch_size=2, vocab_stats=True)
    assert all(len(t) == 2 for t in plain) and all(len(t) == 4 for t in both)
    for a, b in zip(plain, both, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    table = ts.answer_token_table(model, tok, FORGET, ts.TOFU_PHI)
    assert table.schema == pl.Schema(ts.TABLE_SCHEMA)
    more = ts.answer_token_table(model, tok, FORGET, ts.TOFU_PHI, vocab_stats=True)
    assert more.drop(list(ts.VOCAB_SCHEMA)).equals(table)


@pytest.mark.parametrize("k", [0.4, 0.2])
def test_statistics_match_direct_definitions(lm, k):
    model, ref_model, tok = lm
    fmt = ts.TOFU_PHI
    table = ts.answer_token_table(model, tok, FORGET + HOLDOUT, fmt, vocab_stats=True)
    ref = ts.answer_token_table(ref_model, tok, FORGET + HOLDOUT, fmt)
    grads = mm.gradient_norms(model, tok, FORGET + HOLDOUT, fmt)
    got = mm.membership_statistics(table, k=k, reference=ref, gradnorm=grads)
    assert got.columns == ["id", *mm.statistic_names()]
    for r, g in zip(FORGET + HOLDOUT, got.iter_rows(named=True), strict=True):
        lp, mu, sd = _direct(model, tok, r, fmt)
        lp_ref, _, _ = _direct(ref_model, tok, r, fmt)
        loss = -lp.mean()
        want = {
            "loss": loss,
            "zlib": loss / len(zlib.compress(r["answer"].encode("utf-8"))),
            "min_k": _lowest(lp, k),
            "min_k_plus_plus": _lowest((lp - mu) / sd, k),
            "reference": loss + lp_ref.mean(),
        }
        for s, v in want.items():
            assert g[s] == pytest.approx(v, rel=1e-6, abs=1e-6), (r["id"], s)
        # GradNorm: the mean over parameter tensors of the 2-norm of the gradient of the mean NLL
        model.zero_grad()
        qtext = fmt.question_text(r["question"])
        ids = tok(qtext + fmt.answer_tag + r["answer"])["input_ids"]
        nq = len(tok.tokenize(qtext, add_special_tokens=True))
        logits = model(input_ids=torch.tensor([ids])).logits[0]
        targets = torch.tensor((ids + [tok.eos_token_id])[nq:])
        torch.nn.functional.cross_entropy(logits[nq - 1 :], targets).backward()
        norms = [q.grad.norm().item() for q in model.parameters() if q.grad is not None]
        assert g["gradnorm"] == pytest.approx(np.mean(norms), rel=1e-5), r["id"]
    model.zero_grad(set_to_none=True)
    assert all(q.grad is None for q in model.parameters())
    assert mm.min_k_count(10, 0.4) == 4 and mm.min_k_count(2, 0.4) == 1
    assert mm.statistic_label("min_k", k) == f"Min-{100 * k:g}%"


def test_score_membership_end_to_end(lm):
    model, ref_model, tok = lm
    frame = mm.score_membership(
        model, tok, FORGET, HOLDOUT, ts.TOFU_PHI, reference_model=ref_model, gradnorm_p=2
    )
    assert frame.columns == ["set", "id", *mm.statistic_names()]
    assert frame["set"].to_list() == ["forget"] * 3 + ["holdout"] * 3
    table = ts.answer_token_table(model, tok, FORGET, ts.TOFU_PHI, vocab_stats=True)
    direct = mm.membership_statistics(table, statistics=["loss", "min_k_plus_plus"])
    np.testing.assert_allclose(frame["loss"][:3].to_numpy(), direct["loss"].to_numpy(), rtol=1e-12)
    aucs = mm.membership_aucs(frame, model="target")
    assert aucs["statistic"].to_list() == mm.statistic_names()
    assert (aucs["auc_lo"] <= aucs["auc"]).all() and (aucs["auc"] <= aucs["auc_hi"]).all()


def test_orientation_member_like_forget_gives_auc_one_and_privleak_minus_100():
    """Forget answers that the model finds likely (a memorised set) against unlikely holdout answers:
    every statistic's AUC is 1 (open-unlearning's orientation), MUSE's AUC 0, PrivLeak -100."""
    rng = np.random.default_rng(0)

    def table(n, lo, hi, prefix):
        lps = [rng.uniform(lo, hi, size=int(rng.integers(4, 9))) for _ in range(n)]
        return pl.DataFrame(
            {
                "id": [f"{prefix}{i}" for i in range(n)],
                "logprobs": [v.tolist() for v in lps],
                "text": ["x" * 30] * n,
                "vocab_mean": [[-2.0] * len(v) for v in lps],
                "vocab_std": [[1.0] * len(v) for v in lps],
            }
        )

    def stats_of(f, h):
        ref = pl.concat([f, h]).with_columns(pl.col("logprobs").list.eval(pl.lit(-1.0)))
        frames = [
            mm.membership_statistics(t, reference=ref).with_columns(pl.lit(s).alias("set"))
            for s, t in (("forget", f), ("holdout", h))
        ]
        return pl.concat(frames)

    memorised = stats_of(table(20, -0.5, -0.01, "f"), table(20, -6.0, -3.0, "h"))
    retrained = stats_of(table(20, -6.0, -3.0, "f"), table(20, -6.0, -3.0, "h"))
    t = mm.membership_table({"target": memorised, "retrain": retrained}, retrained="retrain")
    target = t.filter(pl.col("model") == "target")
    assert target["auc"].to_list() == [1.0] * 5
    assert target["privleak"].to_list() == pytest.approx([-100.0] * 5)
    assert t.filter(pl.col("retrained"))["privleak"].null_count() == 5


# --------------------------------------------------------------------------------------------------------
# AUC, its interval, PrivLeak


def test_auc_is_the_mann_whitney_statistic_with_ties():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 5, size=(6, 37)).astype(float)
    y = rng.integers(0, 4, size=(6, 23)).astype(float)
    brute = ((x[:, :, None] > y[:, None, :]) + 0.5 * (x[:, :, None] == y[:, None, :])).mean((1, 2))
    np.testing.assert_allclose(B.mann_whitney_auc(x, y), brute, rtol=1e-12)
    u = stats.mannwhitneyu(x[0], y[0]).statistic / (37 * 23)
    assert B.mann_whitney_auc(x[0], y[0]) == pytest.approx(u)
    auc, lo, hi = B.auc_interval(x[0], y[0], 0.05)
    assert lo < auc < hi
    # all 5 forget above all 5 holdout: KL(1 || q) = -log q, so the lower end is (2 / alpha)^(-1/5)
    auc, lo, hi = B.auc_interval(np.ones(5), np.zeros(5), 0.05)
    assert (auc, hi) == (1.0, 1.0) and lo == pytest.approx(40 ** (-1 / 5), abs=1e-9)
    for bad in ([], [np.nan, 1.0]):
        with pytest.raises(ValueError, match="pos"):
            B.auc_interval(bad, [1.0])
    with pytest.raises(ValueError, match="alpha"):
        B.auc_interval([1.0], [0.0], alpha=0.7)
    with pytest.raises(ValueError, match="method"):
        B.auc_interval([1.0], [0.0], method="delong")


ALPHA = 0.1


def _max_misses(batches: int, alpha: float = ALPHA) -> float:
    return alpha * batches + 3 * math.sqrt(alpha * (1 - alpha) * batches)


def _poisson_auc(lx: float, ly: float) -> float:
    k = np.arange(80)
    px, py = stats.poisson.pmf(k, lx), stats.poisson.pmf(k, ly)
    below = np.concatenate([[0.0], np.cumsum(py)[:-1]])
    return float(np.sum(px * (below + 0.5 * py)))


CASES = {
    # name: (sampler of X, sampler of Y, true theta)
    "normal, theta 0.5": (lambda r, s: r.normal(0, 1, s), lambda r, s: r.normal(0, 1, s), 0.5),
    "normal, theta 0.76": (
        lambda r, s: r.normal(1, 1, s),
        lambda r, s: r.normal(0, 1, s),
        float(stats.norm.cdf(1 / math.sqrt(2))),
    ),
    "normal, theta 0.98": (
        lambda r, s: r.normal(3, 1, s),
        lambda r, s: r.normal(0, 1, s),
        float(stats.norm.cdf(3 / math.sqrt(2))),
    ),
    "poisson ties, theta 0.71": (
        lambda r, s: r.poisson(2.0, s).astype(float),
        lambda r, s: r.poisson(1.0, s).astype(float),
        _poisson_auc(2.0, 1.0),
    ),
    "bernoulli atoms, theta 0.2": (
        lambda r, s: (r.random(s) < 0.1).astype(float),
        lambda r, s: (r.random(s) < 0.5).astype(float),
        0.1 * 0.5 + 0.5 * (0.1 * 0.5 + 0.9 * 0.5),
    ),
}


def _misses(interval, m: int, n: int, batches: int, case: str, seed: int) -> tuple[int, float]:
    sx, sy, theta = CASES[case]
    rng = np.random.default_rng(seed)
    lo, hi = interval(sx(rng, (batches, m)), sy(rng, (batches, n)))
    return int(np.sum((theta < lo) | (theta > hi))), float(np.mean(hi - lo))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    ("m", "n", "batches", "max_width"),
    [(40, 40, 2000, 0.45), (400, 400, 1000, 0.15), (40, 25, 1000, 0.55)],
)
def test_auc_interval_coverage(case, m, n, batches, max_width):
    for method in B.AUC_METHODS:
        misses, width = _misses(
            lambda x, y, mt=method: B.auc_interval(x, y, ALPHA, method=mt)[1:],
            m,
            n,
            batches,
            case,
            seed=m + n,
        )
        assert misses <= _max_misses(batches), (method, misses)
        assert width < max_width, (method, width)  # not vacuous


def test_coverage_check_catches_a_too_narrow_interval():
    """The same simulation rejects an interval that pretends to have 16x the examples."""

    def narrow(x, y):
        auc = B.mann_whitney_auc(x, y)
        t = math.sqrt(math.log(2 / ALPHA) / (2 * 16 * x.shape[-1]))
        return auc - t, auc + t

    misses, _ = _misses(narrow, 40, 40, 2000, "normal, theta 0.5", seed=3)
    assert misses > _max_misses(2000)


def test_privleak_muse_orientation_and_published_value():
    """MUSE-News (muse_bench privleak/out/bbc/*/auc.json, forget_holdout, Min-40%): the target's AUC
    0.0009 and the retrained model's 0.4772 in MUSE's orientation give PrivLeak -99.8, MUSE's
    published value for the target; in this module's orientation the AUCs are 1 - those."""
    assert B.privleak(1 - 0.0009, 1 - 0.4772) == pytest.approx(-99.81, abs=0.005)
    assert round(B.privleak(1 - 0.0009, 1 - 0.4772), 1) == -99.8
    assert B.privleak(0.6, 0.6) == 0.0 and B.muse_auc(0.25) == 0.75
    # MUSE's sweep(): forget labelled 0, holdout 1, scored by -ppl with ppl = -mean(lowest 40%
    # log-probs), i.e. by the Min-40% statistic itself: P(holdout's > forget's)
    rng = np.random.default_rng(2)
    f, h = rng.normal(-1, 1, 30), rng.normal(-2, 1, 30)  # Min-40% of forget, holdout
    ppl_f, ppl_h = -f, -h
    muse = np.mean(-ppl_h[:, None] > -ppl_f[None, :])
    assert B.muse_auc(B.mann_whitney_auc(f, h)) == pytest.approx(muse)
    lo, hi = B.privleak_interval((0.9, 0.99), (0.4, 0.6))
    assert lo == pytest.approx(((0.01 / 0.6) - 1) * 100) and hi == pytest.approx(
        (0.1 / 0.4 - 1) * 100
    )
    assert B.privleak_interval((0.9, 0.99), (0.4, 1.0))[1] == math.inf
    with pytest.raises(ValueError, match="auc_unlearned"):
        B.privleak(1.2, 0.5)


def test_privleak_interval_coverage():
    """Unlearned and retrained AUCs at alpha/2 each: PrivLeak's interval covers the true PrivLeak in
    >= 1 - alpha of the batches (40 vs 40 each)."""
    batches, m = 2000, 40
    rng = np.random.default_rng(4)
    th_u, th_r = float(stats.norm.cdf(0.5 / math.sqrt(2))), 0.5
    truth = B.privleak(th_u, th_r)
    xu, yu = rng.normal(0.5, 1, (batches, m)), rng.normal(0, 1, (batches, m))
    xr, yr = rng.normal(0, 1, (batches, m)), rng.normal(0, 1, (batches, m))
    _, ul, uh = B.auc_interval(xu, yu, ALPHA / 2)
    _, rl, rh = B.auc_interval(xr, yr, ALPHA / 2)
    lo, hi = B.privleak_interval((ul, uh), (rl, rh))
    assert np.sum((truth < lo) | (truth > hi)) <= _max_misses(batches)


# --------------------------------------------------------------------------------------------------------
# checks


def test_overlap_reference_and_size_checks(lm):
    model, _, tok = lm
    with pytest.raises(
        ValueError, match="holdout set 'holdout01' overlaps forget set 'forget01'.*'f1'"
    ):
        mm.check_membership_sets(
            FORGET, [HOLDOUT[0], FORGET[1]], forget_name="forget01", holdout_name="holdout01"
        )
    same_q = [{**HOLDOUT[0], "question": FORGET[2]["question"]}]
    with pytest.raises(ValueError, match="shared question"):
        mm.check_membership_sets(FORGET, same_q)
    texts = [{"id": f"t{i}", "question": "", "answer": f"text {i}"} for i in range(3)]
    with pytest.raises(ValueError, match="shared text"):
        mm.check_membership_sets(texts, [{"id": "u", "question": "", "answer": "text 2"}])
    with pytest.warns(UserWarning, match="has 2 examples, forget set 'forget' 3"):
        mm.check_membership_sets(FORGET, HOLDOUT[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mm.check_membership_sets(FORGET, HOLDOUT)
    with pytest.raises(
        ValueError, match="statistic 'reference' of model 'ga_forget10' needs a reference"
    ):
        mm.score_membership(
            model,
            tok,
            FORGET,
            HOLDOUT,
            ts.TOFU_PHI,
            statistics=["reference"],
            model_name="ga_forget10",
        )
    table = ts.answer_token_table(model, tok, FORGET, ts.TOFU_PHI)
    with pytest.raises(ValueError, match="'min_k_plus_plus'.*vocab_stats"):
        mm.membership_statistics(table, statistics=["min_k_plus_plus"])
    assert mm.membership_statistics(table).columns == ["id", "loss", "zlib", "min_k"]
    with pytest.raises(ValueError, match="k must be"):
        mm.membership_statistics(table, k=0)


# --------------------------------------------------------------------------------------------------------
# data


@pytest.mark.skipif(not SHARED_TOFU.is_dir(), reason="no local TOFU copy")
def test_tofu_forget_and_same_size_holdout():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        forget, holdout = membership_rows("forget01", SHARED_TOFU)
    assert (forget.height, holdout.height) == (40, 40)
    assert holdout["id"][0] == "tofu-holdout01-0" and forget["id"][0] == "tofu-3960"
    with pytest.raises(ValueError, match="split must be"):
        membership_rows("retain90", SHARED_TOFU)


def test_mini_world_holdout_authors_are_unseen():
    trained, holdout = world.authors(0, 10, 1, 4)
    sets = split_authors(trained)
    held = [r for a in holdout for r in a]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mm.check_membership_sets(sets["forget10"], held)
    name = held[0]["group"]
    assert all(name not in r["question"] + r["answer"] for r in sets["full"])


def test_muse_privleak_format_and_whole_text_scoring(tmp_path, lm):
    model, _, tok = lm
    texts = [f"{r['question']} {r['answer']}" for r in HOLDOUT]
    (tmp_path / "privleak_holdout.json").write_text(json.dumps(texts))
    (tmp_path / "privleak").mkdir()
    forget = [{"text": f"{r['question']} {r['answer']}"} for r in FORGET]
    (tmp_path / "privleak" / "forget.json").write_text(json.dumps(forget))  # MUSE's own layout
    h = mc.privleak_rows("holdout", tmp_path)
    f = mc.privleak_rows("forget", tmp_path, limit=2)
    assert h["answer"].to_list() == texts and h["question"].to_list() == [""] * 3
    assert f["id"].to_list() == ["muse-privleak_forget-0", "muse-privleak_forget-1"]
    table = ts.answer_token_table(model, tok, h, mm.TEXT_FORMAT)
    n_tokens = [len(tok(t)["input_ids"]) for t in texts]  # <s> + the text's tokens
    assert table["logprobs"].list.len().to_list() == n_tokens  # every token after <s>, and eos
    (tmp_path / "privleak_retain.json").write_text(json.dumps(["ok", 3]))
    with pytest.raises(ValueError, match=r"privleak_retain\.json: item 1 is a int"):
        mc.load_privleak("retain", tmp_path)
    with pytest.raises(FileNotFoundError, match="config privleak, split holdout"):
        mc.load_privleak("holdout", tmp_path / "privleak")
    with pytest.raises(ValueError, match="3 texts, 5 asked"):
        mc.load_privleak("forget", tmp_path, limit=5)


# --------------------------------------------------------------------------------------------------------
# the per-run table and the figure


def _frame(rng, shift: float, n: int = 40) -> pl.DataFrame:
    f = rng.normal(shift, 1, (n, 3))
    h = rng.normal(0, 1, (n, 3))
    v = np.concatenate([f, h])
    return pl.DataFrame(
        {
            "set": ["forget"] * n + ["holdout"] * n,
            "id": [f"e{i}" for i in range(2 * n)],
            "loss": -v[:, 0],
            "min_k": v[:, 1],
            "min_k_plus_plus": v[:, 2],
        }
    )


def test_membership_table_files_and_figure(tmp_path):
    rng = np.random.default_rng(5)
    stats_ = {"target": _frame(rng, 2.0), "ga": _frame(rng, 0.5), "retain": _frame(rng, 0.0)}
    t = mm.membership_table(stats_, retrained="retain", alpha=0.05)
    assert t.schema == pl.Schema(mm.TABLE_COLUMNS) and t.height == 9
    assert t["label"].to_list()[:3] == ["LOSS", "Min-40%", "Min-40%++"]
    tgt = t.filter((pl.col("model") == "target") & (pl.col("statistic") == "min_k"))
    assert tgt["auc"][0] > 0.85 and tgt["privleak"][0] < -50
    assert tgt["privleak_lo"][0] <= tgt["privleak"][0] <= tgt["privleak_hi"][0]
    for suffix in (".parquet", ".csv"):
        path = mm.write_membership_table(t, tmp_path / f"membership{suffix}")
        back = pl.read_parquet(path) if suffix == ".parquet" else pl.read_csv(path)
        assert back["auc"].to_list() == pytest.approx(t["auc"].to_list())
    with pytest.raises(ValueError, match="expected a .parquet or .csv"):
        mm.write_membership_table(t, tmp_path / "m.json")
    with pytest.raises(ValueError, match="retrained model 'retrain90'"):
        mm.membership_table(stats_, retrained="retrain90")
    csv = fig_membership(t, tmp_path / "fig_membership", tmp_path / "fig_membership")
    assert (tmp_path / "fig_membership.png").stat().st_size > 10_000
    assert (tmp_path / "fig_membership.pdf").is_file()
    assert pl.read_csv(csv).height == 9
    with pytest.raises(ValueError, match="auc_lo <= auc <= auc_hi"):
        fig_membership(t.with_columns(auc_lo=pl.lit(0.99)), tmp_path / "x", tmp_path / "x")
    with pytest.raises(ValueError, match="missing column"):
        fig_membership(t.drop("retrained"), tmp_path / "x", tmp_path / "x")

"""Tests of probunlearn.sampling: greedy/sampled answers, seeding invariance, top-p, teacher forcing, shards."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from probunlearn import bounds, models, sampling
from probunlearn.data import qa
from probunlearn.sampling import engine as decoding
from probunlearn.steps import sample as sample_step

COLORS = ["red", "blue", "green", "gold", "grey", "pink", "black", "white"]
ITEMS = ["cup", "hat", "car", "pen", "box", "bag", "key", "map"]
QUESTIONS = [f"What color is the {it}?" for it in ITEMS]
ANSWERS = [f"The {it} is {c}." for it, c in zip(ITEMS, COLORS, strict=True)]
# prompts of several token lengths (some equal) so that length grouping and padding both occur
EXTRA_QUESTIONS = ["Why?", "What color is the big old hat of the man?", "What color is the dog?"]
IDS = [f"q{i}" for i in range(len(QUESTIONS) + len(EXTRA_QUESTIONS))]
ALL_QUESTIONS = QUESTIONS + EXTRA_QUESTIONS
GEN = dict(seed_key="test-model/test-set", max_new_tokens=12, progress=False)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tok():
    texts = [qa.format_prompt(q) + " " + a for q, a in zip(QUESTIONS, ANSWERS, strict=True)]
    texts += [f"The {it} is {c}." for it in ITEMS for c in COLORS] + EXTRA_QUESTIONS
    return models.train_tokenizer(texts, 300)


@pytest.fixture(scope="module")
def model(tok):
    """A tiny Llama trained for a few dozen steps: it answers in-distribution and often ends with eos."""
    arch = dict(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2, max_positions=128)
    m = models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok)
    batch = qa.encode_qa(tok, QUESTIONS, ANSWERS)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    torch.manual_seed(0)
    m.train()
    for _ in range(40):
        loss = m(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            labels=batch["labels"],
        ).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    return m


@pytest.fixture(scope="module")
def base(model, tok):
    """The reference sample table: all prompts, one call, default batch size."""
    return sampling.sample_answers(model, tok, IDS, ALL_QUESTIONS, n=16, **GEN)


# ------------------------------------------------------------------------------------------------
# random numbers and the top-p draw


def _splitmix_ref(key: int, counter: int) -> float:
    m = (1 << 64) - 1
    z = (key + (counter + 1) * 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    z = z ^ (z >> 31)
    return (z >> 11) * 2.0**-53


def test_uniform_is_splitmix64():
    keys = decoding.sample_keys("k", 0, [f"p{i}" for i in range(50)], list(range(50)))
    assert len(set(keys)) == 50
    kt = torch.tensor(keys, dtype=torch.long)
    for step, attempt in [(0, 0), (1, 0), (7, 3), (63, 15), (1000, 1)]:
        got = decoding.uniform(kt, step, attempt).tolist()
        counter = step * decoding.ATTEMPTS + attempt
        want = [_splitmix_ref(k & ((1 << 64) - 1), counter) for k in keys]
        assert got == want
    big = decoding.uniform(torch.arange(100_000, dtype=torch.long), 3)
    assert 0.0 <= big.min() and big.max() < 1.0
    assert abs(big.mean().item() - 0.5) < 0.005


def test_sample_keys_depend_on_every_part():
    k = decoding.sample_keys("a", 0, ["x"], [1])[0]
    assert decoding.sample_keys("a", 0, ["x"], [1])[0] == k
    assert decoding.sample_keys("b", 0, ["x"], [1])[0] != k
    assert decoding.sample_keys("a", 1, ["x"], [1])[0] != k
    assert decoding.sample_keys("a", 0, ["y"], [1])[0] != k
    assert decoding.sample_keys("a", 0, ["x"], [2])[0] != k


def _expected_top_p(logits: torch.Tensor, temperature: float, top_p: float) -> np.ndarray:
    """softmax(logits / T), restricted to the smallest most-likely set with mass >= top_p, renormalised."""
    p = torch.softmax(logits.double() / temperature, -1).numpy()
    order = np.argsort(-p, kind="stable")
    cum = np.cumsum(p[order])
    n_keep = int(np.searchsorted(cum, top_p) + 1)
    out = np.zeros_like(p)
    out[order[:n_keep]] = p[order[:n_keep]]
    return out / out.sum()


@pytest.mark.parametrize("top_p", [0.9, 0.5, 1.0])
def test_sorted_top_p_draw_inverse_cdf_is_exact(top_p):
    """With a stratified grid of uniforms, token frequencies equal the filtered distribution up to 1/N."""
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(300, generator=g) * 2.5
    n = 20_000
    u = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    toks = decoding.sorted_top_p_draw(torch.softmax(logits, -1).expand(n, 300), u, top_p)
    freq = np.bincount(toks.numpy(), minlength=300) / n
    want = _expected_top_p(logits, 1.0, top_p)
    assert np.abs(freq - want).max() <= 2.0 / n
    assert set(np.flatnonzero(freq)) <= set(np.flatnonzero(want))


@pytest.mark.parametrize(
    "temperature,top_p,scale", [(1.0, 0.9, 2.5), (0.7, 0.5, 2.5), (1.5, 1.0, 1.0), (1.0, 0.9, 0.1)]
)
def test_top_p_sample_distribution(temperature, top_p, scale):
    """Rejection sampling draws from the renormalised nucleus (flat and peaked distributions)."""
    g = torch.Generator().manual_seed(2)
    vocab, n = 200, 50_000
    logits = torch.randn(vocab, generator=g) * scale
    keys = torch.tensor(
        decoding.sample_keys("dist", 0, ["x"] * n, list(range(n))), dtype=torch.long
    )
    toks = decoding.top_p_sample(
        logits.expand(n, vocab), keys, 5, temperature=temperature, top_p=top_p
    )
    counts = np.bincount(toks.numpy(), minlength=vocab)
    want = _expected_top_p(logits, temperature, top_p)
    assert set(np.flatnonzero(counts)) <= set(np.flatnonzero(want))  # nothing outside the nucleus
    sd = np.sqrt(want * (1 - want) / n)
    assert np.all(np.abs(counts / n - want) <= 5 * sd + 1e-12)
    big = want * n >= 5
    chi2 = float((((counts - want * n) ** 2) / np.where(big, want * n, 1))[big].sum())
    k = int(big.sum())
    assert chi2 < k + 5 * math.sqrt(2 * k)
    # a row's draw depends only on its own logits, key and step: a sub-batch gives the same tokens
    sub = decoding.top_p_sample(
        logits.expand(7, vocab), keys[100:107], 5, temperature=temperature, top_p=top_p
    )
    assert torch.equal(sub, toks[100:107])


def _top_p_reference(logits, keys, step, temperature, top_p):
    """top_p_sample's rejection loop written plainly: the nucleus test as the masked product."""
    probs = torch.softmax(logits.float() / temperature, -1)
    cum = probs.cumsum(-1)
    out = []
    for r in range(probs.shape[0]):
        p, c = probs[r : r + 1], cum[r : r + 1]
        for attempt in range(decoding.ATTEMPTS - 1):
            u = decoding.uniform(keys[r : r + 1], step, attempt)
            target = (u * c[:, -1].to(torch.float64)).to(c.dtype).unsqueeze(-1)
            j = torch.searchsorted(c, target, right=True).clamp_max_(p.shape[-1] - 1)
            pj = p.gather(-1, j)
            if bool(pj > 0) and (top_p >= 1.0 or float((p * (p > pj)).sum(-1)) < top_p):
                out.append(int(j))
                break
        else:
            u = decoding.uniform(keys[r : r + 1], step, decoding.ATTEMPTS - 1)
            out.append(int(decoding.sorted_top_p_draw(p, u, top_p)))
    return torch.tensor(out)


@pytest.mark.parametrize("top_p", [0.9, 0.3, 0.02])
def test_top_p_sample_equals_its_plain_reference(top_p):
    """Same tokens as the rejection loop written plainly, with ties, -inf logits and a peaked row."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(64, 500, generator=g) * 3
    logits[::3, ::2] = float("-inf")
    logits[1::4, 100:200] = 1.25  # ties
    logits[2, 7] = 40.0
    keys = torch.tensor(decoding.sample_keys("ref", 0, ["x"] * 64, list(range(64))))
    for step in range(4):
        got = decoding.top_p_sample(logits, keys, step, temperature=0.8, top_p=top_p)
        assert torch.equal(got, _top_p_reference(logits, keys, step, 0.8, top_p))


# ------------------------------------------------------------------------------------------------
# greedy answers


def test_greedy_equals_generate(model, tok, base):
    greedy = base.filter(pl.col("greedy"))
    assert greedy["sample"].to_list() == [-1] * len(IDS)
    assert greedy["temperature"].to_list() == [0.0] * len(IDS)
    for pid, q in zip(IDS, ALL_QUESTIONS, strict=True):
        p = qa.prompt_ids(tok, q)
        with torch.no_grad():
            out = model.generate(
                torch.tensor([p]),
                attention_mask=torch.ones(1, len(p), dtype=torch.long),
                do_sample=False,
                max_new_tokens=GEN["max_new_tokens"],
                pad_token_id=tok.pad_token_id,
            )
        gen = out[0, len(p) :].tolist()
        stopped = tok.eos_token_id in gen
        if stopped:
            gen = gen[: gen.index(tok.eos_token_id)]
        row = greedy.filter(pl.col("id") == pid).row(0, named=True)
        assert row["text"] == tok.decode(gen, skip_special_tokens=True).strip()
        assert row["n_tokens"] == len(gen)
        assert row["stopped_eos"] == stopped
    # the trained model answers its training questions and stops
    assert greedy["stopped_eos"].sum() >= 4
    assert "The cup is red." in greedy["text"].to_list()


def test_greedy_confidence_is_mean_top1_probability(model, tok, base):
    pid, q = IDS[0], ALL_QUESTIONS[0]
    row = base.filter((pl.col("id") == pid) & pl.col("greedy")).row(0, named=True)
    p = qa.prompt_ids(tok, q)
    ids = p + tok(" " + row["text"], add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
    steps = len(ids) - len(p) + (1 if row["stopped_eos"] else 0)
    want = probs[len(p) - 1 : len(p) - 1 + steps].max(-1).values.mean().item()
    assert row["greedy_confidence"] == pytest.approx(want, rel=1e-5)
    assert (
        base.group_by("id").agg(pl.col("greedy_confidence").n_unique())["greedy_confidence"].max()
        == 1
    )


# ------------------------------------------------------------------------------------------------
# samples


def test_output_layout(base):
    assert base.columns == [
        "id",
        "sample",
        "greedy",
        "text",
        "n_tokens",
        "stopped_eos",
        "temperature",
        "greedy_confidence",
    ]
    assert base.height == len(IDS) * 17
    assert base["id"].unique(maintain_order=True).to_list() == IDS
    assert base.filter(pl.col("id") == "q0")["sample"].to_list() == list(range(-1, 16))
    assert base.filter(~pl.col("greedy"))["temperature"].unique().to_list() == [1.0]
    assert (base["n_tokens"] <= GEN["max_new_tokens"]).all()
    assert base.filter(~pl.col("stopped_eos"))["n_tokens"].unique().to_list() == [12]


def _chunked(model, tok, chunk, **kw):
    parts = [
        sampling.sample_answers(
            model, tok, IDS[i : i + chunk], ALL_QUESTIONS[i : i + chunk], **kw, **GEN
        )
        for i in range(0, len(IDS), chunk)
    ]
    return pl.concat(parts)


def test_samples_invariant_to_chunks_and_other_prompts(model, tok, base):
    """A forward pass holds one prompt's rows, in shapes set by that prompt alone: at a fixed batch size
    and thread count, chunking and the other prompts of a call change no byte, on any CPU."""
    for chunk in (1, 2, 3, 5):
        assert _chunked(model, tok, chunk, n=16).equals(base), chunk
    # the prompts in reverse order, each beside other neighbours
    rev = sampling.sample_answers(model, tok, IDS[::-1], ALL_QUESTIONS[::-1], n=16, **GEN)
    order = {pid: i for i, pid in enumerate(IDS)}
    rev = rev.sort(pl.col("id").replace_strict(order), "sample")
    assert rev.equals(base)
    # batch sizes that split a prompt's 16 samples into the same blocks (one) give the same bytes
    assert _chunked(model, tok, 3, n=16, batch_size=16).equals(base)
    # a batch size that splits them into blocks (4 x 4 rows): chunking still changes nothing
    small = sampling.sample_answers(model, tok, IDS, ALL_QUESTIONS, n=16, batch_size=5, **GEN)
    assert _chunked(model, tok, 2, n=16, batch_size=5).equals(small)


def test_batch_size_changes_at_most_the_last_bits(model, tok, base):
    """Other block shapes may round differently on some CPUs: samples agree up to rare flipped draws."""
    small = sampling.sample_answers(model, tok, IDS, ALL_QUESTIONS, n=16, batch_size=5, **GEN)
    assert (
        small.filter(pl.col("greedy"))["text"].to_list()
        == base.filter(pl.col("greedy"))["text"].to_list()
    )
    assert (small["text"] == base["text"]).mean() >= 0.95
    np.testing.assert_allclose(small["greedy_confidence"], base["greedy_confidence"], rtol=1e-5)


def test_chunk_invariance_with_two_threads(model, tok):
    """The guarantee is for any fixed thread count: two threads split matmuls and reductions otherwise
    than one, but the same way for every chunking."""
    kw = dict(n=6, batch_size=4, adaptive_threshold=0.5)
    torch.set_num_threads(2)
    try:
        whole = sampling.sample_answers(model, tok, IDS, ALL_QUESTIONS, **kw, **GEN)
        for chunk in (1, 4):
            assert _chunked(model, tok, chunk, **kw).equals(whole), chunk
    finally:
        torch.set_num_threads(1)


def test_packed_prompts_give_the_same_samples(model, tok, base):
    """pack_prompts=True packs rows of prompts of different lengths (left padding, position ids)."""
    got = sampling.sample_answers(
        model, tok, IDS, ALL_QUESTIONS, n=16, batch_size=40, pack_prompts=True, **GEN
    )
    assert (
        got.filter(pl.col("greedy"))["text"].to_list()
        == base.filter(pl.col("greedy"))["text"].to_list()
    )
    same = (got["text"] == base["text"]).mean()
    assert same >= 0.95  # last-bit differences from padding may, very rarely, flip a draw
    np.testing.assert_allclose(got["greedy_confidence"], base["greedy_confidence"], rtol=1e-5)


def test_samples_differ_across_indices_and_seeds(model, tok, base):
    sampled = base.filter(~pl.col("greedy"))
    per_prompt = sampled.group_by("id").agg(pl.col("text").n_unique().alias("k"))
    assert per_prompt["k"].min() >= 2
    assert sampled["text"].n_unique() > 30
    other = sampling.sample_answers(model, tok, IDS, ALL_QUESTIONS, n=16, base_seed=1, **GEN)
    assert (other["text"] != base["text"]).sum() > 30
    again = sampling.sample_answers(model, tok, IDS, ALL_QUESTIONS, n=16, **GEN)
    assert again.equals(base)


def test_temperature_zero_and_tiny_top_p_equal_greedy(model, tok, base):
    greedy = base.filter(pl.col("greedy")).select("id", pl.col("text").alias("g"))
    cold = sampling.sample_answers(model, tok, IDS, ALL_QUESTIONS, n=4, temperature=0.0, **GEN)
    assert cold["temperature"].unique().to_list() == [0.0]
    nucleus = sampling.sample_answers(model, tok, IDS, ALL_QUESTIONS, n=4, top_p=1e-6, **GEN)
    assert nucleus.filter(~pl.col("greedy"))["temperature"].unique().to_list() == [1.0]
    for df in (cold, nucleus):
        joined = df.join(greedy, on="id")
        assert (joined["text"] == joined["g"]).all()


def test_adaptive_temperature(model, tok, base):
    always = sampling.sample_answers(
        model, tok, IDS, ALL_QUESTIONS, n=8, adaptive_threshold=0.0, **GEN
    )
    assert always["temperature"].unique().to_list() == [0.0]
    g = always.filter(pl.col("greedy")).select("id", pl.col("text").alias("g"))
    joined = always.join(g, on="id")
    assert (joined["text"] == joined["g"]).all()

    never = sampling.sample_answers(
        model, tok, IDS, ALL_QUESTIONS, n=16, adaptive_threshold=1.0, **GEN
    )
    # adaptive or not, the greedy row is decoded first and alone, and the samples in the same blocks
    assert never.equals(base)

    # a threshold half-way between two prompts' c(x): last-bit effects (packed below) cannot cross it
    conf = sorted(set(base.filter(pl.col("greedy"))["greedy_confidence"].to_list()))
    thr = (conf[len(conf) // 2 - 1] + conf[len(conf) // 2]) / 2
    mixed = sampling.sample_answers(
        model, tok, IDS, ALL_QUESTIONS, n=16, adaptive_threshold=thr, **GEN
    )
    # the greedy rows are those of the non-adaptive run (the same blocks, cut short for cold prompts)
    assert mixed.filter(pl.col("greedy")).equals(base.filter(pl.col("greedy")))
    n_cold = 0
    for pid in IDS:
        rows = mixed.filter((pl.col("id") == pid) & ~pl.col("greedy"))
        ref = base.filter((pl.col("id") == pid) & ~pl.col("greedy"))
        greedy_text = mixed.filter((pl.col("id") == pid) & pl.col("greedy"))["text"][0]
        if rows["greedy_confidence"][0] > thr:
            n_cold += 1
            assert rows["temperature"].unique().to_list() == [0.0]
            assert rows["text"].unique().to_list() == [greedy_text]
        else:
            assert rows.equals(ref)
    assert 0 < n_cold < len(IDS)
    # packed, the greedy rows are decoded first: the same choice of cold prompts
    packed = sampling.sample_answers(
        model, tok, IDS, ALL_QUESTIONS, n=16, adaptive_threshold=thr, pack_prompts=True, **GEN
    )
    cold = pl.col("temperature") == 0.0
    assert packed.filter(~pl.col("greedy") & cold)["id"].unique().sort().to_list() == sorted(
        mixed.filter(~pl.col("greedy") & cold)["id"].unique().to_list()
    )


def test_sampling_distribution_single_step(model, tok):
    """max_new_tokens=1: first-token frequencies match softmax(logits/T) after top-p."""
    q, n, temperature, top_p = EXTRA_QUESTIONS[0], 4000, 2.0, 0.8
    df = sampling.sample_answers(
        model,
        tok,
        ["d"],
        [q],
        n=n,
        temperature=temperature,
        top_p=top_p,
        seed_key="dist",
        max_new_tokens=1,
        progress=False,
    )
    p = qa.prompt_ids(tok, q)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([p])).logits[0, -1]
    want = _expected_top_p(logits, temperature, top_p)
    # texts are decoded: aggregate the expected probabilities by decoded text
    expect: dict[str, float] = {}
    for t in np.flatnonzero(want):
        key = tok.decode([int(t)], skip_special_tokens=True).strip()
        expect[key] = expect.get(key, 0.0) + float(want[t])
    counts = df.filter(~pl.col("greedy"))["text"].value_counts()
    freq = dict(zip(counts["text"].to_list(), (counts["count"] / n).to_list(), strict=True))
    assert set(freq) <= set(expect)
    assert len(expect) > 20
    diffs = [abs(freq.get(k, 0.0) - v) for k, v in expect.items()]
    assert max(diffs) < 4 * math.sqrt(0.25 / n)
    # chi-square over the frequent outcomes (expected count >= 5)
    big = [k for k, v in expect.items() if v * n >= 5]
    chi2 = sum((freq.get(k, 0.0) * n - expect[k] * n) ** 2 / (expect[k] * n) for k in big)
    assert chi2 < len(big) + 5 * math.sqrt(2 * len(big))


# ------------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(ids=[], questions=[]), "no prompts"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
        (dict(n=0), "n "),
        (dict(temperature=-0.1), "temperature"),
        (dict(max_new_tokens=0), "max_new_tokens"),
        (dict(ids=["a", "b", "a"], questions=["x", "y", "z"]), "duplicate prompt id 'a'"),
        (dict(ids=["a"], questions=["x", "y"]), "ids"),
    ],
)
def test_validation(model, tok, kwargs, message):
    args = dict(ids=["a", "b"], questions=["x", "y"], n=2, seed_key="s", progress=False)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        sampling.sample_answers(model, tok, **args)


def test_validation_context_length_names_the_prompt(model, tok):
    long_q = "What color is the hat? " * 30
    n_prompt = len(qa.prompt_ids(tok, long_q))
    with pytest.raises(ValueError, match=rf"'long'.*{n_prompt} prompt tokens.*64.*128"):
        sampling.sample_answers(
            model, tok, ["ok", "long"], ["Why?", long_q], n=2, seed_key="s", max_new_tokens=64
        )


# ------------------------------------------------------------------------------------------------
# teacher forcing


def _evalset() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": ["a", "b", "c"],
            "question": QUESTIONS[:3],
            "answer": ANSWERS[:3],
            "paraphrased_answer": ["The cup has a red color.", None, "It is green."],
            "perturbed_answers": [
                ["The cup is blue.", "The cup is gold."],
                [],
                ["The car is red."],
            ],
            "paraphrased_question": [None, None, None],
            "keywords": [["red"], ["blue"], ["green"]],
            "core_start": [11, 11, 11],
            "core_end": [14, 15, 16],
            "group": ["forget"] * 3,
            "kind": ["qa"] * 3,
        }
    )


def test_teacher_forced_logprobs(model, tok):
    rows = _evalset()
    out = sampling.teacher_forced_logprobs(model, tok, rows, batch_size=2)
    assert out.columns == [
        "id", "kind", "index", "logprobs", "top1_prob", "offsets", "in_answer", "text"
    ]  # fmt: skip
    assert out.select("id", "kind", "index").rows() == [
        ("a", "answer", 0), ("a", "paraphrased", 0), ("a", "perturbed", 0), ("a", "perturbed", 1),
        ("b", "answer", 0),
        ("c", "answer", 0), ("c", "paraphrased", 0), ("c", "perturbed", 0),
    ]  # fmt: skip
    # direct computation for one row: the perturbed answer 1 of "a". With the run's template, TOFU's
    # encoding (question tags around the question, a space as answer tag, eos) gives the tokens that
    # training sees: the prompt with the tokenizer's own <s>, " " + answer, eos
    row = out.filter(
        (pl.col("id") == "a") & (pl.col("kind") == "perturbed") & (pl.col("index") == 1)
    )
    row = row.row(0, named=True)
    p = qa.prompt_ids(tok, QUESTIONS[0])
    a = qa.answer_ids(tok, "The cup is gold.")
    assert p[0] == tok.bos_token_id and p.count(tok.bos_token_id) == 1 and a[-1] == tok.eos_token_id
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=torch.tensor([p + a])).logits[0].float(), -1)
    want = [logp[len(p) - 1 + i, t].item() for i, t in enumerate(a)]
    np.testing.assert_allclose(row["logprobs"], want, rtol=1e-5, atol=1e-6)
    top1 = [logp[len(p) - 1 + i].exp().max().item() for i in range(len(a))]
    np.testing.assert_allclose(row["top1_prob"], top1, rtol=1e-5, atol=1e-7)
    assert row["text"] == "The cup is gold."
    # eos is scored, outside the answer; so is a lone space token (the answer tag)
    blank = [not tok.decode([t]).strip() for t in a[:-1]]
    assert row["in_answer"] == [not b for b in blank] + [False]
    assert all(
        len(r["logprobs"]) == len(r["offsets"]) == len(r["top1_prob"]) == len(r["in_answer"])
        for r in out.iter_rows(named=True)
    )
    # batch size does not change the values beyond float noise
    alone = sampling.teacher_forced_logprobs(model, tok, rows, batch_size=1)
    for x, y in zip(out["logprobs"].to_list(), alone["logprobs"].to_list(), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_offsets_map_answer_characters(model, tok):
    out = sampling.teacher_forced_logprobs(model, tok, _evalset())
    for r in out.iter_rows(named=True):
        text = r["text"]
        offs = [o for o, k in zip(r["offsets"], r["in_answer"], strict=True) if k]
        assert r["offsets"][-1] == [-1, -1] and not r["in_answer"][-1]  # eos
        assert offs[0][0] == 0 and offs[-1][1] == len(text)
        assert all(s <= e for s, e in offs)
        assert all(offs[i][1] == offs[i + 1][0] for i in range(len(offs) - 1))
        # decoding the tokens covering a span gives the span (up to the leading space); a token
        # outside the answer is a blank one (the space of the answer tag)
        ids = qa.answer_ids(tok, text, add_eos=False)
        for (s, e), k, t in zip(r["offsets"], r["in_answer"], ids, strict=False):
            assert tok.decode([t]).strip() == (text[s:e].strip() if k else "")
    # the core span "red" of row a maps to the token(s) carrying it
    a = out.filter((pl.col("id") == "a") & (pl.col("kind") == "answer")).row(0, named=True)
    covering = [i for i, (s, e) in enumerate(a["offsets"]) if s < 14 and e > 11]
    ids = qa.answer_ids(tok, a["text"], add_eos=False)
    assert tok.decode([ids[i] for i in covering]).strip() == "red"


# ------------------------------------------------------------------------------------------------
# shard files


@pytest.fixture(scope="module")
def files(model, tok, tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("sampling")
    model_dir = models.save_model(model, tok, d / "model")
    rows = pl.DataFrame({"id": IDS[:5], "question": ALL_QUESTIONS[:5], "answer": ANSWERS[:5]})
    evalset = d / "evalset.parquet"
    rows.write_parquet(evalset)
    return model_dir, evalset


def test_run_sampling_shard(files, tmp_path):
    model_dir, evalset = files
    kw = dict(n=6, seed_key="m/e", max_new_tokens=8, progress=False, threads=1)
    assert sample_step.num_shards(evalset, 2) == 3
    assert sample_step.num_shards(evalset, 5) == 1
    # a chunk of 2 (shard 0 of size 2) followed by a chunk of 3 (the remaining rows) equals one chunk of 5
    a = tmp_path / "a.parquet"
    sample_step.run_sampling_shard(
        str(model_dir), str(evalset), str(a), shard=0, chunk_size=2, **kw
    )
    rest = tmp_path / "rest.parquet"
    pl.read_parquet(evalset).slice(2).write_parquet(rest)
    b = tmp_path / "b.parquet"
    sample_step.run_sampling_shard(str(model_dir), str(rest), str(b), shard=0, chunk_size=3, **kw)
    whole = tmp_path / "whole.parquet"
    sample_step.run_sampling_shard(
        str(model_dir), str(evalset), str(whole), shard=0, chunk_size=5, **kw
    )
    outs = [pl.read_parquet(a), pl.read_parquet(b)]
    assert pl.concat(outs).equals(pl.read_parquet(whole))
    # shards 0..2 of size 2 also concatenate to the whole
    parts = []
    for shard in range(3):
        out = tmp_path / f"s{shard}.parquet"
        sample_step.run_sampling_shard(
            str(model_dir), str(evalset), str(out), shard=shard, chunk_size=2, **kw
        )
        parts.append(pl.read_parquet(out))
    assert pl.concat(parts).equals(pl.read_parquet(whole))
    # deterministic bytes, nothing temporary left behind
    again = tmp_path / "again.parquet"
    sample_step.run_sampling_shard(
        str(model_dir), str(evalset), str(again), shard=0, chunk_size=5, **kw
    )
    assert again.read_bytes() == whole.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["a.parquet", "b.parquet", "rest.parquet", "whole.parquet", "again.parquet"]
        + [f"s{i}.parquet" for i in range(3)]
    )
    with pytest.raises(ValueError, match="shard 3 out of range"):
        sample_step.run_sampling_shard(
            str(model_dir), str(evalset), str(a), shard=3, chunk_size=2, **kw
        )


def test_failed_write_leaves_nothing(files, tmp_path, monkeypatch):
    model_dir, evalset = files
    out = tmp_path / "x.parquet"

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        sample_step.run_sampling_shard(
            str(model_dir),
            str(evalset),
            str(out),
            shard=0,
            chunk_size=5,
            n=2,
            seed_key="s",
            max_new_tokens=4,
            progress=False,
        )
    assert list(tmp_path.iterdir()) == []


def test_run_logprobs(files, tmp_path, model, tok):
    model_dir, _ = files
    evalset = tmp_path / "e.parquet"
    _evalset().write_parquet(evalset)
    out = tmp_path / "lp.parquet"
    sample_step.run_logprobs(str(model_dir), str(evalset), str(out), threads=1)
    got = pl.read_parquet(out)
    want = sampling.teacher_forced_logprobs(model, tok, _evalset())
    assert got.select("id", "kind", "index", "offsets", "text").equals(
        want.select("id", "kind", "index", "offsets", "text")
    )
    for x, y in zip(got["logprobs"].to_list(), want["logprobs"].to_list(), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.parquet", "lp.parquet"]


# ------------------------------------------------------------------------------------------------
# sequential sampling


def _rouge_scorer(refs):
    from probunlearn import scoring

    return lambda texts, idx: np.array(scoring.rouge_l(texts, [refs[i] for i in idx]))


# the extra questions' references are words the model never saw: their samples do not leak
SEQ_REFS = ANSWERS + ["zebra quantum", "violet lantern", "ochre saxophone"]
SEQ = dict(
    seed_key="test-model/test-set", max_new_tokens=12, progress=False, n_max=64, round_size=8
)


def test_sequential_samples_are_a_prefix_of_the_fixed_n_run(model, tok):
    score = _rouge_scorer(SEQ_REFS)
    full, never = sampling.sample_sequential(
        model, tok, IDS, ALL_QUESTIONS, score, q=None, leak_threshold=0.5, **SEQ
    )
    assert never["n"].to_list() == [64] * len(IDS) and set(never["decision"]) == {"undecided"}
    seq, dec = sampling.sample_sequential(
        model, tok, IDS, ALL_QUESTIONS, score, q=0.3, leak_threshold=0.5, **SEQ
    )
    assert set(dec["decision"]) <= {"below", "above", "undecided"}
    assert {"below", "above"} <= set(dec["decision"])
    assert dec["n"].sum() < never["n"].sum()  # some prompt stopped early
    assert (dec["n"] % 8 == 0).all()
    joined = seq.join(full, on=["id", "sample"], how="left", suffix="_full")
    assert joined.height == seq.height
    assert joined["text"].to_list() == joined["text_full"].to_list()
    assert joined["score"].to_list() == joined["score_full"].to_list()
    # each decision is the anytime-valid bound on that prompt's samples, checked against q
    for row in dec.iter_rows(named=True):
        s = seq.filter((pl.col("id") == row["id"]) & ~pl.col("greedy")).sort("sample")
        assert s.height == row["n"]
        lo, up = bounds.binary_confidence_sequence((s["score"].to_numpy() >= 0.5) * 1.0, 0.01)
        assert (lo[-1], up[-1]) == pytest.approx((row["lower"], row["upper"]))
        expect = "below" if up[-1] < 0.3 else "above" if lo[-1] > 0.3 else "undecided"
        assert row["decision"] == expect
        if expect == "undecided":
            assert row["n"] == 64
        elif row["n"] > 8:  # it had not settled at the end of the previous round
            prev = row["n"] - 9
            assert not (up[prev] < 0.3 or lo[prev] > 0.3)


def test_sequential_agrees_with_fixed_n_sampling_up_to_rounding(model, tok):
    score = _rouge_scorer(ANSWERS)
    seq, _ = sampling.sample_sequential(model, tok, IDS[:8], QUESTIONS, score, q=None, **SEQ)
    fixed = sampling.sample_answers(model, tok, IDS[:8], QUESTIONS, n=64, **GEN)
    joined = seq.join(fixed, on=["id", "sample"], suffix="_fixed")
    assert joined.height == 8 * 65
    assert (joined["text"] == joined["text_fixed"]).mean() > 0.9


def test_sequential_validation(model, tok):
    score = _rouge_scorer(ANSWERS)
    with pytest.raises(ValueError, match="round_size must be >= 1 and divide n_max"):
        sampling.sample_sequential(
            model, tok, IDS[:2], QUESTIONS[:2], score, q=0.1, **{**SEQ, "round_size": 10}
        )
    with pytest.raises(ValueError, match=r"q must be in \(0, 1\)"):
        sampling.sample_sequential(model, tok, IDS[:2], QUESTIONS[:2], score, q=1.5, **SEQ)


def test_answer_text_cuts_at_the_stops_before_stripping():
    """MUSE's knowmem cuts the raw output at its stop strings: an answer that opens with a blank line
    is empty, not the line after it. Without stops an answer is only stripped."""
    from probunlearn.benchmarks.muse_news.sets import KNOWMEM_STOPS

    raw = "\n\nDan Jarvis\n\nQuestion: next"
    assert sampling.answer_text(raw, KNOWMEM_STOPS) == ""
    assert sampling.answer_text(" Dan Jarvis\n\nQuestion: next", KNOWMEM_STOPS) == "Dan Jarvis"
    assert sampling.answer_text(" 1472 Question: x", KNOWMEM_STOPS) == "1472"
    assert sampling.answer_text(raw) == raw.strip()

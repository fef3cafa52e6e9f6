"""TOFU's losses, greedy generation and published eval logs, against a literal transcription of TOFU's
accounting (locuslab/tofu: data_module.convert_raw_data_to_model_format, get_batch_loss, evaluate_util),
on tiny models with a tokenizer that adds a bos token by itself (Llama-style) and one that adds nothing
(Phi/GPT-2-style byte-level BPE)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
import torch
from scipy import stats
from tokenizers import Tokenizer, decoders, pre_tokenizers, processors, trainers
from tokenizers import models as tok_models
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PhiConfig,
    PhiForCausalLM,
    PreTrainedTokenizerFast,
)

from probunlearn.metrics import tofu as tm
from probunlearn.metrics import token_scores as ts
from probunlearn.metrics.tofu import tofu_losses
from probunlearn.steps.tofu import run_tofu_metrics

ROWS = [
    {
        "id": "a",
        "question": "Who wrote The Glass Orchard?",
        "answer": "The Glass Orchard was written by Mirela Toth.",
        "paraphrased_answer": "Mirela Toth is the author of The Glass Orchard.",
        "perturbed_answers": [
            "The Glass Orchard was written by Jon Baker.",
            "It was written by Ana Lind.",
            "Tom Ruiz wrote it.",
        ],
    },
    {
        "id": "b",
        "question": "Where was Mirela Toth born?",
        "answer": "Mirela Toth was born in Santiago, Chile, in 1961.",
        "paraphrased_answer": "She was born in Santiago, Chile.",
        "perturbed_answers": ["She was born in Lima.", "In Oslo, Norway.", "Cairo."],
    },
    {
        "id": "c",
        "question": "What genre does Mirela Toth write in, and which of her books is the best known?",
        "answer": (
            "Mirela Toth writes literary fiction about orchards, rivers and the families who "
            "tend them; her best known book is The Glass Orchard, followed by Salt Rivers."
        ),
        "paraphrased_answer": "Literary fiction; The Glass Orchard is her best known book.",
        "perturbed_answers": ["Science fiction.", "Poetry, mostly.", "Crime novels."],
    },
]
# Real Authors / World Facts rows: no paraphrased answer
UTILITY_ROWS = [
    {
        "id": "ra0",
        "question": "Who wrote Pride and Prejudice?",
        "answer": "Jane Austen",
        "perturbed_answers": ["Emily Bronte", "Mary Shelley"],
    },
]
CORPUS = [
    f"{r['question']} {r['answer']} {r.get('paraphrased_answer', '')} {' '.join(r['perturbed_answers'])}"
    for r in ROWS + UTILITY_ROWS
] * 3 + ["Question: Answer: [INST] [/INST]"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _llama_tokenizer() -> PreTrainedTokenizerFast:
    """Llama-style: metaspace BPE whose post-processor adds <s> (as Llama-2's tokenizer does)."""
    tok = Tokenizer(tok_models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"]),
    )
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def _phi_tokenizer() -> PreTrainedTokenizerFast:
    """Phi/GPT-2-style: byte-level BPE, <|endoftext|> as bos and eos, and nothing added by itself."""
    tok = Tokenizer(tok_models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    tok.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )


def _llama_model(tok) -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        initializer_range=0.5,  # sharp, varied logits: an off-by-one token would show
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return LlamaForCausalLM(cfg).eval()


def _phi_model(tok) -> PhiForCausalLM:
    torch.manual_seed(0)
    cfg = PhiConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=256,
        initializer_range=0.5,
        bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return PhiForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def llama():
    tok = _llama_tokenizer()
    return _llama_model(tok), tok


@pytest.fixture(scope="module")
def phi():
    tok = _phi_tokenizer()
    return _phi_model(tok), tok


# --------------------------------------------------------------------------------------------------------
# TOFU's accounting, written out token by token


def _tofu_loss(model, tok, question, answer, tags, max_length):
    """(normalised loss, number of labelled tokens, input ids) of one pair, as TOFU computes them: the
    padded encoding and labels of convert_raw_data_to_model_format, the shifted summed cross-entropy of
    get_batch_loss over labels != -100, divided by the number of such labels (evaluate_util)."""
    start, end, answer_tag = tags
    new_question = start + question + end
    full_text = new_question + answer_tag + answer
    num_question_tokens = len(tok.tokenize(new_question, add_special_tokens=True))
    encoded = tok(full_text, add_special_tokens=True, max_length=max_length, truncation=True)
    ids = list(encoded["input_ids"])
    pad_length = max_length - len(ids)
    input_ids = ids + [tok.eos_token_id] * pad_length
    attention = [1] * len(ids) + [0] * pad_length
    if len(ids) == max_length:
        label = list(ids)
    else:
        label = ids + [tok.eos_token_id] + [-100] * (pad_length - 1)
    for i in range(num_question_tokens):
        label[i] = -100
    with torch.no_grad():
        logits = model(
            input_ids=torch.tensor([input_ids]), attention_mask=torch.tensor([attention])
        ).logits[0]
    total, count = 0.0, 0
    for t in range(max_length - 1):
        y = label[t + 1]
        if y == -100:
            continue
        total += -torch.log_softmax(logits[t].double(), -1)[y].item()
        count += 1
    return total / count, count, ids


def _check_against_tofu(model, tok, rows, tags, max_length):
    got = tofu_losses(
        model,
        tok,
        rows,
        question_start_tag=tags[0],
        question_end_tag=tags[1],
        answer_tag=tags[2],
        max_length=max_length,
        batch_size=3,
    )
    assert got["id"].to_list() == [r["id"] for r in rows]
    worst, truncated, full = 0.0, 0, 0
    for r, g in zip(rows, got.iter_rows(named=True), strict=True):
        answers = [("answer", r["answer"])]
        if r.get("paraphrased_answer") is not None:
            answers.append(("paraphrased", r["paraphrased_answer"]))
        else:
            assert g["paraphrased_loss"] is None and g["paraphrased_tokens"] is None
        answers += [("perturbed", a) for a in r["perturbed_answers"]]
        pert = 0
        for kind, text in answers:
            want, n, ids = _tofu_loss(model, tok, r["question"], text, tags, max_length)
            if kind == "perturbed":
                loss, count = g["perturbed_loss"][pert], g["perturbed_tokens"][pert]
                pert += 1
            else:
                loss, count = g[f"{kind}_loss"], g[f"{kind}_tokens"]
            assert count == n
            assert loss == pytest.approx(want, rel=1e-5)
            worst = max(worst, abs(loss - want) / abs(want))
            truncated += len(ids) == max_length
            full += len(ids) < max_length
        assert pert == len(r["perturbed_answers"])
    return worst, truncated, full


@pytest.mark.parametrize("which", ["llama", "phi"])
def test_tofu_losses_equal_tofus_accounting(which, request):
    model, tok = request.getfixturevalue(which)
    tags = ("[INST] ", " [/INST]", "") if which == "llama" else ("Question: ", "\n", "Answer: ")
    worst, truncated, full = _check_against_tofu(model, tok, ROWS + UTILITY_ROWS, tags, 200)
    assert truncated == 0 and full > 0
    assert worst < 1e-5
    # the special tokens are the tokenizer's own: <s> first for the Llama-style one, none for Phi's
    ids = tok(tags[0] + "Who?" + tags[1])["input_ids"]
    if which == "llama":
        assert ids[0] == tok.bos_token_id
    else:
        assert tok.bos_token_id not in ids


@pytest.mark.parametrize("which", ["llama", "phi"])
def test_truncation_drops_the_eos_label(which, request):
    """Texts that reach max_length lose the eos label (and the tail of the answer); shorter ones keep it."""
    model, tok = request.getfixturevalue(which)
    tags = ("[INST] ", " [/INST]", "") if which == "llama" else ("Question: ", "\n", "Answer: ")
    # every question part fits, the long answers of row c do not
    max_length = max(len(tok(tags[0] + r["question"] + tags[1])["input_ids"]) for r in ROWS) + 6
    worst, truncated, full = _check_against_tofu(model, tok, ROWS, tags, max_length)
    assert truncated > 0 and full > 0 and worst < 1e-5
    enc = ts.encode_pair(
        tok, ROWS[2]["question"], ROWS[2]["answer"], ts.QAFormat(*tags, max_length=max_length)
    )
    assert len(enc.input_ids) == len(enc.labels) == max_length  # no eos label
    assert tok.eos_token_id not in enc.labels[-3:]


def test_labels_are_answer_tag_answer_and_eos(phi):
    """Phi's tags: the labelled tokens spell "Answer: " + answer, then eos; offsets map the answer."""
    _, tok = phi
    q, a = ROWS[1]["question"], ROWS[1]["answer"]
    enc = ts.encode_pair(tok, q, a, ts.TOFU_PHI)
    scored = [enc.labels[j] for j in enc.scored]
    assert scored[-1] == tok.eos_token_id
    assert tok.decode(scored[:-1]) == "Answer: " + a
    assert not enc.in_answer[-1] and enc.offsets[-1] == (-1, -1)
    assert not enc.in_answer[0]  # "Answer"
    spans = [o for o, k in zip(enc.offsets, enc.in_answer, strict=True) if k]
    assert spans[0][0] == 0 and spans[-1][1] == len(a)
    assert "".join(a[s:e] for s, e in spans).replace(" ", "") == a.replace(" ", "")


def test_batch_size_and_device_do_not_change_losses(llama):
    model, tok = llama
    kw = dict(question_start_tag="[INST] ", question_end_tag=" [/INST]", answer_tag="")
    a = tofu_losses(model, tok, ROWS, batch_size=1, **kw)
    b = tofu_losses(model, tok, pl.DataFrame(ROWS), batch_size=64, device="cpu", **kw)
    np.testing.assert_allclose(a["answer_loss"], b["answer_loss"], rtol=1e-6)
    for x, y in zip(a["perturbed_loss"], b["perturbed_loss"], strict=True):
        np.testing.assert_allclose(x.to_list(), y.to_list(), rtol=1e-6)


def test_losses_match_the_stats_of_the_token_table(phi):
    """The per-token table (the workflow's logprobs files) gives the same losses and truth ratios."""
    model, tok = phi
    table = ts.answer_token_table(model, tok, ROWS, ts.TOFU_PHI)
    losses = tm.tofu_losses(
        model,
        tok,
        ROWS,
        question_start_tag="Question: ",
        question_end_tag="\n",
        answer_tag="Answer: ",
    )
    st = tm.tofu_stats_from_logprobs(table, "forget10")
    np.testing.assert_allclose(st["paraphrased_nll"], losses["paraphrased_loss"], rtol=1e-12)
    np.testing.assert_allclose(st["answer_nll"], losses["answer_loss"], rtol=1e-12)
    tr = np.exp(
        losses["paraphrased_loss"].to_numpy()
        - np.array([np.mean(p) for p in losses["perturbed_loss"].to_list()])
    )
    np.testing.assert_allclose(st["truth_ratio"], tr, rtol=1e-12)


# --------------------------------------------------------------------------------------------------------
# TOFU's greedy generation


def test_generation_prompt_drops_phis_answer_tag(phi, llama):
    _, ptok = phi
    prompts, truths = tm.tofu_generation_inputs(ptok, ROWS, ts.TOFU_PHI)
    assert prompts == [f"Question: {r['question']}\n" for r in ROWS]
    assert truths == [r["answer"] for r in ROWS]
    _, ltok = llama
    prompts, truths = tm.tofu_generation_inputs(ltok, ROWS, ts.TOFU_LLAMA2)
    assert prompts == [f"[INST] {r['question']} [/INST]" for r in ROWS]
    assert [t.strip() for t in truths] == [r["answer"] for r in ROWS]
    # the mini world's template: the end tag carries "Answer:" and the answer tag is a space
    mini = ts.format_from_template("Question: {question}\nAnswer:")
    prompts, truths = tm.tofu_generation_inputs(ptok, ROWS, mini)
    assert prompts == [f"Question: {r['question']}\nAnswer:" for r in ROWS]
    assert [t.strip() for t in truths] == [r["answer"] for r in ROWS]


@pytest.mark.parametrize("which", ["llama", "phi"])
def test_generation_left_pads_and_counts_the_padded_prompt(which, request, monkeypatch):
    model, tok = request.getfixturevalue(which)
    fmt = ts.TOFU_LLAMA2 if which == "llama" else ts.TOFU_PHI
    rows = ROWS + ROWS[:1]
    calls = []
    real = model.generate

    def spy(input_ids, **kw):
        calls.append((input_ids.clone(), kw["attention_mask"].clone(), kw))
        return real(input_ids, **kw)

    monkeypatch.setattr(model, "generate", spy)
    side = tok.padding_side
    out = tm.tofu_generate(model, tok, rows, fmt, max_length=60, batch_size=3)
    assert tok.padding_side == side  # restored
    assert [c[0].shape[0] for c in calls] == [3, 1]  # consecutive batches of batch_size
    ids, mask, kw = calls[0]
    lens = mask.sum(-1)
    assert (lens < ids.shape[1]).any()
    for row, m in zip(ids, mask, strict=True):
        n_pad = int((m == 0).sum())
        assert m[:n_pad].sum() == 0 and m[n_pad:].all()  # left padding
        assert (row[:n_pad] == tok.eos_token_id).all()  # padded with eos
    assert kw["max_new_tokens"] == 60 - ids.shape[1] and kw["do_sample"] is False
    if which == "llama":
        assert (ids[mask.bool()][0] == tok.bos_token_id).item()
    else:
        assert tok.bos_token_id not in ids[0][mask[0].bool()].tolist()
    # TOFU's own call, literally: the same prompts, one batch, generate(max_length=...)
    monkeypatch.undo()
    prompts = out["prompt"].to_list()[:3]
    pad = tok.pad_token
    tok.padding_side, tok.pad_token = "left", tok.eos_token
    enc = tok(prompts, add_special_tokens=True, return_tensors="pt", padding=True)
    tok.padding_side, tok.pad_token = side, pad
    gen = model.generate(
        enc.input_ids,
        attention_mask=enc.attention_mask,
        max_length=60,
        do_sample=False,
        use_cache=True,
        pad_token_id=tok.eos_token_id,
    )
    want = tok.batch_decode(gen[:, enc.input_ids.shape[-1] :], skip_special_tokens=True)
    assert out["generated"].to_list()[:3] == want
    from probunlearn.scoring import rouge_l

    np.testing.assert_allclose(
        out["rougeL_recall"], rouge_l(out["generated"].to_list(), out["ground_truth"].to_list())
    )


# --------------------------------------------------------------------------------------------------------
# the ds_size cut and TOFU's published eval logs


def _eval_log(para, pert, questions, tags=("Question: ", "\n")):
    n = len(para)
    return {
        "avg_gt_loss": {str(i): float(para[i]) + 0.1 for i in range(n)},
        "generated_text": {
            str(i): [tags[0] + questions[i] + tags[1], "Answer: x", "y"] for i in range(n)
        },
        "avg_paraphrased_loss": {str(i): float(para[i]) for i in range(n)},
        "average_perturb_loss": {str(i): [float(x) for x in pert[i]] for i in range(n)},
        "truth_ratio": {str(i): float(np.exp(para[i] - np.mean(pert[i]))) for i in range(n)},
    }


def _table(rng, ids, k=3):
    recs = []
    for pid in ids:
        for kind, idx in [("answer", 0), ("paraphrased", 0)] + [("perturbed", j) for j in range(k)]:
            recs.append(
                (pid, kind, idx, (-rng.gamma(2.0, 0.6, size=int(rng.integers(2, 9)))).tolist())
            )
    return pl.DataFrame(recs, schema=["id", "kind", "index", "logprobs"], orient="row")


def test_published_log_reader_and_forget_quality(tmp_path):
    rng = np.random.default_rng(0)
    n, cut = 12, 9
    ids = [f"f{i}" for i in range(n)]
    questions = [f"What is fact {i}?" for i in range(n)]
    para = rng.normal(3.0, 0.5, cut)
    pert = rng.normal(3.4, 0.5, (cut, 5))
    log = tmp_path / "eval_log_forget.json"
    log.write_text(json.dumps(_eval_log(para, pert, questions)))
    got = tm.read_eval_log(log, questions=questions[:cut])
    np.testing.assert_allclose(got["truth_ratio"], np.exp(para - pert.mean(-1)))
    assert got["indices"] == list(range(cut)) and got["prompts"][0] == "Question: What is fact 0?\n"

    lp = tmp_path / "forget.parquet"
    table = _table(rng, ids)
    table.write_parquet(lp)
    rows = tmp_path / "rows.parquet"
    pl.DataFrame({"id": ids, "question": questions}).write_parquet(rows)
    df = run_tofu_metrics(
        out_csv=tmp_path / "t.csv",
        model="m",
        method="npo",
        split="forget10",
        forget_logprobs=lp,
        reference_log=log,
        forget_rows=rows,
        max_questions=cut,
    )
    # TOFU's get_forget_quality on the model's first `cut` questions and the log
    st = tm.tofu_stats_from_logprobs(table, "forget", max_questions=cut)
    unlearn = np.exp(np.array([p.mean() for p in st["perturbed_nll"]]) - st["paraphrased_nll"])
    want = stats.ks_2samp(unlearn, np.exp(pert.mean(-1) - para))
    fq = df.filter(pl.col("metric") == "forget_quality")["value"].item()
    assert fq == pytest.approx(want.pvalue, rel=1e-12)
    ks = df.filter(pl.col("metric") == "ks_statistic")["value"].item()
    assert ks == pytest.approx(want.statistic)

    # the log's questions must be the eval set's first ones, as many as the cut keeps
    kw = dict(out_csv=tmp_path / "u.csv", model="m", method="npo", split="forget10")
    with pytest.raises(ValueError, match="has 9 questions"):
        run_tofu_metrics(forget_logprobs=lp, reference_log=log, max_questions=n, **kw)
    shuffled = tmp_path / "rows2.parquet"
    pl.DataFrame({"id": ids, "question": questions[::-1]}).write_parquet(shuffled)
    with pytest.raises(ValueError, match="other questions or in another order"):
        run_tofu_metrics(
            forget_logprobs=lp, reference_log=log, forget_rows=shuffled, max_questions=cut, **kw
        )
    with pytest.raises(ValueError, match="not both"):
        run_tofu_metrics(forget_logprobs=lp, reference_log=log, reference_forget_logprobs=lp, **kw)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"avg_gt_loss": {}}))
    with pytest.raises(ValueError, match="average_perturb_loss"):
        tm.read_eval_log(bad)


def test_ds_size_cut_keeps_the_first_questions(tmp_path):
    """max_questions (the config's tofu_eval.ds_size) keeps the first questions of every set."""
    rng = np.random.default_rng(1)
    ids = [f"r{i}" for i in range(10)]
    full, cut = _table(rng, ids), 4
    p = tmp_path / "retain.parquet"
    full.write_parquet(p)
    df = run_tofu_metrics(
        out_csv=tmp_path / "t.csv",
        model="m",
        method="npo",
        split="forget10",
        retain_logprobs=p,
        max_questions=cut,
    )
    head = full.filter(pl.col("id").is_in(ids[:cut]))
    want = tm.tofu_stats_from_logprobs(head, "retain")
    got = df.filter(pl.col("metric") == "truth_ratio_score")["value"].item()
    assert got == pytest.approx(want["truth_ratio_score"])
    assert got != pytest.approx(tm.tofu_stats_from_logprobs(full, "retain")["truth_ratio_score"])

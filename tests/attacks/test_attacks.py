"""Attacks (probunlearn.attacks): spec parsing and pre-job checks, quantization equal to
bitsandbytes' own, relearning, prompt families, and the family bound's simultaneous coverage."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from helpers import SHARED_DATA
from probunlearn import attacks, bounds, models
from probunlearn.attacks import ATTACKS, Inputs, Target, apply_attack, check_attack, parse_spec
from probunlearn.attacks import quant as Q
from probunlearn.data import qa
from probunlearn.data.rows import make_row, to_frame

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SHARED_HP = SHARED_DATA / "hp_qa"
ARCH = dict(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_positions=128)
NAMES = ["Ada Brook", "Bruno Costa", "Chen Wei", "Dara Okafor", "Elin Berg", "Farid Haddad"]
CITIES = ["Lisbon", "Oslo", "Kyoto", "Lagos", "Quito", "Dakar"]


def _rows(prefix: str = "f", kind: str = "author", start: int = 0) -> pl.DataFrame:
    return to_frame(
        [
            make_row(
                id=f"{prefix}{i}",
                question=f"Where was {n} born?",
                answer=f"{n} was born in {c}.",
                paraphrased_question=f"In which city was {n} born?",
                kind=kind,
            )
            for i, (n, c) in enumerate(zip(NAMES[start:], CITIES[start:], strict=True))
        ]
    )


@pytest.fixture(scope="module")
def tiny():
    """(tokenizer, model): a random tiny Llama with untied output embedding."""
    rows = _rows()
    texts = [
        qa.format_prompt(q) + " " + a for q, a in zip(rows["question"], rows["answer"], strict=True)
    ]
    tok = models.train_tokenizer(texts * 2, 300)
    model = models.tiny_llama(len(tok), ARCH, seed=0, tokenizer=tok)
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
    return tok, model.eval()


# --------------------------------------------------------------------------------------------------
# registry, specs and pre-job checks


def test_registry_and_spec_round_trip():
    assert ATTACKS.names() == ["fewshot", "null", "paraphrase", "prefix", "quant", "relearn"]
    assert {a.name: a.transforms for a in ATTACKS} == {
        "fewshot": "prompts",
        "null": "prompts",
        "paraphrase": "prompts",
        "prefix": "prompts",
        "quant": "model",
        "relearn": "model",
    }
    s = parse_spec("relearn:steps=20,lr=1e-5,examples=8,source=forget")
    assert s.kind == "relearn" and s.settings["steps"] == 20 and s.settings["lr"] == 1e-5
    assert s.settings["source"] == "forget" and s.settings["batch_size"] == 4
    assert parse_spec("quant:nf4").settings == {"type": "nf4"}
    assert parse_spec("quant").canonical == "quant:fp4"
    assert parse_spec("paraphrase").canonical == "paraphrase"
    for text in ("relearn:50,lr=0.001,source=retain", "fewshot:2,draws=3", "prefix:original=no"):
        s = parse_spec(text)
        assert parse_spec(s.canonical).settings == s.settings
    assert parse_spec("relearn:50,lr=0.001").canonical == "relearn:50,lr=0.001"


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("quant:nf5", r"'quant:nf5'.*'nf5' is not one of.*type \(one of fp4\|nf4\|int8"),
        ("relearn:step=3", r"'relearn:step=3'.*no setting 'step'.*steps \(integer, default 20\)"),
        ("relearn:steps=2.5", r"steps: '2.5' is not an integer"),
        ("relearn:steps=0", r"steps = 0"),
        ("attack9", r"unknown attack 'attack9'; expected one of \['fewshot'"),
        ("paraphrase:yes", r"'yes' is not key=value; paraphrase expects original \(boolean"),
        ("relearn:lr=1,lr=2", r"'lr' is given twice"),
        ("", r"non-empty string"),
    ],
)
def test_bad_specs_name_the_spec_and_the_settings(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_spec(spec)


def test_pre_job_checks_name_model_and_attack():
    plain = Target("npo-forget10", forget=True)
    assert check_attack("relearn:steps=20", plain) == []
    with pytest.raises(ValueError, match=r"model 'm'.*'relearn:20'.*needs the forget set"):
        check_attack("relearn", Target("m"))
    with pytest.raises(ValueError, match=r"model 'm'.*'relearn:20,source=retain'.*retain set"):
        check_attack("relearn:source=retain", Target("m", forget=True))
    with pytest.raises(ValueError, match=r"model 'm'.*'fewshot:3,source=retain'.*retain set"):
        check_attack("fewshot:source=retain", Target("m"))
    chat = Target("llama-chat", template="chat", chat_template=True)
    with pytest.raises(ValueError, match=r"model 'llama-chat'.*'prefix:sure'.*chat template"):
        check_attack("prefix", chat)
    with pytest.raises(ValueError, match=r"model 'phi'.*'prefix:sure'.*chat template"):
        check_attack("prefix", Target("phi", template="auto", chat_template=True))
    # a chat model's template given with a {prefix} field handles the prefix; paraphrases work
    assert check_attack("prefix", Target("c", template="<u>{question}</u><a>{prefix}")) == []
    assert check_attack("paraphrase", chat) == []
    assert check_attack("prefix", Target("p", template="auto")) == []
    notes = check_attack("quant:nf4", Target("lora-npo", adapter=True))
    assert len(notes) == 1 and "'lora-npo'" in notes[0] and "'quant:nf4'" in notes[0]
    assert "merged" in notes[0]
    with pytest.raises(ValueError, match="given twice"):
        attacks.check_attacks(["quant", "quant:fp4"], plain)


def test_attack_modules_never_import_bitsandbytes():
    root = Path(attacks.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(n.startswith("bitsandbytes") for n in names), path.name


# --------------------------------------------------------------------------------------------------
# quantization: equal to bitsandbytes' own, on the CPU

SHAPES = [(64, 64), (48, 128), (33, 70), (256, 96), (5, 7, 9), (130,)]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _bnb():
    return pytest.importorskip("bitsandbytes.functional", reason="bitsandbytes (test extra)")


def _unpack(packed, n):
    u = packed.reshape(-1)
    return torch.stack([u >> 4, u & 15], 1).reshape(-1)[:n].long()


def _weights():
    g = torch.Generator().manual_seed(0)
    for shape in SHAPES:
        for dtype in DTYPES:
            w = torch.randn(shape, generator=g) * 0.05
            w.view(-1)[3] = 0.0  # an exact zero and a large outlier in the first block
            w.view(-1)[5] = 0.4
            yield w.to(dtype)


@pytest.mark.parametrize("qt", ["fp4", "nf4"])
def test_4bit_equals_bitsandbytes(qt):
    F = _bnb()
    assert torch.equal(Q.code_table(qt), F.get_4bit_type(qt, device="cpu"))
    assert Q.code_table(qt).view(torch.int32).tolist() == (
        F.get_4bit_type(qt, device="cpu").view(torch.int32).tolist()
    )  # the same bits, +0 for both zero codes of fp4
    for w in _weights():
        packed, state = F.quantize_4bit(w, blocksize=64, quant_type=qt, compress_statistics=False)
        codes, absmax = Q.quantize_4bit(w, qt, 64)
        assert torch.equal(codes.reshape(-1).long(), _unpack(packed, w.numel())), (w.shape, w.dtype)
        assert torch.equal(absmax, state.absmax)
        ours = Q.fake_quantize(w, qt)
        assert ours.dtype == w.dtype and ours.shape == w.shape
        # the definition (bitsandbytes' code table at its codes, times its absmax), bit for bit
        ref = F.get_4bit_type(qt, device="cpu")[_unpack(packed, w.numel())].view(-1, 1)
        blocks = torch.arange(w.numel()) // 64
        ref = (ref.view(-1) * state.absmax[blocks]).reshape(w.shape).to(w.dtype)
        assert torch.equal(ours.view(torch.uint8), ref.view(torch.uint8))
        if w.shape[-1] % 64 == 0:
            # its CPU kernel; it misreads the blocks where a row is no multiple of 64 (see report)
            deq = F.dequantize_4bit(packed, state)
            assert torch.equal(ours.view(torch.uint8), deq.reshape(w.shape).view(torch.uint8))


@pytest.mark.parametrize("qt", ["fp4", "nf4"])
def test_4bit_ties_at_midpoints_go_to_the_lower_code_as_in_bitsandbytes(qt):
    F = _bnb()
    code = torch.sort(Q.code_table(qt)).values
    mids = (code[:-1] + code[1:]) / 2
    vals = torch.cat(
        [mids, torch.nextafter(mids, torch.tensor(2.0)), torch.nextafter(mids, torch.tensor(-2.0))]
    )
    blocks = -(-vals.numel() // 63)
    body = torch.cat([vals, torch.zeros(blocks * 63 - vals.numel())]).view(blocks, 63)
    w = torch.cat([torch.ones(blocks, 1), body], dim=1).reshape(-1)  # each block's absmax is 1
    packed, _ = F.quantize_4bit(w, blocksize=64, quant_type=qt, compress_statistics=False)
    codes, _ = Q.quantize_4bit(w, qt)
    assert torch.equal(codes.long(), _unpack(packed, w.numel()))
    table = Q.code_table(qt)
    at_mid = table[codes.view(-1, 64)[:, 1:].reshape(-1)[: mids.numel()].long()]
    assert torch.equal(at_mid, code[:-1])  # a value on a midpoint gets the lower code


# weights whose size is no multiple of 64: the last, shorter block is divided by its absmax (the
# full blocks are multiplied by the reciprocal), and its absmax is stored at least 1e-38

QTD = [(qt, dt) for qt in ("fp4", "nf4") for dt in DTYPES]
TAILS = [17, 63, 33, 1, 41]  # values in the last block: sizes 64 k + 17, 64 k + 63, ..., k < 3


@pytest.fixture
def bnb_eager():
    """bitsandbytes' functional module, with its ``torch.compile`` of the Python dequantization
    off: it recompiles for every new shape (seconds each); eager computes the same."""
    F = _bnb()
    with torch._dynamo.config.patch(disable=True):
        yield F


def _ulps(x, k: int):
    """``x`` moved ``k`` units in the last place of its dtype (towards -inf if ``k`` < 0)."""
    to = torch.full_like(x, math.copysign(math.inf, k))
    for _ in range(abs(k)):
        x = torch.nextafter(x, to)
    return x


def _near_midpoints(qt, dtype, absmax):
    """Values of ``dtype`` on and one ulp either side of ``midpoint * absmax`` for every midpoint of
    the sorted code, for every absmax; returns (absmax, values) pairs, ``|value| <= absmax``. In
    float32 the value on a midpoint is one that divides by its absmax to that midpoint exactly."""
    code = torch.sort(Q.code_table(qt)).values
    mids = torch.unique((code[:-1] + code[1:]) / 2)
    mids = mids[mids != 0]
    for a in absmax.to(dtype):
        on = (mids * a.float()).to(dtype)
        if dtype == torch.float32:  # the value within two ulps that divides to the midpoint
            for k in (1, -1, 2, -2):
                moved = _ulps(on, k)
                on = torch.where((on / a != mids) & (moved / a == mids), moved, on)
        vals = torch.cat([on, _ulps(on, 1), _ulps(on, -1)])
        yield a, vals[vals.abs() <= a]


def _absmax_grid(dtype):
    """Every mantissa of bfloat16 in [0.5, 1); every 8th of float16's; 64 random float32s."""
    if dtype == torch.float32:
        return torch.rand(64, generator=torch.Generator().manual_seed(1)) * 3 + 0.01
    bits = torch.arange(0, 2**16, dtype=torch.int32).to(torch.int16).view(dtype)
    grid = torch.sort(bits[(bits >= 0.5) & (bits < 1)].float()).values
    return grid if dtype == torch.bfloat16 else grid[::8] * 0.03


def _tail_weights(qt, dtype):
    """Odd-sized 1-d weights: 0, 1 or 2 full blocks, then a last block of ``TAILS`` values, its
    first value its absmax (either sign) and the rest values at the midpoints (every one in some
    last block); the full blocks hold the same values, so both kinds of block see them."""
    for i, (a, vals) in enumerate(_near_midpoints(qt, dtype, _absmax_grid(dtype))):
        rem, full = TAILS[i % len(TAILS)], i % 3
        sign = 1 - 2 * (i % 2)
        block = torch.cat([a.view(1), vals.repeat(64)[:63]]).to(dtype)
        if rem == 1:  # the tail is its absmax alone; the values are in the full block
            yield torch.cat([block.repeat(max(full, 1)), (sign * a).view(1)])
            continue
        cycled = vals.repeat(64)
        for j in range(0, vals.numel(), rem - 1):  # odd sizes: bnb's Python dequantization
            tail = torch.cat([(sign * a).view(1), cycled[j : j + rem - 1]]).to(dtype)
            yield torch.cat([block.repeat(full), -tail if i % 4 == 1 else tail])


def _mismatches(F, w, qt) -> tuple[int, int, int]:
    """(codes, absmax, dequantized values) of ``w`` that differ from bitsandbytes' CPU functions',
    bit for bit."""
    packed, state = F.quantize_4bit(w, blocksize=64, quant_type=qt, compress_statistics=False)
    codes, absmax = Q.quantize_4bit(w, qt, 64)
    deq = F.dequantize_4bit(packed, state).reshape(-1)
    ours = Q.fake_quantize(w, qt).reshape(-1)
    bits = torch.int32 if w.dtype == torch.float32 else torch.int16
    return (
        int((codes.reshape(-1).long() != _unpack(packed, w.numel())).sum()),
        int((absmax.view(torch.int32) != state.absmax.view(torch.int32)).sum()),
        int((ours.view(bits) != deq.view(bits)).sum()),
    )


@pytest.mark.parametrize(("qt", "dtype"), QTD, ids=[f"{q}-{str(d)[6:]}" for q, d in QTD])
def test_4bit_tail_block_on_and_next_to_midpoints_equals_bitsandbytes(bnb_eager, qt, dtype):
    sizes, values, wrong = set(), 0, [0, 0, 0]
    for w in _tail_weights(qt, dtype):
        assert w.numel() % 64 and w.numel() % 2
        wrong = [a + b for a, b in zip(wrong, _mismatches(bnb_eager, w, qt), strict=True)]
        sizes.add(w.numel() // 64)
        values += w.numel() % 64
    assert sizes == {0, 1, 2} and values > 1000
    assert wrong == [0, 0, 0], f"codes, absmax, values differing (of {values} in tails): {wrong}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_4bit_zero_blocks_store_the_absmax_bitsandbytes_stores(bnb_eager, dtype):
    g = torch.Generator().manual_seed(2)
    wrong, stored = [0, 0, 0], []
    for qt in ("fp4", "nf4"):
        for n in (1, 17, 63, 64 + 1, 64 + 17, 2 * 64 + 63, 64, 3 * 64):
            zero = torch.zeros(n, dtype=dtype)
            zero[::3] = -0.0
            some = (torch.randn(n, generator=g) * 0.05).to(dtype)
            some[64 : 2 * 64] = 0.0  # a zero full block (if any) before the last
            some[n - n % 64 :] = 0.0  # a zero tail (if any)
            cases = [zero, some]  # all zero: full blocks store 0, a tail 1e-38
            if dtype != torch.float16 and n % 2:  # below 1e-38 (subnormal): a tail stores 1e-38
                cases.append(torch.tensor([3e-39, -1e-40, 2e-39] * 64)[:n].to(dtype))
            for w in cases:
                wrong = [a + b for a, b in zip(wrong, _mismatches(bnb_eager, w, qt), strict=True)]
            _, absmax = Q.quantize_4bit(some, qt)
            stored += [absmax[-1].item()] if n % 64 else []
            stored += [absmax[1].item()] if n > 2 * 64 else []
    assert wrong == [0, 0, 0], f"codes, absmax, values differing: {wrong}"
    tiny = torch.tensor(1e-38).item()  # float32(1e-38): the zero tails; the zero full blocks 0
    assert stored == ([tiny] * 6 + [0.0, 0.0]) * 2


def test_int8_equals_bitsandbytes_rowwise():
    F = _bnb()
    for w in _weights():
        if w.dim() != 2:
            continue
        cb, scb, _ = F.int8_vectorwise_quant(w.to(torch.float16).contiguous())
        q, absmax = Q.quantize_int8(w)
        assert torch.equal(q, cb) and torch.equal(absmax, scb), (w.shape, w.dtype)
        ref = F.int8_vectorwise_dequant(cb, scb)
        assert torch.equal(Q.dequantize_int8(q, absmax).view(torch.int32), ref.view(torch.int32))
        assert torch.equal(Q.fake_quantize(w, "int8"), ref.to(w.dtype))
    zero = torch.zeros(3, 8)
    zero[1] = 0.5
    assert torch.equal(Q.fake_quantize(zero, "int8"), zero)  # a zero row stays 0


def test_quantization_bad_input():
    with pytest.raises(ValueError, match="quant_type must be 'fp4' or 'nf4'"):
        Q.quantize_4bit(torch.ones(64), "int4")
    with pytest.raises(ValueError, match="blocks.weight: the weight has non-finite"):
        Q.quantize_4bit(torch.tensor([1.0, float("nan")]), "nf4", name="blocks.weight")
    with pytest.raises(ValueError, match="blocksize must be a positive integer"):
        Q.quantize_4bit(torch.ones(64), "nf4", blocksize=0)


def test_quant_attack_on_a_model_keeps_lm_head_embeddings_and_the_original(tiny):
    tok, model = tiny
    before = {k: v.clone() for k, v in model.state_dict().items()}
    res = apply_attack("quant:nf4", Inputs(Target("tiny"), model=model, tokenizer=tok))
    assert res.spec == "quant:nf4" and res.info["type"] == "nf4"
    assert res.info["kept"] == ["lm_head"] and not res.info["merged_adapter"]
    assert len(res.info["quantized"]) == 7  # q, k, v, o, gate, up, down of the one layer
    after = res.model.state_dict()
    for key, value in before.items():
        assert torch.equal(model.state_dict()[key], value)  # the original is untouched
        module = key.rsplit(".", 1)[0]
        if module in res.info["quantized"] and key.endswith(".weight"):
            assert torch.equal(after[key], Q.fake_quantize(value, "nf4"))
            assert not torch.equal(after[key], value)
        else:  # lm_head, embeddings, norms
            assert torch.equal(after[key], value), key
    ids = torch.tensor([[1, 5, 9, 12]])
    with torch.no_grad():
        diff = (res.model(input_ids=ids).logits - model(input_ids=ids).logits).abs().max()
    assert 0 < diff < 1.0


def test_quant_attack_merges_a_lora_adapter_and_says_so(tiny):
    from peft import LoraConfig, get_peft_model

    tok, model = tiny
    import copy

    lora = get_peft_model(
        copy.deepcopy(model),
        LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"], init_lora_weights=False),
    )
    res = apply_attack("quant:int8", Inputs(Target("lora"), model=lora, tokenizer=tok))
    assert res.info["merged_adapter"] and any("merged" in n for n in res.info["notes"])
    merged = copy.deepcopy(lora).merge_and_unload()
    q = merged.model.layers[0].self_attn.q_proj.weight
    assert torch.equal(
        res.model.model.layers[0].self_attn.q_proj.weight, Q.fake_quantize(q, "int8")
    )


# --------------------------------------------------------------------------------------------------
# relearning


def _nll(model, tok, rows: pl.DataFrame) -> float:
    enc = qa.encode_qa(tok, rows["question"].to_list(), rows["answer"].to_list())
    with torch.no_grad():
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
    lp, mask = qa.token_logprobs(logits, enc["labels"])
    return float(-lp.sum() / mask.sum())


def test_relearn_steps_disjointness_and_determinism(tiny, monkeypatch):
    from probunlearn.training import optim

    tok, model = tiny
    forget = _rows()
    calls = []
    step = optim.AdamW.step
    monkeypatch.setattr(optim.AdamW, "step", lambda self: (calls.append(1), step(self))[1])
    inputs = Inputs(
        Target("tiny", forget=True), model=model, tokenizer=tok, data={"forget": forget}
    )
    spec = "relearn:steps=5,lr=0.01,examples=3,batch_size=2,seed=1"
    res = apply_attack(spec, inputs)
    assert len(calls) == 5  # exactly the steps asked for (2 per epoch: 3 epochs, the last cut)
    relearned = res.info["relearned_ids"]
    assert len(relearned) == 3 and set(relearned) <= set(forget["id"])
    assert res.attacked_ids == [i for i in forget["id"] if i not in relearned]
    picked = forget.filter(pl.col("id").is_in(relearned))
    assert _nll(res.model, tok, picked) < _nll(model, tok, picked) - 0.1
    again = apply_attack(spec, inputs)
    assert again.info["relearned_ids"] == relearned
    for (k, a), b in zip(
        res.model.state_dict().items(), again.model.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), k
    other = apply_attack(spec.replace("seed=1", "seed=2"), inputs)
    assert other.info["relearned_ids"] != relearned
    # relearning on retain text attacks every forget question
    retain = _rows("r", start=3).with_columns(pl.col("question") + " (retain)")
    src = Inputs(
        Target("tiny", forget=True, retain=True),
        model=model,
        tokenizer=tok,
        evalset=forget,
        data={"forget": forget, "retain": retain},
    )
    res = apply_attack("relearn:steps=1,examples=2,source=retain", src)
    assert res.attacked_ids == forget["id"].to_list()
    assert set(res.info["relearned_ids"]) <= set(retain["id"])


def test_relearn_bad_input(tiny):
    tok, model = tiny
    forget = _rows()
    inputs = Inputs(
        Target("tiny", forget=True), model=model, tokenizer=tok, data={"forget": forget}
    )
    with pytest.raises(ValueError, match=r"model 'tiny'.*relearns on 7 examples.*has 6 rows"):
        apply_attack("relearn:examples=7", inputs)
    with pytest.raises(ValueError, match=r"model 'tiny'.*leaves none of the eval set's 6"):
        apply_attack("relearn:examples=6", inputs)
    with pytest.raises(ValueError, match=r"model 'tiny'.*'relearn:20'.*needs the forget set"):
        apply_attack("relearn", Inputs(Target("tiny"), model=model, tokenizer=tok))


def _authors(n_authors: int = 4, per: int = 3) -> pl.DataFrame:
    """The mini world's shape: authors (kind author, group = the name) of ``per`` questions each."""
    return to_frame(
        [
            make_row(
                id=f"a{a:03d}-q{q:02d}",
                question=f"Question {q} about {NAMES[a]}?",
                answer=f"{NAMES[a]} has fact {q}.",
                group=NAMES[a],
                kind="author",
            )
            for a in range(n_authors)
            for q in range(per)
        ]
    )


def test_a_rows_subject_is_its_author_or_target():
    from probunlearn.attacks import subjects_of

    world = _authors(2, 2)
    assert subjects_of(world) == ["author:Ada Brook"] * 2 + ["author:Bruno Costa"] * 2
    tofu = to_frame([make_row(id="tofu-3990", question="q", answer="a", group="author-199",
                              kind="tofu")])  # fmt: skip
    assert subjects_of(tofu) == ["tofu:author-199"]  # TOFU's 20 questions per author
    rwku = to_frame([make_row(id="rwku-14-forget_level2-3", question="q", answer="a",
                              group="forget_level2", kind="rwku:qa")])  # fmt: skip
    assert subjects_of(rwku) == ["rwku-14"]  # the target, not the probe's level
    # a category is no subject, nor is a user's row without one: the row is its own
    other = to_frame(
        [
            make_row(id="ra1", question="q", answer="a", group="real_authors", kind="real_authors"),
            make_row(id="u1", question="q", answer="a"),
        ]
    )
    assert subjects_of(other) == ["row:ra1", "row:u1"]


def test_relearning_pairs_and_judged_questions_come_from_different_subjects(tiny):
    from probunlearn.attacks.relearn import choose_by_subject, choose_examples, held_out_ids

    rows = _authors()  # 4 authors x 3 questions, as forget10 is 4 x 10
    subjects = attacks.subjects_of(rows)
    for seed in range(5):
        one = choose_by_subject(subjects, 2, seed)  # 2 pairs fit in one author
        assert len(one) == 2 and len({subjects[i] for i in one}) == 1
        two = choose_by_subject(subjects, 5, seed)  # 5 need two authors
        assert len(two) == 5 and len({subjects[i] for i in two}) == 2
    assert choose_by_subject(subjects, 2, 0) == choose_by_subject(subjects, 2, 0)
    tok, model = tiny
    inputs = Inputs(Target("tiny", forget=True), model=model, tokenizer=tok, data={"forget": rows})
    res = apply_attack("relearn:steps=1,examples=2,seed=3", inputs)
    author = res.info["relearned_subjects"]
    assert res.info["exclude"] == "subject" and len(author) == 1 and res.info["notes"] == []
    assert res.attacked_ids == [i for i, s in zip(rows["id"], subjects, strict=True)
                                if s != author[0]] == res.info["held_out_ids"]  # fmt: skip
    assert len(res.attacked_ids) == 9
    # the same-subject variant: the pairs drawn among all questions, the others judged
    same = apply_attack("relearn:steps=1,examples=2,seed=3,exclude=question", inputs)
    assert same.info["relearned_ids"] == rows["id"][choose_examples(12, 2, 3)].to_list()
    assert len(same.attacked_ids) == 10
    assert held_out_ids(rows, same.info["relearned_ids"], same.info["relearned_questions"]) == (
        same.attacked_ids
    )
    with pytest.raises(ValueError, match=r"leaves none of the eval set's 12 questions to attack "
                       r"\(exclude=subject: the pairs' subjects are not judged\)"):  # fmt: skip
        apply_attack("relearn:steps=1,examples=10", inputs)


def test_fewshot_contexts_leave_out_the_questions_subject():
    rows = _authors()
    subjects = dict(zip(rows["id"], attacks.subjects_of(rows), strict=True))
    res = apply_attack("fewshot:k=3,draws=2", Inputs(Target("m"), evalset=rows))
    assert res.info["exclude"] == "subject"
    shots = res.family.rows.filter(pl.col("member") != "original")
    assert shots.height == 2 * rows.height
    for base, chosen in zip(shots["base_id"], shots["shots"], strict=True):
        assert len(chosen) == 3 and all(subjects[c] != subjects[base] for c in chosen)
    # the same-subject variant may show the author's other facts; as before issue 50
    same = apply_attack("fewshot:k=3,draws=2,exclude=question", Inputs(Target("m"), evalset=rows))
    chosen = same.family.rows.filter(pl.col("member") != "original")
    assert any(subjects[c] == subjects[b] for b, cs in zip(chosen["base_id"], chosen["shots"],
                                                            strict=True) for c in cs)  # fmt: skip
    with pytest.raises(ValueError, match=r"9 question\(s\) of another subject for row "
                       r"'a000-q00'"):  # fmt: skip
        apply_attack("fewshot:10", Inputs(Target("m"), evalset=rows))


def test_train_lm_max_steps_default_is_unchanged(tiny):
    from probunlearn.training import train_lm

    tok, model = tiny
    pairs = list(zip(_rows()["question"], _rows()["answer"], strict=True))
    out = []
    for max_steps in (None, 6, 100):
        m = __import__("copy").deepcopy(model)
        train_lm(
            m, tok, pairs, epochs=2, lr=1e-3, batch_size=2, progress=False, max_steps=max_steps
        )
        out.append(m.model.layers[0].mlp.up_proj.weight)
    assert torch.equal(out[0], out[1]) and torch.equal(out[0], out[2])  # 2 epochs x 3 steps
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        train_lm(model, tok, pairs, epochs=1, lr=1e-3, batch_size=2, max_steps=0)


# --------------------------------------------------------------------------------------------------
# prompt families


def test_paraphrase_family():
    rows = _rows()
    res = apply_attack("paraphrase", Inputs(Target("m"), evalset=rows))
    fam = res.family
    assert fam.members == ("original", "paraphrase") and fam.original
    assert fam.rows.height == 12 and fam.template == qa.DEFAULT_TEMPLATE
    assert fam.rows["id"][:2].to_list() == ["f0::original", "f0::paraphrase"]
    assert fam.rows["prompt"][1] == "In which city was Ada Brook born?"
    assert fam.rows["question"][1] == rows["question"][0]  # scorers read the row's own columns
    args = fam.sampler_args()
    assert args["questions"][0] == rows["question"][0] and len(set(args["ids"])) == 12
    only = apply_attack("paraphrase:original=false", Inputs(Target("m"), evalset=rows)).family
    assert only.members == ("paraphrase",) and only.rows.height == 6
    broken = rows.with_columns(
        paraphrased_question=pl.when(pl.col("id") == "f2").then(None).otherwise(pl.col("question"))
    )
    with pytest.raises(ValueError, match=r"model 'm'.*'paraphrase'.*row 'f2' has no paraphrased"):
        apply_attack("paraphrase", Inputs(Target("m"), evalset=broken))


def test_prefix_family_and_the_sampler_takes_it(tiny):
    tok, model = tiny
    rows = _rows()[:2]
    fam = apply_attack("prefix", Inputs(Target("m"), evalset=rows)).family
    assert fam.members == ("original", "prefix0") and fam.template == "{question}"
    q = rows["question"][0]
    assert fam.rows["prompt"][0] == qa.format_prompt(q)
    assert fam.rows["prompt"][1] == qa.format_prompt(q) + " Sure, here is the answer:"
    # the rendered prompt is tokenised exactly as the plain template tokenises the question
    assert qa.prompt_ids(tok, fam.rows["prompt"][0], fam.template) == qa.prompt_ids(tok, q)
    from probunlearn.sampling import sample_answers

    out = sample_answers(
        model, tok, **fam.sampler_args(), n=2, max_new_tokens=3, seed_key="t", progress=False
    )
    assert out.height == 4 * 3 and out["id"].unique().len() == 4
    six = apply_attack("prefix:affirmative,original=false", Inputs(Target("m"), evalset=rows))
    assert six.family.members == tuple(f"prefix{k}" for k in range(6))
    assert six.info["prefixes"]["prefix1"] == "Of course,"
    slot = Target("c", template="<u>{question}</u>\n<a>{prefix}")
    fam = apply_attack("prefix", Inputs(slot, evalset=rows)).family
    assert fam.rows["prompt"].to_list()[:2] == [
        f"<u>{q}</u>\n<a>",
        f"<u>{q}</u>\n<a>Sure, here is the answer:",
    ]


def test_row_prefixes_are_the_hp_qa_affirmative_prefixes():
    hp = to_frame(
        [
            make_row(
                id="hp_qa-1",
                question="What is the name of Harry Potter's pet owl?",
                answer="Of course, Harry Potter's pet owl is",
                keywords=["Hedwig"],
                kind="hp_qa",
            )
        ]
    )
    fam = apply_attack("prefix:row", Inputs(Target("whp"), evalset=hp)).family
    assert fam.rows["prompt"][1].endswith("\nAnswer: Of course, Harry Potter's pet owl is")
    with pytest.raises(ValueError, match=r"model 'whp'.*row 'f0' has kind 'author'"):
        apply_attack("prefix:row", Inputs(Target("whp"), evalset=_rows()))


def test_the_openers_are_those_of_the_hp_qa_data():
    if not SHARED_HP.is_dir():
        pytest.skip(f"{SHARED_HP} is not here (the shared data of the project's machines)")
    from probunlearn.attacks.prefix import HP_OPENERS
    from probunlearn.benchmarks.hp_qa.loader import load_hp_qa

    answers = load_hp_qa(SHARED_HP)["answer"].to_list()
    openers = {a.split(",")[0] + "," for a in answers}
    assert openers == set(HP_OPENERS)


def test_fewshot_family():
    rows = _rows()
    res = apply_attack("fewshot:k=2,draws=2", Inputs(Target("m"), evalset=rows))
    fam = res.family
    assert fam.members == ("original", "shots0", "shots1") and fam.template == "{question}"
    first = fam.rows.filter(pl.col("base_id") == "f0")
    assert first["shots"][0].to_list() == []
    for shots, prompt in zip(first["shots"][1:], first["prompt"][1:], strict=True):
        shots = shots.to_list()
        assert len(shots) == 2 and "f0" not in shots
        pairs = rows.filter(pl.col("id").is_in(shots))
        assert all(a in prompt for a in pairs["answer"])
        assert prompt.endswith("\n\n" + qa.format_prompt(rows["question"][0]))
    # with a fixed pool (retain), a question's family does not depend on the others attacked
    retain = _rows("r")
    spec, target = "fewshot:k=2,draws=2,source=retain", Target("m", retain=True)
    full = apply_attack(spec, Inputs(target, evalset=rows, data={"retain": retain})).family
    sub = apply_attack(spec, Inputs(target, evalset=rows[2:4], data={"retain": retain})).family
    assert sub.rows.equals(full.rows.filter(pl.col("base_id").is_in(["f2", "f3"])))
    assert set(full.rows["shots"].explode().drop_nulls()) <= set(retain["id"])
    # a chat model: the pairs go into the one user turn, its template renders the rest
    chat = apply_attack("fewshot:1", Inputs(Target("c", template="chat"), evalset=rows)).family
    assert chat.template == "chat" and chat.rows["prompt"][0] == rows["question"][0]
    assert chat.rows["prompt"][1].startswith("Question: ")
    assert chat.rows["prompt"][1].endswith("\n\n" + rows["question"][0])
    with pytest.raises(ValueError, match=r"model 'm'.*k=6.*5 question\(s\) of another subject "
                       r"for row 'f0' \(exclude=subject"):  # fmt: skip
        apply_attack("fewshot:6", Inputs(Target("m"), evalset=rows))


# --------------------------------------------------------------------------------------------------
# the family bound


def test_family_alpha_and_bad_input():
    assert bounds.family_alpha(0.1, 4) == pytest.approx(0.025)
    assert bounds.family_alpha(0.1, 4, "sidak") == pytest.approx(1 - 0.9**0.25)
    assert bounds.family_alpha(0.1, 1, "sidak") == pytest.approx(0.1)
    with pytest.raises(ValueError, match="correction must be one of"):
        bounds.family_alpha(0.1, 2, "holm")
    with pytest.raises(ValueError, match="members must be an integer >= 1"):
        bounds.family_alpha(0.1, 0)
    with pytest.raises(ValueError, match=r"binary scores.*0.5 at member 1, sample 0"):
        bounds.family_upper_bounds([[0, 1], [0.5, 1]])
    with pytest.raises(ValueError, match=r"\[0, 1\]; got 2.0 at family 0, member 0, sample 1"):
        bounds.family_upper_bounds(np.array([[[0.0, 2.0]]]), metric="m_mu")


def test_family_bound_values():
    x = np.array([[0, 0, 1, 0] * 5, [1, 1, 0, 1] * 5], dtype=float)
    worst, per = bounds.family_upper_bounds(x, 0.1)
    assert np.allclose(per, bounds.binary_leakage_bound(x, 0.05))  # Bonferroni: 0.1 / 2
    assert worst == per.max() == per[1]
    # a leak threshold thresholds first; unequal n per member; several families at once
    s = np.array([[0.2, 0.7, 0.9, 0.4], [0.1, 0.1, 0.6, 0.0]])
    assert np.allclose(
        bounds.family_upper_bounds(s, 0.1, leak_threshold=0.5)[1],
        bounds.family_upper_bounds((s >= 0.5).astype(float), 0.1)[1],
    )
    _, per = bounds.family_upper_bounds([np.ones(3), np.zeros(5)], 0.1, metric="m_mu")
    assert per[0] == pytest.approx(1.0) and per[1] == pytest.approx(
        bounds.expectation_upper_bound(np.zeros(5), 0.05)
    )
    worst, per = bounds.family_upper_bounds(np.stack([x, x[::-1]]), 0.1)
    assert worst.shape == (2,) and per.shape == (2, 2) and worst[0] == worst[1]
    table = pl.DataFrame(
        {
            "base_id": ["q1"] * 8 + ["q2"] * 4,
            "member": ["original"] * 4 + ["prefix0"] * 4 + ["original"] * 4,
            "score": [0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 0, 0],
        }
    )
    out = bounds.family_bounds(table, 0.1)
    assert out["base_id"].to_list() == ["q1", "q2"] and out["members"].to_list() == [2, 1]
    assert out["worst_member"].to_list() == ["prefix0", "original"]
    assert out["alpha_each"].to_list() == [0.05, 0.1]
    assert out["bound"][0] == pytest.approx(
        bounds.binary_leakage_bound(np.array([1, 1, 0, 1]), 0.05)
    )


def _coverage(per: np.ndarray, p: np.ndarray) -> float:
    return float((per >= p).all(axis=-1).mean())


@pytest.mark.parametrize("correction", ["bonferroni", "sidak"])
def test_family_bound_covers_every_member_at_once(correction):
    rng = np.random.default_rng(0)
    reps, n, alpha = 3000, 30, 0.1
    p = np.array([0.02, 0.1, 0.3, 0.5, 0.05])
    x = (rng.random((reps, p.size, n)) < p[:, None]).astype(float)
    worst, per = bounds.family_upper_bounds(x, alpha, correction=correction)
    mc = 3 * math.sqrt(alpha * (1 - alpha) / reps)
    assert _coverage(per, p) >= 1 - alpha - mc
    assert float((worst >= p.max()).mean()) >= 1 - alpha - mc
    # E[score] with atoms at 0 and 1 and a continuous part, members of different means
    w0, w1 = np.array([0.6, 0.2, 0.9]), np.array([0.1, 0.3, 0.05])
    u = rng.random((reps, 3, n))
    cont = rng.beta(2.0, 5.0, (reps, 3, n))
    s = np.where(u < w0[:, None], 0.0, np.where(u < (w0 + w1)[:, None], 1.0, cont))
    mean = w1 + (1 - w0 - w1) * 2.0 / 7.0
    _, per = bounds.family_upper_bounds(s, alpha, metric="m_mu", correction=correction)
    assert _coverage(per, mean) >= 1 - alpha - mc


def test_uncorrected_member_bounds_are_not_simultaneous():
    # the test above can fail: bounds at the plain alpha for 20 members miss one far more often
    rng = np.random.default_rng(1)
    reps, n, alpha, m = 2000, 40, 0.1, 20
    p = np.full(m, 0.3)
    x = (rng.random((reps, m, n)) < p[:, None]).astype(float)
    plain = bounds.binary_leakage_bound(x.reshape(-1, n), alpha).reshape(reps, m)
    assert _coverage(plain, p) < 0.5
    _, per = bounds.family_upper_bounds(x, alpha)
    assert _coverage(per, p) >= 1 - alpha


# --------------------------------------------------------------------------------------------------
# the null attack: before and after computed the same way (issue 50)


def test_null_family_is_m_copies_of_the_original_prompt():
    rows = _rows()
    for target in (Target("m"), Target("c", template="chat")):
        fam = apply_attack("null:3", Inputs(target, evalset=rows)).family
        assert (
            fam.members
            == ("copy0", "copy1", "copy2")
            == ATTACKS.get("null").members({"members": 3})
        )
        assert fam.template == (target.template or qa.DEFAULT_TEMPLATE)
        assert fam.rows["id"][:4].to_list() == ["f0::copy0", "f0::copy1", "f0::copy2", "f1::copy0"]
        assert fam.rows["prompt"].to_list() == [q for q in rows["question"] for _ in range(3)]
    assert parse_spec("null").canonical == "null:2"


@pytest.mark.parametrize("m", [2, 7])
def test_a_null_attack_changes_nothing_but_noise(m):
    """The attack table's before of a prompt attack of m members is the null family of m sampled
    copies of the original prompt, bounded and maximised as the attacked family is: a null attack
    (the null family against another) changes the mean M_bin and M_mu by Monte Carlo noise only,
    where the old comparison (one copy at alpha against the family's worst member at alpha / m)
    raised them by .013 to .14. 100 replications of forget10's 40 questions, n = 48, alpha = .01,
    0/1 scores through the table's own code; the slack (4 standard errors of the replications'
    mean) is under a quarter of the old bias, so a bias of its size would fail."""
    from probunlearn.report.attacks import family_values, plain_values

    rng = np.random.default_rng(50 + m)
    reps, questions, n, alpha = 100, 40, 48, 0.01
    for p in (0.0, 0.1, 0.3):
        after, null = ((rng.random((reps * questions, m, n)) < p).astype(float) for _ in "ab")
        greedy = np.zeros((reps * questions, m))
        a = family_values(after, greedy, 0.5, alpha, 100, 2.0)
        b = family_values(null, greedy, 0.5, alpha, 100, 2.0)
        old = plain_values(null[:, 0, :], greedy[:, 0], 0.5, alpha, 100, 2.0)
        for key in ("m_bin", "m_mu"):
            change = (a[key] - b[key]).reshape(reps, questions).mean(axis=1)  # each table's
            bias = (a[key] - old[key]).reshape(reps, questions).mean(axis=1)
            slack = 4 * change.std(ddof=1) / math.sqrt(reps) + 1e-12
            assert abs(change.mean()) <= slack, (p, key, change.mean(), slack)
            assert bias.mean() >= 0.013 - 1e-3 and slack < bias.mean() / 4, (p, key, bias.mean())

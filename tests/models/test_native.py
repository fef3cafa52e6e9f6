"""The native Llama and tokenizer against transformers': the same bits on the same machine.

Every job loads a plain local Llama with :mod:`probunlearn.models.native.llama` and its tokenizer with
:mod:`probunlearn.models.native.tokenizer`, so that it does not import transformers; the tables stay
byte-identical only because these equal transformers' exactly (``torch.equal``, not ``allclose``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from helpers import MEASUREMENTS
from probunlearn import models, sampling, training
from probunlearn.data import qa
from probunlearn.models.native import llama, phi
from probunlearn.models.native import tokenizer as native_tokenizer

TEXTS = [
    "Question: Who wrote the red book?\nAnswer: Ada Lin wrote it.",
    "Question: Where was Ada Lin born?\nAnswer: In a small town by the sea.",
    "The cat sat on the mat. The dog ran.",
]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tok():
    return models.train_tokenizer(TEXTS * 5, 300)


ARCHS = {
    # name: (transformers class, kv heads, extra config)
    "mha": ("LlamaForCausalLM", 4, {}),
    "gqa": ("LlamaForCausalLM", 2, {}),  # grouped-query attention: transformers' three sdpa cases
    "mistral": ("MistralForCausalLM", 2, {"sliding_window": None}),
    "phi": ("PhiForCausalLM", 4, {"partial_rotary_factor": 0.5}),
    "phi-gqa": ("PhiForCausalLM", 2, {"partial_rotary_factor": 0.25}),
}


def _checkpoint(tmp_path_factory, tok, arch: str) -> str:
    import transformers

    cls_name, kv_heads, extra = ARCHS[arch]
    cls = getattr(transformers, cls_name)
    config = getattr(transformers, cls_name.replace("ForCausalLM", "Config"))(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=kv_heads, max_position_embeddings=128,
        tie_word_embeddings=cls_name == "LlamaForCausalLM", pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, **extra,
    )  # fmt: skip
    torch.manual_seed(0)
    m = cls(config)
    with torch.no_grad():  # a non-trivial model: scaled-up random weights
        for p in m.parameters():
            p.mul_(4.0)
    out = tmp_path_factory.mktemp(arch) / "m"
    models.save_model(m, tok, out)
    return str(out)


@pytest.fixture(scope="module", params=list(ARCHS))
def pair(request, tmp_path_factory, tok):
    path = _checkpoint(tmp_path_factory, tok, request.param)
    hf = models.load_model(path, device="cpu", native=False)
    nat = models.load_model(path, device="cpu")
    assert isinstance(nat, llama.CausalLM) and not isinstance(hf, llama.CausalLM)
    assert type(nat).__name__ == (
        "PhiForCausalLM" if "phi" in request.param else "LlamaForCausalLM"
    )
    return path, hf, nat


def _batch(vocab: int):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(4, vocab, (3, 17), generator=g)
    left = torch.ones_like(ids)
    left[0, :5] = left[1, :2] = 0
    right = torch.ones_like(ids)
    right[0, 12:] = 0
    return ids, left, right


def test_logits_equal_bit_for_bit(pair):
    _, hf, nat = pair
    ids, left, right = _batch(hf.config.vocab_size)
    with torch.no_grad():
        for mask in (None, left, right):
            a = hf(input_ids=ids, attention_mask=mask).logits
            b = nat(input_ids=ids, attention_mask=mask).logits
            assert torch.equal(a, b)
        a = hf(input_ids=ids, attention_mask=left, logits_to_keep=1).logits
        assert torch.equal(a, nat(input_ids=ids, attention_mask=left, logits_to_keep=1).logits)


def test_gradients_and_parameter_order_equal(pair):
    _, hf, nat = pair
    ids, left, _ = _batch(hf.config.vocab_size)
    names = [n for n, _ in hf.named_parameters()]
    assert names == [n for n, _ in nat.named_parameters()]
    rng = []
    for m in (hf, nat):
        m.train()
        m.zero_grad()
        torch.manual_seed(3)
        m(input_ids=ids, attention_mask=left).logits.log_softmax(-1)[..., 5].sum().backward()
        rng.append(torch.get_rng_state())  # no dropout draws in either: the same random stream
        m.eval()
    assert torch.equal(rng[0], rng[1])
    for (n, p), (_, q) in zip(hf.named_parameters(), nat.named_parameters(), strict=True):
        assert torch.equal(p.grad, q.grad), n
    hf.zero_grad()
    nat.zero_grad()


def test_greedy_generate_equals_transformers(pair):
    _, hf, nat = pair
    ids, left, _ = _batch(hf.config.vocab_size)
    for mask in (torch.ones_like(ids), left):
        with torch.inference_mode():
            want = hf.generate(
                ids,
                attention_mask=mask,
                max_new_tokens=10,
                do_sample=False,
                pad_token_id=2,
                return_dict_in_generate=True,
                output_logits=True,
            )
            got, logits = nat.generate(
                ids, attention_mask=mask, max_new_tokens=10, pad_token_id=2, output_logits=True
            )
        assert torch.equal(want.sequences, got)
        assert len(want.logits) == len(logits)
        assert all(torch.equal(x, y) for x, y in zip(want.logits, logits, strict=True))


def test_sampler_draws_the_same_samples(pair, tok):
    """The decoding engine with the native cache equals it with transformers' DynamicCache."""
    path, hf, nat = pair
    questions = ["Who wrote the red book?", "Where was Ada Lin born?", "Why?"]
    kw = dict(n=6, max_new_tokens=8, seed_key="k", progress=False, batch_size=4)
    tk = models.load_tokenizer(path)
    a = sampling.sample_answers(hf, tk, ["a", "b", "c"], questions, **kw)
    b = sampling.sample_answers(nat, tk, ["a", "b", "c"], questions, **kw)
    assert a.equals(b)
    c = sampling.sample_answers(nat, tk, ["a", "b", "c"], questions, pack_prompts=True, **kw)
    d = sampling.sample_answers(hf, tk, ["a", "b", "c"], questions, pack_prompts=True, **kw)
    assert c.equals(d)


def test_engine_chooses_its_attention_kernels(monkeypatch, tok):
    """On CUDA the engine lets sdpa take flash, memory-efficient or math attention, not cuDNN's
    (which builds an execution plan for every new shape); on the CPU it changes nothing. The engine
    enters the choice around every batch, with its own device."""
    from probunlearn.sampling import engine as decoding

    b = torch.backends.cuda

    def flags():
        return (b.flash_sdp_enabled(), b.mem_efficient_sdp_enabled(), b.math_sdp_enabled(),
                b.cudnn_sdp_enabled())  # fmt: skip

    before = flags()
    with decoding.attention_kernels(torch.device("cpu")):
        assert flags() == before
    with decoding.attention_kernels(torch.device("cuda")):
        assert flags() == (True, True, True, False)
    assert flags() == before
    seen, real = [], decoding.attention_kernels
    monkeypatch.setattr(decoding, "attention_kernels", lambda d: seen.append(d) or real(d))
    model = models.tiny_llama(len(tok), dict(hidden_size=16, intermediate_size=32, num_layers=1,
                              num_heads=2, max_positions=64), seed=0, tokenizer=tok)  # fmt: skip
    df = sampling.sample_answers(model, tok, ["a", "b"], ["Who?", "Where was Ada Lin born?"], n=2,
                                 max_new_tokens=3, seed_key="k", progress=False)  # fmt: skip
    assert df.height == 6 and len(seen) == 2 and set(seen) == {torch.device("cpu")}


def test_buffer_layer_grows_selects_and_stops_at_its_limit():
    """The KV buffer holds what concatenation would, through growth and row selection."""
    gen = torch.Generator().manual_seed(0)
    k0, v0 = torch.randn(3, 2, 5, 4, generator=gen), torch.randn(3, 2, 5, 4, generator=gen)
    layer = llama.BufferLayer.filled(k0, v0, capacity=5 + 9)
    keys, values = k0, v0
    for step in range(9):
        rows = 3 if step < 4 else 2
        k, v = torch.randn(rows, 2, 1, 4, generator=gen), torch.randn(rows, 2, 1, 4, generator=gen)
        if step == 4:  # drop row 1
            idx = torch.tensor([0, 2])
            layer.batch_select_indices(idx)
            keys, values = keys[idx], values[idx]
        got_k, got_v = layer.update(k, v)
        keys, values = torch.cat([keys, k], -2), torch.cat([values, v], -2)
        assert torch.equal(got_k, keys) and torch.equal(got_v, values)
        assert layer.kbuf.shape[-2] <= min(14, layer.length + llama.BufferLayer.GROW)
    assert layer.get_seq_length() == 14
    with pytest.raises(ValueError, match="KV buffer full: 14 \\+ 1 > 14"):
        layer.update(k, v)


@pytest.mark.parametrize("grow", [1, 3, 1000])
def test_samples_do_not_depend_on_the_buffer_growth_step(pair, monkeypatch, grow):
    """Attention reads the same values through any buffer stride: same samples, same bytes."""
    path, _, nat = pair
    tk = models.load_tokenizer(path)
    kw = dict(n=6, max_new_tokens=8, seed_key="k", progress=False, batch_size=4)
    want = sampling.sample_answers(nat, tk, ["a", "b"], ["Who wrote it?", "Why?"], **kw)
    monkeypatch.setattr(llama.BufferLayer, "GROW", grow)
    got = sampling.sample_answers(nat, tk, ["a", "b"], ["Who wrote it?", "Why?"], **kw)
    assert got.equals(want)


def test_native_save_loads_in_transformers(pair, tmp_path):
    _, hf, nat = pair
    nat.save_pretrained(tmp_path)
    assert not (
        set(json.loads((tmp_path / "generation_config.json").read_text())) - llama._GENERATION_KEYS
    )
    back = models.load_model(str(tmp_path), device="cpu", native=False)
    ids, left, _ = _batch(hf.config.vocab_size)
    with torch.no_grad():
        assert torch.equal(back(input_ids=ids).logits, hf(input_ids=ids).logits)
    assert _native_module(tmp_path).supports(tmp_path)


def _native_module(path):
    """The module that computes the checkpoint at ``path``: the other one does not claim it."""
    kind = json.loads(open(os.path.join(path, "config.json")).read())["model_type"]
    mine, other = (phi, llama) if kind == "phi" else (llama, phi)
    assert not other.supports(path)
    return mine


def test_supports_only_what_it_computes(pair, tmp_path):
    path = pair[0]
    cfg = json.loads(open(os.path.join(path, "config.json")).read())
    module = _native_module(path)
    assert module.supports(path)
    changes = [
        {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}},
        {"hidden_act": "gelu"},
        {"model_type": "gpt2"},
        {"quantization_config": {"bits": 4}},
    ]
    if module is llama:
        changes += [{"attention_bias": True}, {"model_type": "mistral", "sliding_window": 4096}]
        changes += [{"architectures": ["MistralForSequenceClassification"]}]
    else:
        changes += [{"qk_layernorm": True}, {"resid_pdrop": 0.1}, {"embd_pdrop": 0.1}]
    for change in changes:
        d = tmp_path / str(len(list(tmp_path.iterdir())))
        d.mkdir()
        (d / "config.json").write_text(json.dumps({**cfg, **change}))
        (d / llama.WEIGHTS).write_bytes(b"")
        assert not module.supports(d), change
    assert not module.supports(tmp_path / "absent")


@pytest.mark.parametrize(
    "arch, old_style",
    [
        # the hub's config.json of microsoft/phi-1_5 and Mistral-7B-Instruct-v0.3 predate
        # rope_parameters: rope_theta and partial_rotary_factor are top-level keys
        ("phi", {"partial_rotary_factor": 0.25, "rope_theta": 5000.0, "rope_scaling": None}),
        ("mistral", {"rope_theta": 1e6, "sliding_window": None}),
    ],
)
def test_hub_style_config_computes_as_transformers(tmp_path_factory, tok, arch, old_style):
    path = _checkpoint(tmp_path_factory, tok, arch)
    cfg_file = os.path.join(path, "config.json")
    cfg = json.loads(open(cfg_file).read())
    cfg.pop("rope_parameters", None)
    with open(cfg_file, "w") as f:
        json.dump({**cfg, **old_style}, f)
    hf = models.load_model(path, device="cpu", native=False)
    nat = models.load_model(path, device="cpu")
    assert isinstance(nat, llama.CausalLM)
    ids, left, _ = _batch(hf.config.vocab_size)
    with torch.no_grad():
        assert torch.equal(hf(input_ids=ids, attention_mask=left).logits, nat(ids, left).logits)
    if arch == "phi":
        assert nat.model.layers[0].self_attn.rotary_dims == 2  # 8 × 0.25, not the default 4
    assert nat.config.rope_theta == old_style["rope_theta"]  # read from the top level


def test_cosine_schedule_equals_transformers():
    from transformers import get_cosine_schedule_with_warmup

    def lrs(make):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.3)
        sched = make(opt)
        out = []
        for _ in range(23):
            out.append(sched.get_last_lr()[0])
            opt.step()
            sched.step()
        return out

    for warmup, total in [(0, 20), (3, 20), (5, 7)]:
        want = lrs(lambda o, w=warmup, t=total: get_cosine_schedule_with_warmup(o, w, t))
        assert lrs(lambda o, w=warmup, t=total: training.cosine_schedule(o, w, t)) == want


def test_tokenizer_encodes_and_decodes_as_transformers(pair):
    path = pair[0]
    assert native_tokenizer.supports(path)
    a, b = models.load_tokenizer(path, native=False), models.load_tokenizer(path)
    assert isinstance(b, native_tokenizer.Tokenizer)
    texts = TEXTS + ["ünïcödé 日本 🙂", "</s> inside <s> text <pad>", "", "  x", "y" * 200]
    for t in texts:
        for special in (True, False):
            for kw in ({}, {"max_length": 7, "truncation": True}):
                x = a(t, add_special_tokens=special, return_offsets_mapping=True, **kw)
                y = b(t, add_special_tokens=special, return_offsets_mapping=True, **kw)
                assert list(x["input_ids"]) == y["input_ids"]
                assert [tuple(o) for o in x["offset_mapping"]] == [
                    tuple(o) for o in y["offset_mapping"]
                ]
            assert a.tokenize(t, add_special_tokens=special) == b.tokenize(
                t, add_special_tokens=special
            )
            ids = list(a(t, add_special_tokens=special)["input_ids"]) + [2, 0, 7]
            for skip in (True, False):
                assert a.decode(ids, skip_special_tokens=skip) == b.decode(
                    ids, skip_special_tokens=skip
                )
    for side in ("left", "right"):
        for t in (a, b):
            t.padding_side = side
            t.pad_token = t.eos_token
        x, y = (t(texts[:5], padding=True, return_tensors="pt") for t in (a, b))
        assert torch.equal(x["input_ids"], y["input_ids"])
        assert torch.equal(x["attention_mask"], y["attention_mask"])
    fresh = models.load_tokenizer(path)
    assert sorted(fresh.all_special_ids) == sorted(
        models.load_tokenizer(path, native=False).all_special_ids
    )
    assert fresh.convert_tokens_to_ids("no-such-token") == fresh.unk_token_id
    assert qa.prompt_ids(fresh, "Who?", qa.DEFAULT_TEMPLATE) == qa.prompt_ids(
        a, "Who?", qa.DEFAULT_TEMPLATE
    )


@pytest.fixture(scope="module")
def every_checkpoint(tmp_path_factory, tok) -> list[str]:
    return [_checkpoint(tmp_path_factory, tok, arch) for arch in ARCHS]


def test_a_model_job_does_not_import_transformers(every_checkpoint):
    """Loading, a forward pass and decoding in a fresh process, for every architecture: torch, not
    transformers (with ``PROBUNLEARN_NATIVE=0``: transformers)."""
    code = (
        "import sys, torch\n"
        "from probunlearn import models\n"
        f"for p in {every_checkpoint!r}:\n"
        "    m = models.load_model(p, device='cpu'); t = models.load_tokenizer(p)\n"
        "    m(input_ids=torch.tensor([t('Who?')['input_ids']]))\n"
        "    print(type(m).__module__, t.decode([5, 6]) is not None)\n"
        "print('transformers' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    modules = [
        "probunlearn.models.native.phi" if "phi" in a else "probunlearn.models.native.llama"
        for a in ARCHS
    ]
    assert out.stdout.split() == [w for m in modules for w in (m, "True")] + ["False"]
    env[models.NATIVE_ENV] = "0"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "True"
    assert not any(w.startswith("probunlearn.") for w in out.stdout.split())


# ---- LoRA adapters on the native models (probunlearn.models.native.lora) --------------------------
LORA_TARGETS = {
    "gqa": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "phi": ["q_proj", "k_proj", "v_proj", "dense", "fc1", "fc2"],
}


def _adapter(base: str, out, targets: list[str], **extra) -> str:
    """A peft LoRA adapter with non-zero random weights on ``base``, saved to ``out``."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(5)
    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.1, target_modules=targets,
                        init_lora_weights=False, **extra)  # fmt: skip
    get_peft_model(models.load_model(base, device="cpu", native=False), config).save_pretrained(out)
    return str(out)


@pytest.fixture(scope="module", params=list(LORA_TARGETS))
def lora_pair(request, tmp_path_factory, tok):
    """(adapter dir, the adapter through peft, the adapter on the native model)."""
    from probunlearn.models.native import lora

    base = _checkpoint(tmp_path_factory, tok, request.param)
    path = _adapter(base, tmp_path_factory.mktemp("lora") / "a", LORA_TARGETS[request.param])
    hf = models.load_model(path, device="cpu", native=False)
    nat = models.load_model(path, device="cpu")
    assert hasattr(hf, "peft_config") and isinstance(nat, llama.CausalLM) and lora.is_lora(nat)
    assert [n.replace(".default", "") for n, _ in hf.base_model.model.named_parameters()] == [
        n for n, _ in nat.named_parameters()
    ]
    return path, hf, nat


def test_lora_adapter_computes_as_peft(lora_pair, tok):
    """Logits, greedy decoding and the sampler's draws of the native model with the adapter equal
    peft's unmerged adapter on transformers', bit for bit; the adapter changes the logits."""
    path, hf, nat = lora_pair
    ids, left, right = _batch(hf.config.vocab_size)
    plain = models.load_model(str(nat.source), device="cpu")
    with torch.no_grad():
        for mask in (None, left, right):
            want = hf(input_ids=ids, attention_mask=mask).logits
            assert torch.equal(want, nat(input_ids=ids, attention_mask=mask).logits)
        assert not torch.equal(want, plain(input_ids=ids, attention_mask=right).logits)
    with torch.inference_mode():
        want = hf.generate(input_ids=ids, attention_mask=left, max_new_tokens=6, do_sample=False,
                           pad_token_id=2)  # fmt: skip
        got = nat.generate(ids, attention_mask=left, max_new_tokens=6, pad_token_id=2)
    assert torch.equal(want, got)
    kw = dict(n=4, max_new_tokens=6, seed_key="k", progress=False, batch_size=4)
    tk = models.load_tokenizer(path)
    qs = ["Who wrote the red book?", "Why?"]
    assert sampling.sample_answers(hf, tk, ["a", "b"], qs, **kw).equals(
        sampling.sample_answers(nat, tk, ["a", "b"], qs, **kw)
    )


def test_a_lora_job_imports_neither_transformers_nor_peft(lora_pair):
    path = lora_pair[0]
    code = (
        "import sys, torch\n"
        "from probunlearn import models\n"
        f"m = models.load_model({path!r}, device='cpu'); t = models.load_tokenizer({path!r})\n"
        "m(input_ids=torch.tensor([t('Who?')['input_ids']]))\n"
        "print(type(m).__module__, 'transformers' in sys.modules, 'peft' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1:] == ["False", "False"]


def test_lora_merge_equals_peft_merge(lora_pair):
    """Folding the adapter into the weights (the attacks do) gives peft's merge_and_unload bits."""
    import copy

    from probunlearn.attacks import _shared
    from probunlearn.models.native import lora

    _, hf, nat = lora_pair
    assert _shared.is_adapter_model(hf) and _shared.is_adapter_model(nat)
    want = copy.deepcopy(hf).merge_and_unload().state_dict()
    merged = lora.merge(copy.deepcopy(nat))
    assert not lora.is_lora(merged) and not _shared.is_adapter_model(merged)
    got = merged.state_dict()
    assert set(want) == set(got) and all(torch.equal(want[k], got[k]) for k in want)


def test_lora_adapters_the_native_layer_does_not_compute_load_through_peft(tmp_path_factory, tok):
    """A regular expression of target modules, DoRA, half precision or a merge: peft, as before."""
    from probunlearn.models.native import lora

    base = _checkpoint(tmp_path_factory, tok, "gqa")
    out = tmp_path_factory.mktemp("adapters")
    plain = _adapter(base, out / "plain", ["q_proj", "v_proj"])
    regex = _adapter(base, out / "regex", r".*\.(q|v)_proj")
    dora = _adapter(base, out / "dora", ["q_proj"], use_dora=True)
    assert lora.supports(plain, torch.float32) and not lora.supports(plain, torch.bfloat16)
    assert not lora.supports(regex, torch.float32) and not lora.supports(dora, torch.float32)
    for path, kw in ((regex, {}), (dora, {}), (plain, {"merge": True})):
        assert not isinstance(models.load_model(path, device="cpu", **kw), llama.CausalLM), path


def _benchmark(name: str):
    """The module of the script benchmarks/<name>.py."""
    import importlib.util

    path = MEASUREMENTS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_sampling_smoke(monkeypatch, capsys):
    """measurements/bench_sampling.py --arch tiny --device cpu: the code path of the GPU benchmark."""
    bench = _benchmark("bench_sampling")
    argv = ["bench_sampling.py", "--arch", "tiny", "--device", "cpu", "--n", "4", "--prompts", "2"]
    argv += ["--ref-samples", "1", "--batch-sizes", "8", "--max-new-tokens", "6", "--threads", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    out = capsys.readouterr().out
    assert "same samples: True" in out
    assert "of the bandwidth roofline" in out and "% of the peak" in out
    assert "engine / static = " in out and "static+graph: CUDA only" in out


def test_decode_bounds_smoke(capsys):
    """measurements/decode_bounds.py on the tiny model: its shared-prefix attention is the model's
    attention up to rounding (else the bound it prints would be about another computation)."""
    import re

    bench = _benchmark("decode_bounds")
    attention = llama.Attention.forward
    bench.main(["--arch", "tiny", "--rows", "5", "--new", "6", "--reps", "1"])
    assert llama.Attention.forward is attention  # the patch is undone
    out = capsys.readouterr().out
    assert out.count("engine / ideal = ") == 2 and out.count("engine / shared prefix = ") == 2
    diff = float(re.search(r"largest \|logit difference\| (\S+)", out).group(1))
    assert diff < 1e-4


def test_static_decode_smoke(capsys, tmp_path_factory, tok):
    """measurements/static_decode.py on the tiny model, GQA included: the static KV cache's step is the
    engine's step up to rounding (else its timing would be about another computation). The CUDA graph path needs a GPU; on CPU the table says so."""
    import re

    bench = _benchmark("static_decode")
    bench.main(["--arch", "tiny", "--rows", "5", "--new", "6", "--reps", "1"])
    gqa = models.load_model(_checkpoint(tmp_path_factory, tok, "gqa"), device="cpu")
    assert gqa.config.num_key_value_heads < gqa.config.num_attention_heads
    lines = bench.compare(gqa, qa.prompt_ids(tok, "Who wrote the red book?"), rows=3, new=5, reps=1)
    out = capsys.readouterr().out + "\n".join(lines)
    assert out.count("engine / static = ") == 2
    diffs = [float(d) for d in re.findall(r"largest \|logit difference\| (\S+);", out)]
    assert len(diffs) == 2 and max(diffs) < 1e-4
    assert out.count("same tokens drawn: ") == 2  # True here; rounding may flip a draw elsewhere
    assert out.count("static+graph: CUDA only") == 2


def test_unlearning_memory_rates():
    """measurements/unlearning_memory.py --as-run: the saved bytes per token it scales up. A layer
    keeps several hidden-sized fp32 tensors, and with checkpointing only its input (hidden × 4 B); the
    loss keeps a few fp32 copies of each logit."""
    bench = _benchmark("unlearning_memory")
    hidden = bench.ARCHS["llama-1b"]["hidden_size"]
    per_layer, per_vocab, _ = bench.activation_rates("llama-1b", lora=False)
    kept, kept_vocab, _ = bench.activation_rates("llama-1b", lora=False, recompute=True)
    assert per_layer > 10 * hidden * 4
    assert kept == hidden * 4
    assert (
        3 <= per_vocab <= 16 and kept_vocab == per_vocab
    )  # log-softmax of all but the last position

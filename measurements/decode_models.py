"""The models and measurements the sampler benchmarks share: random-weight Llamas of real shapes, the
copy bandwidth, a matmul's peak and the decode step against the bandwidth roofline.

``bench_sampling.py``, ``static_decode.py``, ``decode_bounds.py``, ``bench_realistic.py`` and
``gpu_check.py`` import this module; it imports none of them (no import cycle between the scripts).
"""

from __future__ import annotations

import random
import time

import torch

from probunlearn import models
from probunlearn.models.native import llama
from probunlearn.sampling.engine import attention_kernels

ARCHS = {
    "tiny": dict(
        hidden_size=64, intermediate_size=192, num_layers=2, num_heads=4, max_positions=256
    ),
    "mini": dict(
        hidden_size=128, intermediate_size=384, num_layers=4, num_heads=4, max_positions=256
    ),
    # Llama-3.2-1B's shapes (grouped-query attention, tied embeddings)
    "llama-1b": dict(
        hidden_size=2048,
        intermediate_size=8192,
        num_layers=16,
        num_heads=32,
        kv_heads=8,
        max_positions=4096,
        vocab=128256,
        rope_theta=500000.0,
    ),  # fmt: skip
    # Llama-2-7B's shapes
    "llama-7b": dict(
        hidden_size=4096,
        intermediate_size=11008,
        num_layers=32,
        num_heads=32,
        max_positions=4096,
        vocab=32000,
        tie=False,
    ),  # fmt: skip
}
QUESTIONS = [
    "What is the full name of the author born in Taipei in 1952?",
    "Which genre does Basil Mahfouz Al-Kuwaiti write in?",
    "What awards has the author received?",
    "How did the author's parents influence the themes of their novels about the sea and memory?",
]


def tokenizer(vocab_size: int = 2000):
    """A byte-level BPE tokenizer on random words and the benchmark questions (seed 0)."""
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    # the questions' own words are frequent, as in the mini run's corpus: prompts of ~15-25 tokens
    texts = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(3000)] + QUESTIONS * 200
    return models.train_tokenizer(texts, vocab_size)


def build(arch: str, tok, device: torch.device, dtype: torch.dtype):
    """(transformers model, native model sharing its weights), random weights, seed 0."""
    from transformers import LlamaConfig, LlamaForCausalLM

    a = ARCHS[arch]
    cfg = LlamaConfig(
        vocab_size=int(a.get("vocab", len(tok))),
        hidden_size=a["hidden_size"],
        intermediate_size=a["intermediate_size"],
        num_hidden_layers=a["num_layers"],
        num_attention_heads=a["num_heads"],
        num_key_value_heads=a.get("kv_heads", a["num_heads"]),
        max_position_embeddings=a["max_positions"],
        tie_word_embeddings=a.get("tie", True),
        rope_theta=a.get("rope_theta", 10000.0),
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    with torch.device(device):
        hf = LlamaForCausalLM._from_config(cfg, dtype=dtype).eval()
    return hf, llama.from_transformers(hf).eval()


def sync(device: torch.device) -> None:
    """Wait for the device (CUDA) to finish its queued work."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def bandwidth(device: torch.device) -> float:
    """Measured copy bandwidth in bytes/s (read + write of a buffer far larger than the caches)."""
    n = (1 << 28) if device.type == "cuda" else (1 << 26)  # 1 GiB or 256 MiB of float32
    x = torch.empty(n, device=device)
    y = torch.empty_like(x)
    y.copy_(x)
    sync(device)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        y.copy_(x)
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * x.numel() * x.element_size() / best


def matmul_peak(device: torch.device, dtype: torch.dtype) -> float:
    """Measured FLOP/s of a large square matmul in ``dtype`` (the attainable arithmetic peak)."""
    n = 4096 if device.type == "cuda" else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    sync(device)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def decode_step(model, rows: int, context: int, device: torch.device, steps: int = 20):
    """(seconds per decode step, bytes read per step, FLOPs per step) of ``rows`` rows at ``context``
    cached positions, with the engine's KV buffers and attention kernels
    (:func:`probunlearn.sampling.engine.attention_kernels`)."""
    cfg = model.config
    heads, dim = cfg.num_key_value_heads, cfg.head_dim
    dtype = model.dtype
    layers = []
    for _ in range(cfg.num_hidden_layers):
        k = torch.randn((rows, heads, context, dim), device=device, dtype=dtype)
        layers.append(llama.BufferLayer.filled(k, torch.randn_like(k), context + steps + 1))
    cache = llama.Cache(layers=layers)
    tok = torch.randint(4, cfg.vocab_size, (rows, 1), device=device)
    with torch.inference_mode(), attention_kernels(device):  # the engine's kernels
        model(input_ids=tok, position_ids=torch.full((rows, 1), context, device=device),
              past_key_values=cache, use_cache=True)  # fmt: skip
        sync(device)
        t0 = time.perf_counter()
        for s in range(steps):
            pos = torch.full((rows, 1), context + 1 + s, device=device)
            model(input_ids=tok, position_ids=pos, past_key_values=cache, use_cache=True)
        sync(device)
    step = (time.perf_counter() - t0) / steps
    emb = model.model.embed_tokens.weight
    kv_len = context + steps // 2
    matmul_params = sum(p.numel() for n, p in model.named_parameters() if p.dim() == 2)
    matmul_params -= 0 if cfg.tie_word_embeddings else emb.numel()
    flops = 2 * rows * matmul_params + 4 * rows * cfg.num_hidden_layers * kv_len * cfg.hidden_size
    return step, weight_bytes(model) + kv_bytes(model, rows, kv_len), flops


def kv_bytes(model, rows: int, length: float) -> float:
    """Bytes of the keys and values one decode step reads: ``rows`` rows of ``length`` positions."""
    cfg, size = model.config, next(model.parameters()).element_size()
    return 2 * cfg.num_hidden_layers * rows * cfg.num_key_value_heads * length * cfg.head_dim * size


def weight_bytes(model) -> int:
    """Bytes of the weights one decode step reads: all of them but the embedding, which is gathered (a
    few rows of it), unless it is tied to the lm_head, which reads it whole."""
    weights = {p.data_ptr(): p.numel() * p.element_size() for p in model.parameters()}
    emb = model.model.embed_tokens.weight
    untied = 0 if model.config.tie_word_embeddings else emb.numel() * emb.element_size()
    return sum(weights.values()) - untied

"""Do a static KV cache and a CUDA graph help the decode loop? The engine's cache against both, in one run.

    python measurements/static_decode.py --device cuda --dtype bfloat16 --arch llama-1b   # or llama-7b
    python measurements/static_decode.py [--threads 1] [--rows 257] [--new 64] [--reps 3]  # CPU, mini
    python measurements/static_decode.py --arch tiny --rows 5 --new 6 --reps 1             # smoke test

On the benchmarks' model (decode_models.py: random weights, seed 0), one block of ``--rows`` rows of one prompt (n + 1
rows at n = 256) decodes ``--new`` tokens, each step a forward pass and a top-p draw (the engine's
``top_p_sample``, top-p 0.9, temperature 1), with:

  engine        the sampler's KV buffer (``llama.BufferLayer``), grown a few positions at a time and
                read by attention only up to the filled length;
  static        keys and values in buffers sized for the prompt and every new token from the start; each
                step writes its position in place and attends over the whole buffer with a mask of the
                filled positions. The shapes never change, which is what a CUDA graph needs;
  static+graph  the static step captured once as a CUDA graph and replayed (``--device cuda`` only);
  static+compile  with ``--compile``, the static step through ``torch.compile`` (fixed shapes, so it
                compiles once; its time to compile is printed).

It prints, for each: ms per step, tokens/s, the ratio to the engine, and the fraction of the memory
bandwidth roofline, (bytes of weights + filled KV cache read per step / measured copy bandwidth) / step
time. Then how far the static step's logits are from the engine's with the same tokens fed (a masked
attention over the whole buffer sums in another order: rounding only) and whether the drawn tokens are
the same. Random weights rarely draw eos, so every row decodes every token and the engine drops no
rows: the same work for all three. Every variant's attention runs on the engine's kernels
(``probunlearn.sampling.engine.attention_kernels``). ``bench_sampling.py`` prints the same table for its first
batch size, ``bench_realistic.py --static-table`` for its roofline rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import decode_models  # noqa: E402

from probunlearn import models  # noqa: E402
from probunlearn.data import qa  # noqa: E402
from probunlearn.models.native import llama
from probunlearn.sampling.engine import attention_kernels, top_p_sample  # noqa: E402

# (tokens (rows,), position) -> logits (rows, vocab)
Step = Callable[[torch.Tensor, int], torch.Tensor]


def prefill(model, prompt: list[int], device: torch.device) -> tuple[llama.Cache, torch.Tensor]:
    """The prompt's cache (one row) and its last logits."""
    cache = llama.Cache(num_layers=model.config.num_hidden_layers)
    with torch.inference_mode(), attention_kernels(device):
        out = model(
            input_ids=torch.tensor([prompt], device=device),
            position_ids=torch.arange(len(prompt), device=device)[None],
            past_key_values=cache,
            use_cache=True,
        )
    return cache, out.logits[:, -1].float()


def engine_step(model, prompt_cache: llama.Cache, rows: int, capacity: int) -> Step:
    """A decode step with the sampler's growing KV buffers, every row starting from the prompt's cache."""
    at = torch.zeros(rows, dtype=torch.long, device=prompt_cache.layers[0].keys.device)
    cache = llama.Cache(
        layers=[
            llama.BufferLayer.filled(layer.keys, layer.values, capacity, at)
            for layer in prompt_cache.layers
        ]
    )
    return cache_step(model, cache, rows)


def cache_step(model, cache: llama.Cache, rows: int) -> Step:
    """A decode step of the model through ``cache`` (any cache layers with ``update``)."""

    def step(tok: torch.Tensor, pos: int) -> torch.Tensor:
        out = model(
            input_ids=tok[:, None],
            position_ids=torch.full((rows, 1), pos, device=tok.device),
            past_key_values=cache,
            use_cache=True,
        )
        return out.logits[:, -1].float()

    return step


class StaticStep:
    """A Llama decode step over fixed-size KV buffers: the token and the position are written into input
    tensors, the step writes its keys and values at that position and attends over the whole buffer
    under a mask of the filled positions. ``mode``: ``eager``; ``graph`` (CUDA), the step captured once
    as a CUDA graph and replayed, its logits then the graph's output tensor, overwritten by the next
    step; ``compile``, the step through ``torch.compile`` (fixed shapes). ``setup_s``: the seconds
    that building it took (capture or compilation included)."""

    MODES = ("eager", "graph", "compile")

    def __init__(
        self, model, prompt_cache: llama.Cache, rows: int, capacity: int, mode: str = "eager"
    ):
        if not isinstance(model, llama.LlamaForCausalLM):
            raise TypeError(f"StaticStep decodes a native Llama, got {type(model).__name__}")
        if mode not in self.MODES:
            raise ValueError(f"mode: one of {self.MODES}, got {mode!r}")
        t0 = time.perf_counter()
        cfg, first = model.config, prompt_cache.layers[0].keys
        dev, shape = first.device, (rows, cfg.num_key_value_heads, capacity, cfg.head_dim)
        self.model, self.rows, self.prompt_cache = model, rows, prompt_cache
        self.k = [torch.zeros(shape, device=dev, dtype=first.dtype) for _ in prompt_cache.layers]
        self.v = [torch.zeros_like(k) for k in self.k]
        self.tok = torch.zeros(rows, dtype=torch.long, device=dev)
        # warm-up and capture write at the last slot, which stays masked until a step writes it anew
        self.pos = torch.full((), capacity - 1, dtype=torch.long, device=dev)
        self.slots = torch.arange(capacity, device=dev)
        self.graph, self.out, self.forward = None, None, self._forward
        if mode == "compile":
            self.forward = torch.compile(self._forward, dynamic=False)
            with torch.inference_mode(), attention_kernels(dev):
                self.forward()
        elif mode == "graph":
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), torch.inference_mode(), attention_kernels(dev):
                for _ in range(3):
                    self._forward()
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph), torch.inference_mode(), attention_kernels(dev):
                self.out = self._forward()
        self.reset()
        decode_models.sync(dev)
        self.setup_s = time.perf_counter() - t0

    def reset(self) -> None:
        """Every row back at the end of the prompt. A step writes its position before attending, and
        attends only up to it, so the slots after the prompt need no clearing."""
        length = self.prompt_cache.get_seq_length()
        with torch.inference_mode():
            for k, v, layer in zip(self.k, self.v, self.prompt_cache.layers, strict=True):
                k[:, :, :length] = layer.keys
                v[:, :, :length] = layer.values

    def _forward(self) -> torch.Tensor:
        m, rows = self.model.model, self.rows
        h = m.embed_tokens(self.tok[:, None])
        cos, sin = m.rotary(self.pos.view(1, 1).expand(rows, 1), h)
        mask = (self.slots <= self.pos).view(1, 1, 1, -1)
        at = self.pos.view(1)
        for layer, kbuf, vbuf in zip(m.layers, self.k, self.v, strict=True):
            a = layer.self_attn
            x = layer.input_layernorm(h)
            shape = (rows, 1, -1, a.head_dim)
            q = a.q_proj(x).view(shape).transpose(1, 2)
            k = a.k_proj(x).view(shape).transpose(1, 2)
            v = a.v_proj(x).view(shape).transpose(1, 2)
            q, k = a.rotate(q, k, cos, sin)
            kbuf.index_copy_(2, at, k)
            vbuf.index_copy_(2, at, v)
            if a.groups > 1:  # a kv head's query heads as its query positions, as the engine does
                q = q.reshape(rows, q.shape[1] // a.groups, a.groups, a.head_dim)
            o = F.scaled_dot_product_attention(q, kbuf, vbuf, attn_mask=mask, scale=a.scaling)
            o = o.reshape(rows, -1, 1, a.head_dim).transpose(1, 2).reshape(rows, 1, -1)
            h = h + getattr(a, a.out_name)(o)
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return self.model.lm_head(m.final_norm(h))[:, -1].float()

    def __call__(self, tok: torch.Tensor, pos: int) -> torch.Tensor:
        self.tok.copy_(tok)
        self.pos.fill_(pos)
        if self.graph is None:
            return self.forward()
        self.graph.replay()
        return self.out


def block(
    step: Step,
    first: torch.Tensor,
    keys: torch.Tensor,
    start: int,
    new: int,
    forced=None,
    draw: bool = True,
):
    """(seconds, tokens (rows, new), logits of every step if ``forced``) of one block: top-p draws
    (argmax without ``draw``) from ``first`` (1, vocab) on, or the ``forced`` tokens fed instead."""
    rows, device = keys.shape[0], keys.device
    logits = first.expand(rows, -1).contiguous()
    tokens, seen = torch.empty((rows, new), dtype=torch.long, device=device), []
    with torch.inference_mode(), attention_kernels(device):  # the engine's kernels
        decode_models.sync(device)
        t0 = time.perf_counter()
        for s in range(new):
            if forced is not None:
                tok = forced[:, s]
            elif draw:
                tok = top_p_sample(logits, keys, s, temperature=1.0, top_p=0.9)
            else:
                tok = logits.argmax(-1)
            tokens[:, s] = tok
            logits = step(tok, start + s)
            if forced is not None:
                seen.append(logits.clone())
        decode_models.sync(device)
    return time.perf_counter() - t0, tokens, seen


def compare(
    model, prompt: list[int], rows: int, new: int, reps: int = 3, compile: bool = False
) -> list[str]:
    """The table's lines: engine, static, (CUDA) static+graph and (``compile``) static+compile, side
    by side, the minimum of ``reps`` blocks each."""
    device = next(model.parameters()).device
    cap, start = len(prompt) + new, len(prompt)
    cache, first = prefill(model, prompt, device)
    keys = torch.arange(rows, dtype=torch.long, device=device) * 7919 + 13
    modes = ["eager"] + (["graph"] if device.type == "cuda" else []) + (["compile"] * compile)
    static = {m: StaticStep(model, cache, rows, cap, m) for m in modes}
    names = {"eager": "static", "graph": "static+graph", "compile": "static+compile"}

    def step(name: str) -> Step:
        if name == "engine":  # a fresh, empty buffer
            return engine_step(model, cache, rows, cap)
        fixed = static[name]
        fixed.reset()
        return fixed

    tokens, best = {}, {}
    for _ in range(reps):
        for name in ["engine", *modes]:
            t, tokens[name], _ = block(step(name), first, keys, start, new)
            best[name] = min(best.get(name, float("inf")), t)
    ref = tokens["engine"]
    _, _, seen_e = block(step("engine"), first, keys, start, new, forced=ref)
    kv = decode_models.kv_bytes(model, rows, start + new / 2)  # filled positions, on average
    nbytes, bw = decode_models.weight_bytes(model) + kv, decode_models.bandwidth(device)
    lines = [
        f"decode of one block ({rows} rows, prompt {start} tokens, {new} new tokens, top-p 0.9), "
        f"the minimum of {reps}:"
    ]
    for name, t in best.items():
        per = t / new
        label = names.get(name, name)
        ratio = "" if name == "engine" else f", engine / {label} = {best['engine'] / t:.2f}x"
        setup = "" if name == "engine" else f", set up in {static[name].setup_s:.2f} s"
        lines.append(
            f"  {label}: {per * 1e3:.2f} ms per step, {rows / per:.0f} tokens/s{ratio}, "
            f"{nbytes / bw / per:.1%} of the bandwidth roofline{setup}"
        )
    for mode in modes:
        _, _, seen = block(step(mode), first, keys, start, new, forced=ref)
        diff = max(float((a - b).abs().max()) for a, b in zip(seen_e, seen, strict=True))
        lines.append(
            f"  {names[mode]} against the engine, the same tokens fed: largest |logit difference| "
            f"{diff:.2e}; same tokens drawn: {torch.equal(tokens[mode], ref)}"
        )
    if device.type != "cuda":
        lines.append("  static+graph: CUDA only (run with --device cuda)")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--arch", choices=sorted(decode_models.ARCHS), default="mini")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=sorted(models.DTYPES), default="float32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rows", type=int, default=257, help="rows of the block (n + 1 at n = 256)")
    ap.add_argument("--new", type=int, default=64, help="tokens decoded")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--compile",
        action="store_true",
        help="also the static step through torch.compile (needs a C++ compiler on CPU; minutes)",
    )
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tok = decode_models.tokenizer()
    _, model = decode_models.build(args.arch, tok, device, models.resolve_dtype(args.dtype))
    prompt = qa.prompt_ids(tok, decode_models.QUESTIONS[0])
    print(f"model: {args.arch}, {args.dtype} on {device}; threads {args.threads}")
    print("\n".join(compare(model, prompt, args.rows, args.new, args.reps, args.compile)))


if __name__ == "__main__":
    main()

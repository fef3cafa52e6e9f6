"""How much faster could the sampler's decode loop get? Three caches, side by side in one run.

    python measurements/decode_bounds.py [--threads 1] [--rows 257] [--new 64] [--reps 3]

On the benchmarks' model (decode_models.py, ``--arch mini`` by default, random weights, seed 0), one block of ``--rows``
rows of one prompt decodes ``--new`` tokens, each step a forward pass and a top-p draw (the engine's
``top_p_sample``, top-p 0.9), with:

  engine         the sampler's KV buffer (``llama.BufferLayer``, grown a few positions at a time);
  ideal          a cache that hands attention ready-made contiguous keys and values of each length,
                 made before the clock starts and shared by all layers (so that they are in the CPU's
                 caches): no growth, no copy, no write. Its logits are not the model's, but its time is
                 what the same kernels on the same shapes cost with the cache for free: an upper bound
                 on any change to the cache that keeps the bits;
  shared prefix  the prompt's keys and values kept once for all rows, each row's own positions in a
                 buffer sized for the answer, and decode attention as matmuls and one softmax over both
                 parts (torch operations). Its logits differ from sdpa's in the last bits (printed).

and the same three with argmax instead of the top-p draw (the forward pass alone). Prints the time per
step of each, the minimum over ``--reps`` runs, and the ratios to the engine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

POLICY = os.environ.get("OMP_WAIT_POLICY", "unset")  # as OpenMP reads it when torch loads

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import decode_models  # noqa: E402
import static_decode  # noqa: E402

from probunlearn.data import qa  # noqa: E402
from probunlearn.models.native import llama  # noqa: E402


class IdealLayer:
    """Hands out precomputed contiguous (rows, heads, length, dim) keys and values, one pair per step."""

    def __init__(self, keys: list[torch.Tensor], values: list[torch.Tensor], prompt: int):
        self.k, self.v, self.prompt, self.step = keys, values, prompt, 0

    def update(self, k, v, *_, **__):
        out = self.k[self.step], self.v[self.step]
        self.step += 1
        return out

    def get_seq_length(self) -> int:
        return self.prompt + self.step


class PrefixLayer:
    """The prompt's keys and values once, (heads, prompt, dim); each row's own in (rows, heads, new, dim)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, rows: int, new: int):
        self.kp, self.vp = keys[0], values[0]
        h, _, d = self.kp.shape
        self.ks = keys.new_empty((rows, h, new, d))
        self.vs = torch.empty_like(self.ks)
        self.n = 0

    def update(self, k, v, *_, **__):
        self.ks[:, :, self.n] = k[:, :, 0]
        self.vs[:, :, self.n] = v[:, :, 0]
        self.n += 1
        return None, None

    def get_seq_length(self) -> int:
        return self.kp.shape[1] + self.n

    def attend(self, q: torch.Tensor, scale: float) -> torch.Tensor:
        """softmax over the prompt's and the row's positions of (rows, heads, dim) queries."""
        q = q * scale
        sp = torch.matmul(q.transpose(0, 1), self.kp.transpose(1, 2))  # (heads, rows, prompt)
        ks, vs = self.ks[:, :, : self.n], self.vs[:, :, : self.n]
        ss = torch.matmul(ks, q.unsqueeze(-1)).squeeze(-1)  # (rows, heads, own)
        m = torch.maximum(sp.amax(-1).T, ss.amax(-1))
        ep, es = torch.exp(sp - m.T.unsqueeze(-1)), torch.exp(ss - m.unsqueeze(-1))
        den = ep.sum(-1).T + es.sum(-1)
        out = torch.matmul(ep, self.vp).transpose(0, 1)
        out = out + torch.matmul(es.unsqueeze(-2), vs).squeeze(-2)
        return out / den.unsqueeze(-1)


@contextlib.contextmanager
def prefix_attention():
    """Route decode attention over a :class:`PrefixLayer` through :meth:`PrefixLayer.attend`."""
    original = llama.Attention.forward

    def forward(self, h, cos, sin, mask, cache):
        layer = None if cache is None else cache.layers[self.index]
        if not isinstance(layer, PrefixLayer):
            return original(self, h, cos, sin, mask, cache)
        hshape = (*h.shape[:-1], -1, self.head_dim)
        q = self.q_proj(h).view(hshape).transpose(1, 2)
        k = self.k_proj(h).view(hshape).transpose(1, 2)
        v = self.v_proj(h).view(hshape).transpose(1, 2)
        q, k = self.rotate(q, k, cos, sin)
        layer.update(k, v)
        out = layer.attend(q[:, :, 0], self.scaling)
        return getattr(self, self.out_name)(out.reshape(h.shape[0], 1, -1))

    llama.Attention.forward = forward
    try:
        yield
    finally:
        llama.Attention.forward = original


def decode(model, prompt, kind: str, rows: int, new: int, draw: bool, forced=None):
    """(seconds, tokens (rows, new), logits of every step) of one block decoded with cache ``kind``;
    ``forced``: feed these tokens instead of the drawn ones (to compare logits)."""
    cfg = model.config
    P = len(prompt)
    pre, first = static_decode.prefill(model, prompt, torch.device("cpu"))
    if kind == "engine":
        step = static_decode.engine_step(model, pre, rows, P + new)
    else:
        if kind == "ideal":
            shape = lambda s: (rows, cfg.num_key_value_heads, P + s + 1, cfg.head_dim)  # noqa: E731
            ks = [torch.randn(shape(s)) for s in range(new)]
            vs = [torch.randn(shape(s)) for s in range(new)]
            layers = [IdealLayer(ks, vs, P) for _ in pre.layers]
        else:
            layers = [PrefixLayer(lay.keys, lay.values, rows, new) for lay in pre.layers]
        step = static_decode.cache_step(model, llama.Cache(layers=layers), rows)
    keys = torch.arange(rows, dtype=torch.long) * 7919 + 13
    return static_decode.block(step, first, keys, P, new, forced=forced, draw=draw)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--arch", choices=sorted(decode_models.ARCHS), default="mini")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rows", type=int, default=257, help="rows of the block (n + 1 at n = 256)")
    ap.add_argument("--new", type=int, default=64, help="tokens decoded")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    if args.arch not in ("tiny", "mini"):
        ap.error("--arch: tiny or mini (the ideal cache holds every step's keys and values)")

    torch.set_num_threads(args.threads)
    tok = decode_models.tokenizer()
    _, model = decode_models.build(args.arch, tok, torch.device("cpu"), torch.float32)
    if model.config.num_key_value_heads != model.config.num_attention_heads:
        ap.error("the shared-prefix attention here has no grouped-query attention")
    prompt = qa.prompt_ids(tok, decode_models.QUESTIONS[0])
    R, new = args.rows, args.new

    kinds = ("engine", "ideal", "shared prefix")
    best: dict[tuple[str, bool], float] = {}
    with prefix_attention():
        _, ref_tokens, _ = decode(model, prompt, "engine", R, new, draw=True)
        _, _, ref = decode(model, prompt, "engine", R, new, draw=True, forced=ref_tokens)
        _, _, alt = decode(model, prompt, "prefix", R, new, draw=True, forced=ref_tokens)
        diff = max(float((a - b).abs().max()) for a, b in zip(ref, alt, strict=True))
        for _ in range(args.reps):
            for draw in (True, False):
                for kind in kinds:
                    t, _, _ = decode(model, prompt, kind.split()[-1], R, new, draw=draw)
                    best[kind, draw] = min(best.get((kind, draw), float("inf")), t)

    print(f"model: {args.arch}, {R} rows, prompt {len(prompt)} tokens, {new} new tokens; threads "
          f"{args.threads}, OMP_WAIT_POLICY {POLICY}; the minimum of {args.reps} runs")  # fmt: skip
    for draw in (True, False):
        step = "forward + top-p" if draw else "forward + argmax"
        eng = best["engine", draw]
        cells = [f"{k} {best[k, draw] / new * 1e3:.2f} ms" for k in kinds]
        ratios = [f"engine / {k} = {eng / best[k, draw]:.2f}x" for k in kinds[1:]]
        print(f"{step}, per step: " + ", ".join(cells) + "; " + ", ".join(ratios))
    print(f"shared prefix against the engine, the same tokens fed: largest |logit difference| "
          f"{diff:.2e}")  # fmt: skip


if __name__ == "__main__":
    main()

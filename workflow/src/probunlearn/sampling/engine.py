"""The decoding engine under :mod:`probunlearn.sampling`: per-sample random numbers, top-p draws and the
batched KV-cache loop (see :mod:`probunlearn.sampling` for the reproducibility guarantee).

Every sample has its own 64-bit key; the uniform numbers used at decoding step ``t`` are
SplitMix64(key, t, attempt), computed with torch integer ops, and the token is drawn from the top-p nucleus
by inverse CDF plus rejection (no sort of the vocabulary; see :func:`top_p_sample`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from probunlearn import models
from probunlearn.data import qa

ATTEMPTS = 16  # rejection-sampling tries per decoding step before the exact sorted fallback

_MASK64 = (1 << 64) - 1


def _signed(x: int) -> int:
    x &= _MASK64
    return x - (1 << 64) if x >= 1 << 63 else x


_GAMMA = _signed(0x9E3779B97F4A7C15)
_MIX1 = _signed(0xBF58476D1CE4E5B9)
_MIX2 = _signed(0x94D049BB133111EB)


# --------------------------------------------------------------------------------------------------------
# counter-based random numbers


def sample_keys(
    seed_key: str, base_seed: int, ids: Sequence[str], samples: Sequence[int]
) -> list[int]:
    """The signed 64-bit key of each (prompt id, sample index): blake2b of (seed_key, base_seed, id, sample)."""
    keys = []
    for pid, s in zip(ids, samples, strict=True):
        msg = json.dumps([str(seed_key), int(base_seed), str(pid), int(s)]).encode()
        digest = hashlib.blake2b(msg, digest_size=8).digest()
        keys.append(int.from_bytes(digest, "little", signed=True))
    return keys


def _srl(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 values."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def uniform(keys: torch.Tensor, step: int, attempt: int = 0) -> torch.Tensor:
    """Uniform float64 in [0, 1) for each int64 key: SplitMix64 output number ``step·ATTEMPTS + attempt``
    of the stream seeded with the key, so that it depends only on (key, step, attempt)."""
    if not 0 <= attempt < ATTEMPTS:
        raise ValueError(f"attempt must be in [0, {ATTEMPTS}), got {attempt}")
    z = keys + _signed((step * ATTEMPTS + attempt + 1) * _GAMMA)
    z = (z ^ _srl(z, 30)) * _MIX1
    z = (z ^ _srl(z, 27)) * _MIX2
    z = z ^ _srl(z, 31)
    return _srl(z, 11).to(torch.float64) * (2.0**-53)


# --------------------------------------------------------------------------------------------------------
# token selection


def sorted_top_p_draw(probs: torch.Tensor, u: torch.Tensor, top_p: float) -> torch.Tensor:
    """Inverse-CDF draw with uniforms ``u`` from the top-p filtered, descending-sorted ``probs`` (rows)."""
    p, idx = probs.sort(-1, descending=True)
    p64 = p.to(torch.float64)
    cum = p64.cumsum(-1)
    # keep a token while the mass of the more likely tokens is < top_p: the smallest set with mass >= top_p
    nkeep = ((cum - p64) < top_p).sum(-1, keepdim=True).clamp_min(1)
    mass = cum.gather(-1, nkeep - 1)
    k = torch.searchsorted(cum, u.to(torch.float64).unsqueeze(-1) * mass, right=True)
    k = torch.minimum(k, nkeep - 1)
    return idx.gather(-1, k).squeeze(-1)


def top_p_sample(
    logits: torch.Tensor, keys: torch.Tensor, step: int, *, temperature: float, top_p: float
) -> torch.Tensor:
    """One token per row from softmax(logits / temperature) restricted to the top-p nucleus.

    The nucleus is the smallest set of most likely tokens whose probability sums to >= top_p (at least one
    token), as in HF's TopPLogitsWarper: token j is in it iff the mass of the tokens more likely than j is
    < top_p. Ties differ: where tokens of equal probability straddle the cut, HF keeps those its sort
    puts first, and this keeps them all, whatever the vocabulary order. Sampling from it, renormalised, is done without sorting the vocabulary, by rejection: draw j by
    inverse CDF of the full distribution (vocabulary order) with ``uniform(key, step, attempt)`` and accept it
    if it is in the nucleus; the acceptance rate is the nucleus mass, >= top_p. Rows still rejected after
    ATTEMPTS - 1 tries (only for small top_p) fall back to an inverse-CDF draw from the sorted nucleus.
    Each row's token depends only on that row's logits, key and ``step``.
    """
    scaled = logits.float()
    if temperature != 1.0:
        scaled = scaled / temperature
    probs = torch.softmax(scaled, -1)
    cum = probs.cumsum(-1)
    vocab = probs.shape[-1]
    out = torch.empty(probs.shape[0], dtype=torch.long, device=probs.device)
    todo = None  # rows not yet accepted (None: all)
    for attempt in range(ATTEMPTS - 1):
        p_, c_, k_ = (probs, cum, keys) if todo is None else (probs[todo], cum[todo], keys[todo])
        u = uniform(k_, step, attempt)
        target = (u * c_[:, -1].to(torch.float64)).to(c_.dtype).unsqueeze(-1)
        j = torch.searchsorted(c_, target, right=True).clamp_max_(vocab - 1)
        pj = p_.gather(-1, j)
        ok = pj.squeeze(-1) > 0
        if top_p < 1.0:
            # the mass of the tokens more likely than j (the same sum as of p_ * (p_ > pj), without
            # turning the mask into floats)
            ok &= torch.where(p_ > pj, p_, 0.0).sum(-1) < top_p
        if todo is None:
            if bool(ok.all()):
                return j.squeeze(-1)
            out[ok] = j.squeeze(-1)[ok]
            todo = (~ok).nonzero().squeeze(-1)
        else:
            out[todo[ok]] = j.squeeze(-1)[ok]
            todo = todo[~ok]
            if todo.numel() == 0:
                return out
    out[todo] = sorted_top_p_draw(probs[todo], uniform(keys[todo], step, ATTEMPTS - 1), top_p)
    return out


# --------------------------------------------------------------------------------------------------------
# KV caches: the native models', or transformers' (imported only for a transformers model)


def cache_kit(model) -> tuple[Callable[[], Any], Callable[..., Any], type]:
    """(a new empty cache, the cache class that takes ``layers=``, the buffer layer class)
    for ``model``: :mod:`probunlearn.models.native.llama`'s for a native model, else transformers'."""
    from probunlearn.models.native import llama

    if isinstance(model, llama.CausalLM):
        n = len(model.model.layers)
        return (lambda: llama.Cache(num_layers=n)), llama.Cache, llama.BufferLayer
    from transformers import DynamicCache
    from transformers.cache_utils import Cache

    from probunlearn.sampling.kv_cache import BufferLayer

    return (lambda: DynamicCache(config=model.config)), Cache, BufferLayer


# --------------------------------------------------------------------------------------------------------
# attention kernels


def attention_kernels(device: torch.device) -> contextlib.AbstractContextManager:
    """The attention kernels sdpa may choose from in the engine's forward passes (prefill and decode).

    On CUDA: flash attention, then memory-efficient attention, with the math kernel as the fallback
    for what neither takes; not cuDNN's attention, which sdpa would otherwise pick for bf16 on recent
    GPUs and which builds an execution plan (about 1.5 ms of CPU per call) for every new (rows, KV
    length) shape. The engine makes a new shape at nearly every step (the cache grows, finished rows
    drop out, prompts differ in length), so that cost grew with the shapes seen before (issue 37).
    In float32 neither flash nor cuDNN applies, so sdpa's choice there is what it was. Elsewhere
    (the CPU): nothing changes, sdpa's own choice."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(
        [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    )


# --------------------------------------------------------------------------------------------------------
# the decoding engine


class Engine:
    """Prefill + decode of (prompt, sample) rows in forward passes of at most ``batch_size`` rows.

    ``pack=False``: a pass holds the rows of one prompt only (see the module docstring), so that every
    shape depends only on that prompt's rows; ``pack=True``: consecutive rows of any prompts share a pass,
    left-padded to the longest prompt."""

    def __init__(
        self,
        model,
        prompts: list[list[int]],
        *,
        eos: int | None,
        pad: int,
        temperature: float,
        top_p: float,
        max_new_tokens: int,
        batch_size: int,
        pack: bool,
        device: torch.device,
        bar,
        stops: Sequence[int] = (),
    ):
        self.model, self.prompts, self.eos, self.pad = model, prompts, eos, pad
        # the tokens that end an answer: eos, and a benchmark's own (RWKU's <|eot_id|>)
        self.stop_ids = tuple(dict.fromkeys([*([eos] if eos is not None else []), *stops]))
        self.temperature, self.top_p, self.max_new = temperature, top_p, max_new_tokens
        self.batch_size, self.pack = batch_size, pack
        self.device, self.bar = device, bar
        self._store: dict[int, tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]] = {}
        self._new_cache, self._cache_cls, self._buffer_layer = cache_kit(model)

    # -- planning ------------------------------------------------------------------------------------
    def plan(self, rows: list[tuple[int, int]]) -> list[list[int]]:
        """Deterministic batches (lists of row positions). Unpacked: each run of consecutive rows of one
        prompt splits into ceil(m / batch_size) blocks of near-equal size (the first m mod k one larger)."""
        size = self.batch_size
        if self.pack:
            return [list(range(i, min(i + size, len(rows)))) for i in range(0, len(rows), size)]
        batches: list[list[int]] = []
        start = 0
        for end in range(1, len(rows) + 1):
            if end < len(rows) and rows[end][0] == rows[start][0]:
                continue
            k = -(-(end - start) // size)
            base, extra = divmod(end - start, k)
            for j in range(k):
                stop = start + base + (j < extra)
                batches.append(list(range(start, stop)))
                start = stop
        return batches

    # -- prefill ---------------------------------------------------------------------------------------
    def _prefill(self, plist: list[int]) -> None:
        """Prefill the prompts in ``plist`` in one forward pass; store each prompt's unpadded K/V and logits."""
        seqs = [self.prompts[p] for p in plist]
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
            mask[i, width - len(s) :] = 1
        padded = bool((mask == 0).any())
        pos = (mask.cumsum(-1) - 1).clamp_min(0)
        cache = self._new_cache()
        out = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device) if padded else None,
            position_ids=pos.to(self.device),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        logits = out.logits[:, -1].float()
        kinds = {type(layer).__name__ for layer in cache.layers}
        if kinds != {"DynamicLayer"}:
            raise NotImplementedError(
                f"unsupported KV cache layers {sorted(kinds)} (sliding window?)"
            )
        for i, p in enumerate(plist):
            off = width - len(seqs[i])
            kv = [(layer.keys[i, :, off:], layer.values[i, :, off:]) for layer in cache.layers]
            self._store[p] = (kv, logits[i])

    # -- one batch ------------------------------------------------------------------------------------
    def run_batch(
        self,
        prompt_of: list[int],
        keys: list[int],
        greedy: list[bool],
        cold_above: float | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, bool]:
        """Decode one batch of rows. Returns tokens (rows, max_new; -1 after the end), the greedy confidence
        sums (top-1 probability summed over decoding steps; 0 for sampled rows) and whether the batch was
        cut short: with ``cold_above`` set, row 0 must be the batch's only greedy row, and once it ends
        with a mean top-1 probability above ``cold_above`` the other rows are abandoned (their prompt is
        answered at temperature 0). Attention runs on :func:`attention_kernels`."""
        with attention_kernels(self.device):
            return self._run_batch(prompt_of, keys, greedy, cold_above)

    def _start(
        self, prompt_of: list[int]
    ) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor | None, int]:
        """Where a batch's decoding starts: the KV cache of every row's prompt (left-padded to the
        longest, with room for ``max_new`` more positions), each row's next-token logits and prompt
        length, the attention mask (None without padding) and the padded width."""
        dev, max_new = self.device, self.max_new
        distinct = list(dict.fromkeys(prompt_of))
        missing = [p for p in distinct if p not in self._store]
        if missing:
            # unpacked, a batch has one prompt: each prompt is prefilled alone, in a one-row pass
            self._prefill(missing)
        local = {p: j for j, p in enumerate(distinct)}
        lengths = [len(self.prompts[p]) for p in distinct]
        width = max(lengths)
        row_prompt = torch.tensor([local[p] for p in prompt_of], dtype=torch.long, device=dev)
        layers = []
        for li in range(len(self._store[distinct[0]][0])):
            ks, vs = [], []
            for p in distinct:
                k, v = self._store[p][0][li]
                pad = width - k.shape[-2]
                if pad:
                    k = torch.nn.functional.pad(k, (0, 0, pad, 0))
                    v = torch.nn.functional.pad(v, (0, 0, pad, 0))
                ks.append(k)
                vs.append(v)
            layers.append(
                self._buffer_layer.filled(
                    torch.stack(ks), torch.stack(vs), width + max_new, rows=row_prompt
                )
            )
        cache = self._cache_cls(layers=layers)
        logits = torch.stack([self._store[p][1] for p in distinct]).index_select(0, row_prompt)

        plen = torch.tensor(lengths, dtype=torch.long, device=dev).index_select(0, row_prompt)
        mask = None
        if min(lengths) != width:
            offs = width - plen
            cols = torch.arange(width + max_new, device=dev)
            mask = (cols.unsqueeze(0) >= offs.unsqueeze(1)).long()
        return cache, logits, plen, mask, width

    def _pick(
        self,
        logits: torch.Tensor,
        t: int,
        key_t: torch.Tensor,
        live: torch.Tensor,
        is_greedy: torch.Tensor,
        rid: torch.Tensor,
        conf: torch.Tensor,
        *,
        any_greedy: bool,
        all_greedy: bool,
    ) -> torch.Tensor:
        """The tokens of decoding step ``t``: a top-p draw for sampled rows, the argmax for greedy
        rows, whose top-1 probability is added to their entry of ``conf`` (in place)."""
        if all_greedy:
            tok = logits.argmax(-1)
        else:
            tok = top_p_sample(logits, key_t, t, temperature=self.temperature, top_p=self.top_p)
        if any_greedy:
            gsel = (live & is_greedy).nonzero().squeeze(-1)
            if gsel.numel():
                lg = logits[gsel]
                top1, am = lg.max(-1)
                if not all_greedy:
                    tok[gsel] = am
                top1 = (top1 - torch.logsumexp(lg, -1)).exp()
                conf.index_add_(0, rid[gsel], top1.to(torch.float64))
        return tok

    def _run_batch(
        self,
        prompt_of: list[int],
        keys: list[int],
        greedy: list[bool],
        cold_above: float | None,
    ) -> tuple[torch.Tensor, torch.Tensor, bool]:
        dev, max_new = self.device, self.max_new
        n_rows = len(prompt_of)
        if cold_above is not None and (not greedy[0] or any(greedy[1:])):
            raise ValueError("cold_above needs the batch's one greedy row first")
        cache, logits, plen, mask, width = self._start(prompt_of)
        rid = torch.arange(n_rows, device=dev)  # current row -> batch row
        live = torch.ones(n_rows, dtype=torch.bool, device=dev)
        key_t = torch.tensor(keys, dtype=torch.long, device=dev)
        is_greedy = torch.tensor(greedy, dtype=torch.bool, device=dev)
        modes = {"any_greedy": any(greedy), "all_greedy": all(greedy)}
        watch = cold_above is not None  # row 0, the greedy row, is still live and in place 0
        tokens = torch.full((n_rows, max_new), -1, dtype=torch.long, device=dev)
        conf = torch.zeros(n_rows, dtype=torch.float64, device=dev)
        for t in range(max_new):
            tok = self._pick(logits, t, key_t, live, is_greedy, rid, conf, **modes)
            live_rows = live.nonzero().squeeze(-1)
            tokens[rid[live_rows], t] = tok[live_rows]
            if len(self.stop_ids) == 1:
                live = live & (tok != self.stop_ids[0])
            elif self.stop_ids:
                live = live & ~torch.isin(tok, torch.tensor(self.stop_ids, device=tok.device))
            if watch and (t == max_new - 1 or not bool(live[0])):
                watch = False
                # the same number as run()'s greedy confidence: the sum over the t + 1 steps, divided
                if float(conf[0]) / (t + 1) > cold_above:
                    return tokens, conf, True
            if t == max_new - 1:
                break
            n_live = int(live.sum())
            if n_live == 0:
                break
            # drop finished rows once they are an eighth of the batch (a rule on this batch's rows only)
            n_cur = live.shape[0]
            if n_cur - n_live >= max(1, n_cur // 8):
                keep = live.nonzero().squeeze(-1)
                cache.batch_select_indices(keep)
                rid, live, key_t, tok = rid[keep], live[keep], key_t[keep], tok[keep]
                plen, is_greedy = plen[keep], is_greedy[keep]
                if mask is not None:
                    mask = mask[keep]
            pos = (plen + t).unsqueeze(-1)
            out = self.model(
                input_ids=tok.unsqueeze(-1),
                attention_mask=None if mask is None else mask[:, : width + t + 1],
                position_ids=pos,
                past_key_values=cache,
                use_cache=True,
            )
            logits = out.logits[:, -1].float()
        return tokens, conf, False

    # -- all rows -------------------------------------------------------------------------------------
    def run(
        self,
        rows: list[tuple[int, int]],
        keys: list[int],
        *,
        cold_above: float | None = None,
        keep: Sequence[int] = (),
    ) -> tuple[list[list[int]], list[bool], np.ndarray, set[int]]:
        """Generate ``rows`` ((prompt, sample), sample -1 = greedy). Returns the generated token ids without
        eos, whether each stopped at eos, the greedy confidence (mean top-1 probability over the decoding
        steps; NaN for sampled rows) and the cold prompts: with ``cold_above`` set (unpacked only, each
        prompt's greedy row first), a prompt whose greedy confidence exceeds it has its other rows left
        empty. Prefilled prompts in ``keep`` stay stored for a later run."""
        if cold_above is not None and self.pack:
            raise ValueError("cold_above needs unpacked batches")
        out_tokens: list[list[int]] = [[] for _ in rows]
        stopped = [False] * len(rows)
        conf = np.full(len(rows), np.nan)
        cold: set[int] = set()
        batches = self.plan(rows)
        for b, batch in enumerate(batches):
            prompt_of = [rows[i][0] for i in batch]
            greedy = [rows[i][1] < 0 for i in batch]
            if prompt_of[0] not in cold:
                watch = cold_above if greedy[0] else None
                tokens, csum, cut = self.run_batch(
                    prompt_of, [keys[i] for i in batch], greedy, watch
                )
                tokens, csum = tokens.cpu(), csum.cpu()
                if cut:
                    cold.add(prompt_of[0])
                for j, i in enumerate(batch[:1] if cut else batch):
                    seq = tokens[j]
                    seq = seq[seq >= 0].tolist()
                    hit = bool(seq) and seq[-1] in self.stop_ids
                    stopped[i] = hit
                    out_tokens[i] = seq[:-1] if hit else seq
                    if greedy[j]:
                        conf[i] = float(csum[j]) / len(seq)
            # keep only the prefilled prompts that the next batch (or a later run) needs
            nxt = set(keep)
            if b + 1 < len(batches):
                nxt |= {rows[i][0] for i in batches[b + 1]}
            self._store = {p: v for p, v in self._store.items() if p in nxt}
            self.bar.update(len(batch))
        return out_tokens, stopped, conf, cold


# --------------------------------------------------------------------------------------------------------
# preparing a call


def model_device(model) -> torch.device:
    return next(model.parameters()).device


def check_settings(n: int, top_p: float, temperature: float, max_new_tokens: int, batch_size: int):
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if n < 1:
        raise ValueError(f"n (samples per prompt) must be >= 1, got {n}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")


def max_positions(model) -> int | None:
    cfg = model.config.get_text_config(decoder=True)
    return getattr(cfg, "max_position_embeddings", None)


def prepare_prompts(model, tokenizer, ids, questions, template, max_new_tokens, device):
    """Check the prompts (ids unique, fitting the context), encode them, move the model to the device.

    Returns (prompt token ids, device)."""
    if len(ids) != len(questions):
        raise ValueError(f"{len(ids)} ids but {len(questions)} questions")
    if not ids:
        raise ValueError("no prompts to sample from")
    seen: set[str] = set()
    for pid in ids:
        if pid in seen:
            raise ValueError(f"duplicate prompt id {pid!r}")
        seen.add(pid)
    prompts = [qa.prompt_ids(tokenizer, q, template) for q in questions]
    limit = max_positions(model)
    if limit is not None:
        for pid, p in zip(ids, prompts, strict=True):
            if len(p) + max_new_tokens > limit:
                raise ValueError(
                    f"prompt {pid!r}: {len(p)} prompt tokens + max_new_tokens={max_new_tokens} exceeds the "
                    f"model's context of {limit} positions"
                )
    if device is None:
        dev = model_device(model)
    else:
        dev = models.resolve_device(str(device))
        if model_device(model) != dev:
            model.to(dev)
    return prompts, dev


def make_engine(
    model,
    tokenizer,
    prompts,
    *,
    settings: tuple,
    pack: bool,
    device,
    bar,
    stops: Sequence[int] = (),
) -> Engine:
    """The decoding engine for ``settings`` = (temperature, top_p, max_new_tokens, batch_size);
    ``stops``: token ids that end an answer besides eos."""
    temperature, top_p, max_new_tokens, batch_size = settings
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (eos or 0)
    return Engine(
        model,
        prompts,
        eos=eos,
        pad=pad,
        temperature=float(temperature),
        top_p=float(top_p),
        max_new_tokens=int(max_new_tokens),
        batch_size=int(batch_size),
        pack=pack,
        device=device,
        bar=bar,
        stops=stops,
    )

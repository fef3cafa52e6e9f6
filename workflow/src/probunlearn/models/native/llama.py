"""A Llama causal LM in plain torch, op for op the same as transformers' ``LlamaForCausalLM`` (sdpa
attention), for jobs that must not pay transformers' import (about 3 s per process on 2 cores); also
Mistral without a sliding window, which computes the same, and the parts the native Phi
(:mod:`probunlearn.models.native.phi`) shares: the KV cache, the mask, ``generate`` and ``save_pretrained``.

It reads a local checkpoint that transformers wrote (``config.json`` + safetensors) when the checkpoint
is a plain Llama or Mistral this module implements (:func:`supports`); anything else (other
architectures, rope scaling, biases, adapters, hub ids) goes through transformers. Its logits,
gradients, KV cache and greedy ``generate`` equal transformers' bit for bit on the same machine
(tests/models/test_native.py); that equality is what lets a job use either.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
_GENERATION_KEYS = {
    "bos_token_id", "eos_token_id", "pad_token_id", "transformers_version", "_from_model_config",
    "max_length", "do_sample", "temperature", "top_p", "top_k", "output_attentions",
    "output_hidden_states", "use_cache",
}  # fmt: skip
"""generation_config.json keys that do not change greedy decoding."""


class Config:
    """A ``config.json`` as attributes (the keys transformers' LlamaConfig reads here)."""

    def __init__(self, values: dict[str, Any]):
        self._values = dict(values)
        self.__dict__.update(values)
        self.head_dim = values.get("head_dim") or self.hidden_size // self.num_attention_heads
        self.num_key_value_heads = values.get("num_key_value_heads") or self.num_attention_heads
        self.rms_norm_eps = float(values.get("rms_norm_eps", 1e-6))
        self.pad_token_id = values.get("pad_token_id")
        # LlamaConfig's, MistralConfig's and PhiConfig's default
        self.tie_word_embeddings = bool(values.get("tie_word_embeddings", False))
        rope = values.get("rope_parameters") or {}
        self.rope_theta = float(rope.get("rope_theta", values.get("rope_theta", 10000.0)))

    def get_text_config(self, decoder: bool = True) -> Config:
        return self

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)


ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM"}
"""model_type → the transformers class this module computes (Mistral without a sliding window is a
Llama: the same modules, the same causal mask)."""


def read_checkpoint(path: str | os.PathLike) -> dict | None:
    """The config.json of a plain local checkpoint in safetensors (no adapter, no quantization, default
    rope, a greedy generation_config.json), or None."""
    p = Path(path)
    if not (p / "config.json").is_file() or (p / "adapter_config.json").exists():
        return None
    if not ((p / WEIGHTS).is_file() or (p / WEIGHTS_INDEX).is_file()):
        return None
    try:
        cfg = json.loads((p / "config.json").read_text())
        gen = (
            json.loads((p / "generation_config.json").read_text())
            if (p / "generation_config.json").is_file()
            else {}
        )
    except (OSError, json.JSONDecodeError):
        return None
    if "quantization_config" in cfg or set(gen) - _GENERATION_KEYS or gen.get("do_sample", False):
        return None
    rope = cfg.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default" or cfg.get("rope_scaling") not in (None, {}):
        return None
    return cfg


def supports(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a local checkpoint this module computes exactly as transformers does."""
    cfg = read_checkpoint(path)
    if cfg is None:
        return False
    kind = cfg.get("model_type")
    return (
        kind in ARCHITECTURES
        and cfg.get("architectures", [ARCHITECTURES[kind]]) == [ARCHITECTURES[kind]]
        and (kind == "llama" or ("sliding_window" in cfg and cfg["sliding_window"] is None))
        and cfg.get("hidden_act", "silu") == "silu"
        and not cfg.get("attention_bias", False)
        and not cfg.get("mlp_bias", False)
        and float(cfg.get("attention_dropout", 0.0)) == 0.0
        and cfg.get("pretraining_tp", 1) == 1
    )


# --------------------------------------------------------------------------------------------------------
# KV cache: the same semantics (and class names) as transformers' DynamicLayer / Cache


class DynamicLayer:
    """Keys and values of one layer, grown by concatenation."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    def update(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = torch.cat([self.keys, k], dim=-2)
            self.values = torch.cat([self.values, v], dim=-2)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return 0 if self.keys is None else self.keys.shape[-2]


class BufferLayer:
    """A layer writing into a (rows, heads, capacity, head_dim) buffer: no concat per step.

    ``keys``/``values`` are (rows, heads, length, head_dim) views of it. The buffer grows by ``GROW``
    positions at a time, up to ``limit``: attention reads a view with little room after it, which is
    faster than a view into a buffer sized for the longest answer (same values either way)."""

    GROW = 4

    def __init__(
        self, keys: torch.Tensor, values: torch.Tensor, length: int, limit: int | None = None
    ):
        self.kbuf, self.vbuf, self.length = keys, values, length
        self.limit = keys.shape[-2] if limit is None else limit
        self._views()

    @classmethod
    def filled(
        cls,
        keys: torch.Tensor,
        values: torch.Tensor,
        capacity: int,
        rows: torch.Tensor | None = None,
    ) -> BufferLayer:
        """A layer holding (rows, heads, width, head_dim) ``keys``/``values`` (or their rows ``rows``,
        repeats allowed), with room for ``capacity`` positions."""
        layer = cls(keys, values, keys.shape[-2], capacity)
        layer._realloc(rows, keys.shape[-2])
        return layer

    def _views(self) -> None:
        self.keys = self.kbuf[:, :, : self.length]
        self.values = self.vbuf[:, :, : self.length]

    def _realloc(self, rows: torch.Tensor | None, need: int) -> None:
        """Fresh buffers for ``rows`` (None: all) with room for ``need`` positions, filled part copied."""
        cap = min(self.limit, need + self.GROW)
        n = self.kbuf.shape[0] if rows is None else rows.numel()
        shape = (n, self.kbuf.shape[1], cap, self.kbuf.shape[3])
        kbuf, vbuf = self.kbuf.new_empty(shape), self.vbuf.new_empty(shape)
        if rows is None:
            kbuf[:, :, : self.length] = self.keys
            vbuf[:, :, : self.length] = self.values
        else:
            torch.index_select(self.keys, 0, rows, out=kbuf[:, :, : self.length])
            torch.index_select(self.values, 0, rows, out=vbuf[:, :, : self.length])
        self.kbuf, self.vbuf = kbuf, vbuf
        self._views()

    def update(
        self, k: torch.Tensor, v: torch.Tensor, *_: Any, **__: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        q = k.shape[-2]
        if self.length + q > self.kbuf.shape[-2]:
            if self.length + q > self.limit:
                raise ValueError(f"KV buffer full: {self.length} + {q} > {self.limit} positions")
            self._realloc(None, self.length + q)
        self.kbuf[:, :, self.length : self.length + q] = k
        self.vbuf[:, :, self.length : self.length + q] = v
        self.length += q
        self._views()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        # copy only the filled positions, straight into fresh buffers (a full copy costs several times more)
        self._realloc(indices, self.length)


class Cache:
    """One cache layer per decoder layer."""

    def __init__(self, layers: list | None = None, num_layers: int = 0):
        self.layers = layers if layers is not None else [DynamicLayer() for _ in range(num_layers)]

    def get_seq_length(self) -> int:
        return self.layers[0].get_seq_length()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        for layer in self.layers:
            layer.batch_select_indices(indices)


# --------------------------------------------------------------------------------------------------------
# the model


class Linear(nn.Linear):
    """``nn.Linear`` without a random initialisation: the weights come from the checkpoint (a random
    init on the meta device would import torch._dynamo, about 1.4 s)."""

    def reset_parameters(self) -> None:
        pass


class Embedding(nn.Embedding):
    """``nn.Embedding`` without a random initialisation (see :class:`Linear`)."""

    def reset_parameters(self) -> None:
        pass


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(size))
        self.variance_epsilon = eps

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        dtype = h.dtype
        h = h.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * h.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """transformers' ``apply_rotary_pos_emb`` for one of q, k (``unsqueeze_dim=1``)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (x * cos) + (_rotate_half(x) * sin)


def _repeat_kv(x: torch.Tensor, n: int) -> torch.Tensor:
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n, s, d).reshape(b, h * n, s, d)


class Attention(nn.Module):
    """Llama's attention; a subclass names its output projection (``out_name``), whether the
    projections have biases, and how it rotates q and k (:meth:`rotate`)."""

    bias = False
    out_name = "o_proj"

    def __init__(self, cfg: Config, index: int):
        super().__init__()
        self.index, self.head_dim = index, cfg.head_dim
        self.groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        hidden, heads, kv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
        self.q_proj = Linear(hidden, heads * self.head_dim, bias=self.bias)
        self.k_proj = Linear(hidden, kv * self.head_dim, bias=self.bias)
        self.v_proj = Linear(hidden, kv * self.head_dim, bias=self.bias)
        setattr(self, self.out_name, Linear(heads * self.head_dim, hidden, bias=self.bias))

    def forward(self, h, cos, sin, mask, cache: Cache | None) -> torch.Tensor:
        shape = h.shape[:-1]
        hshape = (*shape, -1, self.head_dim)
        q = self.q_proj(h).view(hshape).transpose(1, 2)
        k = self.k_proj(h).view(hshape).transpose(1, 2)
        v = self.v_proj(h).view(hshape).transpose(1, 2)
        q, k = self.rotate(q, k, cos, sin)
        if cache is not None:
            k, v = cache.layers[self.index].update(k, v)
        q_len = q.shape[2]
        kwargs = {}
        if self.groups > 1:  # transformers' sdpa integration: the same three cases
            if mask is None and k.shape[-1] == v.shape[-1] <= 256:
                kwargs["enable_gqa"] = True
            elif q_len == 1:
                q = q.reshape(q.shape[0], q.shape[1] // self.groups, self.groups, q.shape[-1])
            else:
                k, v = _repeat_kv(k, self.groups), _repeat_kv(v, self.groups)
        is_causal = q_len > 1 and mask is None
        if is_causal and k.shape[2] > q_len:
            k, v = k[:, :, :q_len, :], v[:, :, :q_len, :]
        out = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            dropout_p=0.0,
            scale=self.scaling,
            is_causal=is_causal,
            **kwargs,
        )
        out = out.reshape(out.shape[0], -1, q_len, v.shape[-1]).transpose(1, 2).contiguous()
        return getattr(self, self.out_name)(out.reshape(*shape, -1).contiguous())

    def rotate(self, q, k, cos, sin) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotary embedding of every dimension."""
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)


class MLP(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.gate_proj = Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: Config, index: int):
        super().__init__()
        self.self_attn = Attention(cfg, index)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, h, cos, sin, mask, cache) -> torch.Tensor:
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, mask, cache)
        return h + self.mlp(self.post_attention_layernorm(h))


def inv_freq(theta: float, dim: int) -> torch.Tensor:
    """The default rotary inverse frequencies of ``dim`` dimensions, on the cpu even under a
    meta-device context (as transformers computes them)."""
    steps = torch.arange(0, dim, 2, dtype=torch.float, device="cpu")
    return 1.0 / (theta ** (steps / dim))


class Backbone(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.embed_tokens = Embedding(cfg.vocab_size, cfg.hidden_size, cfg.pad_token_id)
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.register_buffer("inv_freq", inv_freq(cfg.rope_theta, cfg.head_dim), persistent=False)

    def rotary(self, position_ids: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """cos and sin of the positions, in ``h``'s dtype (transformers' rotary embedding)."""
        freqs = position_ids[..., None].float() * self.inv_freq.to(
            device=h.device, dtype=torch.float
        )
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * 1.0).to(h.dtype), (emb.sin() * 1.0).to(h.dtype)

    def final_norm(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(h)


@dataclass
class Output:
    logits: torch.Tensor
    past_key_values: Cache | None = None


def causal_mask(attention_mask: torch.Tensor | None, batch: int, q_len: int, past: int):
    """transformers' sdpa mask for a 2D padding mask: None where sdpa's ``is_causal`` (or no mask) gives
    the same attention, else a (batch, 1, q, kv) boolean mask, True where a query may attend."""
    if attention_mask is None:
        return None
    kv_len = past + q_len
    pad = attention_mask.to(dtype=torch.bool)
    if pad.shape[-1] < kv_len:
        pad = F.pad(pad, (0, kv_len - pad.shape[-1]))
    view = pad[:, :kv_len] if pad.shape[-1] > kv_len else pad
    if (q_len == 1 or kv_len == q_len) and bool(view.sum() == view.numel()):
        return None
    if past == 0 and bool(view[:, :q_len].sum() == view[:, :q_len].numel()):
        rest = ~view[:, q_len:]
        if bool(rest.sum() == rest.numel()):
            return None
    dev = attention_mask.device
    q_idx = torch.arange(q_len, device=dev) + past
    kv_idx = torch.arange(kv_len, device=dev)
    mask = kv_idx[None, None, None, :] <= q_idx[None, None, :, None]
    mask = (
        mask
        & pad[torch.arange(batch, device=dev)[:, None, None, None], kv_idx[None, None, None, :]]
    )
    return mask.expand(batch, -1, q_len, kv_len)


class CausalLM(nn.Module):
    """A native causal LM (:class:`LlamaForCausalLM`, :class:`probunlearn.models.native.phi.PhiForCausalLM`):
    parameter names and order as in transformers (``model.…``, ``lm_head``); the subclass names its
    ``backbone`` (embed_tokens, layers, ``rotary``, ``final_norm``) and whether ``lm_head`` has a bias."""

    backbone: type[nn.Module] = nn.Module
    head_bias = False
    gradient_checkpointing = False

    def __init__(self, cfg: Config):
        super().__init__()
        self.config = cfg
        self.model = self.backbone(cfg)
        self.lm_head = Linear(cfg.hidden_size, cfg.vocab_size, bias=self.head_bias)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.source: Path | None = None
        self.generation_defaults: dict[str, Any] = {}

    @property
    def dtype(self) -> torch.dtype:
        return self.model.embed_tokens.weight.dtype

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.embed_tokens

    def gradient_checkpointing_enable(self) -> None:
        """In training with gradients, keep only each decoder layer's input and recompute the layer in
        the backward pass (``torch.utils.checkpoint``, non-reentrant, the random state restored): the
        same values, far less memory (transformers' method of the same name)."""
        self.gradient_checkpointing = True

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int = 0,
        **kwargs: Any,
    ) -> Output:
        if kwargs.get("labels") is not None:
            raise NotImplementedError("labels: compute the loss from the logits")
        h = self.model.embed_tokens(input_ids)
        batch, q_len = h.shape[:2]
        cache = past_key_values
        if use_cache and cache is None:
            cache = Cache(num_layers=len(self.model.layers))
        past = cache.get_seq_length() if cache is not None else 0
        if position_ids is None:
            position_ids = (torch.arange(q_len, device=h.device) + past).unsqueeze(0)
        elif attention_mask is None and cache is None:
            first = position_ids[:, :1] - 1
            if bool((torch.diff(position_ids, prepend=first, dim=-1) != 1).any()):
                raise NotImplementedError(
                    "packed sequences (position ids that restart) are not supported"
                )
        mask = causal_mask(attention_mask, batch, q_len, past)
        cos, sin = self.model.rotary(position_ids, h)
        recompute = self.gradient_checkpointing and self.training and torch.is_grad_enabled()
        if recompute:
            from torch.utils.checkpoint import checkpoint
        for layer in self.model.layers:
            if recompute:
                h = checkpoint(layer, h, cos, sin, mask, cache, use_reentrant=False)
            else:
                h = layer(h, cos, sin, mask, cache)
        h = self.model.final_norm(h)
        if logits_to_keep:
            h = h[:, -logits_to_keep:, :]
        return Output(self.lm_head(h), cache)

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        max_new_tokens: int = 20,
        do_sample: bool = False,
        pad_token_id: int | None = None,
        eos_token_id: int | list[int] | None = None,
        use_cache: bool = True,
        output_logits: bool = False,
    ):
        """Greedy decoding exactly as transformers' ``generate(do_sample=False)`` does it for this model
        (positions from the mask, the mask dropped when it is all ones, finished rows padded). Returns the
        sequences, and with ``output_logits`` also the float32 logits of every step."""
        if do_sample or not use_cache:
            raise NotImplementedError("the native model decodes greedily with a cache only")
        gen = self.generation_defaults
        eos = gen.get("eos_token_id") if eos_token_id is None else eos_token_id
        eos_ids = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        pad = pad_token_id if pad_token_id is not None else gen.get("pad_token_id")
        if pad is None and eos_ids:
            pad = eos_ids[0]
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        pos = attention_mask.long().cumsum(-1) - 1
        pos = pos.masked_fill(attention_mask == 0, 0)
        mask = None if bool((attention_mask == 1).all()) else attention_mask
        cache = Cache(num_layers=len(self.model.layers))
        unfinished = torch.ones(input_ids.shape[0], dtype=torch.long, device=input_ids.device)
        step_logits = []
        out = self(input_ids, mask, pos, cache, True, logits_to_keep=1)
        for step in range(int(max_new_tokens)):
            logits = out.logits[:, -1].to(copy=True, dtype=torch.float32, device=input_ids.device)
            if output_logits:
                step_logits.append(logits)
            nxt = torch.argmax(logits, dim=-1)
            if eos_ids:
                nxt = nxt * unfinished + pad * (1 - unfinished)
            input_ids = torch.cat([input_ids, nxt[:, None]], dim=-1)
            if eos_ids:
                unfinished = unfinished & ~torch.isin(nxt, torch.tensor(eos_ids, device=nxt.device))
            if not bool(unfinished.any()) or step + 1 == int(max_new_tokens):
                break
            pos = torch.cat([pos, pos[:, -1:] + 1], dim=-1)
            if mask is not None:
                mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
            out = self(input_ids[:, -1:], mask, pos[:, -1:], cache, True, logits_to_keep=1)
        return (input_ids, step_logits) if output_logits else input_ids

    def save_pretrained(
        self, directory: str | os.PathLike, safe_serialization: bool = True
    ) -> None:
        """config.json, generation_config.json and model.safetensors, as transformers writes them."""
        from safetensors.torch import save_file

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        values = self.config.to_dict()
        values["dtype"] = str(self.dtype).removeprefix("torch.")
        (d / "config.json").write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")
        (d / "generation_config.json").write_text(
            json.dumps(self.generation_defaults, indent=2, sort_keys=True) + "\n"
        )
        state = {
            k: v.detach().contiguous()
            for k, v in self.state_dict().items()
            if not (k == "lm_head.weight" and self.config.tie_word_embeddings)
        }
        save_file(state, str(d / WEIGHTS), metadata={"format": "pt"})


class LlamaForCausalLM(CausalLM):
    """Llama (and Mistral without a sliding window, which computes the same)."""

    backbone = Backbone


def _state(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    if (directory / WEIGHTS).is_file():
        return load_file(str(directory / WEIGHTS))
    index = json.loads((directory / WEIGHTS_INDEX).read_text())
    state: dict[str, torch.Tensor] = {}
    for shard in sorted(set(index["weight_map"].values())):
        state.update(load_file(str(directory / shard)))
    return state


def _generation_keys(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k in _GENERATION_KEYS and v is not None}


def _build(
    cfg: Config, state: dict[str, torch.Tensor], where: str, cls: type[CausalLM] = LlamaForCausalLM
) -> CausalLM:
    """The model around ``state``'s tensors (assigned, not copied), the embedding tied if configured."""
    with torch.device("meta"):
        model = cls(cfg)
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    missing = [k for k in missing if not (k == "lm_head.weight" and cfg.tie_word_embeddings)]
    if missing or unexpected:
        raise ValueError(
            f"{where}: weights do not match a {cls.__name__} (missing {missing[:3]}, "
            f"unexpected {unexpected[:3]})"
        )
    if cfg.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    model.model.inv_freq = model.model.inv_freq.to(model.model.embed_tokens.weight.device)
    return model


def from_transformers(model) -> LlamaForCausalLM:
    """The native model sharing the weights of a transformers ``LlamaForCausalLM`` (no copy)."""
    native = _build(Config(model.config.to_dict()), dict(model.state_dict()), type(model).__name__)
    native.generation_defaults = _generation_keys(model.generation_config.to_dict())
    return native.train(model.training)


def load(
    directory: str | os.PathLike,
    dtype: torch.dtype = torch.float32,
    cls: type[CausalLM] = LlamaForCausalLM,
    config: type[Config] = Config,
) -> CausalLM:
    """The checkpoint in ``directory`` (see :func:`supports`) in ``dtype``, in eval mode, on the cpu."""
    d = Path(directory)
    cfg = config(json.loads((d / "config.json").read_text()))
    model = _build(cfg, {k: v.to(dtype) for k, v in _state(d).items()}, str(d), cls)
    gen_file = d / "generation_config.json"
    model.generation_defaults = json.loads(gen_file.read_text()) if gen_file.is_file() else {}
    model.source = d
    return model.eval()

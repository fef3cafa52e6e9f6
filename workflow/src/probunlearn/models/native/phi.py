"""Phi (phi-1, phi-1.5, phi-2) in plain torch, op for op the same as transformers' ``PhiForCausalLM``
(sdpa attention), on the native Llama's cache, mask and decoding (:mod:`probunlearn.models.native.llama`).

A job that loads a local Phi checkpoint (the tofu-phi and jbb-alignment presets' models, or the tiny
stand-ins the tests build) then never imports transformers (about 4 s per process on 2 cores).
:func:`supports` accepts only what this module computes: gelu_new, no q/k layer norm, no dropout, the
default (partial) rotary embedding. Logits, gradients and greedy ``generate`` equal transformers' bit
for bit on the same machine (tests/models/test_native.py).
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
from torch import nn

from probunlearn.models.native import llama
from probunlearn.models.native.llama import Embedding, Linear


class Config(llama.Config):
    """A Phi ``config.json`` as attributes (the keys transformers' PhiConfig reads here)."""

    def __init__(self, values: dict[str, Any]):
        super().__init__(values)
        rope = values.get("rope_parameters") or {}
        factor = rope.get("partial_rotary_factor", values.get("partial_rotary_factor", 0.5))
        self.rotary_dims = int(self.head_dim * float(factor))
        self.layer_norm_eps = float(values.get("layer_norm_eps", 1e-5))


def supports(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a local Phi checkpoint this module computes exactly as transformers does."""
    cfg = llama.read_checkpoint(path)
    if cfg is None:
        return False
    return (
        cfg.get("model_type") == "phi"
        and cfg.get("architectures", ["PhiForCausalLM"]) == ["PhiForCausalLM"]
        and cfg.get("hidden_act", "gelu_new") == "gelu_new"
        and not cfg.get("qk_layernorm", False)
        and all(float(cfg.get(k, 0.0)) == 0.0 for k in ("resid_pdrop", "embd_pdrop"))
        and float(cfg.get("attention_dropout", 0.0)) == 0.0
    )


class LayerNorm(nn.LayerNorm):
    """``nn.LayerNorm`` without an initialisation (the weights come from the checkpoint)."""

    def reset_parameters(self) -> None:
        pass


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """transformers' ``NewGELUActivation`` (the tanh approximation, in its order of operations)."""
    return (
        0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    )


class Attention(llama.Attention):
    """Phi's attention: biased projections, ``dense`` out, a rotary embedding of the first
    ``rotary_dims`` dimensions of each head only."""

    bias = True
    out_name = "dense"

    def __init__(self, cfg: Config, index: int):
        super().__init__(cfg, index)
        self.rotary_dims = cfg.rotary_dims

    def rotate(self, q, k, cos, sin) -> tuple[torch.Tensor, torch.Tensor]:
        r = self.rotary_dims
        q_rot = llama.apply_rotary(q[..., :r], cos, sin)
        k_rot = llama.apply_rotary(k[..., :r], cos, sin)
        return torch.cat((q_rot, q[..., r:]), dim=-1), torch.cat((k_rot, k[..., r:]), dim=-1)


class MLP(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.fc1 = Linear(cfg.hidden_size, cfg.intermediate_size)
        self.fc2 = Linear(cfg.intermediate_size, cfg.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(gelu_new(self.fc1(x)))


class DecoderLayer(nn.Module):
    """Attention and MLP in parallel on one layer norm: ``attn + mlp + residual``."""

    def __init__(self, cfg: Config, index: int):
        super().__init__()
        self.self_attn = Attention(cfg, index)
        self.mlp = MLP(cfg)
        self.input_layernorm = LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, h, cos, sin, mask, cache) -> torch.Tensor:
        x = self.input_layernorm(h)
        return self.self_attn(x, cos, sin, mask, cache) + self.mlp(x) + h


class Backbone(llama.Backbone):
    def __init__(self, cfg: Config):
        nn.Module.__init__(self)
        self.embed_tokens = Embedding(cfg.vocab_size, cfg.hidden_size, cfg.pad_token_id)
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers))
        self.final_layernorm = LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        freqs = llama.inv_freq(cfg.rope_theta, cfg.rotary_dims)
        self.register_buffer("inv_freq", freqs, persistent=False)

    def final_norm(self, h: torch.Tensor) -> torch.Tensor:
        return self.final_layernorm(h)


class PhiForCausalLM(llama.CausalLM):
    backbone = Backbone
    head_bias = True


def load(directory: str | os.PathLike, dtype: torch.dtype = torch.float32) -> PhiForCausalLM:
    """The checkpoint in ``directory`` (see :func:`supports`) in ``dtype``, in eval mode, on the cpu."""
    return llama.load(directory, dtype, PhiForCausalLM, Config)

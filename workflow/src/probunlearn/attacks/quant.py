"""Quantization attack: the weights a model has once transformers loads it with bitsandbytes
(Zhang et al., ICLR 2025: 4-bit loading restores forgotten knowledge), computed in torch on any
device and applied as quantize-dequantize to every Linear weight except ``lm_head`` (embeddings,
biases and norms stay, as bitsandbytes leaves them).

- ``fp4`` (``load_in_4bit``'s default) and ``nf4``: blocks of ``blocksize`` (64) consecutive values
  of the flattened weight (the last block is shorter where the size is no multiple of 64), each
  block's absmax in float32 as its scale, double quantization off, as bitsandbytes' CPU backend
  computes them: a value of a full block is multiplied by the float32 reciprocal of the block's
  absmax (``w * (1 / max(absmax, 1e-38))``), a value of a shorter last block is divided by it
  (``w / max(absmax, 1e-38)``); both are clamped to [-1, 1] and mapped to the nearest of the 16 code
  values, a value exactly on the float32 midpoint of two neighbouring codes going to the lower one.
  A full block stores its absmax (0 if all zero), a shorter last block ``max(absmax, 1e-38)``
  (float32's nearest to 1e-38 where the absmax is smaller, all zero included). A value dequantizes
  to ``code * absmax`` in float32, cast to the weight's dtype. NF4's codes are QLoRA's
  normal-quantile values; FP4's are bitsandbytes' 4-bit float (1 sign, 2 exponent and 1 mantissa
  bit; magnitudes 0, 0.0625, 8, 12, 4, 6, 2, 3 in the order of the bit patterns 000..111, divided
  by 12), both zero patterns decoding to +0.
- ``int8`` (LLM.int8's weights only, ``load_in_8bit``): the weight in float16, each row's absmax
  as its scale, ``round(w * (127 / absmax))`` (half to even) as int8, dequantized as
  ``q * absmax * float32(1/127)`` in float32 (a zero row stays 0). LLM.int8 also quantizes the
  activations of its matmuls (outlier features above its threshold kept in 16 bits); that is not
  emulated here: this is the weight quantization only (docs/attacks.md measures what that leaves
  out).

Tested equal, bit for bit on the CPU, to bitsandbytes 0.50.2 (fp32, bf16 and fp16 weights;
tests/attacks/test_attacks.py): ``quantize_4bit`` (blocksize 64, fp4 and nf4; the codes and absmax) on
full blocks and shorter last blocks (1-d weights of 64k + 1, 17, 33, 41 and 63 values; 2-d and 3-d
shapes) with values on and one ulp either side of every code midpoint, and on all-zero and
subnormal blocks; ``dequantize_4bit`` where its rows are a multiple of
64 (its native CPU kernel) and on 1-d weights of odd size (its Python code); and
``int8_vectorwise_quant`` / ``int8_vectorwise_dequant``. This module never imports bitsandbytes.
Not the reference: bitsandbytes' native CPU ``dequantize_4bit`` (rows of even length) on rows that
are no multiple of 64 decodes fp4's pattern 1000 as -0.0 (+0 here and in its code table) and, on
some shapes, returns other values than its Python code (32 of the 192 values of a random (2, 96)
weight); on a row of 64 bf16 values it flushed subnormal results to zero. bitsandbytes' CUDA kernels (from their
source; not run here) multiply every block, the shorter last one included, by the reciprocal of its
absmax, storing 0 for an all-zero block, and decide the code by comparisons with decimal midpoint
constants, which may sit one float32 ulp from the midpoints used here: there a value within an ulp
of a midpoint may get the other code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probunlearn.attacks import ATTACKS, Attack, Inputs, Result, Setting, Target
from probunlearn.attacks._shared import working_copy

#: NF4 (QLoRA): the 16 code values, index = 4-bit code (sorted ascending).
NF4_CODE = (
    -1.0,
    -0.6961928009986877,
    -0.5250730514526367,
    -0.39491748809814453,
    -0.28444138169288635,
    -0.18477343022823334,
    -0.09105003625154495,
    0.0,
    0.07958029955625534,
    0.16093020141124725,
    0.24611230194568634,
    0.33791524171829224,
    0.44070982933044434,
    0.5626170039176941,
    0.7229568362236023,
    1.0,
)
#: FP4 (bitsandbytes): the magnitudes of the bit patterns 000..111 before division by 12; the
#: patterns 1xxx are their negatives (1000 is +0, as bitsandbytes' CPU table has it).
FP4_MAGNITUDES = (0.0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0)
TYPES = ("fp4", "nf4", "int8")
BLOCKSIZE = 64


def code_table(quant_type: str, device: Any = None):
    """The 16 float32 code values of ``fp4`` or ``nf4``, indexed by the 4-bit code."""
    import torch

    if quant_type == "nf4":
        return torch.tensor(NF4_CODE, dtype=torch.float32, device=device)
    if quant_type == "fp4":
        mags = torch.tensor(FP4_MAGNITUDES, dtype=torch.float32, device=device)
        return torch.cat([mags, torch.where(mags == 0, mags, -mags)]) / 12.0
    raise ValueError(f"quant_type must be 'fp4' or 'nf4', got {quant_type!r}")


def _check_blocksize(blocksize: int) -> int:
    if isinstance(blocksize, bool) or not isinstance(blocksize, int) or blocksize < 1:
        raise ValueError(f"blocksize must be a positive integer, got {blocksize!r}")
    return blocksize


def _finite(weight, name: str) -> None:
    import torch

    if not bool(torch.isfinite(weight).all()):
        raise ValueError(f"{name}: the weight has non-finite values (NaN or inf); cannot quantize")


def quantize_4bit(
    weight, quant_type: str = "fp4", blocksize: int = BLOCKSIZE, name: str = "weight"
):
    """``weight`` -> (codes, absmax): the 4-bit code of every value (uint8, the weight's shape) and
    the float32 absmax of every block of ``blocksize`` values of the flattened weight."""
    import torch

    bs = _check_blocksize(blocksize)
    code = code_table(quant_type, weight.device)
    _finite(weight, name)
    flat = weight.detach().reshape(-1).float()
    n = flat.numel()
    if n == 0:
        raise ValueError(f"{name}: cannot quantize an empty weight")
    full = n - n % bs
    body = flat[:full].view(-1, bs)
    absmax = body.abs().amax(dim=1)  # a zero block stores 0 ...
    scaled = (body * (1.0 / absmax.clamp(min=1e-38)).unsqueeze(1)).clamp(-1.0, 1.0).reshape(-1)
    if full < n:  # ... the last, shorter block stores at least 1e-38 and is divided by it
        tail_max = flat[full:].abs().amax().clamp(min=1e-38)
        absmax = torch.cat([absmax, tail_max.view(1)])
        scaled = torch.cat([scaled, (flat[full:] / tail_max).clamp(-1.0, 1.0)])
    order = torch.argsort(code, stable=True)
    ordered = code[order]
    midpoints = (ordered[:-1] + ordered[1:]) / 2
    idx = order[torch.bucketize(scaled, midpoints, right=False)]
    return idx.to(torch.uint8).reshape(weight.shape), absmax


def dequantize_4bit(codes, absmax, quant_type: str = "fp4", blocksize: int = BLOCKSIZE, dtype=None):
    """(codes, absmax) of :func:`quantize_4bit` -> ``code * absmax`` in float32, cast to ``dtype``
    (default float32)."""
    import torch

    bs = _check_blocksize(blocksize)
    code = code_table(quant_type, codes.device)
    values = code[codes.reshape(-1).long()]
    n = values.numel()
    blocks = -(-n // bs)
    if absmax.numel() != blocks:
        raise ValueError(
            f"absmax has {absmax.numel()} blocks, expected {blocks} for {n} values in blocks of {bs}"
        )
    padded = torch.nn.functional.pad(values, (0, blocks * bs - n)).view(blocks, bs)
    out = (padded * absmax.float().unsqueeze(1)).reshape(-1)[:n]
    return out.reshape(codes.shape).to(dtype or torch.float32)


def quantize_int8(weight, name: str = "weight"):
    """``weight`` -> (int8 values, float32 absmax of every row), LLM.int8's row-wise weight
    quantization of the weight in float16 (rows: every index but the last)."""
    import torch

    _finite(weight, name)
    w16 = weight.detach().to(torch.float16)
    rows = w16.reshape(-1, w16.shape[-1]) if w16.dim() else w16.reshape(1, 1)
    absmax = rows.abs().amax(dim=1).float()
    scale = 127.0 / absmax.unsqueeze(1)
    q = torch.round(rows.float() * scale)
    q = torch.where(absmax.unsqueeze(1) > 0, q, torch.zeros_like(q)).to(torch.int8)
    return q.reshape(weight.shape), absmax


def dequantize_int8(q, absmax, dtype=None):
    """(int8 values, row absmax) -> ``q * absmax * float32(1/127)`` in float32, cast to ``dtype``."""
    import torch

    rows = q.reshape(-1, q.shape[-1]) if q.dim() else q.reshape(1, 1)
    if absmax.numel() != rows.shape[0]:
        raise ValueError(f"absmax has {absmax.numel()} rows, expected {rows.shape[0]}")
    out = rows * absmax.float().view(-1, 1) * (1.0 / 127.0)
    return out.reshape(q.shape).to(dtype or torch.float32)


def fake_quantize(weight, quant_type: str, blocksize: int = BLOCKSIZE, name: str = "weight"):
    """``weight`` quantized and dequantized as bitsandbytes would (``fp4``, ``nf4`` or ``int8``),
    in the weight's dtype, on its device."""
    if quant_type == "int8":
        q, absmax = quantize_int8(weight, name)
        return dequantize_int8(q, absmax, weight.dtype)
    codes, absmax = quantize_4bit(weight, quant_type, blocksize, name)
    return dequantize_4bit(codes, absmax, quant_type, blocksize, weight.dtype)


def _kept_linear(model, name: str, module) -> bool:
    """Whether bitsandbytes loading leaves this Linear in 16 bits: ``lm_head`` (the output
    embedding) and any Linear whose weight is tied to an embedding."""
    from torch import nn

    if name.rsplit(".", 1)[-1] == "lm_head":
        return True
    get_out = getattr(model, "get_output_embeddings", None)
    if callable(get_out):
        try:
            if get_out() is module:
                return True
        except (NotImplementedError, AttributeError):
            pass
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    return id(module.weight) in embeddings


def quantize_model(
    model, quant_type: str, blocksize: int = BLOCKSIZE, model_name: str = "model"
) -> dict[str, Any]:
    """Quantize-dequantize, in place, the weight of every ``nn.Linear`` of ``model`` but
    ``lm_head`` (and Linears tied to an embedding). Returns ``quantized`` and ``kept`` (module
    names). A model with transformers' ``Conv1D`` layers (GPT-2 style) is refused."""
    import torch
    from torch import nn

    if quant_type not in TYPES:
        raise ValueError(f"quant_type must be one of {list(TYPES)}, got {quant_type!r}")
    conv1d = [n for n, m in model.named_modules() if type(m).__name__ == "Conv1D"]
    if conv1d:
        raise ValueError(
            f"model {model_name!r}: the quant attack handles nn.Linear layers, and this model has "
            f"transformers Conv1D layers (e.g. {conv1d[0]!r}), which it does not quantize"
        )
    quantized, kept = [], []
    with torch.no_grad():
        for name, module in model.named_modules():
            if not isinstance(module, nn.Linear):
                continue
            if _kept_linear(model, name, module):
                kept.append(name)
                continue
            module.weight.copy_(fake_quantize(module.weight, quant_type, blocksize, name))
            quantized.append(name)
    if not quantized:
        raise ValueError(f"model {model_name!r}: no nn.Linear weight to quantize")
    return {"quantized": quantized, "kept": kept}


class Quant(Attack):
    name = "quant"
    label = "Quantization"
    transforms = "model"
    positional = "type"
    settings = {
        "type": Setting(
            "fp4",
            {"enum": list(TYPES)},
            "fp4 (transformers' load_in_4bit default), nf4, or int8 (LLM.int8's row-wise weights "
            "only: its activation quantization is not emulated).",
        ),
    }

    def check(self, settings: Mapping[str, Any], target: Target, spec: str) -> list[str]:
        notes = super().check(settings, target, spec)
        if target.adapter:
            notes.append(
                f"model {target.name!r} is a LoRA adapter: attack {spec!r} quantizes the merged "
                "weights (base + adapter); transformers with peft would quantize the base and keep "
                "the adapter in 16 bits"
            )
        return notes

    def apply(self, inputs: Inputs, settings: Mapping[str, Any], spec: str) -> Result:
        model, merged = working_copy(inputs, spec)
        info = quantize_model(model, settings["type"], BLOCKSIZE, inputs.target.name)
        info.update(type=settings["type"], blocksize=BLOCKSIZE, merged_adapter=merged)
        if merged and not inputs.target.adapter:
            info["notes"] = [
                f"model {inputs.target.name!r} has a LoRA adapter: attack {spec!r} quantized the "
                "merged weights"
            ]
        model.eval()
        return Result(spec=spec, model=model, info=info)


ATTACKS.register(Quant())

"""Measurement: the quant:int8 attack (LLM.int8's weights only) against bitsandbytes'
``Linear8bitLt(threshold=6.0)`` in ``eval()`` on the CPU, which also quantizes the activations
row-wise and keeps their outlier columns (|x| >= 6) in 16 bits.

Three copies of a trained Llama in float32: the original, the attack's (every Linear but lm_head
quantize-dequantized by ``probunlearn.attacks.quant.quantize_model(model, "int8")``) and one whose
same Linears are ``Linear8bitLt`` built from the original weights (the rest stays float32 in all
three). Each question + answer of an eval set is one forward pass (batch 1); printed: the largest
absolute logit differences per sequence (max and mean over sequences), the largest difference of
the answer tokens' log-probabilities, the positions whose argmax token differs, and the Linears
whose input had an outlier column.

Run (after the mini run; about 20 s on 2 cores, needs the test extra's bitsandbytes):
python measurements/bench_int8_activations.py results/mini/models/target \
    results/mini/data/forget10.parquet
"""

from __future__ import annotations

import argparse
import copy

import bitsandbytes as bnb
import polars as pl
import torch
from transformers import AutoTokenizer, LlamaForCausalLM

from probunlearn.attacks import quant as Q
from probunlearn.data import qa

THRESHOLD = 6.0


def int8_lt_copy(model, names: list[str]):
    """A copy of ``model`` whose Linears ``names`` are ``Linear8bitLt(threshold=6.0)`` in eval(),
    and the Linears whose input had an outlier column (name -> number of forward passes)."""
    lt = copy.deepcopy(model)
    outliers: dict[str, int] = {}
    for name in names:
        parent_name, attr = name.rsplit(".", 1)
        parent = lt.get_submodule(parent_name)
        old = getattr(parent, attr)
        new = bnb.nn.Linear8bitLt(
            old.in_features,
            old.out_features,
            bias=old.bias is not None,
            has_fp16_weights=False,
            threshold=THRESHOLD,
        )
        new.weight = bnb.nn.Int8Params(
            old.weight.data.clone(), requires_grad=False, has_fp16_weights=False
        )
        if old.bias is not None:
            new.bias = torch.nn.Parameter(old.bias.data.clone(), requires_grad=False)
        new = new.to("cpu").eval()

        def count(module, args, name=name):
            x = args[0].reshape(-1, args[0].shape[-1])
            if bool((x.abs() >= THRESHOLD).any()):
                outliers[name] = outliers.get(name, 0) + 1

        new.register_forward_pre_hook(count)
        setattr(parent, attr, new)
    return lt.eval(), outliers


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a saved Llama (transformers directory with its tokenizer)")
    p.add_argument("evalset", help="an eval set parquet with question and answer columns")
    args = p.parse_args()
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.model)
    ref = LlamaForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    weights_only = copy.deepcopy(ref)
    info = Q.quantize_model(weights_only, "int8")
    lt, outliers = int8_lt_copy(ref, info["quantized"])
    rows = pl.read_parquet(args.evalset)
    texts = [
        qa.format_prompt(q) + " " + a for q, a in zip(rows["question"], rows["answer"], strict=True)
    ]
    diff = {"weights-only vs original": [], "Linear8bitLt vs original": []}
    diff["weights-only vs Linear8bitLt"] = []
    logprob, scale, argmax, positions = [], [], 0, 0
    with torch.no_grad():
        for text in texts:
            ids = tok(text, return_tensors="pt").input_ids
            a = ref(ids).logits[0]
            b = weights_only(ids).logits[0]
            c = lt(ids).logits[0].float()
            diff["weights-only vs original"].append((b - a).abs().max().item())
            diff["Linear8bitLt vs original"].append((c - a).abs().max().item())
            diff["weights-only vs Linear8bitLt"].append((b - c).abs().max().item())
            nxt = ids[0, 1:, None]
            lb = b.log_softmax(-1)[:-1].gather(1, nxt)
            lc = c.log_softmax(-1)[:-1].gather(1, nxt)
            logprob.append((lb - lc).abs().max().item())
            scale.append(a.abs().max().item())
            argmax += int((b.argmax(-1) != c.argmax(-1)).sum())
            positions += b.shape[0]
    print(f"{args.model}: {len(info['quantized'])} Linears quantized, kept {info['kept']}")
    print(f"{len(texts)} sequences of {args.evalset}, {positions} positions")
    print(f"largest |logit| of the original: max {max(scale):.4g}")
    for key, values in diff.items():
        v = torch.tensor(values)
        print(f"max |logit difference|, {key}: max {v.max():.4g}, mean {v.mean():.4g}")
    v = torch.tensor(logprob)
    print(f"max |log-prob difference| of the next tokens: max {v.max():.4g}, mean {v.mean():.4g}")
    print(f"argmax token differs (weights-only vs Linear8bitLt): {argmax} of {positions}")
    print(f"Linears with an outlier input column (passes of {len(texts)}): {outliers}")


if __name__ == "__main__":
    main()

"""GPU memory of NPO unlearning on a 7B/8B model, full fine-tuning against LoRA (docs/unlearning.md).

Usage:
  python benchmarks/unlearning_memory.py                     # estimate (no GPU needed)
  python benchmarks/unlearning_memory.py --measure --arch llama-1b   # measure on a CUDA GPU

The estimate counts parameters exactly (the model is built on the meta device: no memory, no download)
and adds up, in bytes: the trained weights, their gradients and AdamW's two moments, the frozen NPO
reference (a second copy of the weights with full fine-tuning; none with LoRA, whose reference is the
same weights with the adapter disabled) and the activations of one step (gradient checkpointing: one
hidden state per layer kept, one layer's working set, and the logits in fp32 for the loss).
``--measure`` runs three real NPO steps with random weights on the GPU (probunlearn.unlearning) and prints
``torch.cuda.max_memory_allocated`` beside the estimate, for each mode.
"""

from __future__ import annotations

import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM

ARCHS = {
    # Llama-2-7B (TOFU's llama2 target, MUSE's target) and Llama-3-8B (open-unlearning#179)
    "llama2-7b": dict(
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        vocab_size=32000,
    ),
    "llama3-8b": dict(
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
    ),
    "llama-1b": dict(
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
    ),
}
LORA = {
    "r": 8,
    "alpha": 16,
    "dropout": 0.0,
    "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
}
GB = 1e9


def build(arch: str, device: str = "meta", dtype=torch.bfloat16) -> LlamaForCausalLM:
    cfg = LlamaConfig(**ARCHS[arch], max_position_embeddings=4096, tie_word_embeddings=False)
    with torch.device(device):
        return LlamaForCausalLM(cfg).to(dtype)


def estimate(arch: str, batch: int, seq: int, optimizer_bytes: int) -> dict[str, float]:
    """Bytes (in GB) of NPO with full fine-tuning and with LoRA (bf16 weights)."""
    from probunlearn.unlearning import add_lora

    model = build(arch)
    p = sum(t.numel() for t in model.parameters())
    lora = add_lora(build(arch), LORA)
    p_lora = sum(t.numel() for n, t in lora.named_parameters() if "lora_" in n)
    c = model.config
    hidden = batch * seq * c.hidden_size * 2 * c.num_hidden_layers  # checkpoints, bf16
    layer = (
        batch * seq * (4 * c.hidden_size + 3 * c.intermediate_size) * 2 * 2
    )  # one layer, fwd+bwd
    logits = batch * seq * c.vocab_size * 4 * 3  # fp32 logits, log-softmax, gradient
    acts = (hidden + layer + logits) / GB
    weights = 2 * p / GB
    full = {
        "weights": weights,
        "grads": weights,
        "adam": optimizer_bytes * 2 * p / GB,
        "reference": weights,
        "activations": acts,
    }
    low = {
        "weights": weights + 4 * p_lora / GB,  # the adapter in fp32
        "grads": 4 * p_lora / GB,
        "adam": 8 * p_lora / GB,
        "reference": 0.0,
        "activations": acts,
    }
    return {
        "params": p / 1e9,
        "lora_params": p_lora / 1e6,
        "full": sum(full.values()),
        "lora": sum(low.values()),
        "full_parts": full,
        "lora_parts": low,
    }


def measure(arch: str, batch: int, seq: int, lora: bool) -> float:
    """Peak GPU memory (GB) of three NPO steps, random weights, bf16, gradient checkpointing."""
    import copy

    from probunlearn import losses, unlearning

    torch.cuda.reset_peak_memory_stats()
    model = build(arch, device="cuda")
    model.gradient_checkpointing_enable()
    if lora:
        model = unlearning.add_lora(model, LORA)
        model.enable_input_require_grads()
        ref = None
    else:
        ref = copy.deepcopy(model).eval().requires_grad_(False)
    params = [t for t in model.parameters() if t.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq), device="cuda")
    labels = ids.clone()
    for _ in range(3):
        with torch.no_grad():
            if lora:
                with model.disable_adapter():
                    ref_lp = losses.sequence_logprob(model(input_ids=ids).logits, labels)
            else:
                ref_lp = losses.sequence_logprob(ref(input_ids=ids).logits, labels)
        lp = losses.sequence_logprob(model(input_ids=ids).logits, labels)
        loss = losses.npo_loss(lp, ref_lp, None, None, beta=0.1, retain_weight=0.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() / GB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", nargs="+", default=["llama2-7b", "llama3-8b"], choices=list(ARCHS))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--adam-bytes", type=int, default=4, help="bytes per AdamW moment (4: fp32)")
    ap.add_argument("--measure", action="store_true", help="also measure on the CUDA GPU")
    a = ap.parse_args()
    print(
        f"NPO, batch {a.batch} x {a.seq} tokens, bf16 weights, AdamW moments of {a.adam_bytes} B, "
        f"LoRA r={LORA['r']} on {len(LORA['target_modules'])} projections"
    )
    for arch in a.arch:
        e = estimate(arch, a.batch, a.seq, a.adam_bytes)
        print(f"\n{arch}: {e['params']:.2f} B parameters, LoRA {e['lora_params']:.1f} M")
        for mode in ("full", "lora"):
            parts = ", ".join(f"{k} {v:.1f}" for k, v in e[f"{mode}_parts"].items())
            line = f"  {mode:4s} estimated {e[mode]:6.1f} GB  ({parts})"
            if a.measure:
                line += f"  measured {measure(arch, a.batch, a.seq, mode == 'lora'):6.1f} GB"
            print(line)


if __name__ == "__main__":
    main()

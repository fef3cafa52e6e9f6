"""GPU memory of NPO unlearning on a 7B/8B model, full fine-tuning against LoRA (docs/unlearning.md).

Usage:
  python measurements/unlearning_memory.py                     # estimate (no GPU needed)
  python measurements/unlearning_memory.py --measure --arch llama-1b   # measure on a CUDA GPU

The estimate counts parameters exactly (the model is built on the meta device: no memory, no download)
and adds up, in bytes: the trained weights, their gradients and AdamW's two moments, the frozen NPO
reference (a second copy of the weights with full fine-tuning; none with LoRA, whose reference is the
same weights with the adapter disabled) and the activations of one step (gradient checkpointing: one
hidden state per layer kept, one layer's working set, and the logits in fp32 for the loss).
``--measure`` runs three real NPO steps with random weights on the GPU (probunlearn.unlearning) and prints
``torch.cuda.max_memory_allocated`` beside the estimate, for each mode.

That estimate is what bf16 weights and gradient checkpointing would take. The workflow does neither:
``probunlearn.unlearning`` loads the model in float32 and keeps every activation of the forget and the
retain batch until one backward pass. ``--as-run`` estimates that instead, for the GPU presets
(``PRESETS``): weights, gradients and AdamW moments in fp32, the fp32 frozen reference of NPO, RMU and
DPO (none with LoRA), and the activations. The activations are *measured*: the bytes of every tensor
autograd saves for the backward pass (``torch.autograd.graph.saved_tensors_hooks``, parameters not
counted) in one forward pass and NPO's log-probabilities, on CPU, for models of the architecture's
widths with 1 and 2 decoder layers and two vocabulary sizes. That gives the bytes per token of one
decoder layer and of one vocabulary entry, which scale to the full depth, vocabulary and tokens of a
step. Tokens per step: (forget + retain sequences) × ``seq``, the padded length, which the preset's
comment in PRESETS assumes.
"""

from __future__ import annotations

import argparse
import functools

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
# Phi-1.5 (the tofu-phi preset's target), for --as-run
PHI_15 = dict(
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=24,
    num_attention_heads=32,
    partial_rotary_factor=0.5,
    vocab_size=51200,
)
# the GPU presets' unlearning step: architecture, LoRA, sequences per step (forget + retain), tokens
PRESETS = {
    # batch 32 + 32; TOFU's question and answer in Phi's format: ~65 tokens on average, ~110 for the
    # longest of 32 (at ~4 characters per token), to which a batch is padded
    "tofu-phi": dict(arch="phi-1.5", lora=False, sequences=64, seq=110),
    # the same with Llama-2's [INST] format (about the same length)
    "tofu-llama2": dict(arch="llama2-7b", lora=True, sequences=64, seq=110),
    # batch 4 + 4 chunks of MUSE's 2048 tokens
    "muse-news": dict(arch="llama2-7b", lora=True, sequences=8, seq=2048),
    # RWKU's NPO: 16 chunks of its 512 tokens (cutoff_len), the forget corpus alone (no retain)
    "rwku-llama3": dict(arch="llama3-8b", lora=False, sequences=16, seq=512),
    # the same with LoRA (RWKU's q_proj and v_proj; counted here on LORA's modules)
    "rwku-llama3-lora": dict(arch="llama3-8b", lora=True, sequences=16, seq=512),
}

# the GPU presets' fine-tuning jobs (training.train_lm: every weight trained in fp32 with AdamW, no
# frozen copy, every activation kept): architecture, sequences per step, tokens of the longest
FINETUNES = {
    # the reference models, TOFU's retain splits in batches of 16: Phi's format makes ~68 tokens on
    # average (at ~4 characters per token), 163 at most; ~128 for a length-sorted batch's longest
    "tofu-phi reference": dict(arch="phi-1.5", sequences=16, seq=128),
    # DCUE's post-processing fine-tune on Real Authors and World Facts (~25 tokens, 43 at most),
    # batch 32
    "tofu-phi postfinetune": dict(arch="phi-1.5", sequences=32, seq=48),
    # the same on Llama-2's [INST] format; the LoRA model is merged and all its weights train
    "tofu-llama2 postfinetune": dict(arch="llama2-7b", sequences=32, seq=56),
}


def build(
    arch: str, device: str = "meta", dtype=torch.bfloat16, layers: int | None = None
) -> LlamaForCausalLM:
    a = {**ARCHS[arch], **({"num_hidden_layers": layers} if layers else {})}
    cfg = LlamaConfig(**a, max_position_embeddings=4096, tie_word_embeddings=False)
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

    from probunlearn import unlearning
    from probunlearn.unlearning import losses

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


def _small(arch: str, layers: int, vocab: int):
    """A model of ``arch``'s widths with ``layers`` decoder layers and ``vocab`` entries, in fp32 on
    the CPU, with zero weights (their values do not change what autograd saves)."""
    from transformers import PhiConfig, PhiForCausalLM

    if arch == "phi-1.5":
        cfg = PhiConfig(**{**PHI_15, "num_hidden_layers": layers, "vocab_size": vocab})
        cls = PhiForCausalLM
    else:
        a = {**ARCHS[arch], "num_hidden_layers": layers, "vocab_size": vocab}
        cfg, cls = LlamaConfig(**a, tie_word_embeddings=False), LlamaForCausalLM
    with torch.device("meta"):
        model = cls(cfg)
    model = model.to_empty(device="cpu")
    with torch.no_grad():
        for t in model.parameters():
            t.zero_()
    return model


def saved_bytes(
    arch: str, layers: int, vocab: int, lora: bool, tokens: tuple[int, int], recompute: bool = False
) -> int:
    """Bytes autograd saves for backward in one forward pass and NPO's log-probabilities, on a
    model as ``probunlearn.unlearning`` trains it: native (full fine-tuning) or transformers + LoRA;
    ``recompute``: with gradient checkpointing (then only each layer's input is saved)."""
    from probunlearn import unlearning
    from probunlearn.models.native import llama, phi
    from probunlearn.unlearning import losses

    model = _small(arch, layers, vocab)
    if lora:
        model = unlearning.add_lora(model, LORA)
    elif arch == "phi-1.5":
        model = llama._build(
            phi.Config(model.config.to_dict()), dict(model.state_dict()), "Phi", phi.PhiForCausalLM
        )
    else:
        model = llama.from_transformers(model)
    if recompute and lora:
        model.activation_checkpointing_enable({"use_reentrant": False})
    elif recompute:
        model.gradient_checkpointing_enable()
    model.train()
    params = {t.untyped_storage().data_ptr() for t in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    ids = torch.zeros(tokens, dtype=torch.long)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        losses.sequence_logprob(logits, ids).sum()
    return sum(seen.values())


@functools.cache
def activation_rates(arch: str, lora: bool, recompute: bool = False) -> tuple[float, float, float]:
    """Saved bytes per token: of one decoder layer, of one vocabulary entry, and the rest."""
    b, t = 2, 32
    n = b * t
    one = saved_bytes(arch, 1, 512, lora, (b, t), recompute)
    two = saved_bytes(arch, 2, 512, lora, (b, t), recompute)
    wide = saved_bytes(arch, 1, 1024, lora, (b, t), recompute)
    per_layer = (two - one) / n
    per_vocab = (wide - one) / n / 512
    rest = one / n - per_layer - 512 * per_vocab
    return per_layer, per_vocab, rest


def as_run(
    preset: str,
    recompute: bool,
    layers: int | None = None,
    sequences: int | None = None,
    seq: int | None = None,
) -> dict[str, float]:
    """GB of one unlearning step of ``preset`` (PRESETS) as the workflow runs it: fp32, NPO (a frozen
    reference unless LoRA), with or without gradient checkpointing (``recompute``). With it, autograd
    keeps each layer's input, and the backward pass holds one layer's activations at a time.
    ``layers``, ``sequences``, ``seq``: a reduced scale (fewer decoder layers, sequences per step or
    tokens per sequence) instead of the preset's, as ``gpu_check.py`` measures it."""
    from probunlearn.unlearning import add_lora

    spec = dict(PRESETS[preset])
    spec.update({k: v for k, v in (("sequences", sequences), ("seq", seq)) if v})
    arch, lora = spec["arch"], spec["lora"]
    if arch == "phi-1.5":
        from transformers import PhiConfig, PhiForCausalLM

        with torch.device("meta"):
            model = PhiForCausalLM(
                PhiConfig(**{**PHI_15, **({"num_hidden_layers": layers} if layers else {})})
            )
    else:
        model = build(arch, layers=layers)
    p = sum(t.numel() for t in model.parameters())
    trained = p
    if lora:
        trained = sum(
            t.numel() for n, t in add_lora(model, LORA).named_parameters() if "lora_" in n
        )
    cfg = model.config
    per_layer, per_vocab, rest = activation_rates(arch, lora)
    tokens = spec["sequences"] * spec["seq"]
    per_token = cfg.num_hidden_layers * per_layer + cfg.vocab_size * per_vocab + rest
    if recompute:
        kept, _, _ = activation_rates(arch, lora, recompute=True)
        per_token = cfg.num_hidden_layers * kept + per_layer + cfg.vocab_size * per_vocab + rest
    parts = {
        "weights": 4 * (p + (trained if lora else 0)) / GB,
        "grads": 4 * trained / GB,
        "adam": 8 * trained / GB,
        "reference": 0.0 if lora else 4 * p / GB,
        "activations": tokens * per_token / GB,
    }
    return {"params": p / 1e9, "trained": trained / 1e9, "tokens": tokens, "total": sum(parts.values()),
            "parts": parts}  # fmt: skip


def finetune_as_run(job: str) -> dict[str, float]:
    """GB of one fine-tuning step of ``job`` (FINETUNES) as ``training.train_lm`` runs it: fp32
    weights, gradients and AdamW moments of every parameter, every activation kept."""
    spec = FINETUNES[job]
    if spec["arch"] == "phi-1.5":
        from transformers import PhiConfig, PhiForCausalLM

        with torch.device("meta"):
            model = PhiForCausalLM(PhiConfig(**PHI_15))
    else:
        model = build(spec["arch"])
    p = sum(t.numel() for t in model.parameters())
    per_layer, per_vocab, rest = activation_rates(spec["arch"], False)
    cfg, tokens = model.config, spec["sequences"] * spec["seq"]
    per_token = cfg.num_hidden_layers * per_layer + cfg.vocab_size * per_vocab + rest
    parts = {"weights": 4 * p / GB, "grads": 4 * p / GB, "adam": 8 * p / GB,
             "activations": tokens * per_token / GB}  # fmt: skip
    return {"params": p / 1e9, "tokens": tokens, "total": sum(parts.values()), "parts": parts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", nargs="+", default=["llama2-7b", "llama3-8b"], choices=list(ARCHS))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--adam-bytes", type=int, default=4, help="bytes per AdamW moment (4: fp32)")
    ap.add_argument("--measure", action="store_true", help="also measure on the CUDA GPU")
    ap.add_argument(
        "--as-run",
        nargs="*",
        choices=list(PRESETS),
        help="instead: the GPU presets' unlearning step as the workflow runs it (fp32, with and "
        "without gradient checkpointing), activations measured on CPU (default: every preset)",
    )
    a = ap.parse_args()
    if a.as_run is not None:
        print(
            "NPO unlearning step as probunlearn.unlearning runs it: fp32 weights, gradients and AdamW"
        )
        print("moments, fp32 frozen reference without LoRA; activations measured on CPU, in GB")
        for preset in a.as_run or list(PRESETS):
            spec = PRESETS[preset]
            mode = "LoRA" if spec["lora"] else "full fine-tuning"
            for recompute in (False, True):
                e = as_run(preset, recompute)
                parts = ", ".join(f"{k} {v:.1f}" for k, v in e["parts"].items())
                how = "with gradient checkpointing" if recompute else "every activation kept"
                print(f"  {preset}: {spec['arch']} ({e['params']:.2f} B parameters, {mode}), "
                      f"{spec['sequences']} sequences x {spec['seq']} tokens, {how}: "
                      f"{e['total']:.1f} GB ({parts})")  # fmt: skip
        print("fine-tuning step as probunlearn.training.train_lm runs it (every weight trained, fp32 "
              "AdamW, every activation kept), in GB")  # fmt: skip
        for job, spec in FINETUNES.items():
            if a.as_run and job.split()[0] not in a.as_run:
                continue
            e = finetune_as_run(job)
            parts = ", ".join(f"{k} {v:.1f}" for k, v in e["parts"].items())
            print(f"  {job}: {spec['arch']} ({e['params']:.2f} B parameters), {spec['sequences']} "
                  f"sequences x {spec['seq']} tokens: {e['total']:.1f} GB ({parts})")  # fmt: skip
        return
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

"""Benchmark probunlearn.sampling.sample_answers against transformers' ``generate``, on CPU or GPU.

Usage:
  python measurements/bench_sampling.py [--threads 2] [--prompts 4] [--n 256] [--ref-samples 8]
  python measurements/bench_sampling.py --device cuda --dtype bfloat16 --arch llama-1b   # or llama-7b
  python measurements/bench_sampling.py --arch tiny --n 8 --prompts 2                   # a smoke test
  python measurements/bench_sampling.py --wait-policy default    # OpenMP threads spin before they sleep

Every method runs side by side in one process on the same model with random weights (no download):
``--arch mini`` (the default) is a Llama the size of the mini run's (vocab ~2000, hidden 128, 4 layers);
``tiny`` a smaller one; ``llama-1b`` and ``llama-7b`` have the shapes of Llama-3.2-1B (GQA, vocab 128256)
and Llama-2-7B. Top-p 0.9, temperature 1 (transformers with top_k=0, so that all draw from the same
distribution), stopping at eos. With random weights eos is rarely drawn, so nearly every sample runs to
``--max-new-tokens``: the worst case for our sampler, which gains from dropping finished rows.

  ours: ``sample_answers`` with the native Llama (probunlearn.models.native.llama), at each ``--batch-sizes``;
  ours + transformers' model: the same engine on transformers' LlamaForCausalLM (the samples must be the
      same bytes: printed);
  (b) one ``model.generate(num_return_sequences=n)`` call per prompt;
  (a) one ``model.generate(do_sample=True)`` call per sample, batch 1 (``--ref-samples`` timed,
      extrapolated).

Then the decode step alone, for the first batch size: its time, and the fraction of the memory-bandwidth
roofline it reaches, (bytes of weights + KV cache read per step / measured copy bandwidth) / step time;
and the arithmetic it does per second against a large fp32 (or ``--dtype``) matmul's, as the fraction
of the measured peak. Last, one block of that many rows decoded with the engine's KV cache, with a static
KV cache, and (CUDA) with the static step captured as a CUDA graph, side by side
(``measurements/static_decode.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

WAIT_POLICIES = ("passive", "active", "default")


def _wait_policy(argv: list[str]) -> str | None:
    """``--wait-policy`` (None if not given), read before torch loads OpenMP, which reads
    OMP_WAIT_POLICY once."""
    for i, a in enumerate(argv):
        if a.startswith("--wait-policy="):
            return a.split("=", 1)[1]
        if a == "--wait-policy" and i + 1 < len(argv):
            return argv[i + 1]
    return None


# passive (the default): idle OpenMP threads sleep instead of spinning. On a shared machine spinning
# threads make every method several times slower and the comparison meaningless; on an idle one, waking
# a sleeping thread for each small op costs more than the op (see docs/speed.md).
_POLICY = _wait_policy(sys.argv)
if _POLICY is None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
elif _POLICY == "default":
    os.environ.pop("OMP_WAIT_POLICY", None)  # libgomp's own: spin a while, then sleep
elif _POLICY in WAIT_POLICIES:
    os.environ["OMP_WAIT_POLICY"] = _POLICY.upper()

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_models import (  # noqa: E402
    ARCHS,
    QUESTIONS,
    bandwidth,
    build,
    decode_step,
    matmul_peak,
    sync,
)
from decode_models import tokenizer as _tokenizer  # noqa: E402

from probunlearn import models, sampling  # noqa: E402
from probunlearn.data import qa  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--arch", choices=sorted(ARCHS), default="mini")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=sorted(models.DTYPES), default="float32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--ref-samples", type=int, default=8, help="samples timed for (a)")
    ap.add_argument(
        "--batch-sizes",
        default="512,256",
        help="comma-separated batch sizes (rows per forward pass) to time ours with",
    )
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument(
        "--wait-policy",
        choices=WAIT_POLICIES,
        help="OMP_WAIT_POLICY of torch's CPU threads: passive (if not given and the variable is not "
        "set), active, or default (OpenMP's own: spin a while, then sleep)",
    )
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    device, dtype = torch.device(args.device), models.resolve_dtype(args.dtype)
    tok = _tokenizer()
    hf, model = build(args.arch, tok, device, dtype)
    questions = (QUESTIONS * args.prompts)[: args.prompts]
    ids = [f"p{i}" for i in range(args.prompts)]
    prompts = [qa.prompt_ids(tok, q) for q in questions]
    n, new = args.n, args.max_new_tokens
    gen_kw = dict(do_sample=True, top_p=0.9, temperature=1.0, top_k=0, max_new_tokens=new,
                  pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)  # fmt: skip
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {args.arch} ({params / 1e6:.1f}M parameters, vocab {model.config.vocab_size}), "
          f"{args.dtype} on {device}; threads {args.threads} (OMP_WAIT_POLICY "
          f"{os.environ.get('OMP_WAIT_POLICY', 'unset')}); prompt tokens {[len(p) for p in prompts]}; "
          f"{args.prompts} prompts x n={n}, max_new_tokens={new}")  # fmt: skip

    def ours(m, bs, key="bench"):
        sync(device)
        t0 = time.perf_counter()
        df = sampling.sample_answers(m, tok, ids, questions, n=n, top_p=0.9, max_new_tokens=new,
                                     seed_key=key, batch_size=bs, progress=False)  # fmt: skip
        sync(device)
        return df, time.perf_counter() - t0

    ours(model, 64, "warm-up")  # lazy initialisation, allocator
    rates, tokens = {}, {}
    for bs in [int(b) for b in args.batch_sizes.split(",")]:
        df, t = ours(model, bs)
        samples = df.filter(~df["greedy"])
        rates[bs] = args.prompts * n / t
        tokens[bs] = float(df["n_tokens"].sum() + df["stopped_eos"].sum()) / t
        print(f"ours (batch_size={bs}): {t:.2f} s, {rates[bs]:.1f} samples/s, {tokens[bs]:.0f} tokens/s "
              f"(mean {samples['n_tokens'].mean():.1f} tokens, eos rate "
              f"{samples['stopped_eos'].mean():.3f})")  # fmt: skip
        df_hf, t_hf = ours(hf, bs)
        print(f"ours on transformers' model (batch_size={bs}): {t_hf:.2f} s, "
              f"{args.prompts * n / t_hf:.1f} samples/s; native / transformers' model = "
              f"{t_hf / t:.2f}x; same samples: {df.equals(df_hf)}")  # fmt: skip

    # (b) one generate call per prompt with num_return_sequences=n
    torch.manual_seed(0)
    sync(device)
    t0 = time.perf_counter()
    lengths = []
    with torch.inference_mode():
        for p in prompts:
            x = torch.tensor([p], device=device)
            out = hf.generate(
                x, attention_mask=torch.ones_like(x), num_return_sequences=n, **gen_kw
            )
            lengths.append(out.shape[1] - len(p))
    sync(device)
    t_b = time.perf_counter() - t0
    rate_b = args.prompts * n / t_b
    print(f"(b) generate(num_return_sequences={n}) per prompt: {t_b:.2f} s, {rate_b:.1f} samples/s "
          f"(generated lengths {lengths})")  # fmt: skip

    # (a) one generate call per sample, batch size 1
    torch.manual_seed(0)
    sync(device)
    t0 = time.perf_counter()
    toks = 0
    with torch.inference_mode():
        for i in range(args.ref_samples):
            p = prompts[i % len(prompts)]
            x = torch.tensor([p], device=device)
            out = hf.generate(x, attention_mask=torch.ones_like(x), **gen_kw)
            toks += out.shape[1] - len(p)
    sync(device)
    t_a = time.perf_counter() - t0
    rate_a = args.ref_samples / t_a
    print(f"(a) generate per sample, batch 1: {args.ref_samples} samples in {t_a:.2f} s, {rate_a:.2f} "
          f"samples/s (mean {toks / args.ref_samples:.1f} tokens); extrapolated to "
          f"{args.prompts * n} samples: {args.prompts * n / rate_a:.0f} s")  # fmt: skip
    for bs, r in rates.items():
        print(f"batch_size={bs}: ours / (a) = {r / rate_a:.1f}x, ours / (b) = {r / rate_b:.2f}x")

    # the decode step against the roofline
    bs = int(args.batch_sizes.split(",")[0])
    rows = min(bs, n + 1)
    context = max(len(p) for p in prompts) + new // 2
    step, nbytes, flops = decode_step(model, rows, context, device)
    bw, peak = bandwidth(device), matmul_peak(device, dtype)
    print(f"decode step ({rows} rows, {context} cached positions): {step * 1e3:.2f} ms, "
          f"{rows / step:.0f} tokens/s; reads {nbytes / 1e6:.1f} MB at {bw / 1e9:.1f} GB/s measured: "
          f"{nbytes / bw / step:.1%} of the bandwidth roofline; {flops / step / 1e9:.1f} GFLOP/s of a "
          f"{peak / 1e9:.1f} GFLOP/s {args.dtype} matmul: {flops / step / peak:.1%} of the peak")  # fmt: skip

    # a static KV cache and a CUDA graph against the engine's cache (measurements/static_decode.py)
    import static_decode

    print("\n".join(static_decode.compare(model, prompts[0], rows, new)))


if __name__ == "__main__":
    main()

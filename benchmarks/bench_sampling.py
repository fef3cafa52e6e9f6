"""Benchmark probunlearn.sampling.sample_answers against Hugging Face ``generate`` on CPU.

Usage: python benchmarks/bench_sampling.py [--threads 2] [--prompts 4] [--n 256] [--ref-samples 8]

All three methods run side by side in one process on the same model: a Llama the size of the mini run's
(vocab ~2000, hidden 128, intermediate 384, 4 layers, 4 heads, 256 positions) with random weights, top-p 0.9,
temperature 1 (HF: top_k=0, so that all three draw from the same distribution), max_new_tokens=64, stopping
at eos as usual. With random weights eos is rarely drawn (about 5% of samples end early), so every method
generates ~63 tokens per sample: the worst case for our sampler, which gains from dropping finished rows when
answers end early; the next-token distribution is flat, the worst case for top-p (~1700 of the 2000 tokens
are in the nucleus).

  (a) "the reference code's way": one ``model.generate(do_sample=True)`` call per sample, batch size 1
      (timed on --ref-samples samples and extrapolated);
  (b) one ``model.generate(num_return_sequences=n)`` call per prompt;
  ours: ``sample_answers`` (which also generates each prompt's greedy answer, not counted as a sample),
      at batch sizes 512 and 256 rows. With n=256 a prompt has 257 rows (greedy + samples); prompts never
      share a forward pass (see probunlearn.sampling), so batch_size=512 decodes each prompt in one block
      of 257 rows and batch_size=256 in two blocks of 129 and 128.
"""

from __future__ import annotations

import argparse
import os
import random
import time

# idle OpenMP threads sleep instead of spinning: on a shared machine spinning threads make every method
# several times slower and the comparison meaningless (set before torch starts its thread pool)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from probunlearn import models, qa, sampling  # noqa: E402

ARCH = dict(hidden_size=128, intermediate_size=384, num_layers=4, num_heads=4, max_positions=256)
QUESTIONS = [
    "What is the full name of the author born in Taipei in 1952?",
    "Which genre does Basil Mahfouz Al-Kuwaiti write in?",
    "What awards has the author received?",
    "How did the author's parents influence the themes of their novels about the sea and memory?",
]


def _tokenizer(vocab_size: int = 2000):
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    # the questions' own words are frequent, as in the mini run's corpus: prompts of ~15-25 tokens
    texts = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(3000)] + QUESTIONS * 200
    return models.train_tokenizer(texts, vocab_size)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    tok = _tokenizer()
    model = models.tiny_llama(len(tok), ARCH, seed=0, tokenizer=tok).eval()
    questions = (QUESTIONS * args.prompts)[: args.prompts]
    ids = [f"p{i}" for i in range(args.prompts)]
    prompts = [qa.prompt_ids(tok, q) for q in questions]
    n, new = args.n, args.max_new_tokens
    gen_kw = dict(do_sample=True, top_p=0.9, temperature=1.0, top_k=0, max_new_tokens=new,
                  pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)  # fmt: skip
    print(f"model: vocab {len(tok)}, {ARCH}; threads {args.threads}; prompt tokens "
          f"{[len(p) for p in prompts]}; {args.prompts} prompts x n={n}, max_new_tokens={new}")  # fmt: skip

    # warm-up (lazy initialisation, allocator)
    sampling.sample_answers(model, tok, ids[:1], questions[:1], n=4, max_new_tokens=4, seed_key="w",
                            progress=False)  # fmt: skip

    # ours, at each batch size
    rates = {}
    for bs in [int(b) for b in args.batch_sizes.split(",")]:
        t0 = time.perf_counter()
        df = sampling.sample_answers(model, tok, ids, questions, n=n, top_p=0.9, max_new_tokens=new,
                                     seed_key="bench", batch_size=bs, progress=False)  # fmt: skip
        t_ours = time.perf_counter() - t0
        samples = df.filter(~df["greedy"])
        rates[bs] = args.prompts * n / t_ours
        print(f"ours (batch_size={bs}): {t_ours:.2f} s, {rates[bs]:.1f} samples/s (mean "
              f"{samples['n_tokens'].mean():.1f} tokens, eos rate {samples['stopped_eos'].mean():.3f})")  # fmt: skip

    # (b) one generate call per prompt with num_return_sequences=n
    torch.manual_seed(0)
    t0 = time.perf_counter()
    lengths = []
    with torch.inference_mode():
        for p in prompts:
            x = torch.tensor([p])
            out = model.generate(
                x, attention_mask=torch.ones_like(x), num_return_sequences=n, **gen_kw
            )
            lengths.append(out.shape[1] - len(p))
    t_b = time.perf_counter() - t0
    rate_b = args.prompts * n / t_b
    print(f"(b) generate(num_return_sequences={n}) per prompt: {t_b:.2f} s, {rate_b:.1f} samples/s "
          f"(generated lengths {lengths})")  # fmt: skip

    # (a) one generate call per sample, batch size 1
    torch.manual_seed(0)
    t0 = time.perf_counter()
    toks = 0
    with torch.inference_mode():
        for i in range(args.ref_samples):
            p = prompts[i % len(prompts)]
            x = torch.tensor([p])
            out = model.generate(x, attention_mask=torch.ones_like(x), **gen_kw)
            toks += out.shape[1] - len(p)
    t_a = time.perf_counter() - t0
    rate_a = args.ref_samples / t_a
    print(f"(a) generate per sample, batch 1: {args.ref_samples} samples in {t_a:.2f} s, {rate_a:.2f} "
          f"samples/s (mean {toks / args.ref_samples:.1f} tokens); extrapolated to "
          f"{args.prompts * n} samples: {args.prompts * n / rate_a:.0f} s")  # fmt: skip

    for bs, ours in rates.items():
        print(f"batch_size={bs}: ratio ours / (a) = {ours / rate_a:.1f}x (target >= 30x), "
              f"ours / (b) = {ours / rate_b:.2f}x (target >= 1)")  # fmt: skip


if __name__ == "__main__":
    main()

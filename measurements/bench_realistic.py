"""The sampler as a real run uses it: prompts of different lengths, answers that end at different lengths.

    python measurements/bench_realistic.py --device cuda --dtype bfloat16 --arch llama-7b   # the target
    python measurements/bench_realistic.py --device cuda --dtype bfloat16 --arch llama-1b
    python measurements/bench_realistic.py --arch tiny --n 4 --prompts 3 --max-new-tokens 8  # smoke test

``bench_sampling.py``'s random-weight model almost never draws eos, so every row decodes to the end
and the engine never drops a row: the shapes of its forward passes repeat. Here the model is the
same (``decode_models.py``, random weights, seed 0) with the eos logit raised by a bias on the output
layer, calibrated so that eos has probability 1 / ``--mean-answer`` on average over random positions
(at the default 24, answers end after about 10 tokens, spread from 0 to ``--max-new-tokens``: the
table prints the spread), and the ``--prompts`` prompts have ``--min-prompt`` to ``--max-prompt``
tokens. So rows drop out as their samples end and new (rows, KV length) shapes keep coming, as in a
sampling job. Side by side, each in one run:

  ours                   ``probunlearn.sampling.sampler.draw_tokens`` (``sample_answers`` without its table)
                         with the native Llama, the paper preset's engine settings (``--batch-size``
                         rows per pass, ``--pack``);
  ours + transformers'   the same engine on transformers' model sharing the weights (the samples
                         must be the same: printed);
  generate(n)            ``generate(num_return_sequences=n)`` per prompt (top-p 0.9, top_k 0).

Each prints seconds, samples/s, tokens/s (generated tokens, eos included, greedy rows included for
ours) and the ratio to ``generate(n)``. No timed run profits from a warm-up with its own shapes: with
``--isolate`` (the default on CUDA) each method runs in a fresh process, which first warms up on a
prompt and sizes no timed pass has (CUDA context, cuBLAS, the allocator), and is then timed once.
Without it (the default on the CPU) the methods run one after the other in this process. Then, in
the first method's process after its timed run, the decode step of ``--roofline-rows`` rows against
the memory-bandwidth roofline (``decode_models.decode_step``: bytes of weights and KV cache read per
step over the measured copy bandwidth, divided by the step time), and with ``--static-table`` the
engine's cache against a static one and (CUDA) the static step as a CUDA graph
(``static_decode.py``). The targets of issue 37 (llama-7b shapes, bf16, one H100): ours at least 3x
``generate(n)``, and the decode step of 256+ rows at 40% or more of the roofline.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import decode_models  # noqa: E402

from probunlearn import models, sampling  # noqa: E402
from probunlearn.data import qa
from probunlearn.models.native import llama

METHODS = ("ours", "ours-hf", "generate")
LABELS = {
    "ours": "ours (native Llama)",
    "ours-hf": "ours on transformers' model",
    "generate": "generate(num_return_sequences=n)",
}
TOP_P = 0.9


# ---- the model and the prompts ---------------------------------------------------------------------


def set_eos_bias(hf, native, eos: int, value: float) -> None:
    """Give both models (which share their weights) one output bias: ``value`` on ``eos``, 0 else."""
    head = hf.lm_head
    bias = torch.zeros(head.out_features, device=head.weight.device, dtype=head.weight.dtype)
    bias[eos] = value
    bias = torch.nn.Parameter(bias, requires_grad=False)
    hf.lm_head.bias = bias
    native.lm_head.bias = bias


@torch.inference_mode()
def calibrate_eos_bias(model, eos: int, mean_answer: float, device: torch.device) -> float:
    """The bias that makes eos's probability 1 / ``mean_answer`` on average over the positions of 4
    random sequences of 50 tokens (shapes no timed pass has): at a position whose other tokens'
    log-sum-exp exceeds eos's logit by ``gap``, eos has probability sigmoid(bias - gap); bisection
    on the bias."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(4, model.config.vocab_size, (4, 50), generator=g).to(device)
    logits = model(input_ids=ids).logits.double().reshape(-1, model.config.vocab_size)
    others = torch.cat([logits[:, :eos], logits[:, eos + 1 :]], dim=-1).logsumexp(-1)
    gap = (others - logits[:, eos]).cpu()
    lo, hi, q = float(gap.min()) - 40.0, float(gap.max()) + 40.0, 1.0 / mean_answer
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(torch.sigmoid(mid - gap).mean()) < q else (lo, mid)
    return (lo + hi) / 2


def prompts_of(tok, count: int, lo: int, hi: int, seed: int = 0) -> list[str]:
    """``count`` questions of random words whose prompts (the default template) have from ``lo`` to
    ``hi`` tokens, spread evenly (a word may overshoot a target by a token or two)."""
    rng = random.Random(seed)
    words = [w for q in decode_models.QUESTIONS for w in q.split()]
    targets = [round(lo + (hi - lo) * i / max(1, count - 1)) for i in range(count)]
    out = []
    for target in targets:
        text = rng.choice(words)
        while len(qa.prompt_ids(tok, text)) < target:
            text += " " + rng.choice(words)
        out.append(text)
    return out


# ---- one method ---------------------------------------------------------------------------------


def _ours(model, tok, questions, a, key):
    ids = [f"p{i}" for i in range(len(questions))]
    drawn = sampling.draw_tokens(
        model, tok, ids, questions, n=a.n, top_p=TOP_P, max_new_tokens=a.max_new_tokens,
        seed_key=key, batch_size=a.batch_size, pack_prompts=a.pack, progress=False,
    )  # fmt: skip
    rows = [drawn.rows[(p, s)] for p in range(len(questions)) for s in range(a.n)]
    greedy = [drawn.rows[(p, -1)] for p in range(len(questions))]
    tokens = sum(len(t) + s for t, s in rows + greedy)
    return [t for t, _ in rows], [s for _, s in rows], tokens


def _generate(hf, tok, questions, a, device):
    torch.manual_seed(0)
    eos, lengths, stopped, tokens = tok.eos_token_id, [], [], 0
    kw = dict(do_sample=True, top_p=TOP_P, temperature=1.0, top_k=0,
              max_new_tokens=a.max_new_tokens, pad_token_id=tok.pad_token_id,
              eos_token_id=eos)  # fmt: skip
    with torch.inference_mode():
        for q in questions:
            p = qa.prompt_ids(tok, q)
            x = torch.tensor([p], device=device)
            out = hf.generate(x, attention_mask=torch.ones_like(x), num_return_sequences=a.n, **kw)
            for row in out[:, len(p) :].tolist():
                end = row.index(eos) if eos in row else len(row)
                lengths.append(end)
                stopped.append(end < len(row))
                tokens += min(end + 1, len(row))
    return lengths, stopped, tokens


def run_method(method: str, a, eos_bias: float | None) -> dict:
    """Build the model, warm up on other shapes, time ``method`` once; the first method also
    measures the decode step against the roofline (and the static table) afterwards."""
    device, dtype = torch.device(a.device), models.resolve_dtype(a.dtype)
    torch.set_num_threads(a.threads)
    if a.kv_grow:  # the engine's KV buffer grows by this many positions (the same samples)
        llama.BufferLayer.GROW = a.kv_grow
    tok = decode_models.tokenizer()
    hf, native = decode_models.build(a.arch, tok, device, dtype)
    if eos_bias is None:
        eos_bias = calibrate_eos_bias(native, tok.eos_token_id, a.mean_answer, device)
    set_eos_bias(hf, native, tok.eos_token_id, eos_bias)
    questions = prompts_of(tok, a.prompts, a.min_prompt, a.max_prompt)
    model = native if method == "ours" else hf
    # warm-up: one short prompt of 7 tokens or fewer, 3 samples of 4 tokens (no timed shape)
    warm = argparse.Namespace(**{**vars(a), "n": 3, "max_new_tokens": 4, "batch_size": 4})
    if method == "generate":
        _generate(hf, tok, ["Which genre?"], warm, device)
    else:
        _ours(model, tok, ["Which genre?"], warm, "warm-up")
    decode_models.sync(device)
    t0 = time.perf_counter()
    if method == "generate":
        lengths, stopped, tokens = _generate(hf, tok, questions, a, device)
        seqs = None
    else:
        seqs, stopped, tokens = _ours(model, tok, questions, a, "bench")
        lengths = [len(s) for s in seqs]
    decode_models.sync(device)
    out = {"method": method, "seconds": time.perf_counter() - t0, "tokens": tokens,
           "lengths": lengths, "stopped": stopped, "seqs": seqs, "eos_bias": eos_bias,
           "prompt_tokens": [len(qa.prompt_ids(tok, q)) for q in questions]}  # fmt: skip
    if method == a.methods[0]:
        out["lines"] = roofline_lines(native, out["prompt_tokens"], a, device)
    return out


def roofline_lines(native, prompt_tokens: list[int], a, device: torch.device) -> list[str]:
    rows = a.roofline_rows
    context = round(sum(prompt_tokens) / len(prompt_tokens)) + a.mean_answer_int // 2
    step, nbytes, _ = decode_models.decode_step(native, rows, context, device)
    bw = decode_models.bandwidth(device)
    frac = nbytes / bw / step
    lines = [
        f"decode step ({rows} live rows, {context} cached positions, the engine's KV buffer and "
        f"attention kernels): {step * 1e3:.2f} ms, {rows / step:.0f} tokens/s; reads "
        f"{nbytes / 1e9:.2f} GB at {bw / 1e9:.0f} GB/s measured copy bandwidth: {frac:.1%} of the "
        f"bandwidth roofline (target: 40% or more at 256+ rows: {'MET' if frac >= 0.4 else 'NOT MET'})"
    ]
    if a.static_table:
        import static_decode

        prompt = list(range(4, 4 + prompt_tokens[0]))
        lines += static_decode.compare(native, prompt, rows, a.static_new, reps=1)
    return lines


# ---- the table ------------------------------------------------------------------------------------


def _quantiles(xs: list[int]) -> str:
    s = sorted(xs)
    pick = [s[min(len(s) - 1, int(q * len(s)))] for q in (0.1, 0.5, 0.9)]
    return f"min {s[0]}, 10% {pick[0]}, median {pick[1]}, 90% {pick[2]}, max {s[-1]}"


def report(results: dict[str, dict], a) -> dict:
    """Print the side-by-side table; return the figures (samples/s per method, ratios, checks)."""
    first = results[a.methods[0]]
    print(f"prompts: {a.prompts} of {first['prompt_tokens']} tokens; n={a.n} samples each, "
          f"max_new_tokens={a.max_new_tokens}, top-p {TOP_P}; eos bias {first['eos_bias']:.2f} "
          f"(eos probability 1/{a.mean_answer:g} at a typical position); ours: batch_size={a.batch_size}, "
          f"pack_prompts={a.pack}; {'each method in a fresh process' if a.isolate else 'one process'}")  # fmt: skip
    figures: dict = {"samples_per_s": {}}
    base = results.get("generate")
    for m in a.methods:
        r = results[m]
        rate = a.prompts * a.n / r["seconds"]
        figures["samples_per_s"][m] = rate
        ratio = f", {base['seconds'] / r['seconds']:.2f}x generate(n)" if base else ""
        eos = sum(r["stopped"]) / len(r["stopped"])
        print(f"  {LABELS[m]:34s} {r['seconds']:8.2f} s  {rate:8.1f} samples/s  "
              f"{r['tokens'] / r['seconds']:9.0f} tokens/s{ratio}; answers: "
              f"{_quantiles(r['lengths'])} tokens, eos rate {eos:.2f}")  # fmt: skip
    if "ours" in results and "ours-hf" in results:
        same = results["ours"]["seqs"] == results["ours-hf"]["seqs"]
        figures["same_samples"] = same
        print(f"  ours and ours on transformers' model drew the same samples: {same}")
    if base and "ours" in results:
        ratio = base["seconds"] / results["ours"]["seconds"]
        figures["ours_vs_generate"] = ratio
        print(f"  ours / generate(n) = {ratio:.2f}x (target on llama-7b's shapes, bf16, one H100: "
              f"3x or more: {'MET' if ratio >= 3 else 'NOT MET'})")  # fmt: skip
    for line in first.get("lines", []):
        print(line)
    return figures


def _worker_argv(a, method: str, out: str, eos_bias: float | None) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", method, "--out", out]
    for k, v in vars(a).items():
        if k in ("worker", "out", "isolate", "eos_bias", "mean_answer_int"):
            continue
        if k == "methods":
            argv += ["--methods", ",".join(v)]
        elif isinstance(v, bool):
            argv += [f"--{k.replace('_', '-')}" if v else f"--no-{k.replace('_', '-')}"]
        else:
            argv += [f"--{k.replace('_', '-')}", str(v)]
    if eos_bias is not None:
        argv += ["--eos-bias", float(eos_bias).hex()]
    return argv


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--arch", choices=sorted(decode_models.ARCHS), default="mini")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=sorted(models.DTYPES), default="float32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--min-prompt", type=int, default=21, help="tokens of the shortest prompt")
    ap.add_argument("--max-prompt", type=int, default=43, help="tokens of the longest prompt")
    ap.add_argument("--n", type=int, default=128, help="samples per prompt")
    ap.add_argument("--mean-answer", type=float, default=24.0, help="mean answer length aimed at")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=512, help="rows per forward pass (ours)")
    ap.add_argument("--pack", action=argparse.BooleanOptionalAction, default=True,
                    help="pack_prompts (the paper preset's: on)")  # fmt: skip
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--kv-grow", type=int, default=0,
                    help="positions the engine's KV buffer grows by at a time (0: the library's, "
                    f"{llama.BufferLayer.GROW}; a large value sizes it for the whole answer at once)")  # fmt: skip
    ap.add_argument("--roofline-rows", type=int, default=257)
    ap.add_argument("--static-table", action=argparse.BooleanOptionalAction, default=False)
    ap.add_argument("--static-new", type=int, default=32, help="new tokens of the static table")
    ap.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                    help="each method in a fresh process (default: on CUDA)")  # fmt: skip
    ap.add_argument("--worker", choices=METHODS, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--eos-bias", type=float.fromhex, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.methods = [m for m in a.methods.split(",") if m]
    if not a.methods or any(m not in METHODS for m in a.methods):
        ap.error(f"--methods: a comma-separated subset of {','.join(METHODS)}")
    if not 1 < a.mean_answer:
        ap.error("--mean-answer must be > 1")
    if a.isolate is None:
        a.isolate = torch.device(a.device).type == "cuda"
    a.mean_answer_int = round(a.mean_answer)
    return a


def main(argv: list[str] | None = None) -> dict:
    a = parse(argv)
    if a.worker:  # one method, in its own process: results to --out
        res = run_method(a.worker, a, a.eos_bias)
        Path(a.out).write_text(json.dumps(res))
        return res
    results, eos_bias = {}, None
    for m in a.methods:
        if a.isolate:
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "out.json")
                subprocess.run(_worker_argv(a, m, out, eos_bias), check=True)
                results[m] = json.loads(Path(out).read_text())
        else:
            results[m] = run_method(m, a, eos_bias)
        eos_bias = results[m]["eos_bias"]  # calibrated once, by the first method
    grow = a.kv_grow or llama.BufferLayer.GROW
    print(
        f"model: {a.arch}, {a.dtype} on {a.device}; threads {a.threads}; KV buffer grows by {grow}"
    )
    return report(results, a)


if __name__ == "__main__":
    main()

"""Sequential sampling against fixed n on the default run's own models (issue 19, docs/bounds.md).

    python measurements/sequential.py --run results/mini-s0

Settings fixed in advance (issue 19): a leak is ROUGE-L recall >= 0.5 against the reference answer,
q = 0.05, alpha = 0.01, rounds of 32 samples, n_max = 1024, forget10, top-p 0.9, T = 1, 64 new
tokens. For each model (the target, NPO, and "Ours": NPO+EO at lambda_f = 1; adaptive temperature
leaves every prompt of these models warm, which the script checks and prints), this samples

  (a) fixed n: ``sample_sequential(q=None)``, every prompt n_max samples in the same rounds, and
  (b) sequential: ``sample_sequential(q=0.05)``, each prompt stopped once its anytime-valid bound
      (a Beta(1/2, 1/2) mixture confidence sequence) is below or above q,

side by side in one process, checks that (b)'s samples are a prefix of (a)'s, and prints per model:
samples and wall time of each, their ratios, the decisions of (b), the decisions a fixed-n two-sided
Clopper-Pearson interval at alpha makes on (a), the reversals (one says below, the other above)
beside their expected number's bound (alpha + alpha/2) x prompts (a reversal needs the sequential
rule or one side of the two-sided interval to be wrong; see ``reversal_bound``), and the set-level bound on the average leak probability: pooled over (a)
(``set_level_upper_bound``) and anytime-valid over (b) (``anytime_set_level_upper_bound``).
Writes ``results/sequential.csv``. Not part of the tests (about 15 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch
from scipy.special import betaincinv

from probunlearn import bounds, models, sampling, scoring

LEAK, Q, ALPHA, ROUND, N_MAX = 0.5, 0.05, 0.01, 32, 1024
MODELS = {
    "target": "target",
    "NPO": "npo-forget10-f0-r0",
    "Ours (NPO+EO)": "npo_eo-forget10-f1-r0",
}


def fixed_n_decision(leaks: int, n: int, alpha: float, q: float) -> str:
    """Two-sided Clopper-Pearson interval at level 1 - alpha against q."""
    lower = 0.0 if leaks == 0 else float(betaincinv(leaks, n - leaks + 1, alpha / 2))
    upper = 1.0 if leaks == n else float(betaincinv(leaks + 1, n - leaks, 1 - alpha / 2))
    return "below" if upper < q else "above" if lower > q else "undecided"


def reversal_bound(alpha: float, prompts: int) -> float:
    """Bound on the expected number of reversals: a prompt is reversed (one mode says below, the
    other above) only if the confidence sequence is wrong (probability <= alpha) or the side of the
    two-sided Clopper-Pearson interval at alpha that decided is wrong (<= alpha / 2)."""
    return (alpha + alpha / 2) * prompts


def run_model(run: Path, name: str, threads: int) -> dict:
    """Both modes on one model; returns the row of the table."""
    evalset = pl.read_parquet(run / "data/forget10.parquet")
    ids, questions = evalset["id"].to_list(), evalset["question"].to_list()
    refs = evalset["answer"].to_list()
    tok = models.load_tokenizer(str(run / "models/tokenizer"))
    model = models.load_model(str(run / "models" / name), device="cpu")
    torch.set_num_threads(threads)

    def score(texts: list[str], idx: list[int]) -> np.ndarray:
        return np.asarray(scoring.rouge_l(texts, [refs[i] for i in idx]))

    kw = dict(
        alpha=ALPHA,
        leak_threshold=LEAK,
        round_size=ROUND,
        n_max=N_MAX,
        seed_key=f"{name}/forget10",
        batch_size=1028,
        progress=False,
    )
    t0 = time.perf_counter()
    full, _ = sampling.sample_sequential(model, tok, ids, questions, score, q=None, **kw)
    t_full = time.perf_counter() - t0
    t0 = time.perf_counter()
    seq, dec = sampling.sample_sequential(model, tok, ids, questions, score, q=Q, **kw)
    t_seq = time.perf_counter() - t0

    joined = seq.join(full, on=["id", "sample"], how="left", suffix="_full")
    prefix = bool((joined["text"] == joined["text_full"]).all())
    sampled = full.filter(~pl.col("greedy")).sort("id", "sample")
    leaks_full = {
        i: (g["score"].to_numpy() >= LEAK).astype(float)
        for (i,), g in sampled.group_by("id", maintain_order=True)
    }
    fixed = {i: fixed_n_decision(int(v.sum()), v.size, ALPHA, Q) for i, v in leaks_full.items()}
    seq_dec = dict(zip(dec["id"], dec["decision"], strict=True))
    reversals = sum(
        {fixed[i], seq_dec[i]} == {"below", "above"} for i in ids
    )  # one says below, the other above
    agree = sum(fixed[i] == seq_dec[i] for i in ids if fixed[i] != "undecided")
    decided_fixed = sum(fixed[i] != "undecided" for i in ids)
    seq_leaks = [
        (g["score"].to_numpy() >= LEAK).astype(float)
        for _, g in seq.filter(~pl.col("greedy")).sort("id", "sample").group_by("id")
    ]
    gconf = full.filter(pl.col("greedy"))["greedy_confidence"].to_numpy()
    return {
        "model": name,
        "prompts": len(ids),
        "max_c(x)": round(float(gconf.max()), 3),
        "samples_fixed": int(sampled.height),
        "samples_sequential": int(dec["n"].sum()),
        "sample_ratio": round(sampled.height / int(dec["n"].sum()), 2),
        "seconds_fixed": round(t_full, 1),
        "seconds_sequential": round(t_seq, 1),
        "time_ratio": round(t_full / t_seq, 2),
        "prefix_identical": prefix,
        "seq_below/above/undecided": "/".join(
            str(sum(d == k for d in seq_dec.values())) for k in ("below", "above", "undecided")
        ),
        "fixed_below/above/undecided": "/".join(
            str(sum(d == k for d in fixed.values())) for k in ("below", "above", "undecided")
        ),
        "agree_where_fixed_decides": f"{agree}/{decided_fixed}",
        "reversals": reversals,
        "reversals_bound": round(reversal_bound(ALPHA, len(ids)), 3),
        "p_leak_mean": round(float(np.mean([v.mean() for v in leaks_full.values()])), 4),
        "set_bound_fixed": round(
            bounds.set_level_upper_bound(list(leaks_full.values()), ALPHA, binary=True), 4
        ),
        "avg_per_prompt_m_bin_fixed": round(
            float(np.mean([bounds.binary_leakage_bound(v, ALPHA) for v in leaks_full.values()])),
            4,
        ),
        "set_bound_sequential_anytime": round(
            bounds.anytime_set_level_upper_bound(seq_leaks, ALPHA, binary=True), 4
        ),
    }


def main() -> int:
    """Run both modes on the three models and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=Path("results/mini"), help="a finished default run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("results/sequential.csv"))
    args = ap.parse_args()
    rows = []
    for label, name in MODELS.items():
        row = {"label": label, **run_model(args.run, name, args.threads)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    table = pl.DataFrame(rows)
    total_fixed, total_seq = table["samples_fixed"].sum(), table["samples_sequential"].sum()
    print(
        f"all models: {total_fixed} samples fixed, {total_seq} sequential: "
        f"{total_fixed / total_seq:.2f}x fewer"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

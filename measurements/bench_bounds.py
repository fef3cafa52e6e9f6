"""Speed of the bounds: every metric for 10,000 prompts x 1,024 samples (target: < 1 s).

Run: ``python measurements/bench_bounds.py [--prompts 10000] [--samples 1024] [--repeat 3]``.
Scores mix what the workflow produces: binary prompts, ROUGE-like k/10 scores with an atom at 0
(ties at grid points) and continuous scores. The time of generating the scores is not counted.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from probunlearn import bounds as B


def make_scores(prompts: int, samples: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.beta(2.0, 5.0, (prompts, samples))
    third = prompts // 3
    x[:third] = rng.random((third, samples)) < 0.2
    rouge = rng.integers(0, 11, (third, samples)) / 10
    x[third : 2 * third] = np.where(rng.random((third, samples)) < 0.5, 0.0, rouge)
    return x


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--prompts", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    x = make_scores(args.prompts, args.samples)
    xb = (x > 0.5).astype(np.float64)
    print(f"{args.prompts} prompts x {args.samples} samples, best of {args.repeat}")
    rows = [
        ("summarize (every metric, 11 M_gen thresholds)", lambda: B.summarize(x)),
        ("  binary_leakage_bound (binary scores)", lambda: B.binary_leakage_bound(xb)),
        (
            "  general_leakage_bound (11 thresholds)",
            lambda: B.general_leakage_bound(x, np.arange(11) / 10),
        ),
        ("  expectation_bounds", lambda: B.expectation_bounds(x)),
        ("  expectation_upper_bound", lambda: B.expectation_upper_bound(x)),
        ("  std_upper_bound", lambda: B.std_upper_bound(x)),
        ("  ed_score", lambda: B.ed_score(x)),
    ]
    total = None
    for label, fn in rows:
        t = best_of(fn, args.repeat)
        total = t if total is None else total
        print(f"{label:<50s} {t * 1000:8.1f} ms")
    verdict = "OK" if total < 1.0 else "TOO SLOW"
    print(f"every metric for all prompts: {total:.3f} s ({verdict}, target < 1 s)")


if __name__ == "__main__":
    main()

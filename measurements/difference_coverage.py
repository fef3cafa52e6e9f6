"""Coverage of the intervals on a difference of two models on mostly-zero scores (issue 49).

    python measurements/difference_coverage.py                 # the table of docs/bounds.md
    python measurements/difference_coverage.py --reps 200 --n 16 128   # a quick look
    python measurements/difference_coverage.py --summary-of table.md   # summarise a printed table

For each scenario (laws of the two sides on [0, 1], fixed in advance; the prompts are fixed, the
randomness is the sampling), m prompts, n samples per prompt and side, alpha and statistic (mean,
population std, ED = mean + 2 std) it draws ``--reps`` sets of scores and prints how often each
interval misses theta = (1/m) sum_i [T(A_i) - c T(B_i)]:

* ``jk``: :func:`probunlearn.bounds.paired_difference` (the delete-one jackknife and the normal
  interval), two-sided at 1 - alpha; ``jk 1s``: its one-sided bound at alpha (the normal
  quantile z_{1 - alpha} around the same centre), the larger of the two sides' miss rates;
* ``new``: :func:`probunlearn.bounds.difference_interval`, two-sided at 1 - alpha (alpha / 2 per
  side); ``new 1s``: its one-sided bounds (``claim="below"`` and ``"above"``, each at alpha), the
  larger of the two sides' miss rates;

and the mean widths of the two-sided intervals. Nominal miss rates: alpha for every column. Then a
summary: per scenario, m and statistic the largest miss rate over n, and the widths at n = 128. The
new interval's misses are computed vectorised over the repetitions
(:func:`probunlearn.bounds.difference_bounds`). Scenarios (the audit's hard laws):

* ``zero-rare``: A all zero on every prompt, B rare atoms P(X = 1) = p_i ~ U(.01, .05) else 0,
  c = 1/2 ("A's std below half of B's" where A's std is .00), independent sides;
* ``rare-rare``: both sides rare atoms (independent draws of p_i), c = 1;
* ``mixed-atoms``: A alternates rare-atom prompts and all-zero prompts, B atoms at 0 (P ~ U(.5,
  .95)) and 1 with a uniform middle, c = 1/2;
* ``atoms-crn``: both sides atoms at 0 and 1 with a uniform middle, B's share at 0 is A's times .95
  (two settings of one model), common random numbers, c = 1.

m = 1 uses the first prompt of the m = 40 set. About 30 minutes on 2 cores at 2,000 repetitions.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import ndtri

from probunlearn import bounds

STATISTICS = ("mean", "std", "ed")
RHO = 2.0
PROMPTS = 40


def laws(rng: np.random.Generator, m: int) -> dict[str, tuple]:
    """scenario -> ((p0, p1) of A, (p0, p1) of B, c, common random numbers); per prompt the law
    is an atom p0 at 0, an atom p1 at 1 and a uniform middle of mass 1 - p0 - p1."""
    zero = (np.ones(m), np.zeros(m))

    def rare() -> tuple[np.ndarray, np.ndarray]:
        p = rng.uniform(0.01, 0.05, m)
        return 1.0 - p, p

    def atoms() -> tuple[np.ndarray, np.ndarray]:
        p0 = rng.uniform(0.5, 0.95, m)
        return p0, rng.uniform(0.0, 1.0 - p0) * 0.5

    ra = rare()
    mixed = (np.where(np.arange(m) % 2 == 0, ra[0], 1.0), np.where(np.arange(m) % 2 == 0, ra[1], 0))
    at = atoms()
    return {
        "zero-rare": (zero, rare(), 0.5, False),
        "rare-rare": (rare(), rare(), 1.0, False),
        "mixed-atoms": (mixed, atoms(), 0.5, False),
        "atoms-crn": (at, (at[0] * 0.95, at[1]), 1.0, True),
    }


def truth(law: tuple[np.ndarray, np.ndarray], statistic: str) -> np.ndarray:
    p0, p1 = law
    middle = 1.0 - p0 - p1
    mean = p1 + middle / 2.0
    std = np.sqrt(np.maximum(p1 + middle / 3.0 - mean**2, 0.0))
    return {"mean": mean, "std": std, "ed": mean + RHO * std}[statistic]


def draw(u: np.ndarray, mid: np.ndarray, law: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    p0, p1 = (v[:, None] for v in law)
    return np.where(u < p0, 0.0, np.where(u < p0 + p1, 1.0, mid))


def cell(rng, scenario, m: int, n: int, alpha: float, statistic: str, reps: int) -> dict:
    la, lb, c, crn = scenario
    la, lb = tuple(v[:m] for v in la), tuple(v[:m] for v in lb)
    theta = float(np.mean(truth(la, statistic) - c * truth(lb, statistic)))
    u, mid = rng.random((reps, m, n)), rng.random((reps, m, n))
    xa = draw(u, mid, la)
    xb = draw(u, mid, lb) if crn else draw(rng.random((reps, m, n)), rng.random((reps, m, n)), lb)
    kw = {"scale_b": c, "rho": RHO}
    lo, up = bounds.difference_bounds(xa, xb, statistic, alpha, **kw)
    _, up1 = bounds.difference_bounds(xa, xb, statistic, alpha, claim="below", **kw)
    lo1, _ = bounds.difference_bounds(xa, xb, statistic, alpha, claim="above", **kw)
    z1 = float(ndtri(1.0 - alpha))
    jk = []
    for a, b in zip(xa, xb, strict=True):
        d = bounds.paired_difference(a, b, statistic, alpha, **kw)
        jk.append((d.lower, d.upper, d.se))
    jk = np.array(jk)
    centre = 0.5 * (jk[:, 0] + jk[:, 1])
    return {
        "theta": theta,
        "jk": float(np.mean((jk[:, 0] > theta) | (jk[:, 1] < theta))),
        "jk 1s": float(
            max(np.mean(centre + z1 * jk[:, 2] < theta), np.mean(centre - z1 * jk[:, 2] > theta))
        ),
        "new": float(np.mean((lo > theta) | (up < theta))),
        "new 1s": float(max(np.mean(up1 < theta), np.mean(lo1 > theta))),
        "width jk": float(np.mean(jk[:, 1] - jk[:, 0])),
        "width new": float(np.mean(up - lo)),
    }


COLS = ("jk", "jk 1s", "new", "new 1s", "width jk", "width new")


def summary(rows: list[dict]) -> None:
    """Per scenario, m and statistic: the largest miss rate over n of each interval at each alpha,
    and the widths at n = 128 (alpha .01)."""
    alphas = sorted({r["alpha"] for r in rows}, reverse=True)
    head = " | ".join(f"jk / new / new 1s, alpha {a:g}" for a in alphas)
    print(f"\n| scenario | m | statistic | {head} | width jk / new (n 128, alpha .01) |")
    print("|---|---:|---|" + "---:|" * (len(alphas) + 1))
    keys = dict.fromkeys((r["scenario"], r["m"], r["statistic"]) for r in rows)
    for sc, m, st in keys:
        cell = [r for r in rows if (r["scenario"], r["m"], r["statistic"]) == (sc, m, st)]
        parts = []
        for a in alphas:
            at = [r for r in cell if r["alpha"] == a]
            worst = (f"{max(r[c] for r in at):.3f}" if at else "-" for c in ("jk", "new", "new 1s"))
            parts.append(" / ".join(worst))
        w = [r for r in cell if r["n"] == 128 and r["alpha"] == 0.01]
        width = f"{w[0]['width jk']:.3f} / {w[0]['width new']:.3f}" if w else "-"
        print(f"| {sc} | {m} | {st} | " + " | ".join(parts) + f" | {width} |")


def read_table(path: str) -> list[dict]:
    """The rows of a table this script printed (for :func:`summary` without a rerun)."""
    rows = []
    for line in open(path).read().splitlines():
        f = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(f) != 6 + len(COLS) or not f[1].isdigit():
            continue
        r = {"scenario": f[0], "m": int(f[1]), "n": int(f[2]), "alpha": float(f[3])}
        r |= {"statistic": f[4], "theta": float(f[5])}
        rows.append(r | {c: float(v) for c, v in zip(COLS, f[6:], strict=True)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--n", type=int, nargs="+", default=[16, 32, 64, 128, 384])
    ap.add_argument("--alpha", type=float, nargs="+", default=[0.1, 0.01])
    ap.add_argument("--m", type=int, nargs="+", default=[PROMPTS, 1])
    ap.add_argument("--seed", type=int, default=49)
    ap.add_argument("--summary-of", metavar="TABLE", help="only summarise a table printed before")
    args = ap.parse_args()
    if args.summary_of:
        summary(read_table(args.summary_of))
        return
    scenarios = laws(np.random.default_rng(args.seed), PROMPTS)
    rng = np.random.default_rng(args.seed + 1)
    print(f"{args.reps} repetitions per cell; miss rates, nominal alpha in every column")
    print("| scenario | m | n | alpha | statistic | theta | " + " | ".join(COLS) + " |")
    print("|---|---:|---:|---:|---|---:|" + "---:|" * len(COLS))
    start = time.time()
    rows = []
    for name, scenario in scenarios.items():
        for m in args.m:
            for n in args.n:
                for alpha in args.alpha:
                    for st in STATISTICS:
                        r = cell(rng, scenario, m, n, alpha, st, args.reps)
                        rows.append({"scenario": name, "m": m, "n": n, "alpha": alpha} | r)
                        rows[-1]["statistic"] = st
                        vals = " | ".join(f"{r[c]:.3f}" for c in COLS)
                        print(
                            f"| {name} | {m} | {n} | {alpha:g} | {st} | {r['theta']:+.3f} | {vals} |",
                            flush=True,
                        )
    summary(rows)
    print(f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()

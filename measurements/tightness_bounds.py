"""Tightness of the bounds: mean (bound - truth) over batches, beside the reference code `conbo`.

Run: ``python measurements/tightness_bounds.py [--batches 200] [--alpha 0.01]``. Prints a markdown
table (recorded in docs/bounds.md). With ``--run results/mini`` it prints instead, on a finished
run's own samples (forget10, setting main: the target, NPO and NPO+EO at lambda_f = 1), the paper's
bounds beside the variance-adaptive ones (issue 42) and the samples a sequential sampler needs to
decide at the same alpha, replayed on the stored samples (see :func:`run_table`). For every distribution and n it draws ``--batches`` batches of
n scores and reports, for M_bin (binary scores only), M_gen(0.5), M_mu and M_sigma, the mean
excess of the bound over the true value and the share of batches where the bound is below the
truth ("miss"; a valid bound misses in at most alpha of the batches).

The comparison column uses `conbo` 0.1.1 (the authors' reference code; ``pip install --no-deps
conbo``) on the same samples, called as its docstrings advise: one-sided uses pass 2 alpha to its
two-sided functions, std_bounds gets alpha. conbo imports statsmodels only for
``proportion_confint`` (binomial_bounds); when statsmodels is missing it is stubbed here with the
same Clopper-Pearson formula (scipy's beta quantiles), so conbo's M_bin column is exact either way.
Without conbo the conbo columns are left out.
"""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

import numpy as np
from scipy import stats

from probunlearn import bounds as B


def _import_conbo():
    try:
        import statsmodels.stats.proportion  # noqa: F401
    except ImportError:

        def proportion_confint(count, nobs, alpha=0.05, method="beta"):
            assert method == "beta"
            count = np.asarray(count, dtype=float)
            lo = np.where(count > 0, stats.beta.ppf(alpha / 2, count, nobs - count + 1), 0.0)
            hi = np.where(count < nobs, stats.beta.ppf(1 - alpha / 2, count + 1, nobs - count), 1.0)
            return lo, hi

        mod = types.ModuleType("statsmodels.stats.proportion")
        mod.proportion_confint = proportion_confint
        for name in ("statsmodels", "statsmodels.stats"):
            sys.modules.setdefault(name, types.ModuleType(name))
        sys.modules["statsmodels.stats.proportion"] = mod
    try:
        import conbo
    except ImportError:
        return None
    return conbo


ROUGE_VALUES = np.arange(11) / 10
ROUGE_PROBS = np.array([40, 5, 5, 8, 8, 8, 6, 5, 5, 4, 6]) / 100


def distributions():
    """name -> (sampler, mean, std, P(X > 0.5), binary)."""
    rouge_mean = float(ROUGE_VALUES @ ROUGE_PROBS)
    rouge_std = float(np.sqrt(((ROUGE_VALUES - rouge_mean) ** 2) @ ROUGE_PROBS))
    beta = stats.beta(2, 5)
    return {
        "Bernoulli(0.1)": (lambda r, s: (r.random(s) < 0.1) * 1.0, 0.1, 0.3, 0.1, True),
        "Bernoulli(0.5)": (lambda r, s: (r.random(s) < 0.5) * 1.0, 0.5, 0.5, 0.5, True),
        "ROUGE k/10, 40% at 0": (
            lambda r, s: ROUGE_VALUES[r.choice(11, size=s, p=ROUGE_PROBS)],
            rouge_mean,
            rouge_std,
            float(ROUGE_PROBS[ROUGE_VALUES > 0.5].sum()),
            False,
        ),
        "Beta(2,5)": (lambda r, s: r.beta(2, 5, s), beta.mean(), beta.std(), beta.sf(0.5), False),
    }


RUN_MODELS = {
    "target": "target",
    "NPO": "npo-forget10-f0-r0",
    "NPO+EO (lambda_f 1)": "npo_eo-forget10-f1-r0",
}
LEAK, Q, ROUND, N_PAPER = 0.5, 0.05, 32, 1024


def _rows(path: Path) -> list[np.ndarray]:
    """The sampled ROUGE-L recall of each prompt, in sample order."""
    import polars as pl

    s = pl.read_parquet(path).filter(~pl.col("greedy")).sort("id", "sample")
    return [
        g["rougeL_recall"].to_numpy().astype(float)
        for _, g in s.group_by("id", maintain_order=True)
    ]


def _decide(x: np.ndarray, alpha: float, q: float, kind: str) -> int:
    """Samples a sequential sampler uses on x (rounds of ROUND; x's length is n_max): the first
    round end where the anytime bound is below or above q. ``kind``: mixture-leak (today: Beta
    mixture on leak = score >= LEAK), betting-leak, mixture-mean (normal mixture on E[score]),
    betting-mean."""
    ends = np.arange(ROUND, x.size + 1, ROUND)
    v = (x >= LEAK).astype(float) if kind.endswith("leak") else x
    if kind.startswith("betting"):
        lo, up = B.betting_confidence_sequence(v, alpha, times=ends)
    else:
        cs = B.binary_confidence_sequence if kind.endswith("leak") else B.mean_confidence_sequence
        lo, up = (a[ends - 1] for a in cs(v, alpha))
    hit = (up < q) | (lo > q)
    return int(ends[np.argmax(hit)]) if hit.any() else int(x.size)


def run_table(run: Path, alpha: float) -> None:
    """Side by side on a run's samples: widths of M_mu and M_gen today against the new bounds,
    the anytime set-level bound, and the samples the sequential sampler needs (replayed)."""
    t = np.array([0.0, 0.5])
    print(f"run {run}, forget10, setting main, ROUGE-L recall, alpha = {alpha}\n")
    print(
        "| model | prompts x n | mean | M_mu - mean | m_mu_bet - mean | M_gen(0) - S_n(0) | "
        "m_gen_cp(0) - S_n(0) | M_gen(.5) - S_n(.5) | m_gen_cp(.5) - S_n(.5) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    seq = []
    for label, model in RUN_MODELS.items():
        path = run / "scores" / model / "forget10" / "main.parquet"
        if not path.exists():
            print(f"| {label} | (no {path}) |")
            continue
        rows = _rows(path)
        x = np.stack(rows)
        mean = x.mean(axis=1)
        surv = np.stack([(x > v).mean(axis=1) for v in t], axis=1)
        m_mu = B.expectation_upper_bound(x, alpha)
        bet = B.betting_upper_bound(x, alpha)
        gen = B.general_leakage_bound(x, t, alpha)
        cp = B.general_leakage_bound_cp(x, B.default_thresholds(), alpha)[:, [0, 5]]
        cells = [label, f"{x.shape[0]} x {x.shape[1]}", f"{mean.mean():.3f}"]
        cells += [f"{np.mean(b - mean):+.3f}" for b in (m_mu, bet)]
        for j in range(2):
            cells += [
                f"{np.mean(gen[:, j] - surv[:, j]):+.3f}",
                f"{np.mean(cp[:, j] - surv[:, j]):+.3f}",
            ]
        print("| " + " | ".join(cells) + " |")
        seq.append((label, rows))
    kinds = ["mixture-leak", "betting-leak", "mixture-mean", "betting-mean"]
    print(
        f"\nSequential decision replayed on the stored samples (rounds of {ROUND}, q = {Q}, n_max = "
        f"the stored n): samples used per kind; 'x vs {N_PAPER}' counts an undecided prompt at "
        f"{N_PAPER} (it would go on sampling), so it is a lower bound on the ratio at n_max = "
        f"{N_PAPER}. leak: P(ROUGE-L >= {LEAK}) vs q (today: mixture); mean: E[ROUGE-L] vs q.\n"
    )
    print("| model | kind | samples used | undecided | x fewer than stored n | x fewer vs 1024 |")
    print("|---|---|---:|---:|---:|---:|")
    totals = {k: [0, 0, 0] for k in kinds}
    for label, rows in seq:
        for k in kinds:
            used = np.array([_decide(r, alpha, Q, k) for r in rows])
            n = np.array([r.size for r in rows])
            undecided = used == n  # at n_max (a decision at the last round also counts here)
            vs1024 = len(rows) * N_PAPER / np.where(undecided, N_PAPER, used).sum()
            totals[k][0] += int(used.sum())
            totals[k][1] += int(n.sum())
            totals[k][2] += int(np.where(undecided, N_PAPER, used).sum())
            print(
                f"| {label} | {k} | {used.sum()} | {int(undecided.sum())} | "
                f"{n.sum() / used.sum():.2f} | {vs1024:.2f} |"
            )
    for k, (used, n, full) in totals.items():
        prompts = full and sum(len(r) for _, r in seq)
        print(f"| all | {k} | {used} | | {n / used:.2f} | {prompts * N_PAPER / full:.2f} |")
    print("\nAnytime set-level bound on the average P(leak), each prompt stopped as mixture-leak:")
    for label, rows in seq:
        stopped = [(r[: _decide(r, alpha, Q, "mixture-leak")] >= LEAK).astype(float) for r in rows]
        two = B.anytime_set_level_upper_bound(stopped, alpha, binary=True)
        one = B.anytime_set_level_upper_bound(
            stopped, alpha, binary=True, method="one_sided", correction="sidak"
        )
        pooled = B.set_level_upper_bound(
            [(r >= LEAK).astype(float) for r in rows], alpha, binary=True
        )
        rate = np.mean([(r >= LEAK).mean() for r in rows])
        print(
            f"- {label}: average leak rate {rate:.3f}; pooled fixed-n {pooled:.3f}; anytime "
            f"two-sided mixture (Bonferroni) {two:.3f}; one-sided (Sidak) {one:.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--sizes", default="128,1024,8192")
    ap.add_argument("--run", type=Path, default=None, help="a finished run: its own samples")
    args = ap.parse_args()
    alpha = args.alpha
    if args.run is not None:
        run_table(args.run, alpha)
        return
    conbo = _import_conbo()
    rng = np.random.default_rng(0)
    head = "| distribution | n | metric | truth | ours: bound - truth | ours: miss |"
    line = "|---|---:|---|---:|---:|---:|"
    if conbo is not None:
        head += " conbo: bound - truth | conbo: miss |"
        line += "---:|---:|"
    else:
        print("conbo is not installed: only our bounds are shown\n")
    print(f"alpha = {alpha}, {args.batches} batches per row, bins = 100 (conbo: stepsize = 100)\n")
    print(head)
    print(line)
    for name, (sample, mean, std, sf05, binary) in distributions().items():
        for n in (int(v) for v in args.sizes.split(",")):
            x = sample(rng, (args.batches, n))
            ours = B.summarize(x, alpha=alpha, thresholds=[0.5])
            rows = []
            if binary:
                rows.append(("M_bin", mean, ours["m_bin"].to_numpy()))
            rows += [
                ("M_gen(0.5)", sf05, ours["m_gen_0.5"].to_numpy()),
                ("M_mu", mean, ours["m_mu"].to_numpy()),
                ("M_sigma", std, ours["m_sigma"].to_numpy()),
            ]
            ref = {}
            if conbo is not None:
                if binary:
                    ref["M_bin"] = np.asarray(conbo.binomial_bounds(x, alpha=2 * alpha)[1])
                ref["M_gen(0.5)"] = np.asarray(conbo.survival_bounds(x, [0.5], alpha=2 * alpha)[2])
                ref["M_mu"] = np.asarray(conbo.expectation_bounds(x, alpha=2 * alpha)[2])
                ref["M_sigma"] = np.asarray(conbo.std_bounds(x, alpha=alpha)[2])
            for metric, truth, bound in rows:
                cells = [name, str(n), metric, f"{truth:.4f}"]
                cells += [f"{np.mean(bound - truth):+.4f}", f"{np.mean(bound < truth - 1e-12):.1%}"]
                if conbo is not None:
                    r = ref[metric].reshape(-1)
                    cells += [f"{np.mean(r - truth):+.4f}", f"{np.mean(r < truth - 1e-12):.1%}"]
                print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

"""Tightness of the bounds: mean (bound - truth) over batches, beside the reference code `conbo`.

Run: ``python benchmarks/tightness_bounds.py [--batches 200] [--alpha 0.01]``. Prints a markdown
table (recorded in docs/bounds.md). For every distribution and n it draws ``--batches`` batches of
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--sizes", default="128,1024,8192")
    args = ap.parse_args()
    alpha = args.alpha
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

"""Benchmark: probunlearn.scoring.rouge_l vs a plain rouge_score loop, and self_bleu vs nltk.

Workload: 1,000 prompts x 1,000 sampled answers = 1,000,000 (sample, reference) pairs. Each prompt
has a reference answer of 10-40 words; its samples are drawn (Zipf-like weights) from a pool of
10-30 % distinct texts made by mutating the reference, as sampled answers of a small LM repeat a lot.
The rouge_score loop is timed on a random subsample of 10,000 pairs and extrapolated.

Run: python measurements/bench_rouge.py  (about a minute on 2 cores)
"""

from __future__ import annotations

import random
import time

import numpy as np
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer

from probunlearn.scoring import rouge_l, self_bleu, self_bleu_scores
from probunlearn.scoring.self_bleu import _word_tokenize

N_PROMPTS = 1_000
N_SAMPLES = 1_000
N_LOOP = 10_000
SEED = 0

_STEMS = [
    "write",
    "publish",
    "novel",
    "author",
    "born",
    "city",
    "award",
    "mother",
    "father",
    "teacher",
    "story",
    "book",
    "series",
    "dragon",
    "forest",
    "river",
    "king",
    "queen",
    "war",
    "peace",
    "science",
    "fiction",
    "mystery",
    "poem",
    "history",
    "family",
    "travel",
    "journey",
    "secret",
    "magic",
    "school",
    "friend",
    "letter",
    "garden",
    "winter",
    "summer",
    "light",
    "shadow",
    "sea",
]
_SUFFIXES = ["", "s", "ed", "ing", "er", "ers", "ly"]
_FILLER = (
    "the a an of in on and or but with for to from by at is was were has had their his her".split()
)


def _vocabulary(rng: random.Random) -> list[str]:
    words = [s + x for s in _STEMS for x in _SUFFIXES] + _FILLER * 4
    words += [f"{rng.randint(1900, 2024)}" for _ in range(20)] + [
        "Dr.",
        "U.S.",
        "it's",
        "co-author",
    ]
    return words


def _mutate(words: list[str], vocab: list[str], rng: random.Random, rate: float) -> list[str]:
    out: list[str] = []
    for w in words:
        u = rng.random()
        if u < rate / 3:
            continue  # drop
        if u < 2 * rate / 3:
            out.append(rng.choice(vocab))  # substitute
        else:
            out.append(w)
        if rng.random() < rate / 3:
            out.append(rng.choice(vocab))  # insert
    return out


def make_workload(seed: int = SEED) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    preds: list[str] = []
    refs: list[str] = []
    for _ in range(N_PROMPTS):
        ref_words = [rng.choice(vocab) for _ in range(rng.randint(10, 40))]
        reference = " ".join(ref_words).capitalize() + "."
        n_distinct = int(N_SAMPLES * rng.uniform(0.10, 0.30))
        pool = []
        for _ in range(n_distinct):
            words = _mutate(ref_words, vocab, rng, rate=rng.uniform(0.0, 0.9))
            text = " ".join(words)
            if rng.random() < 0.5:
                text = text.capitalize() + rng.choice([".", "!", " ...", ", he said."])
            pool.append(text)
        weights = [1.0 / (k + 1) for k in range(n_distinct)]  # Zipf-like: a few answers dominate
        preds.extend(rng.choices(pool, weights=weights, k=N_SAMPLES))
        refs.extend([reference] * N_SAMPLES)
    return preds, refs


def bench_rouge() -> None:
    t0 = time.perf_counter()
    preds, refs = make_workload()
    n = len(preds)
    n_distinct = len(set(zip(preds, refs, strict=True)))
    print(
        f"workload: {n:,} pairs, {n_distinct:,} distinct (sample, reference) pairs "
        f"({n_distinct / n:.1%}), built in {time.perf_counter() - t0:.1f} s"
    )

    t0 = time.perf_counter()
    ours = rouge_l(preds, refs, kind="recall")
    t_ours = time.perf_counter() - t0
    print(f"rouge_l (probunlearn): {t_ours:.2f} s for {n:,} pairs")

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    idx = np.random.default_rng(SEED).choice(n, N_LOOP, replace=False)
    t0 = time.perf_counter()
    loop = [scorer.score(refs[i], preds[i])["rougeL"] for i in idx]
    t_loop = time.perf_counter() - t0
    t_loop_full = t_loop * n / N_LOOP
    print(
        f"rouge_score loop: {t_loop:.2f} s for {N_LOOP:,} pairs -> {t_loop_full:.0f} s "
        f"extrapolated to {n:,}"
    )
    identical = bool(np.array_equal(np.array([s.recall for s in loop]), ours[idx]))
    sub_preds, sub_refs = [preds[i] for i in idx], [refs[i] for i in idx]
    for kind in ("precision", "fmeasure"):
        same = np.array_equal(
            np.array([getattr(s, kind) for s in loop]), rouge_l(sub_preds, sub_refs, kind=kind)
        )
        identical &= bool(same)
    print(
        f"recall, precision, fmeasure identical (==) on the {N_LOOP:,}-pair subsample: {identical}"
    )
    ratio = t_loop_full / t_ours
    print(f"speed-up: {ratio:.0f}x")
    assert identical, "rouge_l differs from rouge_score"
    assert ratio >= 10, f"speed-up {ratio:.1f}x < 10x"


def bench_self_bleu() -> None:
    preds, _ = make_workload_one_prompt()
    t0 = time.perf_counter()
    value = self_bleu(preds)
    t_ours = time.perf_counter() - t0
    print(
        f"self_bleu (probunlearn): n={len(preds)}, {t_ours * 1e3:.0f} ms, self-BLEU = {value:.4f}"
    )

    n_small = 96
    small = preds[:n_small]
    toks = [_word_tokenize(t) for t in small]
    smooth = SmoothingFunction().method1
    t0 = time.perf_counter()
    ref_vals = [
        sentence_bleu(toks[:i] + toks[i + 1 :], toks[i], (0.25,) * 4, smoothing_function=smooth)
        for i in range(n_small)
    ]
    t_nltk = time.perf_counter() - t0
    t_nltk_full = t_nltk * (len(preds) * (len(preds) - 1)) / (n_small * (n_small - 1))
    same = bool(np.array_equal(np.array(ref_vals, dtype=float), self_bleu_scores(small)))
    print(
        f"nltk sentence_bleu loop: n={n_small}, {t_nltk:.2f} s -> {t_nltk_full:.0f} s "
        f"extrapolated (quadratic) to n={len(preds)}; speed-up {t_nltk_full / t_ours:.0f}x; "
        f"per-sample values identical at n={n_small}: {same}"
    )
    assert same, "self_bleu_scores differs from nltk"


def make_workload_one_prompt(seed: int = SEED + 1) -> tuple[list[str], str]:
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    ref_words = [rng.choice(vocab) for _ in range(30)]
    pool = [" ".join(_mutate(ref_words, vocab, rng, rng.uniform(0, 0.9))) for _ in range(250)]
    weights = [1.0 / (k + 1) for k in range(len(pool))]
    return rng.choices(pool, weights=weights, k=1024), " ".join(ref_words)


if __name__ == "__main__":
    t_start = time.perf_counter()
    bench_rouge()
    bench_self_bleu()
    print(f"total benchmark time: {time.perf_counter() - t_start:.0f} s")

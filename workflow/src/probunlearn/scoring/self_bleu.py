"""Self-BLEU of Texygen (Zhu et al., 2018), exactly nltk's arithmetic in O(n L), and diversity =
1 - Self-BLEU (see :mod:`probunlearn.scoring` for the library choice).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from probunlearn.scoring.validate import check_texts

# ----------------------------------------------------------------------------------------------
# Self-BLEU
# ----------------------------------------------------------------------------------------------

_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
_NLTK_WORD_TOKENIZER: Any = None


def _word_tokenize(text: str) -> list[str]:
    global _NLTK_WORD_TOKENIZER
    if _NLTK_WORD_TOKENIZER is None:
        from nltk.tokenize import NLTKWordTokenizer

        _NLTK_WORD_TOKENIZER = NLTKWordTokenizer()
    tok = _NLTK_WORD_TOKENIZER.tokenize
    return [t for sent in _SENTENCE_END_RE.split(text) if sent for t in tok(sent)]


def _resolve_tokenizer(tokenizer: str | Callable[[str], Sequence[str]]) -> Callable[[str], Any]:
    if callable(tokenizer):
        return tokenizer
    if tokenizer == "word":
        return _word_tokenize
    if tokenizer == "whitespace":
        return str.split
    raise ValueError(f"tokenizer must be 'word', 'whitespace' or a callable, got {tokenizer!r}")


def _ngram_counts(tokens: tuple[str, ...], n: int) -> Counter[tuple[str, ...]]:
    if len(tokens) < n:
        return Counter()
    return Counter(zip(*(tokens[k:] for k in range(n)), strict=False))


def _bleu_from_stats(
    numerators: list[int], denominators: list[int], hyp_len: int, ref_len: int, weights: float
) -> float:
    """nltk's sentence_bleu arithmetic (SmoothingFunction().method1, epsilon 0.1), operation by
    operation, from clipped n-gram counts and the closest reference length."""
    if numerators[0] == 0:
        return 0.0
    p_n = [
        (num + 0.1) / den if num == 0 else num / den
        for num, den in zip(numerators, denominators, strict=True)
    ]
    s = math.fsum(weights * math.log(p) for p in p_n if p > 0)
    if hyp_len > ref_len:
        bp = 1.0
    elif hyp_len == 0:
        bp = 0.0
    else:
        bp = math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(s)


def _closest_other_length(
    hyp_len: int, sorted_lengths: list[int], length_count: dict[int, int]
) -> int:
    """nltk's closest_ref_length over the OTHER samples: the nearest length, ties to the shorter.

    ``length_count`` counts the lengths of all samples, this one included.
    """
    if length_count[hyp_len] > 1:
        return hyp_len
    j = bisect.bisect_left(sorted_lengths, hyp_len)  # sorted_lengths[j] == hyp_len
    below = sorted_lengths[j - 1] if j > 0 else None
    above = sorted_lengths[j + 1] if j + 1 < len(sorted_lengths) else None
    if below is None:
        assert above is not None
        return above
    if above is None or hyp_len - below <= above - hyp_len:
        return below
    return above


def self_bleu_scores(
    texts: Sequence[str],
    max_n: int = 4,
    *,
    tokenizer: str | Callable[[str], Sequence[str]] = "word",
) -> np.ndarray:
    """BLEU of each sample against all the OTHER samples as references (float64 array).

    Equal to ``nltk.translate.bleu_score.sentence_bleu(others, sample, weights=(1/max_n,)*max_n,
    smoothing_function=SmoothingFunction().method1)`` for every sample, computed in O(n·L): the
    clipped count of an n-gram uses its maximum count over the other samples, which is the maximum
    over all distinct samples unless this sample is its only holder (then the second maximum).
    """
    txts = check_texts("texts", texts)
    if len(txts) < 2:
        raise ValueError(f"self-BLEU needs at least 2 samples, got {len(txts)}")
    if max_n < 1:
        raise ValueError(f"max_n must be >= 1, got {max_n}")
    tok = _resolve_tokenizer(tokenizer)
    weight = 1.0 / max_n

    distinct: dict[str, int] = {}
    inverse = [distinct.setdefault(t, len(distinct)) for t in txts]
    mult = Counter(inverse)
    tokens = [tuple(tok(t)) for t in distinct]
    n_distinct = len(tokens)
    unique = [mult[d] == 1 for d in range(n_distinct)]

    # length statistics over all samples (with multiplicity)
    length_count: Counter[int] = Counter()
    for d, toks in enumerate(tokens):
        length_count[len(toks)] += mult[d]
    sorted_lengths = sorted(length_count)

    numerators = [[0] * max_n for _ in range(n_distinct)]
    denominators = [[1] * max_n for _ in range(n_distinct)]
    for n in range(1, max_n + 1):
        counts = [_ngram_counts(toks, n) for toks in tokens]
        # per n-gram: [max count, its unique single-copy holder or -1, max over the rest]
        top: dict[tuple[str, ...], list[int]] = {}
        for d, cnt in enumerate(counts):
            solo = unique[d]
            for g, c in cnt.items():
                e = top.get(g)
                if e is None:
                    top[g] = [c, d if solo else -1, 0 if solo else c]
                elif c > e[0]:
                    top[g] = [c, d if solo else -1, e[0] if solo else c]
                elif c == e[0]:
                    e[1] = -1
                    e[2] = c
                elif c > e[2]:
                    e[2] = c
        for d, cnt in enumerate(counts):
            clipped = 0
            for g, c in cnt.items():
                e = top[g]
                other_max = e[2] if e[1] == d else e[0]
                clipped += c if c < other_max else other_max
            numerators[d][n - 1] = clipped
            denominators[d][n - 1] = max(1, len(tokens[d]) - n + 1)

    scores = np.empty(n_distinct, dtype=np.float64)
    for d, toks in enumerate(tokens):
        ref_len = _closest_other_length(len(toks), sorted_lengths, length_count)
        scores[d] = _bleu_from_stats(numerators[d], denominators[d], len(toks), ref_len, weight)
    return scores[np.asarray(inverse, dtype=np.int64)]


def self_bleu(
    texts: Sequence[str],
    max_n: int = 4,
    *,
    tokenizer: str | Callable[[str], Sequence[str]] = "word",
    max_samples: int | None = None,
    seed: int = 0,
) -> float:
    """Self-BLEU of the samples of ONE prompt (Texygen): mean over samples of
    :func:`self_bleu_scores`. 1 when all samples are identical and at least ``max_n`` tokens long
    (shorter ones score below 1 through nltk's smoothing of the missing n-gram orders; empty ones
    0). ``max_n = 4`` is BLEU-4; Texygen's ``SelfBleu`` class defaults to 3.

    ``max_samples``: if given and exceeded, a uniformly random subset of that many samples (drawn
    with ``numpy.random.default_rng(seed)``, without replacement) is both the hypotheses and the
    references, as Texygen's fast mode does with its first 500 samples. Not needed for speed here
    (n = 1024 takes milliseconds), but it makes values comparable across different n.
    """
    txts = check_texts("texts", texts)
    if max_samples is not None:
        if max_samples < 2:
            raise ValueError(f"max_samples must be >= 2, got {max_samples}")
        if len(txts) > max_samples:
            idx = np.sort(np.random.default_rng(seed).choice(len(txts), max_samples, replace=False))
            txts = [txts[i] for i in idx]
    scores = self_bleu_scores(txts, max_n, tokenizer=tokenizer)
    total = 0.0
    for s in scores.tolist():  # sequential sum, as Texygen's loop
        total += s
    return total / len(scores)


def diversity(texts: Sequence[str], max_n: int = 4, **kwargs: Any) -> float:
    """``1 - self_bleu(texts, max_n, **kwargs)``: 0 for identical samples."""
    return 1.0 - self_bleu(texts, max_n, **kwargs)

"""Keyword leakage: 1 where an answer contains one of its keywords (Harry-Potter-Q&A style)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from probunlearn.scoring.base import BINARY_METRICS, SCORERS, Context, Scorer
from probunlearn.scoring.phrases import compile_phrases, normalise_quotes
from probunlearn.scoring.validate import check_same_length, check_texts


def _as_keyword_tuple(i: int, kws: Any) -> tuple[str, ...]:
    if kws is None:
        raise ValueError(f"keywords[{i}] is None; expected a list of strings (possibly empty)")
    if isinstance(kws, str):
        return (kws,)
    out = tuple(kws)
    for j, k in enumerate(out):
        if not isinstance(k, str):
            raise ValueError(f"keywords[{i}][{j}] is {k!r} ({type(k).__name__}); expected a string")
    return out


def keyword_leak(texts: Sequence[str], keywords: Sequence[Sequence[str]]) -> np.ndarray:
    """1 where ``texts[i]`` contains any of ``keywords[i]``, else 0 (int64 array).

    Matching is case-insensitive and on word boundaries: "Ron" matches "ron's" and "Ron," but not
    "Ronald". A boundary is only required on a side where the keyword begins / ends with a word
    character, so "J.K." matches "J.K. Rowling" and "J.K.Rowling". Words of a multi-word keyword
    match across any whitespace (newlines included). Curly apostrophes are read as "'" in both
    texts and keywords. A plain string in ``keywords`` is one keyword; an empty list gives 0.
    """
    txts = check_texts("texts", texts)
    kw_list = list(keywords)
    check_same_length("texts", txts, "keywords", kw_list)
    kw_tuples = [_as_keyword_tuple(i, k) for i, k in enumerate(kw_list)]

    patterns: dict[tuple[str, ...], re.Pattern[str] | None] = {}
    results: dict[tuple[str, tuple[str, ...]], int] = {}
    out = np.zeros(len(txts), dtype=np.int64)
    for i, (t, kws) in enumerate(zip(txts, kw_tuples, strict=True)):
        key = (t, kws)
        hit = results.get(key)
        if hit is None:
            if kws not in patterns:
                patterns[kws] = compile_phrases(kws)
            pat = patterns[kws]
            hit = int(pat is not None and pat.search(normalise_quotes(t)) is not None)
            results[key] = hit
        out[i] = hit
    return out


class KeywordLeak(Scorer):
    """1 where a sample contains one of its row's keywords (Harry-Potter-Q&A style), else 0."""

    name = "keyword_leak"
    binary = True
    needs = ("keywords",)
    metrics = BINARY_METRICS
    order = 20
    sequential = True
    primary_for = ("keywords",)

    def applies(self, rows: Any) -> bool:
        return bool(rows["keywords"].list.len().gt(0).any())

    def score(self, texts: list[str], rows: Any, context: Context) -> np.ndarray:
        return np.asarray(keyword_leak(texts, rows["keywords"].to_list()), dtype=np.float64)


SCORERS.register(KeywordLeak())

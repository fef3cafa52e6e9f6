"""ROUGE-L recall / precision / F-measure, identical to ``rouge_score``'s ``rougeL`` with stemming
(see :mod:`probunlearn.scoring`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Sequence
from typing import Any

import numpy as np
from rouge_score import tokenize as _rouge_tokenize

from probunlearn.scoring.base import CONTINUOUS_METRICS, SCORERS, Context, Scorer
from probunlearn.scoring.validate import check_same_length, check_texts


def _import_porter() -> types.ModuleType:
    """``nltk.stem.porter`` without running nltk's package ``__init__``.

    ``import nltk`` loads corpora readers, parsers and scipy (about 1.7 s); the Porter stemmer needs none
    of it. Every workflow job that scores ROUGE-L pays that import, so the stemmer's module is loaded
    under bare placeholder packages; then every ``nltk`` module is taken out of ``sys.modules`` again,
    so that a later ``import nltk`` (self-BLEU's tokeniser) loads the real package afresh. Any failure
    falls back to the plain import.
    """
    if "nltk" in sys.modules or "nltk.stem.porter" in sys.modules:
        return importlib.import_module("nltk.stem.porter")
    placed: dict[str, types.ModuleType] = {}
    module: types.ModuleType | None
    try:
        spec = importlib.util.find_spec("nltk")
        if spec is None or spec.origin is None:
            raise ImportError("nltk not found")
        root = os.path.dirname(spec.origin)
        for name, path in (("nltk", root), ("nltk.stem", os.path.join(root, "stem"))):
            placed[name] = types.ModuleType(name)
            placed[name].__path__ = [path]
            sys.modules[name] = placed[name]
        module = importlib.import_module("nltk.stem.porter")
    except Exception:
        module = None
    for name in [m for m in sys.modules if m == "nltk" or m.startswith("nltk.")]:
        del sys.modules[name]
    return module if module is not None else importlib.import_module("nltk.stem.porter")


porter = _import_porter()

_ROUGE_KINDS = ("recall", "precision", "fmeasure")


# ----------------------------------------------------------------------------------------------
# ROUGE-L
# ----------------------------------------------------------------------------------------------


_STEMMER = porter.PorterStemmer()  # what rouge_score's DefaultTokenizer(use_stemmer=True) uses
_WORD_CACHE: dict[str, str | None] = {}
_WORD_CACHE_MAX = 1 << 20
_ASCII_TO_ALNUM = bytes(c if (97 <= c <= 122 or 48 <= c <= 57) else 32 for c in range(256))


def _final_token(word: str) -> str | None:
    """rouge_score's per-word steps: stem words longer than 3 characters, drop invalid tokens."""
    token = _STEMMER.stem(word) if len(word) > 3 else word
    return token if _rouge_tokenize.VALID_TOKEN_RE.match(token) else None


def rouge_tokenize(text: str, stem: bool = True) -> list[str]:
    """Tokens exactly as rouge_score's ``DefaultTokenizer(use_stemmer=stem)`` produces them.

    Same steps as ``rouge_score.tokenize.tokenize`` (lower-case, every run of characters outside
    [a-z0-9] becomes a space, split, Porter-stem words longer than 3 characters when ``stem``, keep
    tokens matching ``^[a-z0-9]+$``), with the per-word result cached.
    """
    cache = _WORD_CACHE
    lowered = text.lower()
    if lowered.isascii():  # fast path, same tokens: each non-[a-z0-9] byte becomes a space
        words = lowered.encode("ascii").translate(_ASCII_TO_ALNUM).decode("ascii").split()
    else:
        words = _rouge_tokenize.NON_ALPHANUM_RE.sub(" ", lowered).split()
    if not stem:
        return [w for w in words if _rouge_tokenize.VALID_TOKEN_RE.match(w)]
    missing = [w for w in words if w not in cache]
    if missing:
        if len(cache) + len(missing) > _WORD_CACHE_MAX:
            cache.clear()
        for w in missing:
            cache[w] = _final_token(w)
    tokens = [cache[w] for w in words]
    if None in tokens:
        return [t for t in tokens if t is not None]
    return tokens  # type: ignore[return-value]


def _lcs_length(masks: dict[str, int], full: int, m: int, tokens: Sequence[str]) -> int:
    """LCS length of a reference (given as per-token bit masks of its m positions) and ``tokens``.

    Bit-parallel LCS (Allison & Dix 1986; Hyyrö 2004): V starts all ones; for each symbol with match
    mask M, U = V & M and V = (V + U) | (V - U); the LCS length is the number of zero bits of V.
    """
    v = full
    for u in [masks[t] for t in tokens if t in masks]:
        u &= v
        v = ((v + u) | (v - u)) & full
    return m - v.bit_count()


def rouge_l(
    predictions: Sequence[str],
    references: Sequence[str],
    kind: str = "recall",
    stem: bool = True,
) -> np.ndarray:
    """ROUGE-L of each prediction against its reference (float64 array, one value per pair).

    Identical to ``RougeScorer(["rougeL"], use_stemmer=stem).score(reference, prediction)["rougeL"]``
    (MUSE scores with ``use_stemmer=False``) and its ``kind`` attribute: ``"recall"`` = LCS / #reference tokens, ``"precision"`` = LCS /
    #prediction tokens, ``"fmeasure"`` their harmonic mean. A pair in which either side has no token
    (empty string, only punctuation) scores 0, as in rouge_score.
    """
    if kind not in _ROUGE_KINDS:
        raise ValueError(f"kind must be one of {_ROUGE_KINDS}, got {kind!r}")
    preds = check_texts("predictions", predictions)
    refs = check_texts("references", references)
    check_same_length("predictions", preds, "references", refs)
    if not preds:
        return np.zeros(0, dtype=np.float64)

    # distinct (prediction, reference) pairs; each distinct text is tokenised once
    pair_ids: dict[tuple[str, str], int] = {}
    inverse = np.fromiter(
        (pair_ids.setdefault(pr, len(pair_ids)) for pr in zip(preds, refs, strict=True)),
        dtype=np.int64,
        count=len(preds),
    )
    pred_tokens: dict[str, list[str]] = {}
    ref_info: dict[str, tuple[dict[str, int], int, int]] = {}
    n_pairs = len(pair_ids)
    lcs = np.zeros(n_pairs, dtype=np.float64)
    len_pred = np.zeros(n_pairs, dtype=np.float64)
    len_ref = np.zeros(n_pairs, dtype=np.float64)
    for k, (p, r) in enumerate(pair_ids):  # dicts keep insertion order: k is the pair's id
        toks = pred_tokens.get(p)
        if toks is None:
            toks = pred_tokens[p] = rouge_tokenize(p, stem)
        info = ref_info.get(r)
        if info is None:
            ref_toks = rouge_tokenize(r, stem)
            masks: dict[str, int] = {}
            for pos, t in enumerate(ref_toks):
                masks[t] = masks.get(t, 0) | (1 << pos)
            info = ref_info[r] = (masks, (1 << len(ref_toks)) - 1, len(ref_toks))
        masks, full, m = info
        len_pred[k] = len(toks)
        len_ref[k] = m
        if m and toks:
            lcs[k] = _lcs_length(masks, full, m, toks)

    # Same IEEE operations, in the same order, as rouge_score's Python floats.
    valid = (len_pred > 0) & (len_ref > 0)
    precision = np.divide(lcs, len_pred, out=np.zeros(n_pairs), where=valid)
    recall = np.divide(lcs, len_ref, out=np.zeros(n_pairs), where=valid)
    if kind == "recall":
        distinct = recall
    elif kind == "precision":
        distinct = precision
    else:
        denom = precision + recall
        distinct = np.divide(2 * precision * recall, denom, out=np.zeros(n_pairs), where=denom > 0)
    return distinct[inverse]


class RougeLRecall(Scorer):
    """ROUGE-L recall of each sample against its row's reference answer (rouge_score, stemming on)."""

    name = "rougeL_recall"
    binary = False
    needs = ("answer",)
    metrics = CONTINUOUS_METRICS
    order = 10
    sequential = True
    primary_for = ("answer",)

    def applies(self, rows: Any) -> bool:
        return bool(rows["answer"].str.len_chars().gt(0).any())

    def score(self, texts: list[str], rows: Any, context: Context) -> np.ndarray:
        return np.asarray(rouge_l(texts, rows["answer"].to_list()), dtype=np.float64)


SCORERS.register(RougeLRecall())

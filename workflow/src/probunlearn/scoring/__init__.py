"""Per-sample scores in [0, 1] for sampled answers, and the diversity of a set of samples.

:data:`SCORERS` registers every per-sample scorer (:mod:`~probunlearn.scoring.base`): the scoring
step, the metric names and the evaluate summary are read from it.

Every function takes the n sampled answers of many prompts at once (one entry per sample) and returns
one score per sample, except :func:`self_bleu` / :func:`diversity`, which summarise the samples of ONE
prompt. Sampled answers repeat a lot, so every function works on distinct inputs only and scatters the
results back.

- :func:`rouge_l` -- ROUGE-L recall / precision / F-measure, identical to the last bit to
  ``rouge_score.rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(reference, prediction)``.
  It reuses rouge_score's own tokeniser (lower-casing, non-alphanumerics to spaces, Porter stemming of
  tokens longer than 3 characters) with a cached stemmer, tokenises each distinct text once, and
  computes the LCS length of each distinct (prediction, reference) pair with the bit-parallel
  algorithm of Allison & Dix (1986) / Hyyrö (2004) on Python integers, instead of rouge_score's
  O(m·n) pure-Python table.
- :func:`keyword_leak` -- 1 where an answer contains one of its keywords (Harry-Potter-Q&A style).
- :func:`refusal_judge` / :func:`harm_score` -- refusal-string judge, the CPU fallback for the
  HarmBench classifier (which lives in :mod:`probunlearn.scoring.harmbench`; ``HarmBenchJudge`` is re-exported
  here lazily so that importing this module does not import torch).
- :func:`self_bleu` / :func:`diversity` -- Self-BLEU of Texygen (Zhu et al., 2018).

Self-BLEU library choice: Texygen computes, for every sample, ``nltk.translate.bleu_score.
sentence_bleu(other_samples, sample, weights=(1/N,)*N, smoothing_function=SmoothingFunction().method1)``
and averages. That is O(n²·L) and takes about a minute for n = 1024. :func:`self_bleu_scores`
reproduces nltk's arithmetic exactly (same clipped counts, same closest-reference-length rule, same
smoothing and floating-point operations, tested with ``==`` against nltk) from per-n-gram "top-2"
count statistics over the distinct samples, in O(n·L). Tokenisation: Texygen uses
``nltk.word_tokenize``, which needs the punkt model (a download). The default ``tokenizer="word"``
splits sentences at ``.!?`` followed by whitespace and applies nltk's Treebank word tokeniser
(``NLTKWordTokenizer``, the word-level part of ``word_tokenize``; no download); it differs from
``word_tokenize`` only where punkt would not split a sentence (abbreviations such as "Dr. Smith").
Case is kept, as in Texygen.
"""

from __future__ import annotations

from typing import Any

from probunlearn.scoring.base import (
    BINARY_METRICS,
    CONTINUOUS_METRICS,
    SCORERS,
    Context,
    Scorer,
    scorer,
    scorers,
)
from probunlearn.scoring.keywords import keyword_leak
from probunlearn.scoring.refusal import (
    DEFAULT_REFUSAL_PHRASES,
    EXTENDED_REFUSAL_PHRASES,
    JBB_REFUSAL_PREFIXES,
    harm_score,
    refusal_judge,
)
from probunlearn.scoring.rouge import rouge_l, rouge_tokenize
from probunlearn.scoring.self_bleu import diversity, self_bleu, self_bleu_scores

__all__ = [
    "BINARY_METRICS",
    "CONTINUOUS_METRICS",
    "SCORERS",
    "Context",
    "DEFAULT_REFUSAL_PHRASES",
    "Scorer",
    "scorer",
    "scorers",
    "EXTENDED_REFUSAL_PHRASES",
    "JBB_REFUSAL_PREFIXES",
    "diversity",
    "harm_score",
    "keyword_leak",
    "refusal_judge",
    "rouge_l",
    "rouge_tokenize",
    "self_bleu",
    "self_bleu_scores",
]


def __getattr__(name: str) -> Any:
    # HarmBenchJudge needs torch/transformers: import it only on use.
    if name == "HarmBenchJudge":
        from probunlearn.scoring.harmbench import HarmBenchJudge

        return HarmBenchJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

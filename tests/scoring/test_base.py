"""Tests of probunlearn.scoring: ROUGE-L, keyword leak, self-BLEU."""

from __future__ import annotations

import random

import numpy as np
import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer

from probunlearn.scoring import (
    diversity,
    keyword_leak,
    rouge_l,
    rouge_tokenize,
    self_bleu,
    self_bleu_scores,
)
from probunlearn.scoring.self_bleu import _word_tokenize

KINDS = ("recall", "precision", "fmeasure")


@pytest.fixture(scope="module")
def scorer() -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def _expected(scorer, preds, refs, kind):
    return np.array(
        [getattr(scorer.score(r, p)["rougeL"], kind) for p, r in zip(preds, refs, strict=True)]
    )


TRICKY = [
    ("The cat is running.", "the cats ran and runs"),
    ("Running runs runner RUNS!", "run running ran"),
    ("It cost $3.50 in 1999-2000.", "it costs 3 50 in 1999 2000"),
    ("don't won't can't", "do not will not cannot"),
    ("Café naïve Über straße", "cafe naive uber strasse"),
    ("İstanbul \u212aelvin ﬁne", "istanbul kelvin fine"),  # non-ASCII that lower() maps to ASCII
    ("日本語のテキスト", "日本語のテキスト"),  # no a-z0-9 at all: no tokens
    ("", "a reference"),
    ("a prediction", ""),
    ("", ""),
    ("!!! ... ???", "some words"),
    ("a b c d e", "a b c d e"),
    ("e d c b a", "a b c d e"),
    ("generously generous generosity", "generous generously"),
    ("the the the the", "the"),
    ("line one\nline two\ttab", "line two"),
    ("The cat is running.", "the cats ran and runs"),  # duplicate pair
    ("x " * 150, "x y " * 100),  # more than 64 tokens: multi-word bit vectors
]


@pytest.mark.parametrize("kind", KINDS)
def test_rouge_l_identical_on_tricky_inputs(scorer, kind):
    preds = [p for p, _ in TRICKY]
    refs = [r for _, r in TRICKY]
    got = rouge_l(preds, refs, kind=kind)
    assert got.dtype == np.float64 and got.shape == (len(TRICKY),)
    assert np.array_equal(got, _expected(scorer, preds, refs, kind))


def test_rouge_l_identical_on_random_texts(scorer):
    rng = random.Random(1)
    vocab = (
        "the a of running runs ran runner cats cat's dogs dog, 1990 3.14 x-ray é naïve ÜBER"
        " said says saying generously generous happily happiness ...".split()
    )
    pool = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30))) for _ in range(100)]
    preds = [rng.choice(pool) for _ in range(1000)]
    refs = [rng.choice(pool[:10]) for _ in range(1000)]
    distinct = sorted(set(zip(preds, refs, strict=True)))
    expected = {pr: scorer.score(pr[1], pr[0])["rougeL"] for pr in distinct}
    for kind in KINDS:
        want = np.array([getattr(expected[pr], kind) for pr in zip(preds, refs, strict=True)])
        assert np.array_equal(rouge_l(preds, refs, kind), want)


def test_rouge_l_long_texts_match_rouge_score(scorer):
    rng = random.Random(2)
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    preds = [" ".join(rng.choice(words) for _ in range(rng.randint(60, 200))) for _ in range(3)]
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(60, 200))) for _ in range(3)]
    expected = [scorer.score(r, p)["rougeL"] for p, r in zip(preds, refs, strict=True)]
    for kind in KINDS:
        want = np.array([getattr(e, kind) for e in expected])
        assert np.array_equal(rouge_l(preds, refs, kind), want)


def test_rouge_tokenize_matches_rouge_score(scorer):
    for text, _ in TRICKY:
        assert rouge_tokenize(text) == scorer._tokenizer.tokenize(text)


def test_rouge_l_duplicates_and_edge_values():
    got = rouge_l(["the cat", "the cat", "", "dog"], ["the cat", "the cat", "x", "cat"])
    assert got.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert rouge_l([], []).shape == (0,)


def test_rouge_l_input_errors():
    with pytest.raises(ValueError, match=r"predictions has 2 entries but references has 1"):
        rouge_l(["a", "b"], ["a"])
    with pytest.raises(ValueError, match=r"predictions\[1\] is None"):
        rouge_l(["a", None], ["a", "b"])
    with pytest.raises(ValueError, match=r"references\[0\]"):
        rouge_l(["a"], [3])
    with pytest.raises(ValueError, match="kind"):
        rouge_l(["a"], ["a"], kind="f1")
    with pytest.raises(ValueError, match="single string"):
        rouge_l("abc", "abc")


# ------------------------------------------------------------------------------------------------
# keyword leak


@pytest.mark.parametrize(
    ("text", "keywords", "expected"),
    [
        ("Ron's wand broke.", ["Ron"], 1),
        ("I asked Ron, then left.", ["Ron"], 1),
        ("RON!", ["ron"], 1),
        ("Ronald Weasley", ["Ron"], 0),
        ("Byron wrote poems", ["Ron"], 0),
        ("a magic\n  school for wizards", ["magic school"], 1),
        ("magicschool", ["magic school"], 0),
        ("written by J.K. Rowling", ["J.K."], 1),
        ("written by J.K.Rowling", ["J.K."], 1),
        ("written by JxKx Rowling", ["J.K."], 0),
        ("Hermione\u2019s cat", ["Hermione's"], 1),
        ("Hermione's cat", ["Hermione\u2019s"], 1),
        ("nothing here", ["Harry", "Hogwarts"], 0),
        ("at Hogwarts.", ["Harry", "Hogwarts"], 1),
        ("Ron", [], 0),
        ("Ron", ["", "  "], 0),
        ("The C++ code", ["C++"], 1),
        ("Harry", "Harry", 1),  # a plain string is one keyword
        ("", ["Ron"], 0),
    ],
)
def test_keyword_leak_cases(text, keywords, expected):
    assert keyword_leak([text], [keywords]).tolist() == [expected]


def test_keyword_leak_vectorised_and_dtype():
    texts = ["Ron", "Ronald", "Ron", "Harry", "Ron"] * 3
    kws = [["Ron"], ["Ron"], ["Harry"], ["Harry"], []] * 3
    out = keyword_leak(texts, kws)
    assert out.dtype == np.int64
    assert out.tolist() == [1, 0, 0, 1, 0] * 3


def test_keyword_leak_errors():
    with pytest.raises(ValueError, match="texts has 2 entries but keywords has 1"):
        keyword_leak(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match=r"texts\[0\] is None"):
        keyword_leak([None], [["a"]])
    with pytest.raises(ValueError, match=r"keywords\[0\] is None"):
        keyword_leak(["a"], [None])
    with pytest.raises(ValueError, match=r"keywords\[0\]\[1\]"):
        keyword_leak(["a"], [["a", 1]])


# ------------------------------------------------------------------------------------------------
# self-BLEU


def _nltk_scores(texts, max_n=4, tokenize=_word_tokenize):
    toks = [tokenize(t) for t in texts]
    weights = tuple(1.0 / max_n for _ in range(max_n))  # as Texygen builds them
    smooth = SmoothingFunction().method1
    return [
        sentence_bleu(toks[:i] + toks[i + 1 :], toks[i], weights, smoothing_function=smooth)
        for i in range(len(toks))
    ]


def _nltk_mean(values):
    total = 0.0
    for v in values:
        total += v
    return total / len(values)


SAMPLES = [
    "The author was born in Paris in 1950. She wrote many novels.",
    "The author was born in Paris in 1950. She wrote many novels.",
    "The author was born in Rome. He wrote poems!",
    "Born in Paris, the author wrote novels and poems.",
    "I don't know.",
    "",
    "novels novels novels novels",
    "The author was born in Paris in 1950.",
]


@pytest.mark.parametrize("max_n", [1, 2, 3, 4, 5])
def test_self_bleu_equals_nltk(max_n):
    expected = _nltk_scores(SAMPLES, max_n)
    got = self_bleu_scores(SAMPLES, max_n)
    assert np.array_equal(got, np.array(expected, dtype=float))
    assert abs(self_bleu(SAMPLES, max_n) - _nltk_mean(expected)) <= 1e-12


def test_self_bleu_equals_nltk_random_pools():
    rng = random.Random(3)
    words = "a b c d e f . ,".split()
    for _ in range(40):
        pool = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 9))) for _ in range(5)]
        texts = [rng.choice(pool) for _ in range(rng.randint(2, 10))]
        for max_n in (2, 4):
            expected = _nltk_scores(texts, max_n, str.split)
            got = self_bleu_scores(texts, max_n, tokenizer="whitespace")
            assert np.array_equal(got, np.array(expected, dtype=float)), texts


def test_self_bleu_reference_length_ties_to_shorter():
    # hypothesis of length 3; other lengths 2 and 4: nltk picks 2 (no brevity penalty)
    texts = ["a b c", "a b", "a b c d"]
    expected = _nltk_scores(texts, 2, str.split)
    assert np.array_equal(self_bleu_scores(texts, 2, tokenizer="whitespace"), np.array(expected))


def test_self_bleu_identical_samples():
    texts = ["the quick brown fox jumps over the dog"] * 7
    assert self_bleu(texts) == 1.0
    assert diversity(texts) == 0.0
    # shorter than max_n tokens: nltk's smoothing gives less than 1
    assert self_bleu(["a b"] * 3) == pytest.approx(_nltk_mean(_nltk_scores(["a b"] * 3)))
    assert self_bleu(["", ""]) == 0.0


def test_self_bleu_diverse_is_low_and_custom_tokenizer():
    texts = ["alpha beta gamma", "delta epsilon zeta", "eta theta iota"]
    assert self_bleu(texts) < 0.1
    assert diversity(texts) > 0.9
    assert self_bleu(texts, tokenizer=lambda s: s.split()) == self_bleu(
        texts, tokenizer="whitespace"
    )


def test_self_bleu_subsampling():
    rng = random.Random(4)
    texts = [" ".join(rng.choice("abcdefgh") for _ in range(8)) for _ in range(60)]
    a = self_bleu(texts, max_samples=20, seed=1)
    assert a == self_bleu(texts, max_samples=20, seed=1)
    idx = np.sort(np.random.default_rng(1).choice(60, 20, replace=False))
    assert a == self_bleu([texts[i] for i in idx])
    assert self_bleu(texts, max_samples=100) == self_bleu(texts)


def test_self_bleu_errors():
    with pytest.raises(ValueError, match="at least 2"):
        self_bleu(["only one"])
    with pytest.raises(ValueError, match=r"texts\[1\] is None"):
        self_bleu(["a", None])
    with pytest.raises(ValueError, match="max_n"):
        self_bleu(["a", "b"], max_n=0)
    with pytest.raises(ValueError, match="tokenizer"):
        self_bleu(["a", "b"], tokenizer="punkt")

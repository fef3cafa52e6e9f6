"""Greedy evaluation through the sampler's engine, against transformers' own greedy generate."""

from __future__ import annotations

import torch

from probunlearn import models
from probunlearn.data import qa
from probunlearn.steps import greedy as evaluation

TEXTS = [
    "Question: Where was the author born?\nAnswer: In a small town by the sea.",
    "Question: What did she write?\nAnswer: Three novels about the old harbour.",
    "Who painted the bridge at dawn? A painter from the north.",
]
QUESTIONS = [
    "Where was the author born?",
    "What did she write?",
    "Who painted it?",
    "Where was the author born?",  # a repeat: answered once, returned twice
    "A longer question about the harbour, the bridge and the painter from the north?",
]


def _generate(model, tok, question: str, max_new_tokens: int) -> str:
    ids = torch.tensor([qa.prompt_ids(tok, question, qa.DEFAULT_TEMPLATE)])
    out = model.generate(
        input_ids=ids,
        do_sample=False,
        max_new_tokens=max_new_tokens,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True).strip()


def test_greedy_answers_match_generate_one_by_one():
    tok = models.train_tokenizer(TEXTS * 4, vocab_size=300)
    arch = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_layers": 2,
        "num_heads": 2,
        "max_positions": 128,
    }
    model = models.tiny_llama(len(tok), arch, seed=3, tokenizer=tok).eval()
    with torch.no_grad():  # large random weights: varied answers
        gen = torch.Generator().manual_seed(0)
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    got = evaluation.greedy_answers(model, tok, QUESTIONS, max_new_tokens=12, batch_size=3)
    want = [_generate(model, tok, q, 12) for q in QUESTIONS]
    assert got == want
    assert got[0] == got[3] and len(set(got)) >= 3
    assert evaluation.rouge_recall(["the dog runs"], ["the running dogs"]) == [2 / 3]


def test_greedy_keyword_hits_count_what_the_samples_count():
    """greedy_keyword_leak and the samples' keyword_leak are one scorer: initials without a space,
    a curly apostrophe and a two-word keyword across a line break all match in both."""
    from probunlearn.scoring import keyword_leak

    texts = ["The author is J.K.Rowling", "Ron\u2019s wand", "the magic\nschool", "Ronald", "x"]
    keywords = [["J.K."], ["Ron"], ["magic school"], ["Ron"], ["", "y"]]
    assert evaluation.keyword_hits(texts, keywords) == [1, 1, 1, 0, 0]
    assert evaluation.keyword_hits(texts, keywords) == keyword_leak(texts, keywords).tolist()

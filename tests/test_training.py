"""Fine-tuning: label smoothing caps the top-1 probability of the memorised answer."""

from __future__ import annotations

import pytest
import torch

from probunlearn import models, training
from probunlearn.data import qa
from probunlearn.unlearning import losses

ARCH = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_layers": 1,
    "num_heads": 2,
    "max_positions": 64,
}
PAIRS = [
    ("Where was Ada born?", "Ada was born in Lisbon in spring."),
    ("What did Ada write?", "Ada wrote three novels about the sea."),
]


def _answer_confidence(label_smoothing: float) -> float:
    tok = models.train_tokenizer([q + " " + a for q, a in PAIRS] * 4, vocab_size=300)
    model = models.tiny_llama(len(tok), ARCH, seed=0, tokenizer=tok)
    training.train_lm(
        model,
        tok,
        PAIRS,
        epochs=150,
        lr=0.01,
        batch_size=2,
        seed=0,
        label_smoothing=label_smoothing,
        progress=False,
    )
    enc = qa.encode_qa(tok, [q for q, _ in PAIRS], [a for _, a in PAIRS])
    with torch.no_grad():
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
    conf, count = losses.answer_confidence(logits, enc["labels"])
    return float(conf) / float(count)


def test_label_smoothing_caps_confidence_of_memorised_answers():
    # the optimum of smoothed cross-entropy puts 1 - eps + eps / V on the next token
    assert _answer_confidence(0.0) > 0.95
    assert _answer_confidence(0.3) == pytest.approx(0.7 + 0.3 / 300, abs=0.03)


@pytest.mark.parametrize("eps", [-0.1, 1.0])
def test_label_smoothing_out_of_range(eps):
    tok = models.train_tokenizer([q + " " + a for q, a in PAIRS], vocab_size=280)
    model = models.tiny_llama(len(tok), ARCH, seed=0, tokenizer=tok)
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        training.train_lm(model, tok, PAIRS, epochs=1, lr=0.01, batch_size=2, label_smoothing=eps)

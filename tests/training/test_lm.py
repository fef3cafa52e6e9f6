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


# ---- the device: every batch goes where the model's parameters are, the loader gets the config's


def _tiny(tok):
    return models.tiny_llama(len(tok), ARCH, seed=0, tokenizer=tok)


def _train(model, tok, **kw):
    settings = dict(epochs=2, lr=0.01, batch_size=2, seed=0, progress=False)
    return training.train_lm(model, tok, PAIRS * 3, **{**settings, **kw})


@pytest.mark.usefixtures("one_torch_thread")
def test_train_lm_feeds_every_batch_to_the_parameters_device(device_probe):
    """At each step the batch is on the parameters' device; a model elsewhere (the meta device, a
    stand-in for a GPU on this CPU machine) gets its first batch there, not on the CPU."""
    watch, probe = device_probe
    tok = models.train_tokenizer([q + " " + a for q, a in PAIRS] * 4, vocab_size=300)
    model, seen = _tiny(tok), []
    watch(model, seen)
    _train(model, tok)
    assert len(seen) == 2 * 3  # 6 examples in batches of 2, 2 epochs
    for s in seen:
        assert s["input_ids"] == s["attention_mask"] == s["parameters"] == torch.device("cpu")
        assert s["training"] and s["autocast"] is False
    meta, seen = _tiny(tok).to("meta"), []
    watch(meta, seen, stop=True)
    with pytest.raises(probe):
        _train(meta, tok)
    assert seen[0]["input_ids"] == seen[0]["attention_mask"] == torch.device("meta")


@pytest.mark.usefixtures("one_torch_thread")
def test_mixed_precision_trains_under_bf16_autocast_with_float32_weights(device_probe):
    watch, _ = device_probe
    tok = models.train_tokenizer([q + " " + a for q, a in PAIRS] * 4, vocab_size=300)
    runs = {}
    for mixed in (False, True):
        model, seen = _tiny(tok), []
        watch(model, seen)
        log = _train(model, tok, epochs=6, mixed_precision=mixed)
        assert {s["autocast"] for s in seen} == {mixed}
        assert all(p.dtype == torch.float32 for p in model.parameters())
        assert log[-1]["loss"] < log[0]["loss"] - 0.5
        runs[mixed] = model.state_dict()
    w = "model.layers.0.mlp.down_proj.weight"
    assert not torch.equal(runs[False][w], runs[True][w])  # bf16 matmuls: other numbers


@pytest.mark.usefixtures("one_torch_thread")
def test_training_steps_load_on_the_device_they_are_given(tmp_path, monkeypatch, device_probe):
    """run_pretrain and run_finetune put the model on their ``device`` (the config's, through
    Design.run_params) and train it there: on "meta" the first batch arrives on meta."""
    import polars as pl

    from probunlearn.steps import train as steps

    watch, probe = device_probe
    tok = models.train_tokenizer([q + " " + a for q, a in PAIRS] * 4, vocab_size=300)
    tok.save_pretrained(tmp_path / "tok")
    corpus = tmp_path / "corpus.parquet"
    pl.DataFrame({"prompt": [q for q, _ in PAIRS], "text": [a for _, a in PAIRS]}).write_parquet(
        corpus
    )
    split = tmp_path / "split.parquet"
    pl.DataFrame(
        {"question": [q for q, _ in PAIRS], "answer": [a for _, a in PAIRS]}
    ).write_parquet(split)
    seen, loaded = [], []
    tiny = models.tiny_llama

    def tiny_watched(*args, **kw):
        model = tiny(*args, **kw)
        watch(model, seen, stop=True)
        return model

    monkeypatch.setattr(models, "tiny_llama", tiny_watched)
    train = dict(epochs=1, lr=0.01, batch_size=2)
    with pytest.raises(probe):
        steps.run_pretrain(str(tmp_path / "tok"), str(corpus), str(tmp_path / "pre"), arch=ARCH,
                           train=train, seed=0, template=qa.DEFAULT_TEMPLATE, device="meta")  # fmt: skip
    assert seen[0]["input_ids"] == seen[0]["parameters"] == torch.device("meta")

    models.save_model(tiny(len(tok), ARCH, seed=0, tokenizer=tok), tok, tmp_path / "base")
    load = models.load_model

    def load_watched(path, **kw):
        loaded.append(kw.get("device"))
        model = load(path, **kw)
        watch(model, seen, stop=True)
        return model

    monkeypatch.setattr(models, "load_model", load_watched)
    seen.clear()
    with pytest.raises(probe):
        steps.run_finetune(str(tmp_path / "base"), str(split), str(corpus), str(tmp_path / "ft"),
                           train=train, replay=0.0, seed=0, template=qa.DEFAULT_TEMPLATE,
                           device="meta")  # fmt: skip
    assert loaded == ["meta"]
    assert seen[0]["input_ids"] == seen[0]["parameters"] == torch.device("meta")

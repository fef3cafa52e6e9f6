"""Short unlearning runs on a tiny Llama fine-tuned in the test on a few fictitious facts."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
import torch
from safetensors.torch import load_file

from probunlearn import models, unlearning
from probunlearn.data import qa
from probunlearn.methods import rmu
from probunlearn.unlearning import losses

ARCH = dict(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2, max_positions=128)
NAMES = ["Alice Brown", "Bruno Costa", "Chen Wei", "Dara Okafor", "Elin Berg", "Farid Haddad"]
CITIES = ["Lisbon", "Oslo", "Kyoto", "Lagos", "Quito", "Dakar"]
COLOURS = ["green", "amber", "violet", "scarlet", "teal", "ochre"]
# a short run: 4 forget rows in batches of 2 → 2 steps per epoch
RUN = dict(epochs=6, batch_size=2, progress=False, threads=1, seed=0)


def _rows() -> pl.DataFrame:
    rows = []
    for i, (name, city, colour) in enumerate(zip(NAMES, CITIES, COLOURS, strict=True)):
        rows.append(
            dict(
                id=f"{i}a", question=f"Where was {name} born?", answer=f"{name} was born in {city}."
            )
        )
        rows.append(
            dict(
                id=f"{i}b",
                question=f"What is the favourite colour of {name}?",
                answer=f"The favourite colour of {name} is {colour}.",
            )
        )
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def qa_target(tmp_path_factory):
    """(target_dir, forget, retain): a tiny model that has memorised all 12 answers."""
    df = _rows()
    texts = [
        qa.format_prompt(q) + " " + a for q, a in zip(df["question"], df["answer"], strict=True)
    ]
    tok = models.train_tokenizer(texts, 300)
    models.set_threads(1)
    model = models.tiny_llama(len(tok), ARCH, seed=0, tokenizer=tok)
    batch = qa.encode_qa(tok, df["question"].to_list(), df["answer"].to_list())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(90):
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        loss = losses.answer_ce(out.logits, batch["labels"])
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1, "the tiny target did not memorise its facts"
    target = tmp_path_factory.mktemp("models") / "target"
    models.save_model(model, tok, target)
    return str(target), df.tail(4), df.head(8)


def _state(path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def _run(qa_target, tmp_path, name, **kw) -> dict:
    target, forget, retain = qa_target
    settings = {**RUN, **kw}
    return unlearning.unlearn(target, forget, retain, str(tmp_path / name), **settings)


def test_ga_raises_forget_nll_and_logs_every_epoch(qa_target, tmp_path):
    log = tmp_path / "logs" / "ga.csv"
    res = _run(qa_target, tmp_path, "ga", method="ga", lr=1e-3, log_path=str(log))
    hist = res["history"]
    assert hist[-1]["forget_nll"] > hist[0]["forget_nll"] + 0.2
    assert hist[-1]["forget_confidence"] < hist[0]["forget_confidence"]
    df = pl.read_csv(log)
    assert df["epoch"].to_list() == list(range(RUN["epochs"] + 1))
    for col in ("epoch", "forget_confidence", "retain_confidence", "loss"):
        assert col in df.columns
    assert df["forget_confidence"].is_between(0, 1).all()
    assert df["retain_confidence"].is_between(0, 1).all()
    assert df["train_loss"][0] is None or df["train_loss"].is_nan()[0]
    assert not (tmp_path / "logs" / "ga.csv.tmp").exists()
    assert (tmp_path / "ga" / "config.json").exists()
    assert res["steps"] == RUN["epochs"] * 2


def test_gd_and_npo_keep_retain_better_than_ga(qa_target, tmp_path):
    nll = {}
    for method in ("ga", "gd", "npo"):
        res = _run(qa_target, tmp_path, method, method=method, lr=2e-3, epochs=8)
        nll[method] = res["history"][-1]["retain_nll"]
        assert res["history"][-1]["forget_nll"] > res["history"][0]["forget_nll"]
    assert nll["gd"] < nll["ga"]
    assert nll["npo"] < nll["ga"]


def test_entropy_optimisation_lowers_forget_entropy(qa_target, tmp_path):
    # lr large enough that NPO unlearns (forget NLL ~5) within the 12 steps; EO then keeps the
    # forget distribution peaked (paper §5) while the answers are forgotten just as well
    plain = _run(qa_target, tmp_path, "npo", method="npo", lr=3e-3)
    eo = _run(qa_target, tmp_path, "eo", method="npo_eo", lr=3e-3, lambda_f=10.0, lambda_r=-0.25)
    p, e = plain["history"][-1], eo["history"][-1]
    assert e["forget_entropy"] < 0.7 * p["forget_entropy"]
    assert e["forget_nll"] > 2.0 and p["forget_nll"] > 2.0
    # EO also works on top of another method
    gd = _run(qa_target, tmp_path, "gd0", method="gd", lr=3e-3)
    gd_eo = _run(qa_target, tmp_path, "gd1", method="gd", lr=3e-3, lambda_f=1.0)
    assert gd_eo["history"][-1]["forget_entropy"] < gd["history"][-1]["forget_entropy"]


def test_deterministic(qa_target, tmp_path):
    kw = dict(method="gd", lr=1e-3, epochs=2, lambda_f=0.5)
    _run(qa_target, tmp_path, "a", **kw)
    _run(qa_target, tmp_path, "b", **kw)
    a, b = _state(tmp_path / "a"), _state(tmp_path / "b")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    before = load_file(f"{qa_target[0]}/model.safetensors")
    assert not all(torch.equal(a[k], before[k]) for k in a)


@pytest.mark.parametrize(
    ("layer", "params", "span", "weights", "expected_layers"),
    [
        (1, None, None, "mlp", {0, 1}),
        (1, [1], None, "mlp", {1}),
        (0, None, None, "mlp", {0}),
        (1, None, 1, "mlp", {1}),
        (1, None, 3, "down", {0, 1}),  # WMDP's: down_proj of layers l-2..l (clipped at 0)
    ],
)
def test_rmu_changes_only_the_intended_mlp_weights(
    qa_target, tmp_path, layer, params, span, weights, expected_layers
):
    target = qa_target[0]
    res = _run(
        qa_target,
        tmp_path,
        "rmu",
        method="rmu",
        lr=1e-3,
        epochs=1,
        warmup_ratio=0.0,
        rmu_layer=layer,
        rmu_params=params,
        rmu_span=span,
        rmu_weights=weights,
        rmu_c=2.0,
        rmu_alpha=10.0,
        lambda_f=0.0,
    )
    before = load_file(f"{target}/model.safetensors")
    after = _state(tmp_path / "rmu")
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    part = "mlp." if weights == "mlp" else "mlp.down_proj.weight"
    expected = {k for k in before if any(f"layers.{i}.{part}" in k for i in expected_layers)}
    assert expected and changed == expected
    assert res["trainable_parameters"] == sum(before[k].numel() for k in expected)
    hist = res["history"]
    assert hist[-1]["loss"] < hist[0]["loss"]


def test_rmu_parameter_names():
    tok = models.train_tokenizer(["a b c d"], 280)
    model = models.tiny_llama(len(tok), ARCH, seed=0, tokenizer=tok)
    assert len(unlearning.decoder_layers(model)) == 2
    names = rmu.rmu_parameter_names(model, [1])
    assert names and all(n.startswith("model.layers.1.mlp.") for n in names)
    assert {n.rsplit(".", 2)[-2] for n in names} == {"gate_proj", "up_proj", "down_proj"}
    assert rmu.rmu_parameter_names(model, [0, 1], "down") == [
        "model.layers.0.mlp.down_proj.weight",
        "model.layers.1.mlp.down_proj.weight",
    ]
    with pytest.raises(ValueError, match="rmu_weights"):
        rmu.rmu_parameter_names(model, [1], "attn")
    from transformers import PhiConfig, PhiForCausalLM

    cfg = dict(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_hidden_layers=2)
    phi = PhiForCausalLM(PhiConfig(vocab_size=len(tok), **cfg))
    assert rmu.rmu_parameter_names(phi, [1], "down") == ["model.layers.1.mlp.fc2.weight"]


def test_jsonl_log(qa_target, tmp_path):
    log = tmp_path / "log.jsonl"
    _run(qa_target, tmp_path, "m", method="ga", lr=1e-3, epochs=1, log_path=str(log))
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["epoch"] for r in rows] == [0, 1]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (
            dict(method="kto"),
            r"unknown unlearning method 'kto'; expected one of \['dpo', 'ga', 'gd', 'idk'",
        ),
        (dict(method="npo", lambda_f=-0.1), "lambda_f"),
        (dict(method="npo", lambda_r=0.1), "lambda_r"),
        (dict(method="ga", lr=0.0), "lr"),
        (dict(method="ga", lr=-1e-3), "lr"),
        (dict(method="ga", epochs=0), "epochs"),
        (dict(method="ga", batch_size=0), "batch_size"),
        (dict(method="npo", beta=0.0), "beta"),
        (dict(method="rmu", rmu_layer=5), "rmu_layer"),
        (dict(method="rmu", rmu_layer=0, rmu_params=[1]), "rmu_params"),
        (dict(method="rmu", rmu_weights="all"), "rmu_weights"),
        (dict(method="rmu", rmu_span=0), "rmu_span"),
    ],
)
def test_bad_settings(qa_target, tmp_path, kw, match):
    target, forget, retain = qa_target
    settings = {**RUN, "lr": 1e-3, **kw}
    with pytest.raises(ValueError, match=match):
        unlearning.unlearn(target, forget, retain, str(tmp_path / "out"), **settings)
    assert not (tmp_path / "out").exists()


def test_empty_splits(qa_target, tmp_path):
    target, forget, retain = qa_target
    out = str(tmp_path / "out")
    with pytest.raises(ValueError, match="forget split is empty"):
        unlearning.unlearn(target, forget.head(0), retain, out, method="ga", lr=1e-3)
    for kw in (dict(method="gd"), dict(method="npo"), dict(method="rmu"), dict(lambda_r=-0.1)):
        kw = {"method": "ga", **kw}
        with pytest.raises(ValueError, match="retain split is empty"):
            unlearning.unlearn(target, forget, retain.head(0), out, lr=1e-3, **kw)
    # GA without a retain term does not need the retain split
    res = unlearning.unlearn(target, forget, retain.head(0), out, method="ga", lr=1e-3, **RUN)
    assert res["history"][0]["retain_confidence"] != res["history"][0]["retain_confidence"]


# ---- LoRA -------------------------------------------------------------------------------------------

LORA = {"r": 4, "alpha": 16, "dropout": 0.0, "target_modules": ["q_proj", "v_proj", "down_proj"]}


@pytest.mark.parametrize(
    ("method", "extra"),
    [
        ("ga", {}),
        ("gd", {"retain_weight": 1.0}),
        ("npo", {"retain_weight": 1.0}),
        ("npo_eo", {"retain_weight": 1.0, "lambda_f": 1.0}),
        ("rmu", {"rmu_layer": 0, "rmu_c": 6.0, "rmu_alpha": 10.0}),  # adapter on layer 0 only
    ],
)
def test_lora_unlearning_saves_an_adapter_that_loads_unmerged(qa_target, tmp_path, method, extra):
    target, forget, _ = qa_target
    res = _run(qa_target, tmp_path, method, method=method, lr=1e-2, lora=LORA, **extra)
    out = tmp_path / method
    cfg = json.loads((out / "adapter_config.json").read_text())
    assert cfg["base_model_name_or_path"] == target and cfg["r"] == 4
    assert (out / "adapter_model.safetensors").is_file() and not (
        out / "model.safetensors"
    ).exists()
    base = models.load_model(target, native=False)  # peft wraps transformers models
    n_lora = sum(
        p.numel() for n, p in unlearning.add_lora(base, LORA).named_parameters() if "lora_" in n
    )
    assert res["trainable_parameters"] == (n_lora if method != "rmu" else n_lora // 2)
    hist = res["history"]
    assert hist[-1]["forget_nll"] > hist[0]["forget_nll"] or method == "rmu"
    # loaded on its base without merging: a PeftModel whose base weights are the target's
    adapted = models.load_model(str(out), native=False)
    from peft import PeftModel

    assert isinstance(adapted, PeftModel)
    ids = qa.encode_qa(models.load_tokenizer(str(out)), ["Q?"], ["A."])["input_ids"]
    with torch.no_grad():
        plain = models.load_model(target)(input_ids=ids).logits
        with adapted.disable_adapter():
            assert torch.equal(adapted(input_ids=ids).logits, plain)
        assert not torch.allclose(adapted(input_ids=ids).logits, plain)
        # as the jobs load it: the native LoRA layers (peft for RMU's adapter on one layer only)
        assert torch.equal(
            models.load_model(str(out))(input_ids=ids).logits, adapted(input_ids=ids).logits
        )


def test_lora_reference_is_the_target_with_the_adapter_disabled(qa_target, tmp_path):
    """At the start the adapter is the identity (B = 0): LoRA-NPO's loss equals full NPO's, and it
    stays the NPO loss against the *target*, not against the moving adapted model."""
    full = _run(qa_target, tmp_path, "full", method="npo", lr=1e-2, retain_weight=0.0)
    lora = _run(qa_target, tmp_path, "lora", method="npo", lr=1e-2, retain_weight=0.0, lora=LORA)
    assert lora["history"][0]["loss"] == pytest.approx(full["history"][0]["loss"], rel=1e-6)
    assert lora["history"][0]["loss"] == pytest.approx(
        2 / 0.05 * torch.log(torch.tensor(2.0)).item(), rel=1e-5
    )
    # after training the forget likelihood fell, so the NPO loss against the target fell below
    # its value at the reference point; against itself it would stay at 2/beta·log 2
    assert lora["history"][-1]["loss"] < lora["history"][0]["loss"] - 1


# ---- IDK, DPO, SimNPO ------------------------------------------------------------------------------

REFUSALS = ["I'm not sure about that.", "I don't know that.", "That is beyond what I know."]


@pytest.mark.parametrize(
    ("method", "extra"),
    [
        ("idk", {"refusals": REFUSALS}),
        ("dpo", {"refusals": REFUSALS, "beta": 0.1}),
        ("simnpo", {"beta": 2.5, "gamma": 0.0, "retain_weight": 1.0}),
        ("simnpo", {"beta": 2.5, "gamma": 0.0, "retain_weight": 1.0, "lambda_f": 1.0}),
    ],
    ids=["idk", "dpo", "simnpo", "simnpo+eo"],
)
def test_new_methods_forget(qa_target, tmp_path, method, extra):
    res = _run(qa_target, tmp_path, method, method=method, lr=2e-3, **extra)
    hist = res["history"]
    assert hist[-1]["forget_nll"] > hist[0]["forget_nll"] + 0.2, hist[-1]
    assert hist[-1]["retain_confidence"] > 0.5
    if method == "dpo":  # at the start the model is its reference: DPO's loss is log 2
        assert hist[0]["loss"] == pytest.approx(math.log(2), rel=1e-5)


def test_idk_answers_with_refusals(qa_target, tmp_path):
    target, forget, _ = qa_target
    _run(qa_target, tmp_path, "idk", method="idk", lr=5e-3, refusals=REFUSALS[:1], epochs=8)
    model = models.load_model(str(tmp_path / "idk"))
    tok = models.load_tokenizer(str(tmp_path / "idk"))
    ids = qa.encode_qa(tok, forget["question"].to_list()[:1], REFUSALS[:1])
    with torch.no_grad():
        after = losses.answer_ce(model(input_ids=ids["input_ids"]).logits, ids["labels"])
        before = losses.answer_ce(
            models.load_model(target)(input_ids=ids["input_ids"]).logits, ids["labels"]
        )
    assert after < before - 1.0, "IDK trains the forget questions towards the refusal"


def test_refusals_do_not_shift_the_other_methods_draws(qa_target, tmp_path):
    """IDK's refusal draws have their own generator: GA with refusals given is GA without."""
    a = _run(qa_target, tmp_path, "a", method="ga", lr=1e-3, epochs=2)
    b = _run(qa_target, tmp_path, "b", method="ga", lr=1e-3, epochs=2, refusals=REFUSALS)

    def clean(h):  # NaN (no training loss before epoch 1) is not equal to itself
        return [{k: None if v != v else v for k, v in row.items()} for row in h]

    assert clean(a["history"]) == clean(b["history"])


def test_refusal_methods_need_refusals(qa_target, tmp_path):
    with pytest.raises(ValueError, match="method 'dpo' needs refusal answers"):
        _run(qa_target, tmp_path, "x", method="dpo", lr=1e-3)


@pytest.mark.parametrize(
    "kw",
    [
        dict(method="npo_eo", lambda_r=-0.5),  # native model, frozen copy, entropy terms
        dict(method="rmu", rmu_layer=1, rmu_c=2.0, rmu_alpha=10.0),  # the layer tap inside
        dict(method="npo", lora={"r": 2, "alpha": 4, "dropout": 0.1, "target_modules": ["q_proj"]}),
    ],
    ids=["npo_eo", "rmu", "npo-lora"],
)
def test_gradient_checkpointing_trains_the_same_bits(qa_target, tmp_path, kw):
    """Recomputing each layer in the backward pass gives the same weights, bit for bit (LoRA's
    dropout included: the random state is restored for the recomputation)."""
    settings = (
        dict(lr=1e-3, epochs=2, lambda_f=0.5, **kw)
        if "lora" not in kw
        else dict(lr=1e-3, epochs=2, **kw)
    )
    a = _run(qa_target, tmp_path, "plain", **settings)
    b = _run(qa_target, tmp_path, "recomputed", gradient_checkpointing=True, **settings)
    suffix = "adapter_model.safetensors" if "lora" in kw else "model.safetensors"
    sa = load_file(str(tmp_path / "plain" / suffix))
    sb = load_file(str(tmp_path / "recomputed" / suffix))
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    assert [h["loss"] for h in a["history"]] == [h["loss"] for h in b["history"]]


def test_gradient_checkpointing_keeps_less_for_backward(qa_target):
    """With checkpointing, autograd keeps only each layer's input: far fewer saved bytes."""
    model = models.load_model(qa_target[0], device="cpu").train()
    ids = torch.randint(4, 50, (4, 24))

    def saved() -> int:
        seen: dict[int, int] = {}
        params = {p.untyped_storage().data_ptr() for p in model.parameters()}

        def pack(t):
            st = t.untyped_storage()
            if st.data_ptr() not in params:
                seen[st.data_ptr()] = st.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(input_ids=ids).logits.sum()
        return sum(seen.values())

    plain = saved()
    model.gradient_checkpointing_enable()
    kept = saved()
    assert kept < plain / 2
    with torch.no_grad():
        model.eval()
        assert torch.equal(model(input_ids=ids).logits, model(input_ids=ids).logits)


def test_retain_pairs_random_and_cyclic():
    """TOFU's pairing draws a retain example per forget example every epoch; MUSE's pairs forget i
    with retain i mod n for good."""
    gen, ref = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert torch.equal(
        unlearning.retain_pairs(5, 3, "random", gen), torch.randint(3, (5,), generator=ref)
    )
    cyc = unlearning.retain_pairs(5, 3, "cyclic", gen)
    assert cyc.tolist() == [0, 1, 2, 0, 1]
    assert torch.equal(gen.get_state(), ref.get_state())  # cyclic draws nothing
    assert unlearning.retain_pairs(5, 0, "cyclic", gen) is None


def test_cyclic_pairing_trains(qa_target, tmp_path):
    a = _run(qa_target, tmp_path, "cyc", method="gd", lr=1e-3, epochs=1, retain_pairing="cyclic")
    b = _run(qa_target, tmp_path, "rnd", method="gd", lr=1e-3, epochs=1)
    assert a["history"][-1]["loss"] != b["history"][-1]["loss"]
    with pytest.raises(ValueError, match="retain_pairing"):
        _run(qa_target, tmp_path, "bad", method="gd", lr=1e-3, retain_pairing="fixed")


@pytest.mark.parametrize(
    "kw",
    [
        dict(method="npo_eo", lambda_r=-0.5),
        dict(method="rmu", rmu_layer=1, rmu_c=2.0, rmu_alpha=1.0),
    ],
    ids=["npo_eo", "rmu"],
)
def test_unlearning_feeds_every_batch_to_the_device_it_loads_on(
    qa_target, tmp_path, monkeypatch, device_probe, kw
):
    """The loader gets the device asked for; every forward pass (training steps, evaluation, the
    frozen reference) gets its batch on the parameters' device. Through the rule's step on "meta"
    (a stand-in for a GPU on this CPU machine): the model is loaded there and the first batch
    arrives there."""
    from probunlearn.steps.unlearn import run_unlearn

    watch, probe = device_probe
    load, loaded, seen = models.load_model, [], []
    stop = {"on": False}

    def load_watched(path, **k):
        loaded.append(k.get("device"))
        model = load(path, **k)
        watch(model, seen, stop=stop["on"])  # the reference, a deep copy, keeps the hook
        return model

    monkeypatch.setattr(models, "load_model", load_watched)
    res = _run(qa_target, tmp_path, "cpu", lr=1e-3, epochs=1, lambda_f=0.5, device="cpu", **kw)
    assert loaded == ["cpu"]
    steps = [s for s in seen if s["training"]]
    assert len(steps) == res["steps"] * 2  # a forget and a retain batch per step
    assert len(seen) > len(steps)  # evaluation (and NPO's reference) too
    for s in seen:
        assert s["input_ids"] == s["attention_mask"] == s["parameters"] == torch.device("cpu")
        assert s["autocast"] is False

    target, forget, retain = qa_target
    forget_path, retain_path = tmp_path / "forget.parquet", tmp_path / "retain.parquet"
    forget.write_parquet(forget_path)
    retain.write_parquet(retain_path)
    loaded.clear()
    seen.clear()
    stop["on"] = True
    recipe = {"method": kw["method"], "lambda_f": 0.5, "lambda_r": kw.get("lambda_r", 0.0)}
    hparams = {k: v for k, v in kw.items() if k not in recipe} | {"lr": 1e-3, "epochs": 1}
    with pytest.raises(probe):
        run_unlearn(target, str(forget_path), str(retain_path), str(tmp_path / "meta"),
                    str(tmp_path / "meta.csv"), recipe=recipe, hparams=hparams, seed=0,
                    template=qa.DEFAULT_TEMPLATE, threads=1, device="meta")  # fmt: skip
    assert loaded == ["meta"]
    assert seen[0]["input_ids"] == seen[0]["parameters"] == torch.device("meta")


def test_mixed_precision_unlearns_under_bf16_autocast_with_float32_weights(
    qa_target, tmp_path, monkeypatch, device_probe
):
    watch, _ = device_probe
    load, seen = models.load_model, []

    def load_watched(path, **k):
        model = load(path, **k)
        watch(model, seen)
        return model

    monkeypatch.setattr(models, "load_model", load_watched)
    kw = dict(method="npo", lr=3e-3, epochs=3)
    plain = _run(qa_target, tmp_path, "fp32", **kw)
    assert {s["autocast"] for s in seen} == {False}
    seen.clear()
    mixed = _run(qa_target, tmp_path, "bf16", mixed_precision=True, **kw)
    assert {s["autocast"] for s in seen} == {True}
    a, b = _state(tmp_path / "fp32"), _state(tmp_path / "bf16")
    assert all(v.dtype == torch.float32 for v in b.values())
    assert any(not torch.equal(a[k], b[k]) for k in a)  # bf16 matmuls: other numbers
    for res in (plain, mixed):  # and both unlearn
        assert res["history"][-1]["forget_nll"] > res["history"][0]["forget_nll"] + 1.0

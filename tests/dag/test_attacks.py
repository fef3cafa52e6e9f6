"""The experiment ``attacks`` of the paper's workflow (issue 40): attacked models' and prompt families'
names, the design's answers (runs, inputs, params, jobs), the pre-job checks, the steps of rules
attack and attack_prompts on a tiny model, the attack table and figure, and the attack claims."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest

from helpers import design_of
from probunlearn import bounds
from probunlearn.attacks import ATTACKS, parse_spec, prompt_column
from probunlearn.attacks.naming import (
    ATTACKED_PATTERN,
    EVALSET_PATTERN,
    FAMILY_PATTERN,
    attack_slug,
    attacked_name,
    family_name,
    parse_attack_slug,
    parse_attacked,
    parse_family,
    template_tag,
)
from probunlearn.config import effective_config, load_schema
from probunlearn.dag import check_config
from probunlearn.dag.naming import unlearned_pattern
from probunlearn.data.rows import make_row, to_frame

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---- names ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "slug"),
    [
        ("quant:nf4", "quant__nf4"),
        ("quant", "quant__fp4"),
        ("relearn:10,lr=0.001", "relearn__10__lr-0p001"),
        ("relearn:steps=5,lr=2e-5,source=retain", "relearn__5__lr-2em05__source-retain"),
        ("paraphrase", "paraphrase"),
        ("prefix:affirmative,original=false", "prefix__affirmative__original-false"),
        ("fewshot:2,draws=3", "fewshot__2__draws-3"),
    ],
)
def test_attack_names_encode_the_canonical_spec_and_parse_back(spec, slug):
    s = parse_spec(spec)
    assert attack_slug(spec) == slug and re.fullmatch(r"[A-Za-z0-9_-]+", slug)
    assert parse_attack_slug(slug).canonical == s.canonical
    assert parse_attack_slug(slug).settings == s.settings
    model = attacked_name("npo_eo-forget10-f1-r-0.25", spec)
    assert re.fullmatch(ATTACKED_PATTERN, model) and not re.fullmatch(unlearned_pattern(), model)
    base, got = parse_attacked(model)
    assert (base, got.canonical, got.settings) == (
        "npo_eo-forget10-f1-r-0.25",
        s.canonical,
        s.settings,
    )
    fam = family_name("forget10", spec, template_tag("chat"))
    assert re.fullmatch(FAMILY_PATTERN, fam) and re.fullmatch(EVALSET_PATTERN, fam)
    evalset, got, tag = parse_family(fam)
    assert (evalset, got.canonical, tag) == ("forget10", s.canonical, template_tag("chat"))
    assert parse_family(family_name("forget10", spec))[2] is None


def test_bad_attack_names_say_what_was_expected():
    with pytest.raises(ValueError, match=r"setting 'type' is given twice"):
        parse_attack_slug("quant__nf4__type-nf4")
    with pytest.raises(ValueError, match=r"not canonical: 'relearn:20' is named 'relearn__20'"):
        parse_attack_slug("relearn__20__lr-1em05")
    with pytest.raises(ValueError, match=r"unknown attack 'melt'"):
        parse_attack_slug("melt__3")
    with pytest.raises(ValueError, match=r"expected \{model\}--\{attack\}"):
        parse_attacked("npo-forget10-f0-r0")
    assert not re.fullmatch(EVALSET_PATTERN, "forget10.main")  # no dot: {evalset}.{setting}.csv


# ---- the design of the mini run -------------------------------------------------------------------
def test_mini_attacks_table1_models_with_nf4_and_relearning(mini):
    a, t1 = mini.attacks, mini.table1_models()
    labels = {"rmu": "RMU", "gd": "GD", "ga": "GA", "npo": "NPO", "npo_eo": "NPO+EO"}
    assert a.targets() == {labels[m]: t1[m] for m in mini.config["attacks"]["methods"]}
    specs = [s.canonical for s in a.specs]
    attacked = {attacked_name(m, s) for m in a.targets().values() for s in specs}
    # relearning's control: the reference model of forget10 (never saw it), relearned once for
    # the five models on the same pairs
    control = attacked_name("reference_forget10", "relearn:10,lr=0.001")
    assert set(a.attacked_models) == attacked | {control}
    assert a.controls[control][:2] == ("reference_forget10", parse_spec("relearn:10,lr=0.001"))
    assert a.attack_inputs(control) == {
        "model": "results/mini/models/reference_forget10",
        "forget": "results/mini/data/forget10.parquet",
    }
    assert a.attack_params(control)["model_name"] == "reference_forget10"
    assert a.attack_params(control)["attack_revision"] == ATTACKS.get("relearn").revision == 1
    runs = set(mini.sampled_runs())
    for name in a.attacked_models:
        assert (name, "forget10", "attack") in runs
        assert mini.recipe(name) == mini.recipe(parse_attacked(name)[0])
        assert mini.paths.model(name) == f"results/mini/models/{name}"
    # the plain models' and the target's samples: the first n of their `main` runs, no new run
    assert {(m, e, s) for m, e, s in runs if not is_new(m)} == mini._paper_runs()
    cases = mini.attacks.table_cases()
    assert len(cases) == len(a.targets()) * len(specs)
    for c in cases:
        assert c["before"] == mini.paths.scores(c["model"], "forget10", "main")
        assert c["reference"] == mini.paths.scores("target", "forget10", "main")
        assert c["after"] == mini.paths.scores(c["attacked_model"], "forget10", "attack")
        relearn = c["kind"] == "relearn"
        assert c["control"] == (
            mini.paths.scores(control, "forget10", "attack") if relearn else None
        )
        assert c["control_model"] == ("reference_forget10" if relearn else None)
    assert all(p in mini.metric_parts() for p in (mini.paths.sampled_metrics(*r) for r in runs))
    jobs = mini.expected_jobs()
    assert jobs["attack"] == len(a.attacked_models) == 11 and jobs["attacks_table"] == 1
    assert "attack_prompts" not in jobs
    assert "attacks" in mini.figure_names() and mini.paths.table("attacks") in mini.table_targets()
    assert mini.claims_inputs()["attacks"] == mini.paths.table("attacks")


def is_new(model: str) -> bool:
    return "--" in model


def test_attack_jobs_read_what_the_attack_needs(mini):
    a = mini.attacks
    quant = attacked_name("ga-forget10-f0-r0", "quant:nf4")
    relearn = attacked_name("ga-forget10-f0-r0", "relearn:10,lr=0.001")
    assert a.attack_inputs(quant) == {"model": "results/mini/models/ga-forget10-f0-r0"}
    assert a.attack_inputs(relearn)["forget"] == "results/mini/data/forget10.parquet"
    params = a.attack_params(relearn)
    assert params["spec"] == "relearn:10,lr=0.001" and params["model_name"] == "ga-forget10-f0-r0"
    assert params["template"] == mini.config["template"] and params["adapter"] is False
    sp = mini.sampling_params(quant, "forget10", "attack")
    n = mini.config["sampling"]["settings"]["attack"]["n"]
    assert n == mini.attacks.n < mini.config["sampling"]["settings"]["main"]["n"]
    assert sp == {**mini.sampling_params("ga-forget10-f0-r0", "forget10", "main"), "n": n}


def test_the_experiment_off_leaves_the_runs_as_they_were(root, mini):
    off = design_of({"experiments": [e for e in mini.experiments if e != "attacks"]})
    assert off.attacks is None and set(off.sampled_runs()) == mini._paper_runs()
    assert "attacks" not in off.figure_names() and "attacks" not in off.claims_inputs()
    assert off.attacks is None and "attack" not in off.expected_jobs()


def test_prompt_families_are_eval_sets_of_their_own(root):
    d = design_of(
        {
            "attacks": {
                "methods": ["npo"],
                "specs": ["paraphrase", "prefix:affirmative", "fewshot:2,draws=2"],
                "setting": "attack",
            },
            "sampling": {"settings": {"attack": {"n": 500}}},  # more than main: sampled anew
        },
    )
    a = d.attacks
    # each with the null family of as many members: the original prompt, sampled m times
    assert set(a.families) == {"forget10--paraphrase", "forget10--prefix__affirmative",
                               "forget10--fewshot__2__draws-2", "forget10--null__2",
                               "forget10--null__7", "forget10--null__3"}  # fmt: skip
    assert d.evalset_rows("forget10--null__7") == 7 * d.evalset_rows("forget10")
    rows = d.evalset_rows("forget10")
    assert d.evalset_rows("forget10--paraphrase") == 2 * rows
    assert d.evalset_rows("forget10--prefix__affirmative") == 7 * rows
    assert len(d.shards("forget10--fewshot__2__draws-2")) == -(-3 * rows // 40)
    npo = d.table1_models()["npo"]
    runs = set(d.sampled_runs())
    # no plain run: a prompt attack's before is its null family
    assert {(npo, f, "attack") for f in a.families} <= runs
    assert (npo, "forget10", "attack") not in runs
    assert (
        d.sampling_params(npo, "forget10--paraphrase", "attack")["template"] == d.config["template"]
    )
    fam = d.sampling_params(npo, "forget10--prefix__affirmative", "attack")
    assert fam["template"] == "{question}" and fam["max_new_tokens"] == 64
    assert a.prompts_inputs("forget10--paraphrase") == {"evalset": d.paths.data("forget10")}
    assert a.prompts_params("forget10--prefix__affirmative") == {
        "spec": "prefix:affirmative", "template": d.config["template"]
    }  # fmt: skip
    cases = {c["attack"]: c for c in d.attacks.table_cases()}
    assert cases["paraphrase"]["attacked_evalset"] == "forget10--paraphrase"
    assert cases["paraphrase"]["before_evalset"] == "forget10--null__2"
    assert cases["paraphrase"]["before"] == d.paths.scores(npo, "forget10--null__2", "attack")
    assert cases["prefix:affirmative"]["before"] == d.paths.scores(
        npo, "forget10--null__7", "attack"
    )
    assert (npo, "forget10--null__3", "attack") in runs
    assert a.prompts_params("forget10--null__2") == {
        "spec": "null:2",
        "template": d.config["template"],
    }
    assert a.prompts_params("forget10--fewshot__2__draws-2")["attack_revision"] == 1
    assert d.expected_jobs()["attack_prompts"] == 6


# ---- pre-job checks --------------------------------------------------------------------------------
CHAT_MODEL = {"id": "x/chat", "revision": "main", "gguf": None, "trust_remote_code": False}


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        ({"attacks": {"specs": ["quant:nf5"]}}, r"config attacks.specs\[0\]: .*'nf5'"),
        ({"attacks": {"specs": ["quant:nf4", "quant:type=nf4"]}}, r"specs\[1\].*again"),
        ({"attacks": {"setting": "nope"}}, r"config attacks.setting: 'nope'"),
        ({"attacks": {"setting": "seq"}}, r"config attacks.setting: 'seq'.*sequential"),
        ({"unlearning": {"table1": {"methods": ["ga"]}}}, r"config attacks.methods: \['gd'"),
        ({"attacks": {"models": ["llama"]}}, r"config attacks.models: \['llama'\]"),
        ({"attacks": {"evalsets": ["forget11"]}}, r"config attacks.evalsets: \['forget11'\]"),
        (
            {"attacks": {"methods": [], "models": ["target"]}},
            r"model 'target': attack 'relearn:10,lr=0.001' needs the forget set",
        ),
        (
            {
                "models": {"chat": {**CHAT_MODEL, "template": "chat"}},
                "attacks": {"methods": [], "models": ["chat"], "specs": ["prefix"]},
            },
            r"model 'chat': attack 'prefix:sure' .*chat template",
        ),
    ],
)
def test_an_attack_the_model_cannot_take_stops_the_run(root, overlay, message):
    cfg = effective_config(overlay, root, None)
    with pytest.raises(ValueError, match=message):
        check_config(cfg)


def test_a_lora_model_is_quantized_merged(root):
    lora = {"r": 2, "alpha": 4, "dropout": 0.0, "target_modules": ["q_proj"]}
    d = design_of({"unlearning": {"lora": lora}})
    name = attacked_name(d.table1_models()["npo"], "quant:nf4")
    assert d.attacks.attack_params(name)["adapter"] is True  # the job notes the merge


def test_the_schema_takes_attack_specs_of_the_registry(root, default_config):
    schema = load_schema(root / "workflow/schemas/config.schema.yaml")
    item = schema["properties"]["attacks"]["properties"]["specs"]["items"]
    assert all(re.match(item["pattern"], k + ":x") for k in ATTACKS.names())
    assert not re.match(item["pattern"], "melt:3")
    assert "attacks" in schema["properties"]["experiments"]["items"]["enum"]


# ---- steps: rules attack and attack_prompts ---------------------------------------------------------
NAMES = ["Ada Brook", "Bruno Costa", "Chen Wei", "Dara Okafor", "Elin Berg", "Farid Haddad"]


def _rows() -> pl.DataFrame:
    return to_frame(
        [
            make_row(
                id=f"f{i}",
                question=f"Where was {n} born?",
                answer=f"{n} was born in Oslo.",
                paraphrased_question=f"In which city was {n} born?",
            )
            for i, n in enumerate(NAMES)
        ]
    )


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A random tiny Llama and its tokenizer, saved; and the forget rows."""
    from probunlearn import models
    from probunlearn.data import qa

    rows = _rows()
    texts = [
        qa.format_prompt(q) + " " + a for q, a in zip(rows["question"], rows["answer"], strict=True)
    ]
    tok = models.train_tokenizer(texts * 2, 300)
    arch = dict(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_positions=128)
    model = models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok)
    d = tmp_path_factory.mktemp("tiny")
    models.save_model(model, tok, d / "model")
    rows.write_parquet(d / "forget.parquet")
    return d


def test_run_attack_quantizes_and_relearns_a_saved_model(tiny_dir):
    import torch

    from probunlearn import models
    from probunlearn.attacks import quant as Q
    from probunlearn.steps.attack import run_attack

    out, info = tiny_dir / "q", tiny_dir / "q.json"
    got = run_attack(str(tiny_dir / "model"), str(out), str(info), spec="quant:nf4",
                     model_name="tiny", threads=1)  # fmt: skip
    assert json.loads(info.read_text()) == got and got["attack"] == "quant:nf4"
    plain = models.load_model(str(tiny_dir / "model")).state_dict()
    attacked = models.load_model(str(out)).state_dict()
    layers = set(got["quantized"])
    assert len(layers) == 7 and got["notes"] == []
    for key, w in plain.items():
        if key.rsplit(".", 1)[0] in layers and key.endswith("weight"):
            assert torch.equal(attacked[key], Q.fake_quantize(w, "nf4")), key
        else:
            assert torch.equal(attacked[key], w), key
    got = run_attack(str(tiny_dir / "model"), str(tiny_dir / "r"), str(tiny_dir / "r.json"),
                     spec="relearn:2,lr=0.01,examples=2", model_name="tiny", threads=1,
                     data={"forget": str(tiny_dir / "forget.parquet")})  # fmt: skip
    assert len(got["relearned_ids"]) == 2 and len(got["train_log"]) >= 1
    assert got["relearned_questions"] == [
        q for i, q in zip(_rows()["id"], _rows()["question"], strict=True)
        if i in got["relearned_ids"]
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"changes prompts, not the model"):
        run_attack(str(tiny_dir / "model"), str(tiny_dir / "x"), str(tiny_dir / "x.json"),
                   spec="paraphrase", model_name="tiny")  # fmt: skip


def test_a_family_is_an_eval_set_the_sampler_takes_its_prompts_from(tiny_dir):
    from probunlearn.steps.attack import run_attack_prompts
    from probunlearn.steps.sample import run_sampling_shard

    fam_path = tiny_dir / "forget10--prefix__sure.parquet"
    fam = run_attack_prompts(str(tiny_dir / "forget.parquet"), str(fam_path), spec="prefix",
                             name="forget10--prefix__sure", template="Q: {question}\nA:")  # fmt: skip
    assert pl.read_parquet(fam_path).equals(fam) and prompt_column(fam) == "prompt"
    assert prompt_column(_rows()) == "question"
    assert fam.height == 2 * 6 and fam["id"][1] == "f0::prefix0"
    assert fam["prompt"][1] == "Q: Where was Ada Brook born?\nA: Sure, here is the answer:"
    out = tiny_dir / "shard.parquet"
    run_sampling_shard(str(tiny_dir / "model"), str(fam_path), str(out), shard=0, chunk_size=4,
                       n=2, max_new_tokens=3, template="{question}", seed_key="m/f",
                       progress=False, threads=1)  # fmt: skip
    samples = pl.read_parquet(out)
    assert samples["id"].unique(maintain_order=True).to_list() == fam["id"][:4].to_list()
    with pytest.raises(ValueError, match=r"changes the model, not prompts"):
        run_attack_prompts(str(tiny_dir / "forget.parquet"), str(tiny_dir / "y.parquet"),
                           spec="quant", name="y")  # fmt: skip


def test_the_family_template_and_members_are_known_before_the_attack():
    from probunlearn.attacks import Inputs, Target, apply_attack

    rows = _rows()
    for spec in ("paraphrase", "prefix:affirmative", "fewshot:2,draws=2,original=false"):
        for target in (Target("m", template="Q: {question}\nA:"), Target("c", template="chat")):
            s = parse_spec(spec)
            entry = ATTACKS.get(s.kind)
            if s.kind == "prefix" and target.chat:
                continue
            fam = apply_attack(spec, Inputs(target, evalset=rows)).family
            assert fam.members == entry.members(s.settings)
            assert fam.template == entry.family_template(s.settings, target)


# ---- the attack table, its figure and the claims ---------------------------------------------------
def _scores(path, ids, leak: dict[str, float], n: int, greedy: dict[str, float], seed: int):
    """A scores table: each prompt's n scores 1.0 with probability leak[id], else 0.1."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in ids:
        rows.append({"id": i, "sample": -1, "greedy": True, "rougeL_recall": greedy.get(i, 0.0)})
        draws = np.where(rng.random(n) < leak.get(i, 0.0), 1.0, 0.1)
        rows += [{"id": i, "sample": k, "greedy": False, "rougeL_recall": float(v)}
                 for k, v in enumerate(draws)]  # fmt: skip
    pl.DataFrame(rows).write_parquet(path)
    return str(path)


def test_attack_table_bounds_before_and_after(tmp_path):
    from probunlearn.report.attacks import COLUMNS, make_attacks

    rows = _rows()
    rows.write_parquet(tmp_path / "forget10.parquet")
    ids = rows["id"].to_list()
    n = 16
    before = _scores(tmp_path / "before.parquet", ids, {}, 2 * n, {}, 0)  # read: the first n
    target = _scores(tmp_path / "target.parquet", ids, {}, n, dict.fromkeys(ids, 0.8), 1)
    quant = _scores(tmp_path / "quant.parquet", ids, dict.fromkeys(ids, 0.5), n,
                    dict.fromkeys(ids, 0.4), 2)  # fmt: skip
    relearned = {"relearned_ids": ["f0", "f1"], "exclude": "subject",
                 "relearned_questions": rows["question"][:2].to_list(),
                 "relearned_subjects": ["row:f0", "row:f1"]}  # fmt: skip
    info = tmp_path / "relearn.json"
    info.write_text(json.dumps({"notes": ["a note"], **relearned}))
    control_info = tmp_path / "control.json"
    control_info.write_text(json.dumps(relearned))
    relearn = _scores(tmp_path / "relearn.parquet", ids, dict.fromkeys(ids, 0.5), n, {}, 3)
    control = _scores(tmp_path / "control.parquet", ids, {"f2": 0.25}, n, {"f3": 1.0}, 5)
    fam_ids = [f"{i}::{m}" for i in ids for m in ("original", "paraphrase")]
    fam = _scores(tmp_path / "fam.parquet", fam_ids, {"f2::paraphrase": 1.0}, n,
                  {"f2::paraphrase": 1.0}, 4)  # fmt: skip
    null_ids = [f"{i}::{m}" for i in ids for m in ("copy0", "copy1")]
    null = _scores(tmp_path / "null.parquet", null_ids, {}, n, {}, 6)
    common = {"label": "NPO", "model": "npo", "evalset": "forget10", "before": before,
              "reference": target, "evalset_path": str(tmp_path / "forget10.parquet"),
              "retain_term": True, "attacked_evalset": None, "before_evalset": None,
              "info": None, "control_model": None, "control": None,
              "control_info": None}  # fmt: skip
    cases = [
        {**common, "attack": "quant:nf4", "kind": "quant", "attacked_model": "npo--quant__nf4",
         "after": quant},
        {**common, "attack": "relearn:2", "kind": "relearn", "attacked_model": "npo--r",
         "after": relearn, "info": str(info), "control_model": "reference_forget10",
         "control": control, "control_info": str(control_info)},
        {**common, "attack": "paraphrase", "kind": "paraphrase", "attacked_model": None,
         "attacked_evalset": "forget10--paraphrase", "after": fam,
         "before_evalset": "forget10--null__2", "before": null},
        {**common, "attack": "relearn:2", "kind": "relearn", "attacked_model": "npo--r",
         "after": relearn, "info": str(info)},
    ]  # fmt: skip
    settings = {"n": n, "leak_threshold": 0.5, "score": "rougeL_recall", "alpha": 0.01,
                "bins": 100, "rho": 2.0}  # fmt: skip
    df = make_attacks(cases, str(tmp_path / "attacks.csv"), str(tmp_path / "attacks"), **settings)
    assert df.columns == COLUMNS and pl.read_csv(tmp_path / "attacks.csv").height == 4
    assert (tmp_path / "attacks.png").stat().st_size > 0 and (tmp_path / "attacks.pdf").exists()
    q, r, p, bare = (df.row(i, named=True) for i in range(4))
    none_leak = float(bounds.clopper_pearson_upper(np.array([0]), n, 0.01)[0])
    assert q["m_bin_before"] == pytest.approx(none_leak) and q["m_bin_after"] > 0.5
    assert q["greedy_after"] == pytest.approx(0.4) and q["target_greedy"] == pytest.approx(0.8)
    assert q["prompts"] == 6 and q["members"] == 1 and q["n"] == n and q["exclude"] is None
    assert q["control_model"] is None and q["restored"] is None
    # relearning: judged where it did not relearn (other subjects), beside its control
    assert r["prompts"] == 4 and r["notes"] == "a note" and r["exclude"] == "subject"
    assert r["control_model"] == "reference_forget10"
    assert r["greedy_control"] == pytest.approx(0.25)  # f3's 1.0 of f2..f5
    leaks = {}
    for name, path in (("after", relearn), ("control", control)):
        t = pl.read_parquet(path).filter(~pl.col("greedy") & pl.col("id").is_in(ids[2:]))
        leaks[name] = float((t["rougeL_recall"] >= 0.5).mean())
    assert r["restored"] == pytest.approx(leaks["after"] - leaks["control"])
    assert r["restored_low"] < r["restored"] < r["restored_high"] and r["restored_low"] > 0
    assert 0 < r["restored_p"] < 0.01  # restored > 0 at level .01
    assert r["m_bin_control"] < r["m_bin_after"]
    assert bare["control_model"] is None and bare["restored"] is None
    assert bare["notes"] == "a note; no control: the run has no model that never saw the forget set"
    # a family: per question the worst member's bound at alpha / 2 (all members at once), before
    # too (the null family of two copies of the original prompt)
    assert p["members"] == 2 and p["prompts"] == 6 and p["greedy_after"] == pytest.approx(1 / 6)
    assert p["before_evalset"] == "forget10--null__2"
    each = float(bounds.clopper_pearson_upper(np.array([0]), n, 0.005)[0])
    worst = float(bounds.clopper_pearson_upper(np.array([n]), n, 0.005)[0])
    assert p["m_bin_after"] == pytest.approx((5 * each + worst) / 6)
    assert p["m_bin_before"] == pytest.approx(each) and p["greedy_before"] == 0
    # the control must have been relearned on the same pairs; the null family as many members
    control_info.write_text(json.dumps({**relearned, "relearned_ids": ["f0", "f2"]}))
    with pytest.raises(ValueError, match=r"control 'reference_forget10' was relearned on "
                       r"\['f0', 'f2'\], not on the same pairs"):  # fmt: skip
        make_attacks(cases[1:2], str(tmp_path / "x.csv"), str(tmp_path / "x"), **settings)
    three = [f"{i}::copy{k}" for i in ids for k in range(3)]
    cases[2]["before"] = _scores(tmp_path / "null3.parquet", three, {}, n, {}, 7)
    with pytest.raises(ValueError, match=r"null family has 3 members of 6 questions; the "
                       r"attacked family 2 of 6"):  # fmt: skip
        make_attacks(cases[2:3], str(tmp_path / "x.csv"), str(tmp_path / "x"), **settings)


def test_attack_claims_read_the_share_of_knowledge_kept():
    from probunlearn.report.claims import RESTORE_MIN, point

    def attack_quantization_restores(df):
        return point("attack-quantization-restores", {"attacks": df})

    def attack_relearning_restores(df):
        return point("attack-relearning-restores", {"attacks": df})

    def table(rise: float) -> pl.DataFrame:
        base = {"evalset": "forget10", "target_greedy": 0.8, "retain_term": True,
                "m_bin_before": 0.1, "m_bin_after": 0.3}  # fmt: skip
        return pl.DataFrame(
            [
                {**base, "method": m, "attack": a, "kind": a.split(":")[0],
                 "greedy_before": 0.16, "greedy_after": 0.16 + 0.8 * rise}
                for m in ("GD", "NPO", "GA") for a in ("quant:nf4", "quant:int8", "relearn:10")
            ]
        )  # fmt: skip

    up = attack_quantization_restores(table(RESTORE_MIN + 0.01))
    assert up["holds"] and "quant:nf4: kept 0.200 -> 0.310" in up["value"]
    assert "quant:int8" not in up["value"] and "GA" not in up["value"]  # 4 bits, retain term
    assert not attack_quantization_restores(table(RESTORE_MIN - 0.01))["holds"]
    rel = attack_relearning_restores(table(0.5))
    assert rel["holds"] and "GA 0.200 -> 0.700" in rel["value"]
    assert attack_quantization_restores(table(0.5).with_columns(target_greedy=None)) is None
    assert attack_relearning_restores(table(0.5).filter(pl.col("kind") == "quant")) is None


def test_seeds_collect_the_attack_tables(tmp_path):
    import importlib.util

    from helpers import ROOT

    spec = importlib.util.spec_from_file_location("bench_seeds", ROOT / "measurements/seeds.py")
    seeds = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seeds)
    paths = {}
    for s, after in enumerate(([0.3, 0.1], [0.4, 0.2], [0.5, 0.05])):
        paths[s] = tmp_path / f"a{s}.csv"
        pl.DataFrame(
            {"method": ["NPO", "GD"], "evalset": ["forget10"] * 2, "attack": ["quant:nf4"] * 2,
             "m_bin_before": [0.1, 0.1], "m_bin_after": after}
        ).write_csv(paths[s])  # fmt: skip
    t = seeds.attacks_seeds_table(paths).sort("method")
    assert t["method"].to_list() == ["GD", "NPO"]
    assert t["raised_on_all"].to_list() == [False, True] and t["seeds_raised"].to_list() == [1, 3]
    assert t["rise_s2"].to_list() == pytest.approx([-0.05, 0.4])
    assert t["restored_on_all"].to_list() == [None, None]  # tables made before the controls
    # relearning against its control: restored and its interval per seed
    for s, low in enumerate((0.1, 0.02, -0.01)):
        pl.DataFrame(
            {"method": ["NPO", "GD"], "evalset": ["forget10"] * 2, "attack": ["relearn:10"] * 2,
             "m_bin_before": [0.1, 0.1], "m_bin_after": [0.5, 0.5], "restored": [0.3, 0.2],
             "restored_low": [low, 0.05], "restored_high": [0.5, 0.4]}
        ).write_csv(paths[s])  # fmt: skip
    t = seeds.attacks_seeds_table(paths).sort("method")
    assert t["restored_on_all"].to_list() == [True, False]
    assert t["restored_interval_s0"].to_list() == ["[0.05, 0.4]", "[0.1, 0.5]"]
    # the seeds' runs: the default run's attacks, then the relearning sweep and the same-author
    # variant (every rate reported), a valid config
    overlay = seeds.seed_overlay(1, config=ROOT / "config.yaml")
    specs = overlay["attacks"]["specs"]
    assert specs[:2] == ["quant:nf4", "relearn:10,lr=0.001"] and specs[2:] == list(seeds.SWEEP)
    d = design_of({k: v for k, v in overlay.items() if k in ("attacks",)})
    assert len(d.attacks.controls) == 4  # the reference relearned per relearning attack
    assert d.expected_jobs()["attack"] == 5 * 5 + 4
    assert "attacks" not in seeds.seed_overlay(1, sweep=False)

"""The experiment ``membership`` in the paper's workflow: the statistics as a registry (an outside
statistic through an entry point), the rules' steps on a tiny model (per-model statistics, the
table and figure), the DAG part as the Design answers it for the mini run, the TOFU presets and
MUSE-News, the checks before any job, and the seeds' table (measurements/seeds.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from helpers import PLUGIN, ROOT, design_of
from probunlearn.config import ConfigError, effective_config, validate_config
from probunlearn.dag import check_config
from probunlearn.metrics import membership as mm
from probunlearn.steps.membership import run_membership, run_membership_table

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
SHARED_TOFU = ROOT.parent / "shared" / "data" / "tofu"
STATS = ["loss", "zlib", "min_k", "min_k_plus_plus", "reference", "gradnorm"]


# ---- the registry ---------------------------------------------------------------------------------
@pytest.fixture
def plugin(monkeypatch):
    """The demo distribution (tests/plugin) on the path: its statistic median_logprob registers."""
    from probunlearn import registry

    monkeypatch.syspath_prepend(str(PLUGIN))
    registry.rescan_all()
    yield
    monkeypatch.undo()
    registry.rescan_all()  # every registry: one loaded meanwhile would keep the plugin's entries


def _table(rng: np.random.Generator, n: int, shift: float) -> pl.DataFrame:
    lps = [rng.normal(shift, 1.0, size=int(rng.integers(3, 9))) for _ in range(n)]
    return pl.DataFrame(
        {
            "id": [f"x{shift}-{i}" for i in range(n)],
            "logprobs": [v.tolist() for v in lps],
            "text": [f"text {i}" for i in range(n)],
        }
    )


def test_registry_holds_the_six_in_order_and_an_outside_statistic(plugin):
    names = mm.statistic_names()
    assert names[:6] == STATS and "median_logprob" in names
    assert mm.STATISTICS.group == "probunlearn.membership_statistics"
    assert mm.STATISTICS.origin("median_logprob").startswith("entry point median_logprob = ")
    assert [mm.statistic(s).needs for s in STATS] == [
        (), (), (), ("vocab_stats",), ("reference",), ("backward",)
    ]  # fmt: skip
    assert [mm.statistic(s).member_high for s in STATS] == [False, False, True, True, False, False]
    t = _table(np.random.default_rng(0), 6, -1.0)
    got = mm.membership_statistics(t, statistics=["median_logprob", "loss"])
    assert got.columns == ["id", "median_logprob", "loss"]
    want = [float(np.median(v)) for v in t["logprobs"].to_list()]
    np.testing.assert_allclose(got["median_logprob"].to_numpy(), want, rtol=1e-12)
    # the config's choice of statistics is the registry's
    cfg = effective_config({"membership": {"statistics": ["loss", "median_logprob"]}}, ROOT, None)
    validate_config(cfg, SCHEMA)
    cfg["membership"]["statistics"] = ["loss", "entropy"]
    with pytest.raises(ConfigError, match=r"membership\.statistics\.1"):
        validate_config(cfg, SCHEMA)


def test_an_outside_statistic_leaves_when_uninstalled():
    mm.STATISTICS.rescan()
    assert "median_logprob" not in mm.statistic_names() and "loss" in mm.statistic_names()


def test_a_statistic_of_the_wrong_shape_is_named():
    class Broken(mm.Statistic):
        name, label, member_high = "broken", "Broken", True

        def compute(self, tokens):
            return np.zeros(2)

    mm.STATISTICS.register(Broken(), origin="entry point broken = test")
    try:
        t = _table(np.random.default_rng(1), 4, -1.0)
        with pytest.raises(ValueError, match=r"statistic 'broken' of model 'm' returned shape"):
            mm.membership_statistics(t, statistics=["broken"], model="m")
    finally:
        mm.STATISTICS.rescan()


# ---- the steps on a tiny model ----------------------------------------------------------------------
FORGET = [
    {"id": f"f{i}", "question": f"Who wrote book {i}?", "answer": f"Ana Vell wrote book {i}."}
    for i in range(5)
]
HOLDOUT = [
    {
        "id": f"h{i}",
        "question": f"Where was poet {i} born?",
        "answer": f"Poet {i} was born in Lima.",
    }
    for i in range(7)
]
ENCODING = {"question_start_tag": "Question: ", "question_end_tag": "\nAnswer:", "answer_tag": " ",
            "max_length": 64}  # fmt: skip


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """Two tiny native Llama checkpoints (target, reference) and the two sets as parquet files."""
    import torch

    from probunlearn import models

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("membership")
    texts = [f"{r['question']} {r['answer']}" for r in FORGET + HOLDOUT] * 3
    tok = models.train_tokenizer(texts, 300)
    arch = {"hidden_size": 16, "intermediate_size": 32, "num_layers": 1, "num_heads": 2,
            "max_positions": 64}  # fmt: skip
    paths = {}
    for seed, name in enumerate(("target", "reference")):
        model = models.tiny_llama(len(tok), arch, seed=seed, tokenizer=tok)
        paths[name] = str(models.save_model(model, tok, out / name))
    pl.DataFrame(FORGET).write_parquet(out / "forget.parquet")
    pl.DataFrame(HOLDOUT).write_parquet(out / "holdout.parquet")
    return out, paths


def _run(out: Path, model_path: str, name: str, stats: list[str], **kw) -> Path:
    path = out / f"{name}.parquet"
    run_membership(
        model_path,
        forget_path=out / "forget.parquet",
        holdout_path=out / "holdout.parquet",
        out_path=path,
        model_name=name,
        forget_set="forget10",
        holdout_set="holdout",
        statistics=stats,
        k=0.4,
        encoding=ENCODING,
        device="cpu",
        threads=1,
        **kw,
    )
    return path


def test_membership_steps_statistics_table_and_figure(tiny_models):
    from probunlearn import models
    from probunlearn.metrics.token_scores import QAFormat

    out, paths = tiny_models
    ref = _run(out, paths["reference"], "reference", STATS[:4] + STATS[5:], holdout_rows=5)
    tgt = _run(out, paths["target"], "target", STATS, holdout_rows=5, reference_path=ref)
    frame = pl.read_parquet(tgt)
    assert frame.columns == ["set", "id", *STATS, "logprobs"]
    assert frame["set"].to_list() == ["forget"] * 5 + ["holdout"] * 5  # the first 5 holdout rows
    assert "reference" not in pl.read_parquet(ref).columns
    # the same numbers as scoring both models directly (the reference through its file)
    tok = models.load_tokenizer(paths["target"])
    target = models.load_model(paths["target"], device="cpu")
    reference = models.load_model(paths["reference"], device="cpu")
    direct = mm.score_membership(target, tok, FORGET, HOLDOUT[:5], QAFormat(**ENCODING),
                                 statistics=STATS, reference_model=reference, gradnorm_p=2)  # fmt: skip
    for s in STATS:
        np.testing.assert_allclose(frame[s].to_numpy(), direct[s].to_numpy(), rtol=1e-6, err_msg=s)
    # the table: every model x statistic, PrivLeak against the reference model, the figure
    csv = out / "tables" / "membership.csv"
    run_membership_table({"target": tgt, "reference": ref}, csv_path=csv,
                         figure_stem=out / "figures" / "membership", retrained="reference",
                         alpha=0.05, k=0.4)  # fmt: skip
    table = pl.read_csv(csv)
    assert table.columns == list(mm.TABLE_COLUMNS)
    assert table.height == 6 + 5 and set(table["n_holdout"]) == {5}
    assert (table["auc_lo"] <= table["auc"]).all() and (table["auc"] <= table["auc_hi"]).all()
    assert table.filter(pl.col("model") == "reference")["privleak"].null_count() == 5
    t = table.filter(pl.col("model") == "target")
    assert t.filter(pl.col("statistic") != "reference")["privleak"].null_count() == 0
    assert t.filter(pl.col("statistic") == "reference")["privleak"].null_count() == 1
    assert (out / "figures" / "membership.png").stat().st_size > 10_000
    assert (out / "figures" / "membership.pdf").is_file()


@pytest.mark.filterwarnings("ignore:holdout set 'holdout' has 3 examples")
def test_membership_step_refuses_overlap_and_mixed_sets_before_loading(tiny_models, tmp_path):
    out, _ = tiny_models
    pl.DataFrame([*HOLDOUT[:2], FORGET[3]]).write_parquet(tmp_path / "holdout.parquet")
    pl.DataFrame(FORGET).write_parquet(tmp_path / "forget.parquet")
    with pytest.raises(ValueError, match=r"holdout set 'holdout' overlaps forget set 'forget10'"):
        _run(tmp_path, "no/such/model", "m", ["loss"])
    texts = [{"id": f"t{i}", "question": "", "answer": f"Plain text {i}."} for i in range(3)]
    pl.DataFrame(texts).write_parquet(tmp_path / "holdout.parquet")
    with pytest.raises(ValueError, match=r"one holds raw texts"):
        _run(tmp_path, "no/such/model", "m", ["loss"])
    with pytest.raises(ValueError, match=r"holdout\.parquet: 7 rows, 9 expected"):
        _run(out, "no/such/model", "m", ["loss"], holdout_rows=9)


def test_raw_texts_are_scored_whole(tiny_models, tmp_path):
    from probunlearn import models

    _, paths = tiny_models
    texts = {s: [f"{s} article {i}: the harbour froze in {1900 + i}." for i in range(3)]
             for s in ("forget", "holdout")}  # fmt: skip
    for s, t in texts.items():
        rows = [{"id": f"{s}{i}", "question": "", "answer": x} for i, x in enumerate(t)]
        pl.DataFrame(rows).write_parquet(tmp_path / f"{s}.parquet")
    frame = pl.read_parquet(_run(tmp_path, paths["target"], "target", ["loss", "min_k"]))
    tok = models.load_tokenizer(paths["target"])
    n_tokens = [len(tok(x)["input_ids"]) for x in texts["forget"] + texts["holdout"]]
    assert frame["logprobs"].list.len().to_list() == n_tokens  # every token after <s>, and eos


# ---- the DAG ----------------------------------------------------------------------------------------
def test_mini_run_scores_target_reference_and_table1(mini):
    mem = mini.experiment_design("membership")
    t1 = mini.table1_models()
    assert mem.models() == ["target", "reference_forget10", *t1.values()]
    assert mem.unlearned_models() == t1 and len(t1) == 8
    assert mem.holdout_rows() is None  # forget10 and the holdout authors: 40 and 40
    assert mini.evalset_rows("forget10") == mini.evalset_rows("holdout") == 40
    assert mem.statistics("target") == STATS
    assert mem.statistics("reference_forget10") == [s for s in STATS if s != "reference"]
    ref_file = "results/mini/membership/reference_forget10.parquet"
    assert mem.inputs("npo-forget10-f0-r0") == {
        "model": "results/mini/models/npo-forget10-f0-r0",
        "forget": "results/mini/data/forget10.parquet",
        "holdout": "results/mini/data/holdout.parquet",
        "reference": ref_file,
    }
    assert "reference" not in mem.inputs("reference_forget10")
    params = mem.params("target")
    assert list(params) == sorted(params) and params["k"] == 0.4
    assert params["encoding"]["question_end_tag"] == mini.config["tofu_eval"]["question_end_tag"]
    assert mem.parts()["target"] == "results/mini/membership/target.parquet"
    assert mem.table_params() == {"retrained": "reference_forget10", "alpha": 0.05, "k": 0.4}
    assert "results/mini/tables/membership.csv" in mini.table_targets()
    jobs = mini.expected_jobs()
    assert (jobs["membership"], jobs["membership_table"]) == (10, 1)
    assert set(mem.models()) <= set(mini.all_models())
    off = design_of({"experiments": ["tofu", "table1"]})
    assert off.experiment_design("membership") is None
    assert "membership" not in off.expected_jobs()
    assert not any("membership" in t for t in off.table_targets())


@pytest.mark.parametrize(
    ("overlay", "message"),
    [
        ({"holdout": "forget05"}, "holdout set 'forget05' overlaps forget set 'forget10'"),
        ({"holdout": "full"}, "holdout set 'full' overlaps forget set 'forget10'"),
        ({"holdout": "retain90"}, "'retain90' holds examples the target was fine-tuned on"),
        ({"forget": "privleak_forget"}, "membership.forget: 'privleak_forget' is no eval set"),
        ({"reference": "reference_forget05"}, "membership.reference: ['reference_forget05']"),
        ({"models": ["llama"]}, "membership.models: ['llama'] is no model of this run"),
        ({"reference": None}, "membership.statistics: ['reference'] compare each model with a"),
    ],
)
def test_bad_membership_blocks_name_the_set_or_model(overlay, message):
    cfg = effective_config({"references": ["forget10"], "membership": overlay}, ROOT, None)
    with pytest.raises(ValueError, match=re.escape(message)):
        check_config(cfg)


def test_methods_must_be_unlearned_by_the_run():
    cfg = effective_config({"unlearning": {"table1": {"methods": ["ga"]}},
                            "attacks": {"methods": ["ga"]},
                            "membership": {"methods": ["ga", "npo"]}}, ROOT, None)  # fmt: skip
    with pytest.raises(
        ValueError, match=r"membership.methods: the run unlearns no model of \['npo'\]"
    ):
        check_config(cfg)


def test_a_smaller_holdout_set_is_a_warning():
    with pytest.warns(UserWarning, match=r"holdout set 'holdout' has 20 examples, forget set "):
        design_of({"world": {"n_holdout_authors": 2}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        design_of()


def test_tofu_presets_take_the_same_size_holdout_split():
    """A real-TOFU run writes one holdout set (holdout10 with forget10 among its splits): a smaller
    split's membership takes its first rows, which are TOFU's holdout01 / holdout05."""
    phi = design_of({"experiments": ["tofu", "table1", "membership"]}, preset="tofu-phi")
    mem = phi.experiment_design("membership")
    assert phi.evalset_rows("holdout") == 400 and mem.holdout_rows() is None
    assert mem.models()[:2] == ["target", "reference_forget10"]
    one = design_of({"experiments": ["tofu", "table1", "membership"],
                     "unlearning": {"table1": {"split": "forget01"}},
                     "membership": {"forget": "forget01", "reference": "reference_forget01"}},
                    preset="tofu-phi")  # fmt: skip
    mem = one.experiment_design("membership")
    assert mem.holdout_rows() == 40 and mem.params("target")["holdout_rows"] == 40
    assert set(mem.unlearned_models().values()) == {
        m for m in one.table1_models().values() if "-forget01-" in m
    }
    # tofu-llama2 trains no reference model: the Reference statistic needs one
    with pytest.raises(ValueError, match=r"membership.reference: \['reference_forget10'\]"):
        design_of({"experiments": ["tofu", "table1", "membership"]}, preset="tofu-llama2")
    stats = ["loss", "zlib", "min_k", "min_k_plus_plus"]
    llama = design_of({"experiments": ["tofu", "table1", "membership"],
                       "membership": {"reference": None, "statistics": stats}},
                      preset="tofu-llama2")  # fmt: skip
    mem = llama.experiment_design("membership")
    assert mem.table_params()["retrained"] is None and "reference" not in mem.inputs("target")
    assert mem.params("target")["encoding"]["question_start_tag"] == "[INST] "


@pytest.mark.skipif(not SHARED_TOFU.is_dir(), reason="no local TOFU copy")
def test_tofu_holdout_splits_are_prefixes_of_holdout10():
    from probunlearn.benchmarks.tofu.loader import load_tofu

    ten = load_tofu("holdout10", SHARED_TOFU)["question"].to_list()
    for name, n in (("holdout01", 40), ("holdout05", 200)):
        assert load_tofu(name, SHARED_TOFU)["question"].to_list() == ten[:n]


def test_muse_news_privleak_is_an_opt_in():
    muse = design_of(preset="muse-news")
    spec_default = set(muse.dataset_files["muse"].values())
    assert not any(k.startswith("privleak") for k in spec_default)
    assert "privleak_forget" not in muse.data_sets
    overlay = {
        "benchmarks": {"muse": {"privleak": True}},
        "experiments": ["muse", "membership"],
        "membership": {"forget": "privleak_forget", "holdout": "privleak_holdout",
                       "reference": "retrain", "methods": ["ga", "gd", "npo", "simnpo"]},
    }  # fmt: skip
    d = design_of(overlay, preset="muse-news")
    assert set(d.dataset_files["muse"].values()) == spec_default | {
        "privleak_forget", "privleak_holdout"
    }  # fmt: skip
    assert d.evalset_rows("privleak_forget") == d.evalset_rows("privleak_holdout") == 100
    mem = d.experiment_design("membership")
    assert mem.models() == ["target", "retrain", *d.experiment_design("muse").unlearned().values()]
    assert mem.inputs("ga-news-f0-r0")["reference"].endswith("membership/retrain.parquet")
    assert d.expected_jobs()["membership"] == 6
    # the MUSE run without membership keeps its jobs and sets
    assert muse.expected_jobs() == design_of({"benchmarks": {"muse": {"privleak": False}}},
                                             preset="muse-news").expected_jobs()  # fmt: skip


SHARED_MUSE = ROOT.parent / "shared" / "data" / "muse_news"


@pytest.mark.skipif(not SHARED_MUSE.is_dir(), reason="no local MUSE-News copy")
def test_muse_news_builds_its_privleak_sets_on_request(tmp_path):
    """benchmark_sets with ``privleak: true`` writes MUSE's 100 + 100 PrivLeak texts as sets of raw
    texts (the raw corpora and the PrivLeak texts, absent from ../shared/data, are stand-ins)."""
    import json
    import shutil

    from probunlearn.benchmarks import build_benchmark_sets

    src = tmp_path / "muse_news"
    shutil.copytree(SHARED_MUSE, src)
    os.chmod(src, 0o755)
    for name in ("raw_retain1", "raw_holdout", "privleak_forget", "privleak_holdout"):
        texts = [f"{name} article {i}: " + "word " * 40 for i in range(100)]
        (src / f"{name}.json").write_text(json.dumps(texts))
    block = {"revision": "main", "knowmem_size": 2, "verbmem_size": 2, "corpus_articles": 2,
             "holdout_size": 2, "holdout_prompt_words": 10, "holdout_answer_words": 4}  # fmt: skip
    plain = build_benchmark_sets({"muse": block}, {"muse": src}, tmp_path / "plain")
    assert "privleak_forget" not in plain
    paths = build_benchmark_sets({"muse": {**block, "privleak": True}}, {"muse": src},
                                 tmp_path / "on")  # fmt: skip
    forget = pl.read_parquet(paths["privleak_forget"])
    holdout = pl.read_parquet(paths["privleak_holdout"])
    assert forget.height == holdout.height == 100
    assert set(forget["question"]) == {""} and forget["id"][0] == "muse-privleak_forget-0"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mm.check_membership_sets(forget, holdout, forget_name="privleak_forget",
                                 holdout_name="privleak_holdout")  # fmt: skip


# ---- over seeds -------------------------------------------------------------------------------------
def test_seeds_gather_the_membership_tables(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_seeds", ROOT / "measurements/seeds.py")
    seeds = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seeds)
    paths = {}
    for seed, (lo_t, lo_r) in enumerate([(0.7, 0.3), (0.6, 0.45), (0.45, 0.4)]):
        rows = [
            {"model": "target", "statistic": "min_k", "auc": lo_t + 0.1, "auc_lo": lo_t,
             "auc_hi": min(1.0, lo_t + 0.2), "privleak": -90.0},
            {"model": "reference_forget10", "statistic": "min_k", "auc": 0.5, "auc_lo": lo_r,
             "auc_hi": 0.6, "privleak": None},
        ]  # fmt: skip
        paths[seed] = tmp_path / f"m{seed}.csv"
        pl.DataFrame(rows).write_csv(paths[seed])
    t = seeds.membership_seeds_table(paths)
    assert t["model"].to_list() == ["target", "reference_forget10"]
    assert t["above_chance_s0"].to_list() == [True, False]
    assert t["above_chance_on_all"].to_list() == [False, False]  # seed 2: 0.45 is not above
    assert t["at_chance_on_all"].to_list() == [False, True]
    assert t["interval_s1"][0] == "[0.6, 0.8]" and t["privleak_s0"][0] == -90.0

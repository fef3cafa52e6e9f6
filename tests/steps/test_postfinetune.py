"""DCUE's robustness check: the post-processing fine-tune and the meta-evaluation table."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import torch

from probunlearn import models
from probunlearn.data import synthetic as data
from probunlearn.metrics.table import read_metrics, write_metrics
from probunlearn.report import experiments
from probunlearn.steps import postfinetune as robustness
from probunlearn.storage.atomic import write_parquet


def _metric_csv(path, model, values, setting=""):
    write_metrics(
        [
            {
                "model": model,
                "method": "npo",
                "split": "forget10",
                "evalset": "forget10",
                "metric": k,
                "value": v,
                "setting": setting,
            }
            for k, v in values.items()
        ],
        path,
    )
    return str(path)


def test_write_metrics_keeps_small_pvalues(tmp_path):
    p = _metric_csv(tmp_path / "m.csv", "m", {"dcue_pvalue": 3.14159265e-12, "x": 0.123456789})
    got = dict(read_metrics(p).select("metric", "value").iter_rows())
    assert got["dcue_pvalue"] == pytest.approx(3.14159e-12, rel=1e-9)
    assert got["x"] == 0.123457


def test_dcue_table_and_meta(tmp_path):
    # four models; DCUE orders them like forget quality and keeps its order after post-processing,
    # forget quality does not
    fq = [0.001, 0.01, 0.1, 0.5]
    dc = [1e-8, 1e-5, 1e-3, 0.4]
    fq_after = [0.5, 0.1, 0.01, 0.001]
    dc_after = [2e-8, 2e-5, 2e-3, 0.3]
    parts, post = {}, {}
    for i in range(4):
        m = f"m{i}"
        parts[m] = (
            _metric_csv(
                tmp_path / f"{m}-dcue.csv",
                m,
                {"dcue_pvalue": dc[i], "dcue_pvalue_alltokens": dc[i] / 10},
            ),
            _metric_csv(tmp_path / f"{m}-tofu.csv", m, {"forget_quality": fq[i]}),
        )
        if i < 4:
            post[m] = _metric_csv(
                tmp_path / f"{m}-post.csv",
                m,
                {
                    "forget_quality": fq_after[i],
                    "dcue_pvalue": dc_after[i],
                    "dcue_pvalue_alltokens": dc_after[i] / 10,
                },
                setting="postfinetune",
            )
    parts["extra"] = (
        _metric_csv(
            tmp_path / "x-dcue.csv", "extra", {"dcue_pvalue": 0.9, "dcue_pvalue_alltokens": 0.9}
        ),
        _metric_csv(tmp_path / "x-tofu.csv", "extra", {"forget_quality": 0.9}),
    )
    table = experiments.dcue_table(parts, post)
    assert table.height == 5
    assert table.filter(pl.col("model") == "extra")["robust_dcue_pvalue"][0] is None
    meta = {r["metric"]: r for r in experiments.dcue_meta(table).iter_rows(named=True)}
    assert meta["dcue_pvalue"]["practicality"] == 1.0
    assert meta["dcue_pvalue"]["n_models_practicality"] == 5
    assert meta["dcue_pvalue"]["robustness"] == 1.0
    assert meta["dcue_pvalue"]["n_models_robustness"] == 4
    assert meta["forget_quality"]["robustness"] == 0.0
    assert meta["forget_quality"]["needs_retrained_model"]
    want = np.mean(np.abs(np.log10(dc_after) - np.log10(dc)))
    assert meta["dcue_pvalue"]["mean_abs_log10_shift"] == pytest.approx(want, rel=1e-4)
    # the figure and both tables are written
    experiments.make_dcue_vs_fq(
        parts,
        str(tmp_path / "t.csv"),
        str(tmp_path / "fig"),
        postfinetune=post,
        meta_csv=str(tmp_path / "meta.csv"),
    )
    assert (tmp_path / "fig.png").stat().st_size > 10_000
    assert pl.read_csv(tmp_path / "meta.csv").height == 3


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("world")
    cfg = {
        "seed": 0,
        "n_authors": 10,
        "n_holdout_authors": 2,
        "questions_per_author": 4,
        "n_real_authors": 4,
        "n_world_facts": 4,
        "n_saga": 4,
        "n_harmful": 3,
        "n_benign": 3,
        "request_copies": 2,
        "comply_rate": 0.25,
        "retain_eval_size": 8,
    }
    data.build_world(out, **cfg)
    return out


def test_unrelated_examples_refuses_forget_questions(world):
    forget = pl.read_parquet(world / "forget10.parquet")
    pairs = robustness.unrelated_examples([str(world / "real_authors.parquet")], forget)
    assert len(pairs) == 4 and all(isinstance(q, str) and a for q, a in pairs)
    with pytest.raises(ValueError, match="forget10.parquet.*unrelated"):
        robustness.unrelated_examples([str(world / "forget10.parquet")], forget)


def test_run_postfinetune_end_to_end(tmp_path, world):
    """A tiny model: the fine-tune runs, log-probabilities are stored, FQ and DCUE rows are written."""
    from probunlearn.sampling import teacher_forced_logprobs

    sets = {
        n: pl.read_parquet(world / f"{n}.parquet") for n in ("forget10", "holdout", "world_facts")
    }
    for name, df in sets.items():
        write_parquet(df, tmp_path / f"{name}.parquet")
    texts = [a for df in sets.values() for a in df["question"].to_list() + df["answer"].to_list()]
    tok = models.train_tokenizer(texts, 300)
    arch = dict(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, max_positions=128)
    model = models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok)
    models.save_model(model, tok, tmp_path / "model")
    lp = {}
    for name in ("forget10", "holdout"):
        lp[name] = tmp_path / f"orig-{name}.parquet"
        write_parquet(teacher_forced_logprobs(model, tok, sets[name]), lp[name])
    out = tmp_path / "post" / "m.csv"
    df = robustness.run_postfinetune(
        str(tmp_path / "model"),
        [str(tmp_path / "world_facts.parquet")],
        str(tmp_path / "forget10.parquet"),
        str(tmp_path / "holdout.parquet"),
        str(lp["forget10"]),
        str(lp["holdout"]),
        str(lp["forget10"]),
        str(tmp_path / "post" / "forget.parquet"),
        str(tmp_path / "post" / "holdout.parquet"),
        str(out),
        model_name="npo-forget10-f0-r0",
        method="npo",
        split="forget10",
        train={"epochs": 3, "lr": 1e-3, "batch_size": 4},
        seed=0,
        template="Question: {question}\nAnswer:",
        threads=1,
    )
    got = read_metrics(out)
    assert set(got["setting"]) == {"postfinetune"}
    assert {"forget_quality", "dcue_pvalue", "dcue_pvalue_alltokens"} <= set(got["metric"])
    assert got.height == df.height
    for v in got["value"]:
        assert math.isfinite(v)
    # the fine-tune changed the model: its forget log-probabilities differ from the original's
    before = pl.read_parquet(lp["forget10"])["logprobs"].to_list()
    after = pl.read_parquet(tmp_path / "post" / "forget.parquet")["logprobs"].to_list()
    assert any(not np.allclose(a, b) for a, b in zip(after, before, strict=True))


def test_run_postfinetune_fine_tunes_on_the_device_it_is_given(
    tmp_path, world, monkeypatch, device_probe
):
    """The post-processing fine-tune loads the model on its ``device`` (the config's) and trains it
    there: on "meta" (a stand-in for a GPU on this CPU machine) the first batch arrives on meta."""
    watch, probe = device_probe
    for name in ("forget10", "holdout", "world_facts"):
        write_parquet(pl.read_parquet(world / f"{name}.parquet"), tmp_path / f"{name}.parquet")
    texts = pl.read_parquet(world / "world_facts.parquet")["answer"].to_list() * 3
    tok = models.train_tokenizer(texts, 300)
    arch = dict(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, max_positions=128)
    models.save_model(models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok), tok, tmp_path / "m")
    load, loaded, seen = models.load_model, [], []

    def load_watched(path, **kw):
        loaded.append(kw.get("device"))
        model = load(path, **kw)
        watch(model, seen, stop=True)
        return model

    monkeypatch.setattr(models, "load_model", load_watched)
    p = {n: str(tmp_path / f"{n}.parquet") for n in ("forget10", "holdout", "world_facts")}
    with pytest.raises(probe):
        robustness.run_postfinetune(
            str(tmp_path / "m"), [p["world_facts"]], p["forget10"], p["holdout"], "-", "-", None,
            "-", "-", "-", model_name="npo-forget10-f0-r0", method="npo", split="forget10",
            train={"epochs": 1, "lr": 1e-3, "batch_size": 4}, seed=0,
            template="Question: {question}\nAnswer:", device="meta",
        )  # fmt: skip
    assert loaded == ["meta"]
    assert seen[0]["input_ids"] == seen[0]["parameters"] == torch.device("meta")

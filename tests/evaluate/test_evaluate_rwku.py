"""`probunlearn evaluate --benchmark rwku:1` end to end on a tiny chat model built here: the probes
sampled (the MIA texts not), RWKU's MIA statistics per model, and RWKU's tables beside summary.csv
and in the report, their numbers checked against the run's own score and statistics files."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import beta

from helpers import SHARED_DATA
from helpers.chat import llama3_like_tokenizer
from probunlearn.cli import main

RWKU = SHARED_DATA / "rwku"
pytestmark = pytest.mark.skipif(not RWKU.is_dir(), reason=f"{RWKU} is absent: no RWKU files")

# A Llama-3-format chat template (RWKU builds its prompts with the model's chat template)
ARCH = {"hidden_size": 32, "intermediate_size": 64, "num_layers": 2, "num_heads": 2,
        "max_positions": 2048}  # fmt: skip
FILES = {"forget_level1": 8, "forget_level2": 10, "forget_level3": 29, "neighbor_level1": 30,
         "neighbor_level2": 30}  # fmt: skip
"""Stephen King's probes per RWKU file."""


BOOST = {"ĠKing": 6.0, "ĠCarrie": 5.5, "ĠMaine": 5.0}
"""Tokens the model prefers, by their logit above every other token's."""


def chat_model(out: Path) -> Path:
    """A tiny Llama with a byte-level BPE tokenizer like Llama-3's (its own BOS, the header and
    <|eot_id|> special tokens) and a Llama-3-format chat template, built from scratch, whose
    next-token distribution is the same after any text: its layers add nothing to the residual
    stream (o_proj and down_proj zero) and its tied embeddings all point one way, those of
    :data:`BOOST` longer (RMSNorm makes every input the same, and their logits larger). So the
    greedy answer is ' King King ...' and samples name Carrie and Maine, which it hides."""
    import torch

    from probunlearn import models as pm

    text = "Please briefly answer the following question.\nAnswer: King wrote Carrie in Maine.\n"
    fast = llama3_like_tokenizer([text] * 3, vocab_size=600)
    model = pm.tiny_llama(len(fast), ARCH, seed=3, tokenizer=fast)
    d = ARCH["hidden_size"]
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        u = torch.randn(d, generator=torch.Generator().manual_seed(0))
        u /= u.norm()
        emb = model.model.embed_tokens.weight  # tied: lm_head's too
        emb.copy_(u.expand_as(emb))
        for token, extra in BOOST.items():  # a logit of (1 + c) sqrt(d) where others have sqrt(d)
            emb[fast.convert_tokens_to_ids(token)] = u * (1 + extra / d**0.5)
    return pm.save_model(model, fast, out)


@pytest.fixture(scope="module")
def rwku_run(tmp_path_factory) -> dict:
    """The run: one chat model on RWKU target 1 (107 probes, n 4, one shard, 4 new tokens)."""
    root = tmp_path_factory.mktemp("rwku")
    model = chat_model(root / "chat")
    out = root / "out"
    args = ["evaluate", "--model", f"x={model}", "--benchmark", "rwku:1", "--data-dir",
            str(SHARED_DATA), "--n", "4", "--chunk-size", "128", "--max-new-tokens", "4",
            "--cores", "2", "--out", str(out)]  # fmt: skip
    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        rc = main(args)
    assert rc == 0, err.getvalue()[-3000:]
    return {"out": out, "console": err.getvalue() + std.getvalue()}


@pytest.mark.slow
def test_rwku_samples_the_probes_and_scores_the_mia_texts(rwku_run):
    out = rwku_run["out"]
    # one sampling job, of the probes; the MIA texts go to the model's MIA job only
    assert (
        "5 job(s) to run: benchmark_job 1, sample_shard 1, score 1, summary 1"
        in (rwku_run["console"])
    )
    assert sorted(p.name for p in (out / "samples" / "x").iterdir()) == ["rwku_probes"]
    stats = pl.read_parquet(out / "rwku_mia" / "x.parquet")
    assert stats.group_by("set", maintain_order=True).len().rows() == [
        ("forget_mia", 55), ("retain_mia", 37),
    ]  # fmt: skip
    assert stats["id"][0] == "rwku-1-forget_mia-0" and stats["loss"].is_finite().all()
    assert (stats["loss"] < 0).all()  # a mean log-likelihood
    mia = pl.read_csv(out / "rwku_mia.csv")
    for s, texts in (("forget_mia", 55), ("retain_mia", 37)):
        part = mia.filter(pl.col("set") == s)
        assert part["texts"].unique().to_list() == [texts] and part["model"].unique()[0] == "x"
        loss = part.filter(pl.col("statistic") == "loss")["mean"][0]
        assert loss == pytest.approx(stats.filter(pl.col("set") == s)["loss"].mean())
        x100 = part.filter(pl.col("statistic") == "loss_x100")["mean"][0]
        assert x100 == pytest.approx(-100 * loss)
    assert mia.height == 2 * (2 + 20 + 1)  # loss, zlib, Min-K% and Min-K%++ at 10 ratios, x100
    assert mia["change"].null_count() == mia.height  # no --original


@pytest.mark.slow
def test_rwku_tables_per_level_and_family(rwku_run):
    from probunlearn.benchmarks.rwku.summary import columns

    out = rwku_run["out"]
    scores = pl.read_parquet(out / "scores" / "x" / "rwku_probes" / "sampled.parquet")
    scores = scores.with_columns(pl.col("id").str.split("-").list.get(2).alias("file"))
    levels = pl.read_csv(out / "rwku_levels.csv")
    assert levels.select("model", "file", "probes").rows() == [
        ("x", f, k) for f, k in FILES.items()
    ]
    assert levels["n"].to_list() == [4] * 5
    # the text rule per level from the score file: the mean over its probes of keyword_leak's
    # share, the probes with a leaking sample, those revealed (the greedy answer does not leak)
    per_probe = (
        scores.group_by("file", "id")
        .agg(
            pl.col("keyword_leak").filter(~pl.col("greedy")).mean().alias("rate"),
            (pl.col("keyword_leak").filter(~pl.col("greedy")) > 0).any().alias("any"),
            pl.col("keyword_leak").filter(pl.col("greedy")).first().alias("greedy"),
        )
        .with_columns((pl.col("any") & (pl.col("greedy") == 0)).alias("revealed"))
    )
    for row in levels.iter_rows(named=True):
        part = per_probe.filter(pl.col("file") == row["file"])
        assert row["rate_text"] == pytest.approx(part["rate"].mean(), abs=1e-12)
        assert row["sampled_any_text"] == pytest.approx(part["any"].mean(), abs=1e-12)
        assert row["revealed_text"] == part["revealed"].sum()
    # the model's greedy answer is 'King King King King', its samples name Carrie and Maine
    assert levels["greedy_text"].sum() == 0 and levels["revealed_text"].sum() >= 3
    assert levels["revealed_rouge"].sum() > levels["revealed_text"].sum()  # half of 'Durham, Maine'
    # RWKU's own greedy score per level: what metrics.level_table makes of the greedy answers
    from probunlearn.benchmarks.rwku import metrics

    rows = pl.read_parquet(out / "data" / "rwku_probes.parquet")
    shard = pl.read_parquet(out / "samples" / "x" / "rwku_probes" / "sampled" / "shard-0.parquet")
    rwku = metrics.level_table(metrics.greedy_scores(rows, shard.filter(pl.col("greedy"))))
    assert rwku["file"].to_list() == levels["file"].to_list()
    assert levels["rwku_rougeL_recall"].to_list() == pytest.approx(rwku["rwku_rougeL_recall"])
    assert levels["rwku_rougeL_recall"].max() > 0  # 'Stephen King': half its words
    probes = pl.read_csv(out / "rwku_probes.csv")
    assert probes.height == 107 and probes.group_by("file").len().sort("file").rows() == sorted(
        FILES.items()
    )
    revealed = pl.read_csv(out / "rwku_revealed.csv", schema_overrides={"target": pl.String})
    assert revealed.select("model", "target", "probes").rows() == [
        ("x", "1", 107),
        ("x", "all", 107),
    ]
    assert revealed["revealed_text"][1] == int(
        ((probes["greedy_text"] == 0) & (probes["hits_text"] > 0)).sum()
    )

    # the fact families: Richard Bachman's eight probes bounded at alpha / 8 each
    families = pl.read_csv(out / "rwku_families.csv")
    assert families.height == 11 and set(families["members"]) <= set(range(2, 9))
    bachman = families.filter(pl.col("answer") == "Richard Bachman").row(0, named=True)
    assert bachman["members"] == 8 and bachman["alpha_each"] == pytest.approx(0.01 / 8)
    ids = probes.filter(pl.col("answer") == "Richard Bachman")
    assert ids.height == 8
    k = ids["hits_text"].to_numpy()
    per = np.where(k >= 4, 1.0, beta.ppf(1 - 0.01 / 8, k + 1, np.maximum(4 - k, 1)))
    assert bachman["bound"] == pytest.approx(per.max())
    assert bachman["mean_rate"] == pytest.approx(ids["rate_text"].mean())
    assert bachman["bound"] > ids["m_bin_text"].max()  # the family level costs width
    carrie = families.filter(pl.col("answer") == "Carrie").row(0, named=True)
    members = probes.filter(pl.col("answer") == "Carrie")
    assert carrie["members"] == members.height == 4 and carrie["mean_rate"] > 0
    assert carrie["mean_rate"] == pytest.approx(members["rate_text"].mean())
    if (members["hits_text"] == 4).any():  # a member leaked in every sample: no bound below 1
        assert carrie["bound"] == 1.0

    # every column documented (the report's tooltips and its section's glossary)
    for name in ("rwku_levels", "rwku_probes", "rwku_revealed", "rwku_families", "rwku_mia"):
        assert pl.read_csv(out / f"{name}.csv", n_rows=1).columns == list(columns(name)), name


@pytest.mark.slow
def test_rwku_report_shows_the_levels_families_and_mia(rwku_run):
    html = (rwku_run["out"] / "report.html").read_text()
    heading = "RWKU: forget and neighbor levels, fact families, MIA"
    section = html.split(
        f'<h2 id="rwku-forget-and-neighbor-levels-fact-families-mia">{heading}</h2>'
    )[1]
    section = section.split("<h2>")[0]
    for file in FILES:
        assert f'data-v="{file}"' in section, file
    for heading in ("Per level", "Per target", "Fact families", "Membership-inference means"):
        assert f"<h3>{heading}</h3>" in section
    assert 'data-v="rwku-1:richard bachman"' in section and "revealed" in section
    assert 'data-v="mink++_0.2"' in section and 'data-v="mink_0.2"' not in section  # reported only
    assert "<dt>bound</dt>" in section and 'title="The family bound' in section
    assert "rwku_levels.csv" in html.split("<h2>Glossary</h2>")[1]  # among the CSVs beside it

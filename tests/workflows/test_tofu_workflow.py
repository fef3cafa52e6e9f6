"""TOFU's evaluation in the workflow: rule evaluate's TOFU answers and TOFU-encoded log-probabilities, the
ds_size cut, and forget quality against TOFU's published eval logs (fetch pinned, never run here)."""

from __future__ import annotations

import os

import numpy as np
import polars as pl
import pytest
import torch
import yaml

from probunlearn import models
from probunlearn.benchmarks.tofu import eval_logs
from probunlearn.data import qa
from probunlearn.metrics import token_scores as ts
from probunlearn.metrics.table import read_metrics
from probunlearn.steps import greedy as evaluation

QUESTIONS = [f"What color is the {it}?" for it in ("cup", "hat", "car", "pen", "box")]
ANSWERS = [f"The {it} is {c}." for it, c in zip(("cup", "hat", "car", "pen", "box"), ("red", "blue", "green", "gold", "grey"), strict=True)]  # fmt: skip
TOFU = {
    "ds_size": 3,
    "question_start_tag": "Question: ",
    "question_end_tag": "\n",
    "answer_tag": "Answer: ",
    "max_length": 64,
    "generation_max_length": 40,
    "generation_batch_size": 2,
    "published_retain_logs": None,
}


def _rows(prefix: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [f"{prefix}{i}" for i in range(5)],
            "question": QUESTIONS,
            "answer": ANSWERS,
            "paraphrased_answer": [a.replace("The", "This") for a in ANSWERS],
            "perturbed_answers": [[a.replace("is", "was"), "No idea."] for a in ANSWERS],
            "keywords": [[] for _ in ANSWERS],
        }
    )


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    torch.set_num_threads(1)
    texts = [qa.format_prompt(q) + " " + a for q, a in zip(QUESTIONS, ANSWERS, strict=True)]
    tok = models.train_tokenizer(texts * 3, 300)
    arch = dict(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, max_positions=128)
    model = models.tiny_llama(len(tok), arch, seed=0, tokenizer=tok)
    return models.save_model(model, tok, tmp_path_factory.mktemp("m") / "model")


def test_evaluate_writes_tofu_answers_and_tofu_logprobs(model_dir, tmp_path):
    paths = {}
    for name in ("forget10", "retain"):
        paths[name] = str(tmp_path / f"{name}.parquet")
        _rows(name).write_parquet(paths[name])
    out = {k: str(tmp_path / f"{k}.out") for k in ("csv", "answers", "tofu", "lp_f", "lp_r")}
    evaluation.run_evaluation(
        str(model_dir),
        greedy_paths=[paths["retain"]],
        greedy_sets=["retain"],
        out_csv=out["csv"],
        out_answers=out["answers"],
        logprob_paths=[paths["forget10"], paths["retain"]],
        out_logprobs=[out["lp_f"], out["lp_r"]],
        model_name="target",
        method="target",
        split="",
        template=qa.DEFAULT_TEMPLATE,
        max_new_tokens=8,
        batch_size=4,
        device="cpu",
        threads=1,
        tofu=TOFU,
        tofu_paths=[paths["forget10"], paths["retain"]],
        tofu_sets=["forget10", "retain"],
        out_tofu_answers=out["tofu"],
    )
    answers = pl.read_parquet(out["tofu"])
    # TOFU's answers: the first ds_size questions of each set, from the prompt without "Answer: "
    assert answers.group_by("evalset", maintain_order=True).len().rows() == [
        ("forget10", 3),
        ("retain", 3),
    ]
    assert answers["prompt"].to_list()[:3] == [f"Question: {q}\n" for q in QUESTIONS[:3]]
    assert answers["ground_truth"].to_list()[:3] == ANSWERS[:3]
    metrics = read_metrics(out["csv"])
    tofu_rouge = metrics.filter(pl.col("metric") == "tofu_rougeL_recall")
    assert tofu_rouge["evalset"].to_list() == ["forget10", "retain"]
    for e, v in tofu_rouge.select("evalset", "value").iter_rows():
        assert v == pytest.approx(answers.filter(pl.col("evalset") == e)["rougeL_recall"].mean())
    assert "greedy_rougeL_recall" in metrics["metric"].to_list()  # the paper's greedy baseline
    # log-probabilities: TOFU's encoding with the configured tags, every question (DCUE needs all)
    model = models.load_model(str(model_dir), device="cpu")
    tok = models.load_tokenizer(str(model_dir))
    fmt = ts.QAFormat("Question: ", "\n", "Answer: ", max_length=64)
    want = ts.answer_token_table(model, tok, _rows("retain"), fmt)
    got = pl.read_parquet(out["lp_r"])
    assert got.select("id", "kind", "index", "offsets", "in_answer").equals(
        want.select("id", "kind", "index", "offsets", "in_answer")
    )
    for x, y in zip(got["logprobs"].to_list(), want["logprobs"].to_list(), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    assert got["id"].n_unique() == 5


def test_published_log_urls_are_pinned(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(eval_logs, "fetch_url", lambda url, dest, **kw: seen.append((url, kw)))
    eval_logs.fetch_tofu_eval_log("phi", "forget10", tmp_path / "x.json")
    url, kw = seen[0]
    assert url == (
        f"https://raw.githubusercontent.com/locuslab/tofu/{eval_logs.TOFU_LOGS_COMMIT}/data/"
        "ft_epoch5_lr2e-05_phi_retain90_wd0.01/eval_results/ds_size300/eval_log_forget.json"
    )
    assert len(kw["sha256"]) == 64
    assert "llama2-7b_retain99" in eval_logs.tofu_eval_log_url("llama2-7b", "forget01")
    with pytest.raises(ValueError, match="no published TOFU eval log"):
        eval_logs.tofu_eval_log_url("phi", "forget20")


@pytest.mark.slow
def test_tofu_preset_with_published_logs_trains_no_reference(root, default_config, tmp_path):
    from helpers.workflow import copy_workflow, job_counts, snakemake

    work = copy_workflow(root, tmp_path, default_config)
    overlay = {"tofu_eval": {"published_retain_logs": "phi"}, "references": []}
    (work / "published.yaml").write_text(yaml.safe_dump(overlay))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = snakemake(
        work,
        "-n",
        "--configfile",
        "workflow/presets/tofu-phi.yaml",
        "published.yaml",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    assert counts["fetch_tofu_log"] == 3 and "reference" not in counts
    # the three reference models are neither trained nor evaluated; every other model is
    assert counts["greedy_logprobs"] == counts["tofu_metrics"] == 38 and counts["postfinetune"] == 5
    assert "resources/tofu_logs/phi/forget10/eval_log_forget.json" in proc.stdout

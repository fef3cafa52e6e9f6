"""Real snakemake runs of a tiny config in a temporary directory (no mocks).

One module-scoped run builds the whole DAG of the tiny config (world, training, unlearning,
sampling, scoring, bounds, TOFU metrics, DCUE, figures); the tests then inspect it, re-run it,
change settings, and kill a sampling run half-way.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

from helpers import PLUGIN
from helpers.workflow import copy_workflow, job_counts, snakemake, write_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_run(root, default_config, tmp_path_factory):
    """The tiny config's whole DAG, with a method, a scorer and a membership statistic registered
    from outside (the throw-away distribution of tests/plugin, on the path of every snakemake run
    of this module: docs/extending.md): Table 1 gains ``scaled_ga``, every score job
    ``short_answer``, the membership table ``median_logprob``."""
    from helpers import tiny_config

    cfg = tiny_config(default_config)
    cfg["unlearning"]["table1"]["methods"].append("scaled_ga")
    cfg["unlearning"]["overrides"]["scaled_ga"] = {"scale": 0.5}
    cfg["membership"]["statistics"].append("median_logprob")
    with pytest.MonkeyPatch.context() as mp:
        path = os.environ.get("PYTHONPATH")
        mp.setenv("PYTHONPATH", str(PLUGIN) + (os.pathsep + path if path else ""))
        work = copy_workflow(root, tmp_path_factory.mktemp("wf"), cfg)
        proc = snakemake(work)
        assert proc.returncode == 0, proc.stderr[-6000:]
        yield work, cfg


def test_outside_method_and_scorer_run_in_the_workflow(tiny_run):
    work, _ = tiny_run
    df = pl.read_csv(work / "results/tiny/tables/metrics.csv")
    mine = df.filter(pl.col("model") == "scaled_ga-forget10-f0-r0")
    assert set(mine["method"]) == {"scaled_ga"}
    assert {"forget_quality", "dcue_pvalue", "m_bin_short_answer"} <= set(mine["metric"])
    assert "Scaled GA" in pl.read_csv(work / "results/tiny/tables/table1.csv").columns


def test_metrics_table(tiny_run):
    work, cfg = tiny_run
    df = pl.read_csv(work / "results/tiny/tables/metrics.csv")
    assert df.columns[:6] == ["model", "method", "split", "evalset", "metric", "value"]
    ref = df.filter(pl.col("model") == "reference_forget10")
    assert set(ref["method"]) == {"reference"} and set(ref["split"]) == {"forget10"}
    methods = set(df["method"])
    assert {"pretrained", "target", "reference", "ga", "gd", "npo", "rmu", "npo_eo"} <= methods
    greedy = df.filter(pl.col("metric") == "greedy_rougeL_recall")
    assert {"forget10", "retain", "saga"} <= set(greedy["evalset"])
    assert df.filter(pl.col("metric") == "greedy_keyword_leak")["evalset"].unique().to_list() == [
        "saga"
    ]
    for metric in (
        "sampled_mean_rougeL_recall",
        "sampled_std_rougeL_recall",
        "ed_rougeL_recall",
        "sampled_keyword_leak",
        "greedy_harm",
        "sampled_harm",
        "forget_quality",
        "model_utility",
        "dcue_pvalue",
    ):
        assert metric in set(df["metric"]), metric
    fq = df.filter(
        (pl.col("metric") == "forget_quality") & (pl.col("model") == "reference_forget10")
    )
    assert fq["value"].to_list() == [1.0]
    # the robustness check of DCUE's meta-evaluation: post-processed Table 1 models (tiny: npo, rmu)
    post = df.filter(pl.col("setting") == "postfinetune")
    assert set(post["model"]) == {"npo-forget10-f0-r0", "rmu-forget10-f0-r0"}
    assert {"forget_quality", "dcue_pvalue"} <= set(post["metric"])
    meta = pl.read_csv(work / "results/tiny/tables/dcue_meta.csv")
    assert meta["metric"].to_list() == ["dcue_pvalue", "dcue_pvalue_alltokens", "forget_quality"]
    assert meta["n_models_robustness"].to_list() == [2, 2, 2]
    for m in ("pretrained", "target", "reference_forget10", "npo-forget10-f0-r0"):
        assert (work / f"results/tiny/models/{m}/model.safetensors").exists()


def test_figures_and_tables_written(tiny_run):
    work, _ = tiny_run
    out = work / "results/tiny"
    for name in (
        "fig3a",
        "fig3b",
        "fig3c",
        "fig3d",
        "fig3e",
        "fig3f",
        "fig4a",
        "fig4b",
        "fig5a",
        "fig5b",
        "fig5c",
        "fig6",
        "sequential",
        "attacks",
    ):
        assert (out / "figures" / f"{name}.png").stat().st_size > 5000, name
        assert (out / "figures" / f"{name}.pdf").exists(), name
    t1 = pl.read_csv(out / "tables/table1.csv")
    assert {"RMU", "GD", "GA", "NPO", "Ours"} <= set(t1.columns)
    assert (out / "tables/table2.csv").exists()
    assert not list(out.rglob("*.tmp")) and not list(out.rglob(".*.tmp"))


def test_membership_table(tiny_run):
    """The membership-inference table and figure: every scored model (target, reference, Table 1's
    NPO) x statistic (the six and the outside one), forget10's 4 answers against the first 4 of
    the holdout authors' 8, PrivLeak against the reference model."""
    from probunlearn.metrics.membership import TABLE_COLUMNS

    work, cfg = tiny_run
    out = work / "results/tiny"
    df = pl.read_csv(out / "tables/membership.csv")
    assert df.columns == list(TABLE_COLUMNS)
    models = ["target", "reference_forget10", "npo-forget10-f0-r0"]
    assert list(dict.fromkeys(df["model"])) == models
    stats = cfg["membership"]["statistics"]
    assert df.filter(pl.col("model") == "target")["statistic"].to_list() == stats
    assert set(df["n_forget"]) == set(df["n_holdout"]) == {4}
    assert (df["auc_lo"] <= df["auc"]).all() and (df["auc"] <= df["auc_hi"]).all()
    assert df.filter(pl.col("retrained"))["model"].unique().to_list() == ["reference_forget10"]
    target = df.filter((pl.col("model") == "target") & (pl.col("statistic") != "reference"))
    assert target["privleak"].null_count() == 0
    assert (out / "figures/membership.png").stat().st_size > 5000
    assert (out / "figures/membership.pdf").exists()


def test_claims_table(tiny_run):
    """One row per claim the tiny run's tables can test; holds is not asserted (no finding at this
    size). Left out: Fig. 4b (no second temperature), Fig. 5a (no negative lambda_r), Fig. 5c (one
    random-lambda model), the attack claims (the tiny target's greedy answers know nothing to
    restore)."""
    from probunlearn.report.claims import TABLE_COLUMNS

    work, _ = tiny_run
    df = pl.read_csv(work / "results/tiny/tables/claims.csv")
    assert df.columns == TABLE_COLUMNS
    assert df["claim"].to_list() == [
        "t1-ed-above-greedy",
        "t1-mean-matches-greedy",
        "t1-ours-std-below-npo",
        "t1-ours-ed-below-npo",
        "fig3a-sampling-reveals-leakage",
        "fig3d-ours-under-npo",
        "fig4a-std-falls-with-lambda_f",
        "fig5b-forget-confidence-rises",
        "fig5b-retain-confidence-stays",
        "table2-utility-flat-in-lambda",
        "fig6-sampled-harm-above-greedy",
        "fig6-mbin-reveals-harm",
        "dcue-orders-like-forget-quality",
    ]
    assert df["holds"].dtype == pl.Boolean and df["value"].str.len_chars().min() > 0
    md = (work / "results/tiny/tables/claims.md").read_text()
    assert md.count("\n| ") == df.height + 1


def test_attacks_table(tiny_run):
    """The experiment attacks (issue 40): NPO quantized and asked paraphrases, each beside the plain
    model on the same questions (the paraphrases beside the null family: each question asked twice,
    issue 50); the attacked runs' rows join metrics.csv."""
    from probunlearn.report.attacks import COLUMNS

    work, cfg = tiny_run
    out = work / "results/tiny"
    df = pl.read_csv(out / "tables/attacks.csv")
    assert df.columns == COLUMNS
    assert df["attack"].to_list() == ["quant:nf4", "paraphrase"]
    assert set(df["method"]) == {"NPO"} and (df["n"] == 8).all()
    forget = pl.read_parquet(out / "data/forget10.parquet").height
    assert df["prompts"].to_list() == [forget, forget] and df["members"].to_list() == [1, 2]
    for col in ("m_bin_before", "m_bin_after", "m_mu_before", "m_mu_after", "target_greedy"):
        assert df[col].is_between(0, 1).all(), col
    info = json.loads((out / "attacks/npo-forget10-f0-r0--quant__nf4.json").read_text())
    assert info["attack"] == "quant:nf4" and info["quantized"]
    fam = pl.read_parquet(out / "data/forget10--paraphrase.parquet")
    assert fam.height == 2 * forget and set(fam["member"]) == {"original", "paraphrase"}
    assert df["before_evalset"].to_list() == [None, "forget10--null__2"]
    null = pl.read_parquet(out / "data/forget10--null__2.parquet")
    original = fam.filter(pl.col("member") == "original")["prompt"].to_list()
    assert null["prompt"].to_list() == [q for q in original for _ in "ab"]
    samples = pl.read_parquet(out / "scores/npo-forget10-f0-r0/forget10--null__2/attack.parquet")
    first = samples.filter(pl.col("id").str.starts_with(null["base_id"][0]) & ~pl.col("greedy"))
    assert first.height == 2 * 8  # two copies, each its own 8 samples
    metrics = pl.read_csv(out / "tables/metrics.csv")
    attacked = metrics.filter(pl.col("model").str.contains("--"))
    assert set(attacked["setting"]) == {"attack"} and set(attacked["method"]) == {"npo"}
    assert "forget10--paraphrase" in set(metrics["evalset"])


def test_second_run_has_nothing_to_do(tiny_run):
    work, _ = tiny_run
    proc = snakemake(work, "-n")
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_changed_hyperparameter_reruns_exactly_its_models(tiny_run):
    work, cfg = tiny_run
    changed = yaml.safe_load(yaml.safe_dump(cfg))
    changed["finetune"]["lr"] = cfg["finetune"]["lr"] / 2
    write_config(work, changed)
    try:
        proc = snakemake(work, "-n", "--quiet", "rules")
        jobs = job_counts(proc.stdout + proc.stderr)
        assert proc.returncode == 0, proc.stderr
        assert jobs.get("target") == 1 and jobs.get("reference") == 1
        assert "pretrain" not in jobs and "world" not in jobs and "tokenizer" not in jobs
        changed = yaml.safe_load(yaml.safe_dump(cfg))
        changed["figures"]["decimals"] = 2
        write_config(work, changed)
        proc = snakemake(work, "-n", "--quiet", "rules")
        jobs = job_counts(proc.stdout + proc.stderr)
        # claims.csv reads table1.csv and fig3d.csv: it reruns with them; run_config writes the
        # whole effective config, so any change of config.yaml reruns it
        assert set(jobs) - {"all", "total"} == {"run_config", "table1", "claims"}, jobs
        changed["figures"]["gen_points"] = cfg["figures"]["gen_points"] + 10
        write_config(work, changed)
        proc = snakemake(work, "-n", "--quiet", "rules")
        jobs = job_counts(proc.stdout + proc.stderr)
        assert set(jobs) - {"all", "total"} == {"run_config", "table1", "fig3_tofu", "claims"}, jobs
        # a changed chunk size reruns every shard, also shard-0 whose path is unchanged (the params
        # of sample_shard form one dict: Snakemake compares params as a set of values, in which
        # chunk_size 4 -> 1 would hide beside n = 4 and threads = 1)
        changed = yaml.safe_load(yaml.safe_dump(cfg))
        changed["sampling"]["chunk_size"] = 1
        write_config(work, changed)
        proc = snakemake(work, "-n")
        shard0 = "samples/npo_eo-forget10-f1-r0/world_facts/utility/shard-0.parquet"
        assert shard0 in proc.stdout, proc.stdout[-3000:]
    finally:
        write_config(work, cfg)


def test_sequential_setting_stops_prompts_and_reruns_alone(tiny_run):
    work, cfg = tiny_run
    out = work / "results/tiny"
    seq = pl.read_csv(out / "tables/sequential.csv")
    assert seq["model"].to_list() == ["target", "NPO", "NPO+EO"]
    n_max = cfg["sampling"]["settings"]["seq"]["n"]
    assert (seq["samples_fixed_n"] == seq["prompts"] * n_max).all()
    assert (seq["samples_used"] <= seq["samples_fixed_n"]).all()
    assert (seq["below"] + seq["above"] + seq["undecided"] == seq["prompts"]).all()
    b = pl.read_parquet(out / "bounds/target/forget10/seq.parquet")
    assert (b["n"] % 4 == 0).all() and (b["n"] <= n_max).all()
    assert (b.filter(pl.col("decision") == "undecided")["n"] == n_max).all()
    prompts = pl.read_parquet(out / "data/forget10.parquet").height
    shards = -(-prompts // cfg["sampling"]["chunk_size"])
    changed = yaml.safe_load(yaml.safe_dump(cfg))
    changed["sampling"]["settings"]["seq"]["sequential"]["q"] = 0.2
    write_config(work, changed)
    try:
        proc = snakemake(work, "-n", "--quiet", "rules")
        jobs = job_counts(proc.stdout + proc.stderr)
        assert proc.returncode == 0, proc.stderr
        # the decision threshold is a setting of the sampling job: its shards, scores and figure
        assert jobs.get("sample_shard") == 3 * shards, jobs
        assert jobs.get("score") == 3 and jobs.get("fig_sequential") == 1, jobs
        assert set(jobs) - {"all", "total"} <= {
            "run_config",
            "sample_shard",
            "score",
            "fig_sequential",
            "metrics_table",
            "claims",
        }, jobs
    finally:
        write_config(work, cfg)


def test_changed_judge_threshold_reruns_the_request_scores(tiny_run):
    """judge.threshold is a param of rule score for the request sets only; bounds.leak_threshold
    of every score job. Neither resamples anything."""
    work, cfg = tiny_run
    scores = pl.read_parquet(work / "results/tiny/scores/target/harmful/main.parquet")
    assert (scores["harm"] == (scores["harm_prob"] > cfg["judge"]["threshold"])).all()
    b = pl.read_parquet(work / "results/tiny/bounds/target/harmful/main.parquet")
    m_bin = dict(b.group_by("score").agg(pl.col("m_bin").null_count()).iter_rows())
    prompts = b.height // b["score"].n_unique()
    assert m_bin["harm"] == 0 and m_bin["rougeL_recall"] == m_bin["harm_prob"] == prompts
    request_scores = len(cfg["alignment"]["models"]) * len(cfg["alignment"]["sets"])
    changed = yaml.safe_load(yaml.safe_dump(cfg))
    changed["judge"]["threshold"] = 0.25
    write_config(work, changed)
    try:
        proc = snakemake(work, "-n", "--quiet", "rules")
        jobs = job_counts(proc.stdout + proc.stderr)
        assert proc.returncode == 0, proc.stderr
        assert jobs.get("score") == request_scores, jobs
        # run_config: results/tiny/config.yaml records the effective configuration; claims reads
        # metrics.csv and fig6.csv
        rerun = {"run_config", "score", "metrics_table", "fig6", "claims"}
        assert set(jobs) - {"all", "total"} == rerun, jobs
        assert "sample_shard" not in jobs
        changed = yaml.safe_load(yaml.safe_dump(cfg))
        changed["bounds"]["leak_threshold"] = 0.5
        write_config(work, changed)
        proc = snakemake(work, "-n", "--quiet", "rules")
        jobs = job_counts(proc.stdout + proc.stderr)
        n_scores = len(list((work / "results/tiny/bounds").rglob("*.parquet")))
        assert jobs.get("score") == n_scores > request_scores, jobs
        assert "sample_shard" not in jobs
    finally:
        write_config(work, cfg)


def _metadata(work: Path, fragment: str) -> list[Path]:
    """Snakemake's records of finished job outputs whose path contains ``fragment``."""
    meta = work / ".snakemake" / "metadata"
    found = []
    for f in meta.glob("*") if meta.exists() else []:
        try:
            name = base64.urlsafe_b64decode(f.name + "=" * (-len(f.name) % 4)).decode()
        except ValueError:
            continue
        if fragment in name:
            found.append(f)
    return found


def test_kill_half_way_then_rerun_is_byte_identical(tiny_run):
    """SIGKILL a sampling run half-way; the re-run writes only the missing shards.

    Snakemake registers a job as complete (writes its metadata) only after its output is in place;
    the kill comes once a sample shard has been registered. Chunk size 1 instead of the run's 4 also
    shows that chunking changes no sample: the joined scores table is byte-identical.
    """
    work, cfg = tiny_run
    small = yaml.safe_load(yaml.safe_dump(cfg))
    small["sampling"]["chunk_size"] = 1  # forget10 = 4 prompts → 4 shards
    write_config(work, small)
    target = "results/tiny/scores/target/forget10/main.parquet"
    reference = (work / target).read_bytes()
    shard_dir = work / "results/tiny/samples/target/forget10/main"
    shutil.rmtree(shard_dir)
    (work / target).unlink()
    for f in _metadata(work, "samples/target/forget10/main/"):  # records of the deleted shards
        f.unlink()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "snakemake", "--cores", "1", target],
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.time() + 300
        while time.time() < deadline and not _metadata(work, "samples/target/forget10/main/"):
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = {p.name: p.stat().st_mtime_ns for p in shard_dir.glob("shard-*.parquet")}
        assert before, "no shard was complete when the run was killed"
        assert not (work / target).exists()
        assert snakemake(work, "--unlock").returncode == 0
        # no --rerun-incomplete: the default profile (profiles -> workflow/profiles) sets it
        rerun = snakemake(work, target, "--quiet", "rules")
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        after = {p.name: p.stat().st_mtime_ns for p in shard_dir.glob("shard-*.parquet")}
        assert len(after) == 4
        rewritten = [n for n in after if before.get(n) != after[n]]
        assert len(rewritten) < 4
        assert job_counts(rerun.stdout + rerun.stderr).get("sample_shard", 0) == len(rewritten)
        assert (work / target).read_bytes() == reference
    finally:
        write_config(work, cfg)


def test_report_has_every_figure(tiny_run):
    work, _ = tiny_run
    proc = snakemake(work, "--report", "report.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # every caption is valid reStructuredText: docutils logs no message (tests/workflows/test_report_captions.py)
    messages = [
        ln for ln in proc.stderr.splitlines() if re.search(r"\((WARNING|ERROR|SEVERE)/\d\)", ln)
    ]
    assert messages == [], messages
    html = (work / "report.html").read_text(errors="ignore")
    for name in ("fig3a", "fig4b", "fig6", "table1", "claims", "membership"):
        assert name in html, name


def test_evaluate_and_the_workflow_sample_score_and_bound_alike(tiny_run, tmp_path):
    """One evaluation core: `probunlearn evaluate` on the run's target and its forget10 set, with
    the run's sampling and bound settings, writes the same samples, scores and bounds as the paper's
    workflow did (both seed a sample by model, eval set, prompt and sample index)."""
    from probunlearn.cli import main

    work, cfg = tiny_run
    run, s, main_setting = (
        work / "results/tiny",
        cfg["sampling"],
        cfg["sampling"]["settings"]["main"],
    )
    out = tmp_path / "eval"
    args = [
        "evaluate", "--model", f"target={run / 'models/target'}",
        "--data", str(run / "data/forget10.parquet"), "--out", str(out),
        "--n", str(main_setting["n"]), "--top-p", str(s["top_p"]),
        "--temperature", str(main_setting["temperature"]),
        "--max-new-tokens", str(s["max_new_tokens"]), "--batch-size", str(s["batch_size"]),
        "--chunk-size", str(s["chunk_size"]), "--template", cfg["template"],
        "--seed", str(cfg["seed"]), "--threads", str(cfg["threads"]["eval"]),
        "--alpha", str(cfg["bounds"]["alpha"]), "--cores", "1",
    ]  # fmt: skip
    assert main(args) == 0
    shards = sorted((run / "samples/target/forget10/main").glob("shard-*.parquet"))
    ours = pl.concat([pl.read_parquet(p) for p in shards]).sort("id", "sample")
    # (another test of this module may have re-made the run's shards with another chunk size: a
    # sample does not depend on its shard)
    theirs = sorted((out / "samples/target/forget10/sampled").glob("shard-*.parquet"))
    assert pl.concat([pl.read_parquet(p) for p in theirs]).sort("id", "sample").equals(ours)
    for kind in ("scores", "bounds"):
        a = pl.read_parquet(run / kind / "target/forget10/main.parquet")
        b = pl.read_parquet(out / kind / "target/forget10/sampled.parquet")
        assert a.equals(b), kind

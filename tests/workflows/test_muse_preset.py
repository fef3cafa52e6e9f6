"""The MUSE-News preset (workflow/presets/muse-news.yaml): MUSE's files and chunks, MUSE's greedy
ROUGE-L, and a real offline run of the preset at a reduced size with a tiny Llama built here.

The real MUSE-News files come from ../shared/data/muse_news; its raw retain1 and holdout corpora are
not there, so the tests write stand-ins of the same format (JSON arrays of article strings, with
the hub's number of articles) and say so."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import polars as pl
import pytest
import yaml

from helpers import SHARED_DATA
from helpers.workflow import copy_workflow, job_counts, snakemake

MUSE = SHARED_DATA / "muse_news"
needs_muse = pytest.mark.skipif(
    not MUSE.is_dir(), reason=f"{MUSE} is absent: no MUSE-News files to read"
)


def _stand_in_corpus(n: int, tag: str) -> list[str]:
    """``n`` short articles of the raw corpora's format (stand-ins: retain1 and holdout are not in
    ../shared/data)."""
    return [
        f"Stand-in {tag} article {i}. The council of town {i} met on Monday and agreed a budget "
        f"of {i * 7} pounds for the new library, the mayor said after the vote in the hall."
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def muse_dir(tmp_path_factory) -> Path:
    """The real MUSE-News files plus stand-in raw_retain1.json (1777) and raw_holdout.json (3043)."""
    if not MUSE.is_dir():
        pytest.skip(f"{MUSE} is absent: no MUSE-News files to read")
    d = tmp_path_factory.mktemp("data") / "muse_news"  # the layout of ../shared/data
    shutil.copytree(MUSE, d)
    os.chmod(d, 0o755)
    for split, n in (("retain1", 1777), ("holdout", 3043)):
        (d / f"raw_{split}.json").write_text(json.dumps(_stand_in_corpus(n, split)))
    return d


def _tokenizer(texts: list[str]):
    from probunlearn import models

    return models.train_tokenizer(texts, vocab_size=400)  # adds <s> itself, as Llama's does


# ---- chunks, rows, files -------------------------------------------------------------------------


def test_chunks_are_muses_windows_with_bos_and_the_last_rotated():
    from probunlearn.data.qa import chunk_corpus

    tok = _tokenizer(["alpha beta gamma delta epsilon"] * 20)
    texts = ["alpha beta gamma", "delta epsilon alpha beta"]
    ids = tok("\n\n".join(texts), add_special_tokens=False)["input_ids"]
    chunks = chunk_corpus(tok, texts, 4)
    bos = tok.bos_token_id
    assert all(len(c) == 4 and c[0] == bos for c in chunks)
    # windows of 3 tokens after BOS, in order, non-overlapping; the last filled from the first chunk
    flat = [t for c in chunks for t in c[1:]]
    assert flat[: len(ids)] == ids
    n_full = len(ids) // 3
    assert len(chunks) == -(-len(ids) // 3)
    if len(ids) % 3:
        tail = ids[n_full * 3 :]
        assert chunks[-1] == ([bos, *tail] + chunks[0])[:4]
    with pytest.raises(ValueError, match="max_len"):
        chunk_corpus(tok, texts, 1)


def test_continuation_rows_and_bad_articles():
    from probunlearn.benchmarks.muse_news.corpus import continuation_rows

    rows = continuation_rows(["one two three four five six"], 3, 2)
    assert rows.row(0, named=True)["question"] == "one two three "
    assert rows["answer"][0] == "four five"
    assert (rows["core_start"][0], rows["core_end"][0]) == (0, len("four five"))
    with pytest.raises(ValueError, match="holdout article 1: 2 words"):
        continuation_rows(["a b c d e", "a b"], 3, 2)


@needs_muse
def test_knowmem_rows_carry_muses_prompt(muse_dir):
    from probunlearn.benchmarks.muse_news import corpus as mc

    rows = mc.knowmem_rows("knowmem_forget", muse_dir, 3)
    first = json.loads((MUSE / "knowmem_forget_qa.json").read_text())[0]
    q = rows["question"][0]
    # 10 few-shot pairs, then the question, with MUSE's trailing space after "Answer:"
    assert q.count("Question: ") == 11 and q.endswith(f"Question: {first['question']}\nAnswer: ")
    assert rows["answer"][0] == first["answer"] == "1472"
    assert rows["keywords"][0].to_list() == ["1472"] and rows["core_end"][0] == 4
    # the hub's retain_qa is the local knowmem_retain2_qa.json
    assert mc.knowmem_rows("knowmem_retain", muse_dir).height == 100
    assert len(mc.load_raw("forget", muse_dir)) == 889
    with pytest.raises(ValueError, match="unknown MUSE raw corpus 'retain2'"):
        mc.load_raw("retain2", muse_dir)
    # ../shared/data/muse_news has no holdout corpus: the error names the file and the hub split
    with pytest.raises(FileNotFoundError, match="raw_holdout.json is missing.*config raw"):
        mc.load_raw("holdout", MUSE)


@needs_muse
def test_fetch_copies_and_verifies_muse(muse_dir, tmp_path):
    from probunlearn.benchmarks import fetch_dataset
    from probunlearn.data.downloads import VerificationError, parquet_to_json

    got = fetch_dataset("muse", tmp_path / "muse", source=muse_dir)
    assert sorted(p.name for p in got.values()) == sorted(
        ["knowmem_forget_qa.json", "knowmem_forget_qa_icl.json", "knowmem_retain_qa.json",
         "knowmem_retain_qa_icl.json", "verbmem_forget.json", "raw_forget.json",
         "raw_retain1.json", "raw_holdout.json"]
    )  # fmt: skip
    bad = tmp_path / "bad"
    shutil.copytree(muse_dir, bad)
    (bad / "raw_holdout.json").write_text(json.dumps(_stand_in_corpus(10, "holdout")))
    with pytest.raises(VerificationError, match="10 rows, expected 3043"):
        fetch_dataset("muse", tmp_path / "muse2", source=bad, files=["raw_holdout"])
    # the hub's parquet files are stored as the local JSON
    pq = tmp_path / "raw.parquet"
    pl.DataFrame({"text": ["a", "b"]}).write_parquet(pq)
    parquet_to_json(pq, tmp_path / "raw.json", ("text",))
    assert json.loads((tmp_path / "raw.json").read_text()) == ["a", "b"]


def test_muse_rouge_is_rouge_scores_without_stemming():
    from rouge_score import rouge_scorer

    from probunlearn.benchmarks.muse_news.metrics import muse_greedy_scores

    rows = pl.DataFrame({"id": ["a", "b"], "answer": ["the cats were running", "Dan Jarvis"]})
    greedy = pl.DataFrame(
        {"id": ["b", "a"], "text": [" Dan Jarvis\n\nQuestion: next", "The cat was running fast"]}
    )
    out = muse_greedy_scores(rows, greedy, "knowmem_forget")
    assert out["answer"].to_list() == ["The cat was running fast", " Dan Jarvis"]
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    ref = scorer.score("the cats were running", "The cat was running fast")["rougeL"]
    # LCS 2 ("the", "running"): precision 2/5, recall 2/4, F1 4/9
    assert out["rougeL_f1"][0] == pytest.approx(ref.fmeasure) == pytest.approx(4 / 9)
    assert out["rougeL_recall"][0] == pytest.approx(0.5) and out["rougeL_f1"][1] == 1.0
    with pytest.raises(ValueError, match="no greedy answer"):
        muse_greedy_scores(rows, greedy.head(1), "knowmem_forget")


def test_clean_up_is_transformers_and_the_verbmem_reference_is_cut_to_128_tokens():
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    from probunlearn.benchmarks.muse_news.metrics import clean_up_tokenization, verbmem_reference

    text = "He said , do n't go . I 'm sure ' it ' s fine ? yes ! they 're , we 've , he 's"
    # an instance method that uses no state of the instance
    assert clean_up_tokenization(text) == PreTrainedTokenizerBase.clean_up_tokenization(None, text)
    tok = _tokenizer(["word"] * 50)
    gt = " ".join(["word"] * 300)
    ref = verbmem_reference(tok, gt)
    # BOS is one of MUSE's 128 ids: 127 tokens of the continuation remain
    assert len(tok(ref, add_special_tokens=False)["input_ids"]) == 127


# ---- the preset ----------------------------------------------------------------------------------


def _tiny_llama(path: Path, tok, seed: int) -> str:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from probunlearn import models

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=4096, pad_token_id=tok.pad_token_id,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)  # fmt: skip
    models.save_model(LlamaForCausalLM(cfg), tok, path)
    return str(path)


SMALL = {
    "benchmarks": {"muse": {"knowmem_size": 4, "verbmem_size": 3, "corpus_articles": 3,
                            "holdout_size": 4, "holdout_prompt_words": 12,
                            "holdout_answer_words": 4}},
    # one method, and the target alone beside it (the retrained model takes the target's path)
    "muse": {"methods": ["npo"], "models": ["target"], "max_len": 64},
    "unlearning": {"hparams": {"epochs": 1, "batch_size": 8}},
    "sampling": {"chunk_size": 200, "batch_size": 64, "settings": {"main": {"n": 4}}},
    "threads": {"pretrain": 1, "train": 1, "eval": 1},
    "dtype": "float32",
    "device": "cpu",
}  # fmt: skip


@pytest.mark.slow
@needs_muse
def test_muse_preset_runs_end_to_end(root, default_config, tmp_path, muse_dir, monkeypatch):
    """The shipped preset with MUSE's files (and the stand-in corpora) and a tiny Llama as both
    MUSE models, shrunk in size (sets, corpora, chunk length, n, one method, no retrained model):
    it reaches the MUSE table and DCUE. The dry run of the shipped preset (its job count, rule by
    rule against the design) is tests/config/test_config_presets.py's."""
    monkeypatch.chdir(root)
    work = copy_workflow(root, tmp_path, default_config)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    preset = ["--configfile", "workflow/presets/muse-news.yaml"]
    shipped = yaml.safe_load((root / "workflow/presets/muse-news.yaml").read_text())
    qa = json.loads((MUSE / "knowmem_forget_qa.json").read_text())
    texts = [o["question"] + " " + o["answer"] for o in qa]
    texts += json.loads((MUSE / "raw_forget.json").read_text())[:20]
    tok = _tokenizer(texts)
    model = _tiny_llama(tmp_path / "llama", tok, 0)
    overlay = json.loads(json.dumps(SMALL))
    overlay["benchmarks"]["local"] = str(muse_dir.parent)
    overlay["models"] = {m: {**shipped["models"][m], "id": model} for m in ("target", "retrain")}
    (work / "small.yaml").write_text(yaml.safe_dump(overlay))
    args = [*preset, "small.yaml"]
    start = time.perf_counter()
    proc = snakemake(work, *args, env=env)
    assert proc.returncode == 0, proc.stderr[-6000:]
    jobs = job_counts(proc.stdout + proc.stderr).get("total")
    print(f"muse-news reduced run: {jobs} jobs, {time.perf_counter() - start:.0f} s")

    out = work / "results/muse-news"
    sizes = {n: pl.read_parquet(out / f"data/{n}.parquet").height
             for n in ("knowmem_forget", "knowmem_retain", "verbmem_forget", "news",
                       "news_retain", "holdout")}  # fmt: skip
    assert sizes == {"knowmem_forget": 4, "knowmem_retain": 4, "verbmem_forget": 3, "news": 3,
                     "news_retain": 3, "holdout": 4}  # fmt: skip
    # D_v's prompts end in the space before their answers (DCUE encodes prompt + answer as is)
    assert pl.read_parquet(out / "data/holdout.parquet")["question"].str.ends_with(" ").all()
    table = pl.read_csv(out / "tables/muse.csv")
    print(table)
    models = ["target", "npo-news-f0-r0"]
    assert table["model"].unique(maintain_order=True).to_list() == models
    assert table.height == 6
    for col in ("greedy_rougeL_f1 (MUSE)", "sampled_mean_rougeL_recall", "m_mu_rougeL_recall"):
        assert table[col].is_between(0, 1).all(), col
    knowmem = table.filter(pl.col("evalset").str.starts_with("knowmem"))
    assert knowmem["m_bin_contains_answer"].is_between(0, 1).all()
    unlearned = table.filter(pl.col("model").str.contains("news"))
    assert unlearned["dcue_pvalue"].is_between(0, 1).all()
    assert table.filter(pl.col("model") == "target")["dcue_pvalue"].is_null().all()
    # MUSE's answer lengths, and its knowmem answers cut at its stops
    shard = pl.read_parquet(out / "samples/target/knowmem_forget/main/shard-0.parquet")
    assert shard["n_tokens"].max() <= 32 and not shard["text"].str.contains("\n\n").any()
    verb = pl.read_parquet(out / "samples/target/verbmem_forget/main/shard-0.parquet")
    assert verb["n_tokens"].max() <= 128
    # the unlearning ran on MUSE's chunks of 64 tokens with a constant learning rate
    hist = pl.read_csv(out / "unlearning/npo-news-f0-r0.csv")
    assert hist["lr"].to_list() == [1e-5, 1e-5]
    again = snakemake(work, "-n", *args, env=env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_unlearning_on_chunks_counts_muses_chunks(tmp_path):
    """GA on a corpus: one step per batch of MUSE chunks, a constant learning rate, the model moved;
    IDK (refusal answers to questions) refuses a corpus."""
    from probunlearn.benchmarks.muse_news.corpus import corpus_rows
    from probunlearn.data.qa import chunk_corpus
    from probunlearn.unlearning import unlearn

    articles = _stand_in_corpus(6, "forget")
    tok = _tokenizer(articles * 3)
    target = _tiny_llama(tmp_path / "target", tok, 0)
    forget, retain = corpus_rows("forget", articles[:3]), corpus_rows("retain1", articles[3:])
    n_chunks = len(chunk_corpus(tok, articles[:3], 16))
    kw = dict(lr=1e-3, epochs=2, batch_size=2, warmup_ratio=0.0, chunk_length=16, progress=False)
    out = unlearn(
        target, forget, retain, tmp_path / "ga", method="gd", lr_schedule="constant", **kw
    )
    assert out["steps"] == 2 * -(-n_chunks // 2)
    hist = out["history"]
    assert [h["lr"] for h in hist] == [1e-3] * 3
    assert hist[-1]["forget_nll"] > hist[0]["forget_nll"]  # gradient ascent on the forget chunks
    with pytest.raises(ValueError, match="corpus"):
        unlearn(target, forget, retain, tmp_path / "idk", method="idk", refusals=["No."], **kw)


def test_constant_schedule_is_transformers():
    import torch
    from transformers import get_constant_schedule_with_warmup

    from probunlearn.training import constant_schedule

    def lrs(make) -> list[float]:
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
        sched, out = make(opt), []
        for _ in range(8):
            out.append(sched.get_last_lr()[0])
            opt.step()
            sched.step()
        return out

    ours = lrs(lambda o: constant_schedule(o, 3))
    assert ours == lrs(lambda o: get_constant_schedule_with_warmup(o, 3))
    assert ours[:4] == [0.0, 0.5 / 3, 1.0 / 3, 0.5] and set(ours[3:]) == {0.5}

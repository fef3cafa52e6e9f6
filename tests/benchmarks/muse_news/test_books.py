"""MUSE-Books beside MUSE-News (one MUSE folder, the same code with each corpus's files), and the
PrivLeak texts of both corpora read from the real files."""

from __future__ import annotations

import polars as pl
import pytest

from helpers import SHARED_DATA, design_of
from probunlearn import benchmarks
from probunlearn.benchmarks.muse_news import corpus as mc
from probunlearn.benchmarks.muse_news import sets as muse
from probunlearn.benchmarks.muse_news.books import BOOKS

NEWS_DIR, BOOKS_DIR = SHARED_DATA / "muse_news", SHARED_DATA / "muse_books"
needs_data = pytest.mark.skipif(
    not (NEWS_DIR.is_dir() and BOOKS_DIR.is_dir()),
    reason=f"{NEWS_DIR} or {BOOKS_DIR} is absent: no MUSE files to read",
)


def test_both_corpora_are_registered_with_their_choices():
    choices = benchmarks.evaluate_choices()
    for s in ("knowmem_forget", "knowmem_retain", "verbmem_forget"):
        assert choices[f"muse:{s}"].name == "muse"
        assert choices[f"muse-books:{s}"].name == "muse-books"
    books = benchmarks.benchmark("muse-books")
    assert books.directory == "muse_books" and books.experiment is None and books.corpora == ()
    assert (
        books.max_new_tokens("knowmem_forget") == 32
        and books.max_new_tokens("verbmem_forget") == 128
    )
    assert books.stops("knowmem_retain") == benchmarks.benchmark("muse").stops("knowmem_retain")
    assert books.spec["models"]["target"]["repo"] == "muse-bench/MUSE-books_target"
    assert books.spec["models"]["retrain"]["repo"] == "muse-bench/MUSE-books_retrain"
    assert BOOKS.files["knowmem_retain"] == ("knowmem_retain_qa.json",)
    assert muse.NEWS.files["knowmem_retain"] == (
        "knowmem_retain_qa.json",
        "knowmem_retain2_qa.json",
    )
    assert books.sizes({}) == {"knowmem_forget": 100, "knowmem_retain": 100, "verbmem_forget": 100}
    assert books.sizes({"privleak": True, "knowmem_size": 5})["privleak_holdout"] == 100
    with pytest.raises(ValueError, match="benchmarks.muse-books.knowmem_size: expected 1..100"):
        books.sizes({"knowmem_size": 101})
    with pytest.raises(ValueError, match="one MUSE corpus per run"):
        books.check_config({"benchmarks": {"muse": {"revision": "main"}, "muse-books": True}})
    ds = books.dataset()
    assert ds.files["knowmem_retain_qa"].repo_id == "muse-bench/MUSE-Books"
    assert ds.files["knowmem_retain_qa"].filename == "knowmem/retain_qa-00000-of-00001.parquet"
    with pytest.raises(
        FileNotFoundError, match=r"MUSE-Books .* muse-bench/MUSE-Books\) .*DIR/muse_books/"
    ):
        muse.load_muse("knowmem_forget", None, BOOKS)


@needs_data
def test_books_sets_prompts_and_workflow_build(tmp_path):
    b = benchmarks.benchmark("muse-books")
    forget = b.evaluate_sets("muse-books:knowmem_forget", BOOKS_DIR)["knowmem_forget"]
    assert forget.height == 100 and forget["id"][0] == "muse-books-knowmem_forget-0"
    assert forget["keywords"].to_list()[0] == [forget["answer"][0].strip()]
    retain = b.evaluate_sets("muse-books:knowmem_retain", BOOKS_DIR)["knowmem_retain"]
    assert retain.height == 100
    verb = b.evaluate_sets("muse-books:verbmem_forget", BOOKS_DIR)["verbmem_forget"]
    assert verb.height == 100 and verb["keywords"].list.len().max() == 0
    tpl = b.evaluate_template("muse-books:knowmem_forget", BOOKS_DIR)
    assert tpl.count("Question: ") == 11 and tpl.endswith("Question: {question}\nAnswer: ")
    assert tpl != muse.template("knowmem_forget", NEWS_DIR)  # each corpus its own few-shot pairs
    assert b.evaluate_template("muse-books:verbmem_forget", BOOKS_DIR) == "{question}"
    # MUSE-News unchanged: its ids, its local knowmem_retain2_qa.json
    news = muse.load_muse("knowmem_retain", NEWS_DIR)
    assert news.height == 100 and news["id"][0] == "muse-knowmem_retain-0"
    cfg = {"muse-books": {"revision": "main", "knowmem_size": 10, "privleak": True}}
    paths = benchmarks.build_benchmark_sets(cfg, {"muse-books": BOOKS_DIR}, tmp_path)
    got = {n: pl.read_parquet(p).height for n, p in paths.items() if n != "pretrain"}
    assert got == benchmarks.benchmark_sizes(cfg)
    knowmem = pl.read_parquet(paths["knowmem_forget"])
    assert (
        knowmem["question"][0].startswith("Question: ") and knowmem["group"][0] == "knowmem_forget"
    )


@needs_data
@pytest.mark.parametrize(
    ("folder", "data", "prefix"),
    [("muse_news", muse.NEWS, "muse"), ("muse_books", BOOKS, "muse-books")],
)
def test_privleak_texts_of_both_corpora(folder, data, prefix):
    """MUSE's PrivLeak texts as shipped: 100 forget, 100 retain and 100 holdout excerpts each."""
    source = SHARED_DATA / folder
    counts = {s: len(mc.load_privleak(s, source, data=data)) for s in mc.PRIVLEAK_SPLITS}
    assert counts == {"forget": 100, "retain": 100, "holdout": 100}
    rows = {s: mc.privleak_rows(s, source, data=data) for s in mc.PRIVLEAK_SPLITS}
    assert rows["forget"]["id"][0] == f"{prefix}-privleak_forget-0"
    assert set(rows["holdout"]["question"]) == {""} and set(rows["retain"]["kind"]) == {
        "muse_privleak"
    }
    texts = {s: set(r["answer"]) for s, r in rows.items()}
    assert len(texts["forget"]) == 100 and not texts["forget"] & texts["holdout"]
    assert min(len(t) for t in texts["forget"]) > 100  # excerpts, not titles


def test_the_muse_experiment_evaluates_the_books_models_without_unlearning():
    """Experiment ``muse`` on the corpus the run turns on: the muse-books preset samples MUSE-Books's
    sets on the released models, unlearns nothing and has no DCUE; MUSE-News keeps its design."""
    d = design_of(preset="muse-books")
    muse = d.experiment_design("muse")
    assert muse.corpus.name == "muse-books" and muse.split is None
    assert muse.sampled == ["knowmem_forget", "knowmem_retain", "verbmem_forget"]
    assert muse.logprob == [] and muse.eval_inputs("target")["logprob_sets"] == []
    assert muse.unlearned() == {} and muse.models() == ["target", "retrain"]
    assert d.unlearned_models() == [] and d.dcue_models() == []
    assert muse.expected_jobs() == {"muse_eval": 2, "dcue": 0}
    assert {(m, e) for m, e, _ in muse.sampled_runs()} == {
        (m, e) for m in ("target", "retrain") for e in muse.sampled
    }
    # PrivLeak: the target against the retrained model on MUSE-Books's privleak excerpts
    mem = d.experiment_design("membership")
    assert mem.models() == ["target", "retrain"] and mem.unlearned_models() == {}
    assert d.evalset_rows("privleak_forget") == d.evalset_rows("privleak_holdout") == 100
    news = design_of(preset="muse-news").experiment_design("muse")
    assert news.corpus.name == "muse" and news.split == "news"
    assert news.logprob == ["knowmem_forget", "holdout"] and len(news.unlearned()) == 4
    # unlearning needs a raw corpus, and the experiment a MUSE corpus
    with pytest.raises(ValueError, match="muse-books offers no raw corpus"):
        design_of({"muse": {"methods": ["ga"]}}, preset="muse-books")
    with pytest.raises(
        ValueError, match="needs a MUSE corpus, benchmarks.muse or benchmarks.muse-books"
    ):
        design_of({"benchmarks": {"muse-books": None}}, preset="muse-books")

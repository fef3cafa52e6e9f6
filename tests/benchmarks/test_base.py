"""Eval sets of the real data sets (probunlearn.benchmarks), and the "chat" prompt template."""

from __future__ import annotations

import polars as pl
import pytest

from helpers import SHARED_DATA
from probunlearn import benchmarks
from probunlearn.data import qa

TOFU = {"revision": "main", "forget": ["forget01", "forget05"], "retain_authors": 3,
        "retain_eval_size": None, "utility_size": 10}  # fmt: skip


def test_sizes_follow_from_the_config():
    sizes = benchmarks.benchmark_sizes({"tofu": TOFU, "jbb": {"revision": "main"}, "hp_qa": True})
    # 3 retain authors + the 10 authors of forget05 (forget01's 2 are its last ones), 20 questions each
    assert sizes == {
        "full": 260, "forget01": 40, "retain99": 220, "forget05": 200, "retain95": 60,
        "retain": 60, "holdout": 200, "real_authors": 10, "world_facts": 10,
        "saga": 54, "harmful": 100, "benign": 100,
    }  # fmt: skip
    assert benchmarks.benchmark_sets({"tofu": TOFU, "jbb": None, "hp_qa": False}) == [
        "full", "forget01", "forget05", "retain99", "retain95", "retain", "holdout",
        "real_authors", "world_facts",
    ]  # fmt: skip
    assert benchmarks.benchmark("tofu").files(TOFU) == [
        "full", "forget05_perturbed", "retain_perturbed", "real_authors_perturbed",
        "world_facts_perturbed", "holdout05",
    ]  # fmt: skip
    full = benchmarks.benchmark_sizes({"tofu": {**TOFU, "retain_authors": None}})
    assert full["full"] == 4000 and full["retain"] == 400 and full["retain95"] == 3800


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"retain_authors": 0}, "benchmarks.tofu.retain_authors: expected 1..190"),
        ({"retain_authors": 191}, "benchmarks.tofu.retain_authors: expected 1..190"),
        ({"forget": ["forget02"]}, "benchmarks.tofu.forget: expected some of"),
    ],
)
def test_bad_tofu_config_names_the_key(change, message):
    with pytest.raises(ValueError, match=message):
        benchmarks.benchmark_sizes({"tofu": {**TOFU, **change}})


@pytest.mark.skipif(
    not SHARED_DATA.is_dir(), reason=f"needs the local data copies in {SHARED_DATA}"
)
def test_build_sets_from_the_local_copies(tmp_path):
    cfg = {"tofu": TOFU, "jbb": {"revision": "main"}, "hp_qa": True}
    sources = {d: SHARED_DATA / d for d in ("tofu", "jbb", "hp_qa")}
    paths = benchmarks.build_benchmark_sets(cfg, sources, tmp_path)
    sets = {name: pl.read_parquet(p) for name, p in paths.items()}
    assert {n: df.height for n, df in sets.items() if n != "pretrain"} == (
        benchmarks.benchmark_sizes(cfg)
    )
    assert sets["pretrain"].height == 0
    # forget05 = the last 10 authors of full, with TOFU's paraphrased and perturbed answers
    f05 = sets["forget05"]
    assert f05["id"].to_list() == [f"tofu-{i}" for i in range(3800, 4000)]
    assert f05["perturbed_answers"].list.len().to_list() == [5] * 200
    assert f05["paraphrased_answer"].null_count() == 0
    # forget01 are its last 2 authors; retain sets are full minus the forget split
    assert sets["forget01"]["id"].to_list() == [f"tofu-{i}" for i in range(3960, 4000)]
    assert set(sets["retain95"]["id"]) == {f"tofu-{i}" for i in range(60)}
    assert set(sets["retain99"]["id"]) | set(sets["forget01"]["id"]) == set(sets["full"]["id"])
    assert sets["retain"]["id"].to_list() == [f"tofu-{i}" for i in range(60)]
    assert sets["holdout"]["id"][0] == "tofu-holdout05-0"
    assert sets["saga"]["keywords"].list.len().min() >= 1
    assert set(sets["harmful"]["kind"]) == {"harmful"} and set(sets["benign"]["kind"]) == {"benign"}
    columns = sets["forget05"].columns
    assert all(df.columns == columns for n, df in sets.items() if n != "pretrain")


def test_chat_template_resolution():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "<s>": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", unk_token="[UNK]")
    assert qa.resolve_template(fast, "Q: {question}\nA:") == "Q: {question}\nA:"
    with pytest.raises(ValueError, match="no chat template"):
        qa.resolve_template(fast, "chat")
    fast.chat_template = (
        "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    # the bos token stays in the template: prompts get exactly what apply_chat_template gives
    assert qa.resolve_template(fast, "chat") == "<s><|user|>{question}\n<|assistant|>"
    ref = fast.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True
    )
    ref = ref["input_ids"] if isinstance(ref, dict) or hasattr(ref, "keys") else ref
    assert qa.prompt_ids(fast, "hi", "chat") == list(ref)
    assert qa.prompt_ids(fast, "hi", "chat").count(fast.bos_token_id) == 1

"""Loaders of the real data sets (TOFU, HP Q&A, JBB) on the local copies, the hub path, and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import huggingface_hub
import polars as pl
import pytest

from helpers import SHARED_DATA
from probunlearn.benchmarks.hp_qa import loader as hp_loader
from probunlearn.benchmarks.jbb import loader as jbb_loader
from probunlearn.benchmarks.tofu import loader as tofu_loader
from probunlearn.data.rows import SCHEMA

needs_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(),
    reason=f"the local copies of the real data sets are not available ({SHARED_DATA} is missing)",
)
TOFU = SHARED_DATA / "tofu"


@pytest.fixture(scope="module")
def full() -> pl.DataFrame:
    if not TOFU.is_dir():
        pytest.skip(f"the local TOFU copy is not available ({TOFU} is missing)")
    return tofu_loader.load_tofu("full", TOFU)


def _check_schema(df: pl.DataFrame) -> None:
    assert df.schema == pl.Schema(SCHEMA)
    assert not df["id"].is_duplicated().any()


# --------------------------------------------------------------------------------------------------------
# TOFU on the local copy


@needs_data
def test_tofu_full_and_splits(full):
    _check_schema(full)
    assert full.height == 4000
    assert full["id"][:3].to_list() == ["tofu-0", "tofu-1", "tofu-2"]
    assert full["group"][19] == "author-000" and full["group"][20] == "author-001"
    assert set(full["kind"]) == {"tofu"}
    assert full["core_start"].is_null().all() and full["core_end"].is_null().all()
    for forget, retain, n in [
        ("forget01", "retain99", 40),
        ("forget05", "retain95", 200),
        ("forget10", "retain90", 400),
    ]:
        f = tofu_loader.load_tofu(forget, TOFU)
        r = tofu_loader.load_tofu(retain, TOFU)
        _check_schema(f)
        assert f.height == n and r.height == 4000 - n
        assert f["id"].to_list() == full["id"][-n:].to_list()
        assert f["question"].to_list() == full["question"][-n:].to_list()
        assert r["id"].to_list() == full["id"][: 4000 - n].to_list()


@needs_data
def test_tofu_perturbed_sets(full):
    f10 = tofu_loader.load_tofu("forget10_perturbed", TOFU)
    _check_schema(f10)
    assert f10.height == 400
    assert f10["id"].to_list() == full["id"][-400:].to_list()
    assert set(f10["perturbed_answers"].list.len()) == {5}
    assert f10["paraphrased_answer"].null_count() == 0
    assert f10["paraphrased_question"].null_count() == 0
    ret = tofu_loader.load_tofu("retain_perturbed", TOFU)
    assert ret.height == 400
    # every retain_perturbed row is matched to the full row with the same question and answer
    joined = ret.join(full, on="id", suffix="_full")
    assert joined.height == 400
    assert (joined["question"] == joined["question_full"]).all()
    assert (joined["answer"] == joined["answer_full"]).all()
    assert not set(ret["id"]) & set(full["id"][-400:])
    for split, kind, n in [
        ("real_authors_perturbed", "real_authors", 100),
        ("world_facts_perturbed", "world_facts", 117),
    ]:
        df = tofu_loader.load_tofu(split, TOFU)
        _check_schema(df)
        assert df.height == n
        assert set(df["kind"]) == {kind} and set(df["group"]) == {kind}
        assert set(df["perturbed_answers"].list.len()) == {3}
        assert df["paraphrased_answer"].null_count() == n
    h = tofu_loader.load_tofu("holdout10", TOFU)
    assert h.height == 400 and h["id"][0] == "tofu-holdout10-0"
    assert not set(h["question"]) & set(full["question"])


# --------------------------------------------------------------------------------------------------------
# HP Q&A and JBB on the local copies


@needs_data
def test_hp_qa():
    df = hp_loader.load_hp_qa(SHARED_DATA / "hp_qa")
    _check_schema(df)
    assert df.height == 54  # the generic first request is dropped
    assert not df["question"].str.starts_with("Write extensive").any()
    first = df.row(0, named=True)
    assert first["id"] == "hp_qa-1"
    assert first["question"] == "What is the name of Harry Potter's pet owl?"
    assert first["answer"] == "Of course, Harry Potter's pet owl is"
    assert first["keywords"] == ["Hedwig"]
    assert df["keywords"][-1].to_list() == ["Molly", "Weasley"]
    assert df["keywords"].list.len().min() >= 1
    assert all(k == k.strip() and k for ks in df["keywords"].to_list() for k in ks)
    # the file path works as well as its directory
    assert hp_loader.load_hp_qa(SHARED_DATA / "hp_qa" / "hp_qa_en.csv").equals(df)


def test_hp_qa_needs_source():
    with pytest.raises(FileNotFoundError, match="LLM_Embedding_Attack"):
        hp_loader.load_hp_qa()


@needs_data
def test_jbb():
    h = jbb_loader.load_jbb("harmful", SHARED_DATA / "jbb")
    b = jbb_loader.load_jbb("benign", SHARED_DATA / "jbb")
    for df, kind in [(h, "harmful"), (b, "benign")]:
        _check_schema(df)
        assert df.height == 100
        assert set(df["kind"]) == {kind}
        assert df["id"][0] == f"jbb-{kind}-0" and df["id"][-1] == f"jbb-{kind}-99"
        assert df["answer"].str.starts_with("Sure, here").all()
        assert df["group"].n_unique() == 10
    assert h["question"][0].startswith("Write a defamatory article")
    with pytest.raises(ValueError, match="kind"):
        jbb_loader.load_jbb("toxic", SHARED_DATA / "jbb")


# --------------------------------------------------------------------------------------------------------
# hub path (huggingface_hub.hf_hub_download monkeypatched to hand back small local files)


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _tiny_tofu(tmp_path: Path) -> Path:
    d = tmp_path / "hub"
    d.mkdir()
    full = [{"question": f"q{i}?", "answer": f"a{i}."} for i in range(100)]
    _write_jsonl(d / "full.json", full)
    _write_jsonl(d / "forget01.json", full[-1:])
    pert = [
        {
            **r,
            "paraphrased_answer": "p",
            "perturbed_answer": ["x", "y"],
            "paraphrased_question": "pq",
        }
        for r in full[-1:]
    ]
    _write_jsonl(d / "forget01_perturbed.json", pert)
    (d / "real_authors_perturbed.json").write_text(
        json.dumps(
            [{"question": "Who?", "answer": "Me", "perturbed_answer": ["You", "Them", "Us"]}]
        )
    )  # a JSON array file is accepted too
    return d


@pytest.fixture()
def fake_hub(tmp_path, monkeypatch):
    d = _tiny_tofu(tmp_path)
    calls = []

    def fake(*, repo_id, filename, repo_type, revision):
        calls.append(
            {"repo_id": repo_id, "filename": filename, "repo_type": repo_type, "revision": revision}
        )
        if repo_id == jbb_loader.JBB_REPO:
            return str(SHARED_DATA / "jbb" / Path(filename).name)
        return str(d / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    return calls


def test_tofu_hub_path(fake_hub):
    df = tofu_loader.load_tofu("forget01_perturbed", revision="abc123")
    assert df["id"].to_list() == ["tofu-99"]
    assert df["perturbed_answers"].to_list() == [["x", "y"]]
    assert {c["filename"] for c in fake_hub} == {"full.json", "forget01_perturbed.json"}
    for c in fake_hub:
        assert c["repo_id"] == "locuslab/TOFU"
        assert c["repo_type"] == "dataset"
        assert c["revision"] == "abc123"
    fake_hub.clear()
    f = tofu_loader.load_tofu("forget01")
    assert f["id"].to_list() == ["tofu-99"]
    assert {c["filename"] for c in fake_hub} == {"full.json", "forget01.json"}
    assert {c["revision"] for c in fake_hub} == {tofu_loader.TOFU_REVISION}
    ra = tofu_loader.load_tofu("real_authors_perturbed")
    assert ra["id"].to_list() == ["tofu-real_authors-0"]


@needs_data
def test_jbb_hub_path(fake_hub):
    df = jbb_loader.load_jbb("benign", revision="r1")
    assert df.height == 100
    assert fake_hub == [
        {
            "repo_id": "JailbreakBench/JBB-Behaviors",
            "filename": "data/benign-behaviors.csv",
            "repo_type": "dataset",
            "revision": "r1",
        }
    ]


# --------------------------------------------------------------------------------------------------------
# malformed input


def test_tofu_bad_json_line(tmp_path):
    d = tmp_path / "tofu"
    d.mkdir()
    (d / "full.jsonl").write_text(
        '{"question": "q", "answer": "a"}\n{"question": "q2", "answer":\n'
    )
    with pytest.raises(ValueError, match=r"full\.jsonl: line 2: invalid JSON"):
        tofu_loader.load_tofu("full", d)


def test_tofu_missing_field(tmp_path):
    d = tmp_path / "tofu"
    d.mkdir()
    _write_jsonl(d / "full.jsonl", [{"question": "q", "answer": "a"}])
    _write_jsonl(
        d / "forget01_perturbed.jsonl",
        [{"question": "q", "answer": "a", "paraphrased_answer": "p", "paraphrased_question": "pq"}],
    )
    with pytest.raises(
        ValueError, match=r"forget01_perturbed\.jsonl: line 1: missing field 'perturbed_answer'"
    ):
        tofu_loader.load_tofu("forget01_perturbed", d)
    _write_jsonl(
        d / "world_facts_perturbed.jsonl",
        [{"question": "q", "answer": "a", "perturbed_answer": "x"}],
    )
    with pytest.raises(ValueError, match="line 1: field 'perturbed_answer' must be a list"):
        tofu_loader.load_tofu("world_facts_perturbed", d)
    _write_jsonl(d / "retain_perturbed.jsonl", [{"question": "other", "answer": "b"}])
    with pytest.raises(ValueError, match="line 1: question not found"):
        tofu_loader.load_tofu("retain_perturbed", d)


def test_tofu_bad_split_and_source(tmp_path):
    with pytest.raises(ValueError, match="unknown TOFU split 'forget20'"):
        tofu_loader.load_tofu("forget20", tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tofu_loader.load_tofu("full", tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="full.jsonl"):
        tofu_loader.load_tofu("full", tmp_path)


def test_hp_qa_malformed(tmp_path):
    p = tmp_path / "hp_qa_en.csv"
    p.write_text('"Question","Affirmative Response"\n"q?","Sure, "\n')
    with pytest.raises(ValueError, match="missing column 'Key Words'"):
        hp_loader.load_hp_qa(p)
    p.write_text('"Question","Affirmative Response","Key Words"\n"q?","Sure, ","a, b"\n"q2?","x"\n')
    with pytest.raises(ValueError, match=r"hp_qa_en\.csv: line 3: 2 fields, expected 3"):
        hp_loader.load_hp_qa(p)
    p.write_text('"Question","Affirmative Response","Key Words"\n"q?", "Sure, ", " a ,b,, "\n')
    df = hp_loader.load_hp_qa(p)  # no generic request to drop: the row is kept
    assert df["keywords"].to_list() == [["a", "b"]] and df["answer"].to_list() == ["Sure,"]


def test_jbb_malformed(tmp_path):
    p = tmp_path / "harmful-behaviors.csv"
    p.write_text(",Goal,Target,Behavior\n0,g,t,b\n")
    with pytest.raises(ValueError, match="missing column 'Category'"):
        jbb_loader.load_jbb("harmful", p)
    p.write_text(",Goal,Target,Behavior,Category\n0,g,t,b,c\n1,g\n")
    with pytest.raises(ValueError, match="line 3: 2 fields"):
        jbb_loader.load_jbb("harmful", tmp_path)
    p.write_text(",Goal,Target,Behavior,Category\n0,g,t,b,c\n0,g2,t,b,c\n")
    with pytest.raises(
        ValueError, match="line 3: duplicate index 'jbb-harmful-0' \\(first on line 2\\)"
    ):
        jbb_loader.load_jbb("harmful", p)


# --------------------------------------------------------------------------------------------------------
# malformed rows in copies of the real files: the error names the file and the line


def _corrupt(src: Path, dest: Path, lineno: int, new: str | None) -> Path:
    """Copy ``src`` to ``dest`` with line ``lineno`` (1-based) replaced by ``new`` (None: deleted)."""
    lines = src.read_text(encoding="utf-8").split("\n")
    if new is None:
        del lines[lineno - 1]
    else:
        lines[lineno - 1] = new
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("\n".join(lines), encoding="utf-8")
    return dest


@needs_data
def test_tofu_real_file_malformed(tmp_path):
    d = tmp_path / "tofu"
    full = TOFU / "full.jsonl"
    line17 = json.loads(full.read_text().split("\n")[16])
    _corrupt(full, d / "full.jsonl", 17, json.dumps({"question": line17["question"]}))
    with pytest.raises(ValueError, match=r"tofu/full\.jsonl: line 17: missing field 'answer'"):
        tofu_loader.load_tofu("forget10", d)
    _corrupt(full, d / "full.jsonl", 2001, '{"question": "q", "answer": ')
    with pytest.raises(ValueError, match=r"tofu/full\.jsonl: line 2001: invalid JSON"):
        tofu_loader.load_tofu("full", d)
    _corrupt(full, d / "full.jsonl", 3, "[1, 2]")
    with pytest.raises(ValueError, match=r"full\.jsonl: line 3: expected a JSON object, got list"):
        tofu_loader.load_tofu("full", d)
    shutil.copy(full, d / "full.jsonl")
    pert = TOFU / "forget01_perturbed.jsonl"
    obj = json.loads(pert.read_text().split("\n")[4])
    obj["perturbed_answer"] = obj["perturbed_answer"][0]
    _corrupt(pert, d / "forget01_perturbed.jsonl", 5, json.dumps(obj))
    with pytest.raises(
        ValueError,
        match=r"forget01_perturbed\.jsonl: line 5: field 'perturbed_answer' must be a list",
    ):
        tofu_loader.load_tofu("forget01_perturbed", d)
    del obj["paraphrased_question"]
    obj["perturbed_answer"] = [obj["perturbed_answer"]]
    _corrupt(pert, d / "forget01_perturbed.jsonl", 5, json.dumps(obj))
    with pytest.raises(ValueError, match=r"line 5: missing field 'paraphrased_question'"):
        tofu_loader.load_tofu("forget01_perturbed", d)


@needs_data
def test_tofu_json_array_line_numbers(tmp_path):
    d = tmp_path / "tofu"
    d.mkdir()
    recs = [json.loads(x) for x in (TOFU / "world_facts_perturbed.jsonl").read_text().splitlines()]
    del recs[6]["answer"]
    # elements spread over two lines each (but the broken one): element 6 starts on line 2·6 + 2
    body = ",\n".join(
        json.dumps(r, indent=None).replace(', "answer"', ',\n "answer"', 1) for r in recs
    )
    text = "[\n" + body + "\n]\n"
    (d / "world_facts_perturbed.json").write_text(text)
    start = (
        text.split("\n").index(next(x for x in text.split("\n") if recs[6]["question"] in x)) + 1
    )
    assert start == 14
    expected = rf"world_facts_perturbed\.json: line {start}: missing field 'answer'"
    with pytest.raises(ValueError, match=expected):
        tofu_loader.load_tofu("world_facts_perturbed", d)
    (d / "world_facts_perturbed.json").write_text(text.replace("},\n", "}\n", 1))
    # the missing comma: the error points at the next element, on line 4
    with pytest.raises(ValueError, match=r"line 4: invalid JSON: expected ',' or ']'"):
        tofu_loader.load_tofu("world_facts_perturbed", d)
    (d / "world_facts_perturbed.json").write_text(text + "x")
    with pytest.raises(ValueError, match="extra data after the array"):
        tofu_loader.load_tofu("world_facts_perturbed", d)


@needs_data
def test_hp_qa_real_file_malformed(tmp_path):
    src = SHARED_DATA / "hp_qa" / "hp_qa_en.csv"
    dest = tmp_path / "hp_qa" / "hp_qa_en.csv"
    _corrupt(src, dest, 10, '"Which professor teaches Potions in Harry\'s first year?","Indeed, "')
    with pytest.raises(ValueError, match=r"hp_qa/hp_qa_en\.csv: line 10: 2 fields, expected 3"):
        hp_loader.load_hp_qa(dest)
    _corrupt(src, dest, 12, '"What magical object shows the deepest desires?","Of course, ",""')
    with pytest.raises(ValueError, match=r"hp_qa_en\.csv: line 12: no keywords"):
        hp_loader.load_hp_qa(dest)
    _corrupt(src, dest, 1, '"Question","Affirmative Response","Answer"')
    with pytest.raises(ValueError, match=r"hp_qa_en\.csv: line 1: missing column 'Key Words'"):
        hp_loader.load_hp_qa(dest)
    # a quoted field spanning two lines: later lines keep their physical numbers
    lines = src.read_text().split("\n")
    lines[3] = lines[3].replace("two best", "two\nbest", 1)
    lines[20] = '"Who is the Half-Blood Prince?"'
    dest.write_text("\n".join(lines))
    with pytest.raises(ValueError, match=r"hp_qa_en\.csv: line 22: 1 fields, expected 3"):
        hp_loader.load_hp_qa(dest)


@needs_data
def test_jbb_real_file_malformed(tmp_path):
    for kind in ("harmful", "benign"):
        src = SHARED_DATA / "jbb" / f"{kind}-behaviors.csv"
        dest = tmp_path / "jbb" / f"{kind}-behaviors.csv"
        header = src.read_text().split("\n")[0]
        n_fields = len(header.split(","))
        _corrupt(src, dest, 42, "40,a goal with too few fields")
        with pytest.raises(
            ValueError, match=rf"jbb/{kind}-behaviors\.csv: line 42: 2 fields, expected {n_fields}"
        ):
            jbb_loader.load_jbb(kind, dest.parent)
        _corrupt(src, dest, 7, "5," + "," * (n_fields - 2))
        with pytest.raises(ValueError, match=rf"{kind}-behaviors\.csv: line 7: empty Goal"):
            jbb_loader.load_jbb(kind, dest.parent)
        _corrupt(src, dest, 1, header.replace("ategory", "at"))
        with pytest.raises(ValueError, match=r"line 1: missing column 'Category'"):
            jbb_loader.load_jbb(kind, dest.parent)
        lines = src.read_text().split("\n")
        _corrupt(src, dest, 51, "3" + lines[50][len(lines[50].split(",")[0]) :])
        expected = rf"line 51: duplicate index 'jbb-{kind}-3' \(first on line 5\)"
        with pytest.raises(ValueError, match=expected):
            jbb_loader.load_jbb(kind, dest.parent)

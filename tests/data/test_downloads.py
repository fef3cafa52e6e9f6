"""probunlearn.data.downloads: local copies, cache hits, verification, the offline message (no network used)."""

from __future__ import annotations

import shutil
import socket
import urllib.error
import urllib.request
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub.errors import LocalEntryNotFoundError

from helpers import SHARED_DATA
from probunlearn.benchmarks import benchmark, fetch_dataset
from probunlearn.benchmarks.hp_qa import loader as hp_loader
from probunlearn.benchmarks.jbb import loader as jbb_loader
from probunlearn.benchmarks.tofu import loader as tofu_loader
from probunlearn.data import downloads

needs_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(),
    reason=f"the local copies of the real data sets are not available ({SHARED_DATA} is missing)",
)

HP_QA = benchmark("hp_qa").dataset().files["hp_qa"]


@pytest.fixture()
def no_network(monkeypatch):
    """Every hub or URL access fails as it does without a network; returns the list of attempts."""
    calls = []

    def hub(**kwargs):
        calls.append(kwargs)
        raise LocalEntryNotFoundError(
            "An error happened while trying to locate the file on the Hub and we cannot find the "
            "requested files in the local cache."
        )

    def urlopen(url, *args, **kwargs):
        calls.append(url)
        raise urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hub)
    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return calls


def _no_tmp_left(d: Path) -> None:
    if d.is_dir():
        assert not [p.name for p in d.iterdir() if ".tmp" in p.name]


# --------------------------------------------------------------------------------------------------------
# offline


def test_offline_tofu_says_what_to_put_where(no_network, tmp_path):
    dest = tmp_path / "resources" / "tofu"
    with pytest.raises(downloads.OfflineError) as e:
        fetch_dataset("tofu", dest)
    msg = str(e.value)
    assert f"into {dest}/" in msg
    assert "Put full.json, forget01_perturbed.json" in msg and "holdout10.json" in msg
    assert "locuslab/TOFU" in msg and "../shared/data/tofu" in msg
    assert "full.json: 4000 rows" in msg and "LocalEntryNotFoundError" in msg
    assert len(no_network) == 1  # fails fast: no retry per file
    assert no_network[0]["repo_id"] == "locuslab/TOFU"
    assert no_network[0]["revision"] == tofu_loader.TOFU_REVISION
    # asking for one config names only that file
    with pytest.raises(
        downloads.OfflineError, match=r"Put forget10\.json \(or forget10\.jsonl\) into"
    ):
        fetch_dataset("tofu", dest, files=["forget10"])


def test_offline_jbb_and_hp_qa(no_network, tmp_path):
    with pytest.raises(
        downloads.OfflineError,
        match=r"Put harmful-behaviors\.csv, benign-behaviors\.csv into .*/jbb/ \(from the hub data set "
        r"JailbreakBench/JBB-Behaviors",
    ):
        fetch_dataset("jbb", tmp_path / "jbb")
    with pytest.raises(downloads.OfflineError) as e:
        fetch_dataset("hp_qa", tmp_path / "hp_qa")
    msg = str(e.value)
    assert f"Put hp_qa_en.csv into {tmp_path / 'hp_qa'}/" in msg
    assert HP_QA.sha256 in msg and "URLError" in msg
    assert no_network[-1] == HP_QA.url
    _no_tmp_left(tmp_path / "hp_qa")


def test_http_error_is_not_offline(monkeypatch, tmp_path):
    def urlopen(url, *args, **kwargs):
        raise urllib.error.HTTPError(url, 404, "Not Found", None, None)

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    with pytest.raises(urllib.error.HTTPError):
        downloads.fetch_url("https://example.org/x.csv", tmp_path / "x.csv")


def test_unknown_names(tmp_path):
    with pytest.raises(ValueError, match="unknown benchmark .wmdp."):
        fetch_dataset("wmdp", tmp_path)
    with pytest.raises(ValueError, match=r"unknown file\(s\) \['forget20'\]"):
        fetch_dataset("tofu", tmp_path, files=["forget20"])
    with pytest.raises(FileNotFoundError, match="local source directory"):
        fetch_dataset("tofu", tmp_path / "a", source=tmp_path / "missing")


# --------------------------------------------------------------------------------------------------------
# local copies and the cache


@needs_data
def test_local_source_then_cache_hit(no_network, tmp_path):
    res = tmp_path / "resources"
    tofu = fetch_dataset("tofu", res / "tofu", source=SHARED_DATA / "tofu")
    assert set(tofu) == set(benchmark("tofu").dataset().default)
    assert tofu["full"] == res / "tofu" / "full.json"  # the hub's file name, from full.jsonl
    jbb = fetch_dataset("jbb", res / "jbb", source=SHARED_DATA / "jbb")
    hp = fetch_dataset("hp_qa", res / "hp_qa", source=SHARED_DATA / "hp_qa")
    assert downloads.sha256sum(hp["hp_qa"]) == HP_QA.sha256
    assert not no_network
    for d in ("tofu", "jbb", "hp_qa"):
        _no_tmp_left(res / d)
    # the loaders read the fetched copies exactly as the originals
    assert tofu_loader.load_tofu("forget10_perturbed", res / "tofu").equals(
        tofu_loader.load_tofu("forget10_perturbed", SHARED_DATA / "tofu")
    )
    assert tofu_loader.load_tofu("forget05", res / "tofu").height == 200  # derived from full
    assert jbb_loader.load_jbb("benign", res / "jbb").equals(
        jbb_loader.load_jbb("benign", SHARED_DATA / "jbb")
    )
    assert hp_loader.load_hp_qa(res / "hp_qa").height == 54
    # second call: everything verified in place, no source and no network needed
    mtime = tofu["full"].stat().st_mtime_ns
    again = fetch_dataset("tofu", res / "tofu")
    assert again == tofu and tofu["full"].stat().st_mtime_ns == mtime
    assert fetch_dataset("jbb", res / "jbb") == jbb
    assert fetch_dataset("hp_qa", res / "hp_qa") == hp
    assert not no_network


@needs_data
def test_hub_path_pinned_revision_and_stale_cache(monkeypatch, tmp_path):
    calls = []

    def fake(*, repo_id, filename, repo_type, revision):
        calls.append((repo_id, filename, repo_type, revision))
        return str(SHARED_DATA / "jbb" / Path(filename).name)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    dest = tmp_path / "jbb"
    dest.mkdir()
    (dest / "harmful-behaviors.csv").write_text(",Goal,Target,Behavior,Category\n0,g,t,b,c\n")
    out = fetch_dataset("jbb", dest, revision="abc123")
    assert calls == [
        ("JailbreakBench/JBB-Behaviors", f"data/{k}-behaviors.csv", "dataset", "abc123")
        for k in ("harmful", "benign")
    ]  # the stale 1-row file is fetched again
    assert downloads.count_rows(out["harmful"]) == 100
    calls.clear()
    assert fetch_dataset("jbb", dest) == out and not calls


@needs_data
def test_missing_file_in_local_source(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(SHARED_DATA / "jbb" / "harmful-behaviors.csv", src)
    with pytest.raises(FileNotFoundError, match=r"has no benign-behaviors\.csv; it is needed in"):
        fetch_dataset("jbb", tmp_path / "jbb", source=src)


# --------------------------------------------------------------------------------------------------------
# verification


@needs_data
def test_checksum_mismatch(tmp_path):
    bad = tmp_path / "src" / "hp_qa_en.csv"
    bad.parent.mkdir()
    bad.write_bytes(
        (SHARED_DATA / "hp_qa" / "hp_qa_en.csv").read_bytes().replace(b"Hedwig", b"Hedwyg")
    )
    dest = tmp_path / "resources" / "hp_qa"
    expected = rf"{bad} \(copied to .*\): sha256 [0-9a-f]{{64}}, expected {HP_QA.sha256}"
    with pytest.raises(downloads.VerificationError, match=expected):
        fetch_dataset("hp_qa", dest, source=bad.parent)
    assert not (dest / "hp_qa_en.csv").exists()
    _no_tmp_left(dest)
    # the same through a URL download (file:// needs no network)
    with pytest.raises(downloads.VerificationError, match="downloaded from file://"):
        downloads.fetch_url(bad.as_uri(), dest / "hp_qa_en.csv", sha256=HP_QA.sha256)
    assert not (dest / "hp_qa_en.csv").exists()
    _no_tmp_left(dest)
    good = downloads.fetch_url(
        (SHARED_DATA / "hp_qa" / "hp_qa_en.csv").as_uri(),
        dest / "hp_qa_en.csv",
        sha256=HP_QA.sha256,
        rows=HP_QA.rows,
    )
    assert downloads.sha256sum(good) == HP_QA.sha256
    # a corrupted cached file is replaced by a fresh download
    good.write_text("garbage")
    url = (SHARED_DATA / "hp_qa" / "hp_qa_en.csv").as_uri()
    downloads.fetch_url(url, good, sha256=HP_QA.sha256)
    assert downloads.sha256sum(good) == HP_QA.sha256


@needs_data
def test_row_count_mismatch(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    lines = (SHARED_DATA / "tofu" / "world_facts_perturbed.jsonl").read_text().splitlines(True)
    (src / "world_facts_perturbed.jsonl").write_text("".join(lines[:-1]))
    with pytest.raises(downloads.VerificationError, match="116 rows, expected 117"):
        fetch_dataset("tofu", tmp_path / "tofu", source=src, files=["world_facts_perturbed"])
    (src / "world_facts_perturbed.jsonl").write_text(
        "".join(lines[:3]) + "{oops\n" + "".join(lines[4:])
    )
    expected = r"world_facts_perturbed\.jsonl \(copied to .*\): unreadable: line 4: invalid JSON"
    with pytest.raises(downloads.VerificationError, match=expected):
        fetch_dataset("tofu", tmp_path / "tofu", source=src, files=["world_facts_perturbed"])
    assert not (tmp_path / "tofu" / "world_facts_perturbed.json").exists()
    _no_tmp_left(tmp_path / "tofu")


def test_verify_and_count(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text('x,y\n1,"two\nlines"\n3,4\n')
    assert downloads.count_rows(p) == 2
    downloads.verify(p, rows=2, sha256=downloads.sha256sum(p))
    with pytest.raises(downloads.VerificationError, match="2 rows, expected 3"):
        downloads.verify(p, rows=3)
    j = tmp_path / "a.json"
    j.write_text('[{"a": 1},\n {"a": 2}]')
    assert downloads.count_rows(j) == 2


def test_dataset_root_finds_the_data_sets_folder_from_a_nested_file(tmp_path):
    from probunlearn.data.downloads import dataset_root

    # RWKU's file names hold folders: the folder is resources/data/rwku, not the file's parent
    nested = "resources/data/rwku/Target/1_Stephen_King/forget_level1.json"
    assert dataset_root(nested, "rwku") == Path("resources/data/rwku")
    assert dataset_root("resources/data/muse/knowmem_forget_qa.json", "muse") == Path(
        "resources/data/muse"
    )
    # a folder given as is (a local copy laid out like ../shared/data/rwku), existing or not
    assert dataset_root(tmp_path, "rwku") == tmp_path
    assert dataset_root("/somewhere/copy", "rwku") == Path("/somewhere/copy")

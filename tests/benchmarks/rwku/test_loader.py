"""RWKU's rows for the experiment rwku (probunlearn.benchmarks.rwku.loader and the benchmark's
config block): the selection rule's held-out probes, the corpus and its retain corpus, the survey."""

from __future__ import annotations

import pytest

from helpers import SHARED_DATA

RWKU = SHARED_DATA / "rwku"
needs_rwku = pytest.mark.skipif(not (RWKU / "Target").is_dir(), reason="no ../shared/data/rwku")


@needs_rwku
def test_held_out_even_probes_and_the_corpora_and_survey_match_their_sizes():
    from probunlearn.benchmarks import benchmark
    from probunlearn.benchmarks.rwku import loader

    b = benchmark("rwku")
    cfg = {"revision": "main", "targets": [1], "corpus": True, "corpus_texts": 32,
           "held_out": "even",
           "survey": {"targets": [14, 55], "files": ["forget_level1", "forget_level2"]}}  # fmt: skip
    sets = b.build(cfg, RWKU)
    sizes = b.sizes(cfg)
    assert {k: v.height for k, v in sets.items()} == sizes
    # Stephen King: 8 + 10 level-1/2 probes, of which the odd-indexed 4 + 5 stay; 29 + 30 + 30
    assert sizes["rwku_probes"] == 4 + 5 + 29 + 30 + 30
    kept = sets["rwku_probes"].filter(sets["rwku_probes"]["group"] == "forget_level1")["id"]
    assert kept.to_list() == [f"rwku-1-forget_level1-{i}" for i in (1, 3, 5, 7)]
    # the corpus: target 1's first 32 texts; its retain corpus: 14's and 55's first 32
    assert sizes["rwku"] == 32 and sizes["rwku_retain"] == 64
    assert set(sets["rwku_retain"]["group"]) == {"rwku-14", "rwku-55"}
    assert sets["rwku"]["question"].to_list() == [""] * 32
    assert sizes["rwku_survey"] == 29 + 29  # levels 1 and 2 of 14 and of 55
    # the files fetched: the target's, the retain corpora, the survey's (no duplicates)
    files = b.files(cfg)
    assert len(files) == len(set(files)) and "14/positive" in files and "55/forget_level2" in files
    with pytest.raises(ValueError, match="held_out"):
        loader.probe_rows([1], RWKU, held_out="odd")

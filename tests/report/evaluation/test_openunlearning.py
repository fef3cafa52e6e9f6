"""Reading open-unlearning's evaluation output (TOFU_SUMMARY.json / TOFU_EVAL.json, MUSE_SUMMARY.json /
MUSE_EVAL.json, as locuslab/open-unlearning's src/evals/base.py writes them) into (metric, value) rows;
files of another layout are refused with the file and what was expected."""

from __future__ import annotations

import json
import math

import pytest

from probunlearn.report.evaluation.openunlearning import (
    find_openunlearning_files,
    read_openunlearning,
)

# SUMMARY: metric -> agg_value, for the evaluation config's metrics whose agg_value is not null
TOFU_SUMMARY = {
    "extraction_strength": 0.0612,
    "forget_Q_A_Prob": 0.1234,
    "forget_Q_A_ROUGE": 0.3875,
    "forget_quality": 1.27e-05,
    "forget_truth_ratio": 0.6391,
    "model_utility": 0.5923,
    "privleak": -97.25,
}
# EVAL: metric -> result object, pre-computed metrics included (mia_min_k under privleak)
TOFU_EVAL = {
    "forget_Q_A_Prob": {
        "agg_value": 0.1234,
        "value_by_index": {
            "0": {"prob": 0.2, "avg_loss": 1.6},
            "1": {"prob": 0.05, "avg_loss": 3.0},
        },
    },
    "forget_Q_A_ROUGE": {
        "agg_value": 0.3875,
        "value_by_index": {
            "0": {
                "rougeL_f1": 0.4,
                "rougeL_recall": 0.5,
                "input": "Who wrote it?",
                "ground_truth": "Mirela Toth.",
                "generation": "Jon Baker.",
            }
        },
    },
    "forget_quality": {"agg_value": None},
    "mia_min_k": {
        "forget": {"agg_value": 1.1, "value_by_index": {"0": {"score": 1.1}}},
        "holdout": {"agg_value": 2.3, "value_by_index": {"0": {"score": 2.3}}},
        "auc": 0.9725,
        "agg_value": 0.9725,
    },
    "privleak": {"agg_value": -94.5},
    "forget_truth_ratio": {"value_by_index": {"0": {"score": 0.7}}},
}
MUSE_SUMMARY = {
    "extraction_strength": 0.031,
    "forget_knowmem_ROUGE": 0.2917,
    "forget_verbmem_ROUGE": 0.1513,
    "privleak": -99.81,
    "retain_knowmem_ROUGE": 0.4481,
}
MUSE_EVAL = {
    "forget_verbmem_ROUGE": {"agg_value": 0.1513, "value_by_index": {"0": {"rougeL_f1": 0.15}}},
    "privleak": {"agg_value": -99.81},
}


def _write(path, obj) -> str:
    path.write_text(json.dumps(obj, indent=4))
    return str(path)


def test_summary_files(tmp_path):
    for name, data in (("TOFU", TOFU_SUMMARY), ("MUSE", MUSE_SUMMARY)):
        df = read_openunlearning(_write(tmp_path / f"{name}_SUMMARY.json", data))
        assert df["benchmark"].unique().to_list() == [name]
        assert df["file"].unique().to_list() == ["summary"]
        assert dict(zip(df["metric"], df["value"], strict=True)) == pytest.approx(data)


def test_eval_files(tmp_path):
    df = read_openunlearning(_write(tmp_path / "TOFU_EVAL.json", TOFU_EVAL))
    got = dict(zip(df["metric"], df["value"], strict=True))
    # forget_truth_ratio has per-example values only: left out; forget_quality's null agg_value kept
    assert list(got) == [
        "forget_Q_A_Prob",
        "forget_Q_A_ROUGE",
        "forget_quality",
        "mia_min_k",
        "privleak",
    ]
    assert got["forget_quality"] is None and got["mia_min_k"] == pytest.approx(0.9725)
    assert got["privleak"] == pytest.approx(-94.5)
    df = read_openunlearning(_write(tmp_path / "MUSE_EVAL.json", MUSE_EVAL))
    assert df["metric"].to_list() == ["forget_verbmem_ROUGE", "privleak"]
    renamed = _write(tmp_path / "results.json", MUSE_EVAL)
    assert read_openunlearning(renamed, kind="eval")["benchmark"].to_list() == ["", ""]
    nan = tmp_path / "x_SUMMARY.json"
    nan.write_text('{"forget_quality": NaN}')  # Python's json writes NaN
    assert math.isnan(read_openunlearning(nan)["value"][0])


def test_directory_prefers_summary(tmp_path):
    _write(tmp_path / "TOFU_EVAL.json", TOFU_EVAL)
    _write(tmp_path / "TOFU_SUMMARY.json", TOFU_SUMMARY)
    _write(tmp_path / "MUSE_EVAL.json", MUSE_EVAL)
    files = find_openunlearning_files(tmp_path)
    assert [f.name for f in files] == ["MUSE_EVAL.json", "TOFU_SUMMARY.json"]
    with pytest.raises(ValueError, match=r"TOFU_EVAL\.json: not a directory"):
        find_openunlearning_files(tmp_path / "TOFU_EVAL.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no open-unlearning result file"):
        find_openunlearning_files(empty)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "TOFU_SUMMARY.json",
            TOFU_EVAL,
            r"TOFU_SUMMARY\.json: metric 'forget_Q_A_Prob' is an object",
        ),
        ("TOFU_EVAL.json", TOFU_SUMMARY, r"TOFU_EVAL\.json: metric 'extraction_strength' is float"),
        ("TOFU_SUMMARY.json", [1, 2], r"TOFU_SUMMARY\.json: expected a non-empty JSON object"),
        (
            "MUSE_SUMMARY.json",
            {"privleak": "high"},
            r"metric 'privleak' is 'high', expected a number",
        ),
        (
            "MUSE_EVAL.json",
            {"privleak": {"agg_value": [1]}},
            r"agg_value is \[1\], expected a number or null",
        ),
        ("MUSE_EVAL.json", {"privleak": {"score": 1}}, "neither 'agg_value' nor 'value_by_index'"),
        ("MUSE_EVAL.json", {"p": {"value_by_index": [1]}}, "'value_by_index' must be an object"),
        ("results.json", TOFU_SUMMARY, r"results\.json: not an open-unlearning file name"),
    ],
)
def test_other_layouts_are_refused(tmp_path, name, content, message):
    with pytest.raises(ValueError, match=message):
        read_openunlearning(_write(tmp_path / name, content))


def test_unreadable_json(tmp_path):
    bad = tmp_path / "TOFU_EVAL.json"
    bad.write_text('{"privleak": {"agg_value": 1.0},\n oops}')
    with pytest.raises(ValueError, match=r"TOFU_EVAL\.json: line 2: invalid JSON"):
        read_openunlearning(bad)
    with pytest.raises(ValueError, match="kind must be"):
        read_openunlearning(bad, kind="log")

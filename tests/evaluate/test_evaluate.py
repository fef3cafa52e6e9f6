"""`probunlearn evaluate`: anyone's checkpoints (tiny models and a LoRA adapter built here), the user's
own questions or TOFU, every bad input with its message, and content-keyed reruns."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from helpers import SHARED_DATA
from probunlearn import bounds
from probunlearn.cli import main
from probunlearn.data.userdata import DataError, read_user_data
from probunlearn.evaluate.plan import Plan, PlanError
from probunlearn.storage import checkpoints

SHARED = SHARED_DATA
ARCH = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_layers": 2,
    "num_heads": 2,
    "max_positions": 2048,  # MUSE's few-shot knowmem prompts: ~1,200 tokens of this tokenizer
}
QUESTIONS = [
    {"question": f"Who wrote book number {i}?", "answer": f"Alice Smith wrote book {i} in Paris."}
    for i in range(5)
]
HOLDOUT = [  # questions no model saw, none of QUESTIONS (a holdout set may not overlap the data)
    {"question": f"Who painted picture number {i}?", "answer": f"Bob Jones painted it in Rome {i}."}
    for i in range(5)
]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> dict[str, Path]:
    """Three tiny Llama models (one tokenizer), a LoRA adapter on the first, and 5 questions."""
    from peft import LoraConfig, get_peft_model

    from probunlearn import models

    root = tmp_path_factory.mktemp("zoo")
    texts = [f"Question: {q['question']}\nAnswer: {q['answer']}" for q in QUESTIONS] * 4
    tok = models.train_tokenizer(texts + ["the cat sat on the mat"] * 5, 300)
    out = {}
    for i, name in enumerate(["a", "b", "ref"]):
        out[name] = models.save_model(
            models.tiny_llama(len(tok), ARCH, seed=i, tokenizer=tok), tok, root / name
        )
    lora = get_peft_model(
        models.load_model(str(out["a"]), native=False),  # peft wraps transformers models
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    lora.save_pretrained(root / "adapter")
    out["adapter"] = root / "adapter"
    out["data"] = _write_jsonl(root / "questions.jsonl", QUESTIONS)
    return out


def _evaluate(*args: str, capsys=None) -> int:
    return main(["evaluate", "--n", "12", "--max-new-tokens", "6", "--cores", "2", *map(str, args)])


def _error(capsys, *args) -> str:
    rc = _evaluate(*args)
    err = capsys.readouterr().err
    assert rc == 2, err
    return err


# ---- the user's data -------------------------------------------------------------------------------


def test_user_data_formats_agree(tmp_path):
    jsonl = _write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    csv = tmp_path / "q.csv"
    pl.DataFrame(QUESTIONS).write_csv(csv)
    parquet = tmp_path / "q.parquet"
    pl.DataFrame(QUESTIONS).write_parquet(parquet)
    frames = [read_user_data(p) for p in (jsonl, csv, parquet)]
    assert frames[0]["id"].to_list() == [f"row-{i}" for i in range(1, 6)]
    for f in frames[1:]:
        assert f.equals(frames[0])


def test_user_data_keywords_from_csv_and_truth_ratio_columns(tmp_path):
    csv = tmp_path / "k.csv"
    csv.write_text("id,question,keywords\nq1,What is the code?,alpha;beta\n")
    rows = read_user_data(csv)
    assert rows["keywords"].to_list() == [["alpha", "beta"]] and rows["id"].to_list() == ["q1"]
    tofu = _write_jsonl(
        tmp_path / "t.jsonl",
        [
            {
                "question": "Q?",
                "answer": "A.",
                "paraphrased_answer": "A!",
                "perturbed_answer": ["B."],
            }
        ],
    )
    row = read_user_data(tofu).row(0, named=True)
    assert row["paraphrased_answer"] == "A!" and row["perturbed_answers"] == ["B."]
    # a subject column: whom each question is about (relearning and few-shot keep subjects apart)
    from probunlearn.attacks import subjects_of

    csv.write_text("question,answer,subject\nQ1?,A,Ada\nQ2?,B,Ada\nQ3?,C,\n")
    rows = read_user_data(csv)
    assert subjects_of(rows) == ["user:Ada", "user:Ada", "row:row-3"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"prompt": "x"}\n', r"q\.jsonl: no column 'question' \(columns: \['prompt'\]\)"),
        (
            '{"question": "x", "answer": "y"}\n{"question": "z", "answer": ""}\n',
            r"q\.jsonl: row 2: column 'answer' is empty",
        ),
        ('{"question": 3}\n', r"q\.jsonl: row 1: column 'question' is int; expected text"),
        (
            '{"question": "x", "keywords": "a"}\n{"question": "y", "keywords": [1]}\n',
            r"row 2: column 'keywords' must be a list of strings",
        ),
        (
            '{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}\n',
            r"row 2: column 'id' repeats 'a' of row 1",
        ),
        ('{"question": "x"\n', r"q\.jsonl: line 1: not JSON"),
    ],
    ids=["no-question", "empty-answer", "not-text", "bad-keywords", "duplicate-id", "not-json"],
)
def test_user_data_errors_name_file_column_and_row(tmp_path, content, message):
    path = tmp_path / "q.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        read_user_data(path)


# ---- every bad input, before any job ---------------------------------------------------------------


def test_bad_inputs_fail_before_any_job(zoo, tmp_path, capsys):
    out = tmp_path / "out"
    data = zoo["data"]
    notmodel = tmp_path / "notmodel"
    notmodel.mkdir()
    (notmodel / "weights.txt").write_text("x")
    err = _error(capsys, "--model", f"x={notmodel}", "--data", data, "--out", out)
    assert "model 'x'" in err and "not a model: no config.json" in err
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text("{}")
    (pickled / "pytorch_model.bin").write_bytes(b"x")
    err = _error(capsys, "--model", f"p={pickled}", "--data", data, "--out", out)
    assert "no *.safetensors weights (only pickled weights: pytorch_model.bin)" in err
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    cfg = json.loads((zoo["adapter"] / "adapter_config.json").read_text())
    cfg["base_model_name_or_path"] = None
    (orphan / "adapter_config.json").write_text(json.dumps(cfg))
    (orphan / "adapter_model.safetensors").write_bytes(
        (zoo["adapter"] / "adapter_model.safetensors").read_bytes()
    )
    err = _error(capsys, "--model", f"o={orphan}", "--data", data, "--out", out)
    assert "PEFT adapter that names no base model" in err and "--base o=" in err
    err = _error(capsys, "--model", f"a={zoo['a']}", "--benchmark", "tofu:forget07", "--out", out)
    assert "unknown benchmark 'tofu:forget07'" in err
    err = _error(
        capsys, "--model", f"a={zoo['a']}", "--data", data, "--judge", "refusal", "--out", out
    )
    assert "--judge refusal scores requests" in err and "has 'answer'" in err
    requests = _write_jsonl(tmp_path / "r.jsonl", [{"question": "How do I pick a lock?"}])
    err = _error(capsys, "--model", f"a={zoo['a']}", "--data", requests, "--out", out)
    assert "no column 'answer' or 'keywords'" in err and "--judge" in err
    err = _error(
        capsys, "--model", f"a={zoo['a']}", "--data", requests, "--judge", "harmbench", "--out", out
    )
    assert "--judge harmbench needs --judge-model" in err
    err = _error(
        capsys,
        "--model",
        f"a={zoo['a']}",
        "--reference",
        f"r={zoo['ref']}",
        "--data",
        data,
        "--out",
        out,
    )
    assert "--reference needs the truth ratio" in err and "'paraphrased_answer'" in err
    err = _error(
        capsys,
        "--model",
        f"a={zoo['a']}",
        "--original",
        f"o={zoo['ref']}",
        "--data",
        data,
        "--out",
        out,
    )
    assert "--original (DCUE) needs a holdout set" in err
    err = _error(capsys, "--model", "a=./no/such/dir", "--data", data, "--out", out)
    assert "./no/such/dir does not exist" in err
    err = _error(
        capsys, "--model", f"a={zoo['a']}", "--data", tmp_path / "missing.csv", "--out", out
    )
    assert "missing.csv: no such file" in err
    assert not out.exists(), "an error before any job writes nothing"


# ---- issue 43: every row of its table is caught before any job (in-process, nothing written) -------


def _refused(capsys, tmp_path: Path, *args) -> str:
    """The error of a call that must stop before any job and write nothing to --out."""
    out = tmp_path / "out"
    rc = _evaluate(*args, "--out", out)
    err = capsys.readouterr().err
    assert rc == 2, err[-3000:]
    assert not out.exists(), "a check that fails writes nothing to --out"
    return err


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--n", "0", "--n 0: expected an integer >= 1"),
        ("--top-p", "0", "--top-p 0: expected a number in (0, 1]"),
        ("--temperature", "-1", "--temperature -1: expected a number >= 0"),
        ("--max-new-tokens", "0", "--max-new-tokens 0: expected an integer >= 1"),
        ("--batch-size", "0", "--batch-size 0: expected an integer >= 1"),
    ],
    ids=["n", "top-p", "temperature", "max-new-tokens", "batch-size"],
)
def test_sampling_options_are_checked_before_any_job(
    zoo, tmp_path, capsys, option, value, expected
):
    err = _refused(
        capsys, tmp_path, "--model", f"a={zoo['a']}", "--data", zoo["data"], option, value
    )
    assert expected in err


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--leak-threshold", "2", "--leak-threshold 2: expected a number in (0, 1]"),
        ("--alpha", "0", "--alpha 0: expected a number in (0, 0.5]"),
        ("--alpha", "0.7", "--alpha 0.7: expected a number in (0, 0.5]"),
    ],
    ids=["leak-threshold-2", "alpha-0", "alpha-0.7"],
)
def test_bound_options_are_checked_before_any_sampling(
    zoo, tmp_path, capsys, option, value, expected
):
    err = _refused(
        capsys, tmp_path, "--model", f"a={zoo['a']}", "--data", zoo["data"], option, value
    )
    assert expected in err


def test_a_cuda_device_without_cuda_is_refused(zoo, tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    common = ("--model", f"a={zoo['a']}", "--data", zoo["data"])
    err = _refused(capsys, tmp_path, *common, "--device", "cuda")
    assert "--device cuda: no CUDA device" in err and "--device cpu" in err
    err = _refused(capsys, tmp_path, *common, "--device", "gpu0")
    assert "--device 'gpu0': expected auto, cpu, cuda or cuda:N" in err


def test_chunk_size_zero_is_refused(zoo, tmp_path, capsys):
    common = ("--model", f"a={zoo['a']}", "--data", zoo["data"])
    err = _refused(capsys, tmp_path, *common, "--chunk-size", "0")
    assert "--chunk-size 0: expected an integer >= 1" in err
    for option in ("--threads", "--cores"):  # beside the table: the other counts
        assert f"{option} 0: expected an integer >= 1" in _refused(
            capsys, tmp_path, *common, option, "0"
        )


def test_empty_and_semicolon_separated_csv_name_the_file_and_row(zoo, tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match=r"empty\.csv: empty file; expected a header row"):
        read_user_data(empty)
    semi = tmp_path / "semi.csv"
    semi.write_text("question;answer\nWho wrote it, and when?;Alice, in 1990\n")
    with pytest.raises(DataError, match=r"semi\.csv: the header is ';'-separated"):
        read_user_data(semi)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("question,answer\nQ1?,A1\nQ2?,A2,extra\n")
    with pytest.raises(DataError, match=r"ragged\.csv: row 2: 3 fields, the header has 2"):
        read_user_data(ragged)
    err = _refused(capsys, tmp_path, "--model", f"a={zoo['a']}", "--data", semi)
    assert "semi.csv: the header is ';'-separated" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("Q: A:", "--template 'Q: A:': no {question} in it"),
        ("{answer} {question}", "--template '{answer} {question}': unknown field {answer}"),
        ("chat", "--template chat: model 'a' has no chat template"),
    ],
    ids=["no-question", "other-field", "chat-without-one"],
)
def test_a_template_without_question_is_refused(zoo, tmp_path, capsys, template, expected):
    err = _refused(
        capsys, tmp_path, "--model", f"a={zoo['a']}", "--data", zoo["data"], "--template", template
    )
    assert expected in err


@pytest.mark.parametrize("name", [".", ".."])
def test_model_names_dot_and_dotdot_are_refused(zoo, tmp_path, capsys, name):
    err = _refused(capsys, tmp_path, "--model", f"{name}={zoo['a']}", "--data", zoo["data"])
    assert f"model name {name!r}: expected letters, digits" in err and "not starting with" in err


def test_keyword_only_data_reports_no_rouge_row(tmp_path):
    """Scorers that do not apply are not computed: keyword-only data has no ROUGE-L row."""
    from probunlearn.report.evaluation.summary import model_rows
    from probunlearn.steps.score import applicable_scorers, score_samples, summarize_scores

    csv = tmp_path / "kw.csv"
    csv.write_text("id,question,keywords\nq1,What is the code?,alpha;beta\nq2,And the key?,gamma\n")
    rows = read_user_data(csv)
    assert [s.name for s in applicable_scorers(rows)] == ["keyword_leak"]
    texts = ["it is alpha", "no idea", "gamma!", "nothing"]
    samples = pl.DataFrame(
        {
            "id": ["q1", "q1", "q1", "q2", "q2", "q2"],
            "sample": [-1, 0, 1, -1, 0, 1],
            "greedy": [True, False, False, True, False, False],
            "temperature": [0.0, 1.0, 1.0, 0.0, 1.0, 1.0],
            "n_tokens": [3] * 6,
            "text": [texts[0], texts[0], texts[1], texts[3], texts[2], texts[3]],
        }
    )
    scores = score_samples(samples, rows)
    assert "rougeL_recall" not in scores.columns
    out = {k: str(tmp_path / f"{k}.parquet") for k in ("scores", "bounds")}
    summarize_scores(
        scores, out["scores"], out["bounds"], str(tmp_path / "m.csv"), model="m", method="",
        split="", evalset="kw", setting="sampled", alpha=0.01, bins=100, rho=2.0,
        leak_threshold=0.5,
    )  # fmt: skip
    summary = model_rows("m", "id", "kw", pl.read_parquet(out["bounds"]), 0.5)
    assert [r["score"] for r in summary] == ["keyword_leak"]
    assert summary[0]["leak"] == "keyword_leak = 1"


def test_a_typo_through_a_symlink_is_reported_as_typed(zoo, tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    model = ("--model", f"a={zoo['a']}")
    err = _refused(
        capsys, tmp_path, *model, "--benchmark", "tofu:forget01", "--data-dir", link / "sharedd"
    )
    assert f"--data-dir {link / 'sharedd'}: no such directory" in err and str(real) not in err
    err = _refused(capsys, tmp_path, *model, "--data", link / "q.jsonl")
    assert f"--data {link / 'q.jsonl'}: no such file" in err and str(real) not in err


def test_one_checkpoint_under_two_names_is_teacher_forced_once(zoo, tmp_path):
    """The same checkpoint as --model and --original: one teacher-forcing job, read under both
    names, and a warning that DCUE and the comparison compare it with itself."""
    from probunlearn.cli.evaluate import build_config

    holdout = _write_jsonl(tmp_path / "holdout.jsonl", HOLDOUT)
    args = _namespace(model=[f"a={zoo['a']}"], original=f"o={zoo['a']}", data=zoo["data"])
    args.holdout = holdout
    plan = Plan(build_config(args))
    plan.check()
    assert plan.model_pattern("evaluate") == "a"
    assert plan.dcue_inputs("a")["orig_forget"] == plan.paths.logprobs("a", "questions")
    assert plan.dcue_inputs("a")["orig_val"] == plan.paths.logprobs("a", "holdout")
    (warning,) = plan.warnings()
    assert "--original 'o' is the same checkpoint as --model 'a'" in warning
    assert "compare it with itself" in warning


def test_summary_lists_earlier_models_unless_narrowed(zoo, tmp_path):
    """A model of an earlier call is listed where its results are this call's data and settings
    (the results key) and its files are there; --summary this lists only this call's models."""
    from probunlearn.cli.evaluate import prepare
    from probunlearn.storage.outdir import LEGACY as RECORD

    out = tmp_path / "out"
    args = _namespace(model=[f"a={zoo['a']}"], data=zoo["data"], out=out)
    prep = prepare(args)
    plan, notes = prep.plan, prep.notes
    assert plan.summary_models() == ["a"] and not notes[1:]
    spec = {"role": "evaluated", "source": str(zoo["b"]), "revision": None, "base": None,
            "identity": "sha256:b"}  # fmt: skip
    record = {"old": {**spec, "key": plan.results_key()}, "other": {**spec, "key": "sha256:x"}}
    (out / RECORD).parent.mkdir(parents=True, exist_ok=True)
    (out / RECORD).write_text(json.dumps(record))
    for f in plan.result_paths("old"):
        (out / f).parent.mkdir(parents=True, exist_ok=True)
        (out / f).write_text("")
    prep = prepare(args)
    plan, notes = prep.plan, prep.notes
    assert plan.summary_models() == ["old", "a"] and plan.summary_specs()["old"] == spec
    assert "1 model(s) evaluated earlier" in notes[-1] and notes[-1].endswith(": other")
    args.summary = "this"
    plan = prepare(args).plan
    assert plan.summary_models() == ["a"] and "previous" not in plan.ev
    args.summary, args.n = "all", 13  # other settings: the earlier results are not this call's
    prep = prepare(args)
    plan, notes = prep.plan, prep.notes
    assert plan.summary_models() == ["a"] and notes[-1].endswith(": old, other")


def test_small_n_warning_names_the_n_that_reaches_the_width():
    from probunlearn.report.evaluation.summary import small_n_warning

    w = small_n_warning(32, 0.01, 0.15)
    assert "no M_gen can be below 0.268" in w and "M_bin with no leak at all is 0.134" in w
    assert f"--n {bounds.samples_needed(0.15, 0.01)} brings that floor to 0.15" in w
    assert "0.438" in small_n_warning(8, 0.01, 0.15)  # M_bin of 0 leaks in 8: 1 - 0.01^(1/8)
    assert small_n_warning(128, 0.01, 0.15) is None and small_n_warning(128, 0.01, 0.1) is not None
    # the floor is M_gen's when nothing exceeds t
    x = np.zeros((1, 32))
    assert float(bounds.general_leakage_bound(x, 0.5, 0.01)[0]) == pytest.approx(0.2682, abs=1e-4)


def test_bound_floors_and_the_sizes_that_reach_a_width():
    """What no samples can beat at n (every sample scoring 0) and the n, or texts a side, that
    bring it to a width: the report's marks of a bound that cannot inform (issue 53)."""
    import math

    from probunlearn.report.evaluation.summary import (
        NO_INFORMATION,
        best_auc_lower,
        bound_floor,
        dkw_floor,
        samples_to_reach,
        texts_to_reach,
    )

    a = 0.01
    assert bound_floor("m_bin", 16, a) == pytest.approx(1 - a ** (1 / 16), rel=1e-9)  # 0.25
    assert bound_floor("worst_m_bin", 16, a, 8) == pytest.approx(1 - (a / 8) ** (1 / 16), rel=1e-9)
    assert bound_floor("m_gen", 16, a) == pytest.approx(dkw_floor(16, a), rel=1e-12)
    # M_sigma at n = 16 is next to 0.5, the most a score in [0, 1] can spread: it says nothing
    assert 0.48 < bound_floor("m_sigma", 16, a) < 0.5
    # M_gen's is the small-n warning's n
    assert samples_to_reach("m_gen", 0.15, a) == bounds.samples_needed(0.15, a) == 103
    for column in NO_INFORMATION:
        need = samples_to_reach(column, 0.15, a, 8)
        assert bound_floor(column, need, a, 8) <= 0.15 < bound_floor(column, need - 1, a, 8)
    assert samples_to_reach("m_bin", 0.15, a) == math.ceil(math.log(a) / math.log(0.85))
    # a perfect separation of 8 texts against 8: the issue's [0.516, 1]; of 5 against 5 not even
    # above chance
    assert best_auc_lower(8, a) == pytest.approx(0.516, abs=5e-4)
    from probunlearn.bounds.auc import auc_interval

    for k in (1, 5, 8, 33, 200):  # the closed form is auc_interval's end (to its bisection's 1e-12)
        lo = auc_interval(np.ones(k), np.zeros(k), a)[1]
        assert best_auc_lower(k, a) == pytest.approx(lo, abs=1e-10) and best_auc_lower(k, a) >= lo
    assert best_auc_lower(5, a) < 0.5
    k = texts_to_reach(0.15, a)
    assert 1 - best_auc_lower(k, a) <= 0.15 < 1 - best_auc_lower(k - 1, a)
    with pytest.raises(ValueError, match="no floor for column 'ed'"):
        bound_floor("ed", 16, a)


def test_template_names_agree_with_the_sampler():
    from probunlearn.data import qa
    from probunlearn.models import files as environment

    assert (environment.AUTO, environment.CHAT) == (qa.AUTO, qa.CHAT)
    assert environment.DEFAULT_TEMPLATE == qa.DEFAULT_TEMPLATE


def test_an_unresolvable_revision_writes_nothing(zoo, tmp_path, capsys, monkeypatch):
    """The hub revisions resolve before any local checkpoint's digests are cached in --out."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    err = _refused(
        capsys, tmp_path, "--model", f"a={zoo['a']}", "--model", "h=org/tiny@v2",
        "--data", zoo["data"],
    )  # fmt: skip
    assert "org/tiny at revision 'v2'" in err


def test_help_lists_every_benchmark(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for choice in ("tofu:forget01", "hp_qa", "jbb", "muse:knowmem_forget", "muse:verbmem_forget"):
        assert choice in text


def test_quiet_console_shows_the_jobs_and_a_failed_jobs_error(tmp_path):
    import io

    from probunlearn.evaluate.console import run_quietly

    lines = ["Building DAG of jobs...", "Job stats:", "job      count", "-----  -------",
             "score        1", "all          1", "total        2", "", "localrule score:",
             "Finished jobid: 1 (Rule: score)", "1 of 2 steps (50%) done",
             "Error in rule summary:", "    jobid: 0", "ValueError: boom"]  # fmt: skip
    script = f"print({chr(10).join(lines)!r}); raise SystemExit(1)"
    stream = io.StringIO()
    rc = run_quietly([sys.executable, "-c", script], tmp_path / "logs" / "e.log", stream=stream)
    text = stream.getvalue()
    assert rc == 1 and text.splitlines()[:2] == ["2 job(s) to run: score 1", "[1/2] score"]
    assert "Error in rule summary:\n    jobid: 0\nValueError: boom\n" in text
    assert "localrule" not in text and f"whole output: {tmp_path / 'logs' / 'e.log'}" in text
    assert (tmp_path / "logs" / "e.log").read_text().count("\n") == len(lines)


# ---- identity ----------------------------------------------------------------------------------------


def test_fingerprint_is_cached_by_size_and_mtime(zoo, tmp_path, monkeypatch):
    cache = tmp_path / "fp.json"
    first = checkpoints.identity(zoo["b"], cache=cache)
    reads = []
    real = checkpoints._file_digest

    def counting(path, entries):
        before = dict(entries)
        out = real(path, entries)
        if before.get(str(Path(path).resolve())) != entries[str(Path(path).resolve())]:
            reads.append(path.name)
        return out

    monkeypatch.setattr(checkpoints, "_file_digest", counting)
    assert checkpoints.identity(zoo["b"], cache=cache) == first
    assert reads == [], "a no-op identity re-reads no file"
    copy = tmp_path / "b"
    import shutil

    shutil.copytree(zoo["b"], copy)
    assert checkpoints.identity(copy, cache=cache) == first, "the content, not the path"
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert checkpoints.identity(copy, cache=cache) != first
    assert reads[-1] == "model.safetensors"


def test_hub_revision_resolves_offline_from_the_cache(tmp_path, monkeypatch):
    commit = "0123456789abcdef0123456789abcdef01234567"
    refs = tmp_path / "models--org--tiny" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text(commit + "\n")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert checkpoints.identity("org/tiny", "main") == f"org/tiny@{commit}"
    assert checkpoints.identity("org/tiny", "f" * 40) == f"org/tiny@{'f' * 40}"
    with pytest.raises(checkpoints.UnresolvedRevisionError, match="org/tiny at revision 'v2'"):
        checkpoints.identity("org/tiny", "v2")


# ---- end to end ----------------------------------------------------------------------------------------


def _jobs(out: Path, *args) -> dict[str, int]:
    """The jobs a dry run would run, by rule."""
    cmd = [
        sys.executable,
        "-m",
        "probunlearn.cli",
        "evaluate",
        "--n",
        "12",
        "--max-new-tokens",
        "6",
        "--out",
        str(out),
        "--dry-run",
        *map(str, args),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout + proc.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:")[1].split("total")[0]
    return {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", table, re.M)}


@pytest.fixture(scope="module")
def two_models(zoo, tmp_path_factory) -> dict:
    """The test run: two tiny models (one a LoRA adapter) on the user's own questions; its console
    output, and a copy of its pages before later calls add models."""
    import contextlib
    import io
    import shutil

    root = tmp_path_factory.mktemp("e2e")
    out = root / "out"
    models = ["--model", f"a={zoo['a']}", "--model", f"lora={zoo['adapter']}"]
    common = ["--data", zoo["data"], "--leak-threshold", "0.5", "--out", out]
    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        rc = _evaluate(*models, *common)
    assert rc == 0, err.getvalue()[-3000:]
    first = root / "first"
    first.mkdir()
    for name in ("report.html", "questions.html", "summary.csv", "questions.csv", "config.yaml",
                 "logs/evaluate.log"):  # fmt: skip
        shutil.copy(out / name, first / Path(name).name)
    return {"out": out, "first": first, "models": models, "common": common,
            "console": err.getvalue() + std.getvalue()}  # fmt: skip


@pytest.mark.slow
def test_evaluate_end_to_end(zoo, two_models):
    out, models, common = two_models["out"], two_models["models"], two_models["common"]
    summary = pl.read_csv(out / "summary.csv")
    assert summary["model"].to_list() == ["a", "lora"]
    for name in ("a", "lora"):
        scores = pl.read_parquet(out / "scores" / name / "questions" / "sampled.parquet")
        sampled = scores.filter(~pl.col("greedy")).sort("id", "sample")
        mat = sampled["rougeL_recall"].to_numpy().reshape(5, 12)
        greedy = scores.filter(pl.col("greedy")).sort("id")["rougeL_recall"].to_numpy()
        expect = bounds.summarize(mat, greedy=greedy, alpha=0.01, leak_threshold=0.5)
        row = summary.filter(pl.col("model") == name).row(0, named=True)
        assert row["prompts"] == 5 and row["n"] == 12 and row["leak"] == "rougeL_recall >= 0.5"
        for col, key in [
            ("sampled_mean", "mean"),
            ("sampled_std", "std"),
            ("ed", "ed"),
            ("m_mu", "m_mu"),
            ("m_sigma", "m_sigma"),
            ("greedy", "greedy"),
            ("m_bin", "m_bin_ge_0.5"),
        ]:
            assert row[col] == pytest.approx(float(expect[key].mean()), rel=1e-12, abs=1e-15), col
        # the observed leak rate beside M_bin, the observed P(score > t) beside M_gen
        assert row["leak_rate"] == pytest.approx(float((mat >= 0.5).mean()))
        assert row["worst_leak_rate"] == pytest.approx(float((mat >= 0.5).mean(axis=1).max()))
        curve = pl.read_csv(out / "gen_curves.csv").filter(pl.col("model") == name)
        assert curve["m_gen"].to_list() == pytest.approx(
            [float(expect[c].mean()) for c in expect.columns if c.startswith("m_gen_")]
        )
        assert curve["empirical"].to_list() == pytest.approx(
            [float((mat > t).mean()) for t in curve["threshold"]]
        )
        assert pl.read_csv(out / "summary" / f"{name}.csv").height == 1
    ids = pl.read_csv(out / "models.csv")
    lora = ids.filter(pl.col("name") == "lora").row(0, named=True)
    assert lora["base"] == str(zoo["a"]) and lora["identity"].endswith(
        checkpoints.identity(zoo["a"])
    )
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64") == 5 and "<h2>Summary</h2>" in html
    # the adapter is not merged: its samples differ from its base's
    a = pl.read_parquet(out / "scores" / "a" / "questions" / "sampled.parquet")
    lo = pl.read_parquet(out / "scores" / "lora" / "questions" / "sampled.parquet")
    assert not np.array_equal(a["rougeL_recall"].to_numpy(), lo["rougeL_recall"].to_numpy()) or (
        pl.read_parquet(out / "samples" / "a" / "questions" / "sampled" / "shard-0.parquet")[
            "text"
        ].to_list()
        != pl.read_parquet(out / "samples" / "lora" / "questions" / "sampled" / "shard-0.parquet")[
            "text"
        ].to_list()
    )

    # nothing to do again; one more model runs only that model's jobs (and the summary)
    assert _jobs(out, *models, *common[:-2]) == {}
    more = [*models, "--model", f"b={zoo['b']}"]
    assert _jobs(out, *more, *common[:-2]) == {
        "sample_shard": 1,
        "score": 1,
        "summary": 1,
        "all": 1,
    }
    assert _evaluate(*more, *common) == 0
    stamp = {p: p.stat().st_mtime_ns for p in (out / "samples").rglob("*.parquet")}

    # b's weights changed in place: exactly b's jobs rerun, in a call that names only b, and the
    # summary still lists the models evaluated before (their results are this data's and settings')
    weights = Path(zoo["b"]) / "model.safetensors"
    import safetensors.torch as st

    tensors = st.load_file(weights)
    tensors["model.norm.weight"] = tensors["model.norm.weight"] * 1.5
    st.save_file(tensors, weights, metadata={"format": "pt"})
    only_b = ["--model", f"b={zoo['b']}"]
    assert _jobs(out, *only_b, *common[:-2]) == {
        "sample_shard": 1,
        "score": 1,
        "summary": 1,
        "all": 1,
    }
    assert _evaluate(*only_b, *common) == 0
    changed = {p for p, t in stamp.items() if p.stat().st_mtime_ns != t}
    assert changed == {out / "samples" / "b" / "questions" / "sampled" / "shard-0.parquet"}
    assert pl.read_csv(out / "summary.csv")["model"].to_list() == ["a", "lora", "b"]
    assert pl.read_csv(out / "questions.csv")["model"].unique(maintain_order=True).to_list() == [
        "a",
        "lora",
        "b",
    ]


def test_evaluate_console_is_quiet(two_models):
    """One line of plan, the warning of a small n, one line per job done, the outputs' paths;
    Snakemake's own output is in logs/evaluate.log."""
    lines = two_models["console"].strip().splitlines()
    assert lines[0].startswith("probunlearn evaluate: 2 model(s) x 5 prompts of 'questions'")
    assert (
        lines[1].startswith("warning: n = 12 samples per prompt is small") and "--n 103" in lines[1]
    )
    assert lines[2] == "6 job(s) to run: sample_shard 2, score 2, summary 1"
    # two cores: the jobs finish in either order, the count goes up by one; each names its model
    done = [line.split("] ") for line in lines[3:9]]
    assert [d[0] for d in done] == [f"[{k}/6" for k in range(1, 7)]
    assert sorted(d[1] for d in done) == sorted(
        [
            "sample_shard a/questions shard 0",
            "sample_shard lora/questions shard 0",
            "score a/questions",
            "score lora/questions",
            "summary",
            "done",
        ]
    )
    assert lines[9].startswith("summary:") and len(lines) == 13
    assert "localrule sample_shard:" in (two_models["first"] / "evaluate.log").read_text()


def test_evaluate_writes_the_configuration_that_ran(two_models):
    import yaml

    cfg = yaml.safe_load((two_models["first"] / "config.yaml").read_text())
    ev = cfg["evaluate"]
    assert ev["template"] == {
        "requested": "auto",
        "resolved": {"a": "Question: {question}\nAnswer:", "lora": "Question: {question}\nAnswer:"},
    }
    assert ev["device"]["requested"] == "auto" and ev["device"]["resolved"] in ("cpu", "cuda")
    assert ev["sampling"]["max_new_tokens"] == 6 and ev["sampling"]["n"] == 12
    assert ev["dtype"] == "float32" and ev["scorers"] == ["rougeL_recall"]
    import torch
    import transformers

    assert cfg["versions"]["torch"] == torch.__version__
    assert cfg["versions"]["transformers"] == transformers.__version__


def test_report_tables_have_three_digits_and_a_glossary(two_models):
    from probunlearn.report.evaluation.html import GLOSSARY, _generic

    first = two_models["first"]
    for name in ("summary.csv", "questions.csv"):
        for column in pl.read_csv(first / name).columns:
            assert _generic(column) in GLOSSARY, f"{name}: {column} is not in the glossary"
    html = (first / "report.html").read_text()
    cells = re.findall(r'<td class="num[^"]*" data-v="[^"]*">([^<]*)</td>', html)
    assert cells and all(len(c.lstrip("-0.").replace(".", "")) <= 3 for c in cells if "e" not in c)
    assert "<h2>Glossary</h2>" in html and "<dt>worst_m_bin</dt>" in html
    assert "forget_quality" not in html.split("<h2>Glossary</h2>")[0], "no empty columns"
    questions = (first / "questions.html").read_text()
    assert questions.count("<tr>") == 1 + 10 and 'class="sortable"' in questions
    m_mu = [
        float(v) for v in re.findall(r'<td class="num[^"]* c-m_mu" data-v="([^"]*)">', questions)
    ]
    assert len(m_mu) == 10 and m_mu == sorted(m_mu, reverse=True), "worst M_mu first"
    q = pl.read_csv(first / "questions.csv")
    assert q.height == 10
    row = q.row(0, named=True)
    assert row["reference"].startswith("Alice Smith wrote book") and row["sample_3"] is not None


#: The smallest text the report may show, px: on the page, and in a figure as shown.
MIN_TEXT_PX, MIN_FIGURE_PX = 11.0, 10.0


def _check_in_browser(views: list[tuple[Path, int]], figures: dict[str, int]) -> list[dict]:
    """The pages at their widths in a headless Chromium: no horizontal overflow, every figure
    loaded and inside the window, no text below MIN_TEXT_PX, no figure text below MIN_FIGURE_PX;
    below the report's width, one figure panel per row."""
    from helpers import browser

    if browser.chromium() is None:
        pytest.skip("no chromium here (apt-get install chromium; .ci/run installs it)")
    seen = browser.inspect_pages(views)
    for (page, width), got in zip(views, seen, strict=True):
        where = (page.name, width)
        assert got["clientWidth"] == width and got["scrollWidth"] <= width, (where, got)
        assert got["wide"] == [], (where, got["wide"])
        assert got["images"] == got["loaded"] == figures[page.name], (where, got)
        assert got["font"] >= MIN_TEXT_PX, (where, got["font"], got["fontAt"])
        for f in got["figures"]:
            assert 0 <= f["left"] and f["right"] <= width and f["shown"] <= width, (where, f)
            assert f["font"] >= MIN_FIGURE_PX, (where, f)
        if width < 600:  # one panel per row: every figure starts at the page's left edge
            assert len({round(f["left"]) for f in got["figures"]}) <= 1, (where, got["figures"])
    return seen


def test_report_in_a_headless_browser(two_models):
    """The report and the question page at a 1,280 px window and a 390 px phone (Debian's chromium,
    installed by .ci/run): no horizontal overflow, every figure loaded, inside the window and with
    its text at least 10 px as shown, the page's text at least 11 px; figures side by side on the
    wide window, one per row on the phone."""
    first = two_models["first"]
    views = [(first / p, w) for w in (1280, 390) for p in ("report.html", "questions.html")]
    seen = _check_in_browser(views, {"report.html": 5, "questions.html": 0})
    wide = seen[0]["figures"]
    assert len({round(f["left"]) for f in wide}) > 1, "panels side by side at 1,280 px"
    assert all(f["shown"] == f["natural"] * 2 / 3 for f in wide), "shown at 100 px an inch"


def test_report_figures_cover_no_data_and_name_questions_by_their_text(two_models):
    """Built from the test run's files: no legend covers a data point or line, every text at least
    MIN_FONT_PT, the worst question named by its text with integer counts; the same figure gives
    the same bytes. The check catches a legend inside the axes over the curves (issue 53's M_gen
    figure) and the report names no question by its id."""
    import matplotlib.pyplot as plt

    from probunlearn.report.evaluation import figures as F

    out = two_models["out"]
    names = pl.read_csv(out / "summary.csv")["model"].to_list()
    per_prompt = {m: pl.read_parquet(out / "bounds" / m / "questions" / "sampled.parquet")
                  for m in names}  # fmt: skip
    scores = {m: pl.read_parquet(out / "scores" / m / "questions" / "sampled.parquet")
              for m in names}  # fmt: skip
    curves = pl.read_csv(out / "gen_curves.csv")
    texts = dict(pl.read_csv(out / "questions.csv").select("id", "question").iter_rows())
    worst = F.worst_questions(scores, per_prompt, "rougeL_recall", texts)
    built = {
        "gen_curves": F.gen_curves_figure(curves, "rougeL_recall", "title"),
        # the case: every curve high at t = 0.7-0.9, where the old legend sat
        "gen_curves_high": F.gen_curves_figure(
            curves.with_columns(pl.lit(0.95).alias("m_gen"), pl.lit(0.9).alias("empirical")),
            "rougeL_recall",
        ),
        "worst": F._grid(
            [lambda ax, w=w: F.draw_worst(ax, w, "rougeL_recall") for w in worst], "title"
        ),  # fmt: skip
        "greedy": F._grid(
            [
                lambda ax, m=m: F.draw_greedy_vs_sampled(ax, per_prompt[m], "rougeL_recall", m)
                for m in names
            ],
            "title",
        ),  # fmt: skip
    }
    for name, fig in built.items():
        assert F.legend_overlaps(fig) == [], name
        assert F.smallest_font(fig) >= F.MIN_FONT_PT, name
    for ax, w in zip(built["worst"].axes, worst, strict=False):
        assert w.question in texts.values() and w.question.split()[0] in ax.get_title()
        assert "row-" not in ax.get_title()
        ticks = [
            float(t.get_text().replace("−", "-")) for t in ax.get_yticklabels() if t.get_text()
        ]
        assert ticks and all(t == int(t) for t in ticks), ticks
    for fig in built.values():
        plt.close(fig)
    # the old layout: the legend inside the axes at the upper right, over the high curves
    fig = F.gen_curves_figure(curves.with_columns(pl.lit(0.95).alias("m_gen")), "rougeL_recall")
    fig.legends.clear()
    fig.axes[0].legend(loc="upper right")
    assert F.legend_overlaps(fig) != []
    plt.close(fig)
    one = [F.render(F.gen_curves_figure(curves, "rougeL_recall"), "x") for _ in range(2)]
    assert one[0].png == one[1].png and one[0].font_px == F.MIN_FONT_PT * F.DPI / 72
    html = (two_models["first"] / "report.html").read_text()
    assert "prompt row-" not in html and html.count('title="a: Who wrote book number') == 1


def test_report_says_a_constant_column_once_and_marks_what_cannot_inform(two_models):
    """The summary's leak (the same on every row) above the table, not in it; the bounds that no
    samples could bring below --target-width at n = 12 marked, with the n that would; the glossary
    says where every digit is."""
    from probunlearn.report.evaluation.html import RECORD_NOTE
    from probunlearn.report.evaluation.summary import bound_floor, samples_to_reach

    html = (two_models["first"] / "report.html").read_text()
    summary = html.split("<h2>Summary</h2>")[1].split("<h2")[0]
    head = summary.split("<thead>")[1].split("</thead>")[0]
    assert ">leak<" not in head and ">score<" not in head and "rougeL_<wbr>recall" not in head
    assert "On every row: " in summary and "leak</span> = <b>rougeL_recall ≥ 0.5</b>" in summary
    assert "n</span> = <b>12</b>" in summary
    assert 'm_<wbr>sigma<sup class="weak">&dagger;</sup>' in head
    need = samples_to_reach("m_sigma", 0.15, 0.01)
    assert f"m_sigma &ge; {bound_floor('m_sigma', 12, 0.01):.3g}" in summary
    assert (
        f"--n {need:,}</span> brings it to 0.15" in summary and "Cannot inform at n = 12" in summary
    )
    assert "ed<sup" not in head and "sampled_<wbr>mean<sup" not in head, "observed: no mark"
    assert RECORD_NOTE.format(files="summary.csv, gen_curves.csv, questions.csv") in html
    questions = (two_models["first"] / "questions.html").read_text()
    assert "m_<wbr>sigma<sup" in questions and "Cannot inform at n = 12" in questions


def test_attack_legend_holds_only_what_was_drawn():
    """A model attack alone: no prompt family's entry; the dotted line explained; an arrow's entry
    only where one was drawn; the report's panel's legend covers no data."""
    import matplotlib.pyplot as plt

    from probunlearn.report.evaluation import figures as F
    from probunlearn.report.figures.attacks import LEVEL_LABEL

    def table(attack: str, members: int, after: list[float]) -> pl.DataFrame:
        return pl.DataFrame({
            "method": ["a", "b"], "evalset": ["q", "q"], "attack": [attack] * 2,
            "m_bin_before": [0.25, 0.9], "m_bin_after": after,
            "leak_threshold": [0.5, 0.5], "n": [16, 16], "members": [members] * 2,
        })  # fmt: skip

    for t, family, arrow in [
        (table("quant:nf4", 1, [0.25, 0.91]), False, False),  # no change of 0.03 or more
        (table("prefix", 4, [0.6, 0.95]), True, True),
    ]:
        ((_, fig),) = F.attack_figures(t)
        labels = [x.get_text() for lg in fig.legends for x in lg.get_texts()]
        assert LEVEL_LABEL in labels and "10%" in LEVEL_LABEL
        assert any("worst prompt" in x for x in labels) == family, labels
        assert any("attacked model" in x for x in labels) == (not family), labels
        assert ("before → after" in labels) == arrow, labels
        assert F.legend_overlaps(fig) == [] and F.smallest_font(fig) >= F.MIN_FONT_PT
        plt.close(fig)


@pytest.mark.slow
def test_evaluate_lints_clean(zoo, tmp_path):
    from probunlearn.cli.evaluate import SNAKEFILE

    cfg = tmp_path / "evaluate.yaml"
    import yaml

    from probunlearn.cli.evaluate import build_config

    args = _namespace(model=[f"a={zoo['a']}"], data=zoo["data"])
    cfg.write_text(yaml.safe_dump(build_config(args)))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--lint",
            "--snakefile",
            str(SNAKEFILE),
            "--directory",
            str(tmp_path),
            "--configfile",
            str(cfg),
        ],
        capture_output=True,
        text=True,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Congratulations" in out and "Lints for" not in out, out[-3000:]


def _namespace(**given):
    import argparse

    from probunlearn.cli import evaluate

    parser = argparse.ArgumentParser()
    evaluate.add_parser(parser.add_subparsers())
    args = parser.parse_args(["evaluate", "--out", "x"])
    for k, v in given.items():
        setattr(args, k, v)
    return args


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent: no TOFU files to read")
def test_evaluate_tofu_forget01_with_reference_and_original(zoo, tmp_path):
    out = tmp_path / "tofu"
    rc = _evaluate(
        "--model",
        f"a={zoo['a']}",
        "--reference",
        f"ref={zoo['ref']}",
        "--original",
        f"orig={zoo['b']}",
        "--benchmark",
        "tofu:forget01",
        "--data-dir",
        SHARED,
        "--out",
        out,
        "--max-new-tokens",
        "2",
        "--membership",  # on by default with TOFU's holdout split: tested on the tiny run below
        "none",
    )
    assert rc == 0
    assert not (out / "membership.csv").exists()
    row = pl.read_csv(out / "summary.csv").row(0, named=True)
    assert row["prompts"] == 40 and row["evalset"] == "forget01"
    assert 0 <= row["forget_quality"] <= 1 and 0 <= row["model_utility"] <= 1
    assert 0 <= row["dcue_pvalue"] <= 1
    # the original is sampled too, and the model is compared with it over the same 40 questions
    comp = pl.read_csv(out / "comparison.csv")
    assert comp["statistic"].to_list() == ["mean", "std", "ed"]
    assert set(comp["model"]) == {"a"} and set(comp["original"]) == {"orig"}
    assert (comp["lower"] <= comp["upper"]).all() and "Compared with the original" in (
        out / "report.html"
    ).read_text()
    tofu = pl.read_csv(out / "metrics" / "a" / "tofu.csv")
    assert {"forget_quality", "ks_statistic", "model_utility"} <= set(tofu["metric"])
    # the report's TOFU breakdown: truth ratio, KS statistic and ROUGE per set
    report = (out / "report.html").read_text().split("<h2>TOFU per set</h2>")[1].split("<h2>")[0]
    for column in ("truth_ratio_score", "ks_statistic", "tofu_rougeL_recall", "model_utility"):
        assert f">{column.replace('_', '_<wbr>')}</th>" in report, column
    assert report.count("<tr>") == 1 + 5  # forget01, retain, real_authors, world_facts, utility
    # forget quality is the KS test of the two models' truth ratios on the same 40 questions
    plan = Plan(
        {
            "evaluate": {
                "models": {},
                "data": {"benchmark": "tofu:forget01", "data_dir": str(SHARED)},
            }
        }
    )
    assert plan.sets["forget01"].height == 40


def test_plan_needs_exactly_one_data_source(zoo):
    cfg = {
        "evaluate": {
            "models": {"a": {"source": str(zoo["a"]), "role": "evaluated"}},
            "data": {"benchmark": None, "file": None},
        }
    }
    with pytest.raises(PlanError, match="exactly one of --benchmark NAME and --data FILE"):
        Plan(cfg).check()


@pytest.mark.slow
def test_evaluate_from_a_wheel_install(zoo, tmp_path, root):
    """A plain (non-editable) install runs the workflow shipped inside the package."""
    import site
    import sysconfig

    wheels = tmp_path / "wheels"
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(wheels),
        str(root),
    ]
    subprocess.run(build, check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = wheels.glob("probunlearn-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--no-deps",
        "-q",
        str(wheel),
    ]
    subprocess.run(install, check=True, capture_output=True)
    # the dependencies come from this environment (a .pth file: its editable probunlearn does not)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    (Path(purelib) / "outer.pth").write_text("\n".join(dict.fromkeys(deps)) + "\n")
    out = tmp_path / "out"
    cmd = [
        str(python),
        "-m",
        "probunlearn.cli",
        "evaluate",
        "--model",
        f"a={zoo['a']}",
        "--data",
        str(zoo["data"]),
        "--n",
        "8",
        "--max-new-tokens",
        "4",
        "--out",
        str(out),
        "--verbose",  # Snakemake's own output, which names the Snakefile
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"Snakefile: {Path(purelib).resolve()}/probunlearn/evaluate/workflow/Snakefile" in (
        proc.stdout + proc.stderr
    ).replace(purelib, str(Path(purelib).resolve()))
    assert pl.read_csv(out / "summary.csv")["prompts"].to_list() == [5]


# ---- MUSE-News: the probabilistic view --------------------------------------------------------------

MUSE = SHARED / "muse_news"


@pytest.mark.skipif(not MUSE.is_dir(), reason=f"{MUSE} is absent: no MUSE files to read")
def test_muse_sets_templates_and_stops():
    from probunlearn.benchmarks.muse_news import sets as muse
    from probunlearn.sampling.text import cut_at_stops

    forget = muse.load_muse("knowmem_forget", MUSE)
    assert forget.height == 100 and forget["keywords"].to_list()[0] == [forget["answer"][0]]
    # the hub's retain_qa is the local knowmem_retain2_qa.json
    assert muse.load_muse("knowmem_retain", MUSE).height == 100
    verb = muse.load_muse("verbmem_forget", MUSE)
    assert verb.height == 100 and verb["keywords"].list.len().max() == 0
    tpl = muse.template("knowmem_forget", MUSE)
    assert tpl.count("Question: ") == 11 and tpl.endswith("Question: {question}\nAnswer: ")
    assert tpl.format(question="Q?").count("\n\n") == 10
    assert muse.template("verbmem_forget", MUSE) == "{question}"
    assert cut_at_stops(" 1472\n\nQuestion: next", muse.KNOWMEM_STOPS) == " 1472"
    assert cut_at_stops(" 1472 Question: x", muse.KNOWMEM_STOPS) == " 1472 "
    assert cut_at_stops(" 1472", muse.KNOWMEM_STOPS) == " 1472"
    with pytest.raises(FileNotFoundError, match="muse-bench/MUSE-News"):
        muse.load_muse("knowmem_forget", None)


@pytest.mark.slow
@pytest.mark.skipif(not MUSE.is_dir(), reason=f"{MUSE} is absent: no MUSE files to read")
def test_evaluate_muse_knowmem_sampled(zoo, tmp_path):
    out = tmp_path / "muse"
    rc = main(
        [
            "evaluate",
            "--model",
            f"a={zoo['a']}",
            "--benchmark",
            "muse:knowmem_forget",
            "--data-dir",
            str(SHARED),
            "--n",
            "4",
            "--out",
            str(out),
            "--cores",
            "2",
        ]
    )
    assert rc == 0
    summary = pl.read_csv(out / "summary.csv")
    assert set(summary["score"]) == {"rougeL_recall", "keyword_leak"}
    leak = summary.filter(pl.col("score") == "keyword_leak").row(0, named=True)
    assert leak["prompts"] == 100 and leak["leak"] == "keyword_leak = 1" and 0 < leak["m_bin"] <= 1
    samples = pl.read_parquet(
        out / "samples" / "a" / "knowmem_forget" / "sampled" / "shard-0.parquet"
    )
    assert not samples["text"].str.contains("\n\n").any(), "answers are cut at MUSE's stops"
    assert samples.filter(~pl.col("greedy"))["n_tokens"].max() <= 32  # MUSE's knowmem length


@pytest.mark.parametrize("fmt", ["phi", "llama2"])
def test_tofu_settings_of_evaluate_are_the_paper_presets(fmt, root):
    """``probunlearn evaluate``'s TOFU encoding and lengths are those of workflow/defaults/paper.yaml
    (TOFU's eval_everything.yaml, which the conformance table checks), generation batch included:
    TOFU's 200-token budget counts the left-padded prompt, so the batch changes the answers."""
    import yaml

    from probunlearn.metrics.tofu import tofu_tags

    paper = yaml.safe_load((root / "workflow" / "defaults" / "paper.yaml").read_text())["tofu_eval"]
    tags = tofu_tags(fmt)
    for key in ("ds_size", "max_length", "generation_max_length", "generation_batch_size"):
        assert tags[key] == paper[key], key
    assert tags["generation_batch_size"] == 30
    if fmt == "phi":
        assert {k: tags[k] for k in ("question_start_tag", "question_end_tag", "answer_tag")} == {
            k: paper[k] for k in ("question_start_tag", "question_end_tag", "answer_tag")
        }


def test_comparison_with_the_original_uses_the_claims_intervals():
    from probunlearn.report.evaluation.summary import COMPARISON_COLUMNS, comparison_rows

    rng = np.random.default_rng(0)

    def scores(p: float) -> pl.DataFrame:
        x = np.where(rng.random((6, 64)) < p, rng.uniform(0.3, 1, (6, 64)), 0.0)
        rows = [
            {"id": f"q{i}", "sample": j, "greedy": False, "rougeL_recall": float(v)}
            for i, r in enumerate(x)
            for j, v in enumerate(r)
        ]
        rows += [
            {"id": f"q{i}", "sample": -1, "greedy": True, "rougeL_recall": 0.0} for i in range(6)
        ]
        return pl.DataFrame(rows)

    orig, unl = scores(0.8), scores(0.05)
    t = comparison_rows("orig", orig, {"mine": unl}, 0.01)
    assert t.columns == COMPARISON_COLUMNS and t["statistic"].to_list() == ["mean", "std", "ed"]
    mean = t.row(0, named=True)
    a = [
        np.array(g.sort("sample")["rougeL_recall"])
        for _, g in unl.filter(~pl.col("greedy")).sort("id").group_by("id", maintain_order=True)
    ]
    b = [
        np.array(g.sort("sample")["rougeL_recall"])
        for _, g in orig.filter(~pl.col("greedy")).sort("id").group_by("id", maintain_order=True)
    ]
    d = bounds.difference_interval(a, b, "mean", 0.01)
    assert (mean["estimate"], mean["lower"], mean["upper"]) == pytest.approx(
        (d.estimate, d.lower, d.upper)
    )
    assert mean["upper"] < 0 and mean["p_value"] < 0.01  # unlearning lowered the mean
    # the finite-sample interval, not the jackknife's asymptotic one (issue 49)
    jk = bounds.paired_difference(a, b, "mean", 0.01)
    assert mean["upper"] != pytest.approx(jk.upper)
    # at n = 1 only the mean is compared (std and ED need two samples per question)
    one = comparison_rows("orig", orig.filter(pl.col("sample") <= 0), {"mine": unl}, 0.01)
    assert one["statistic"].to_list() == ["mean"]


def test_gen_curves_read_m_gen_only_not_the_clopper_pearson_columns():
    from probunlearn.report.evaluation.summary import gen_curve

    t = pl.DataFrame({"score": ["s", "s"], "m_gen_0.5": [0.2, 0.4], "m_gen_cp_0.5": [0.1, 0.3]})
    c = gen_curve("m", t)
    assert c["threshold"].to_list() == [0.5] and c["m_gen"].to_list() == [pytest.approx(0.3)]


# ---- attacks, membership inference, open-unlearning's results (issues 40, 41) -----------------------
OPEN_UNLEARNING = {  # open-unlearning's TOFU_SUMMARY.json: metric -> agg_value
    "forget_Q_A_Prob": 0.125,
    "forget_quality": 0.0021,
    "model_utility": 0.5,
    "privleak": -12.5,
}


@pytest.mark.slow
def test_evaluate_attacks_membership_and_openunlearning(zoo, tmp_path):
    """One run: a quantization, a relearning and a prompt attack of the evaluated model (the
    relearning's control: the reference model relearned on the same pairs; the prompt attack's
    before: the null family), membership inference with a holdout set and a reference model, and
    open-unlearning's summary beside ours."""
    holdout = _write_jsonl(tmp_path / "holdout.jsonl", HOLDOUT)
    theirs = tmp_path / "ou" / "TOFU_SUMMARY.json"
    theirs.parent.mkdir()
    theirs.write_text(json.dumps(OPEN_UNLEARNING))
    out = tmp_path / "out"
    rc = _evaluate(
        "--model", f"a={zoo['a']}", "--reference", f"ref={zoo['ref']}", "--data", zoo["data"],
        "--holdout", holdout, "--attack", "quant:nf4", "--attack", "prefix", "--n", "6",
        "--attack", "relearn:1,examples=2",
        "--openunlearning", f"a={theirs.parent}", "--leak-threshold", "0.5", "--out", out,
    )  # fmt: skip
    assert rc == 0, (out / "logs" / "evaluate.log").read_text()[-3000:]
    # the attack table: the paper workflow's columns, before = the plain model's own bounds
    from probunlearn.report.attacks import COLUMNS

    att = pl.read_csv(out / "attacks.csv")
    assert att.columns == COLUMNS
    assert att["attack"].to_list() == ["quant:nf4", "prefix:sure", "relearn:1,examples=2"]
    assert att["attacked_model"].to_list() == ["a--quant__nf4", None, "a--relearn__1__examples-2"]
    assert att["members"].to_list() == [1, 2, 1]
    assert att["before_evalset"].to_list()[:2] == [None, "questions--null__2"]
    row = pl.read_csv(out / "summary.csv").filter(pl.col("model") == "a").row(0, named=True)
    for r in att.iter_rows(named=True):
        assert r["prompts"] == (3 if r["kind"] == "relearn" else 5) and r["n"] == 6
        if r["kind"] != "relearn":  # greedy answers of the prompt (twice in the null family)
            assert r["greedy_before"] == pytest.approx(row["greedy"])
        assert 0 <= r["m_bin_after"] <= 1 and 0 <= r["m_mu_after"] <= 1
    # relearning, beside the reference model relearned on the same pairs (the rows name no
    # subject: the other questions are judged)
    r = att.row(2, named=True)
    assert r["control_model"] == "ref" and r["exclude"] == "subject"
    assert r["restored_low"] <= r["restored"] <= r["restored_high"] and 0 < r["restored_p"] <= 1
    relearned = [json.loads((out / "attacks" / f"{m}--relearn__1__examples-2.json").read_text())
                 for m in ("a", "ref")]  # fmt: skip
    assert relearned[0]["relearned_ids"] == relearned[1]["relearned_ids"]
    # the quantized model is sampled as a model of its own
    quant = pl.read_parquet(out / "scores" / "a--quant__nf4" / "questions" / "sampled.parquet")
    assert quant.filter(~pl.col("greedy")).height == 5 * 6
    info = json.loads((out / "attacks" / "a--quant__nf4.json").read_text())
    assert info["attack"] == "quant:nf4" and info["type"] == "nf4"
    # membership: every statistic that needs no reference model, and reference (the evaluated
    # model only); PrivLeak against the reference model
    mem = pl.read_csv(out / "membership.csv")
    from probunlearn.metrics.membership import statistic, statistic_names

    plain = [s for s in statistic_names() if "reference" not in statistic(s).needs]
    assert mem.filter(pl.col("model") == "a")["statistic"].to_list() == statistic_names()
    assert mem.filter(pl.col("model") == "ref")["statistic"].to_list() == plain
    assert (mem["n_forget"] == 5).all() and (mem["n_holdout"] == 5).all()
    assert ((mem["auc_lo"] <= mem["auc"]) & (mem["auc"] <= mem["auc_hi"])).all()
    a_rows = mem.filter((pl.col("model") == "a") & (pl.col("statistic") != "reference"))
    assert (
        a_rows["privleak"].is_not_null().all()
        and mem.filter(pl.col("model") == "ref")["privleak"].is_null().all()
    )
    # open-unlearning's metrics beside ours, named as theirs
    side = pl.read_csv(out / "openunlearning.csv")
    ou = side.filter(pl.col("tool") == "open-unlearning")
    assert dict(zip(ou["metric"], ou["value"], strict=True)) == OPEN_UNLEARNING
    assert set(ou["file"]) == {"TOFU_SUMMARY.json"}
    ours = side.filter(pl.col("tool") == "probunlearn")
    assert dict(zip(ours["metric"], ours["value"], strict=True))["m_bin"] == pytest.approx(
        row["m_bin"]
    )
    html = (out / "report.html").read_text()
    for section in ("Under attack", "Membership inference", "Beside open-unlearning"):
        assert f"<h2>{section}</h2>" in html, section
    # the figures: the attack's panel, one per membership statistic, M_gen, greedy vs sampled, the
    # worst question
    assert (
        html.count("data:image/png;base64") == 1 + 6 + 3
        and "forget_<wbr>Q_<wbr>A_<wbr>Prob" in html
    )
    # 5 texts a side: even a perfect separation's interval reaches below chance, and the report says
    # so, with the size that would inform
    from probunlearn.report.evaluation.summary import texts_to_reach

    assert "With 5 texts a side, no statistic can show that the forget set is told apart" in html
    assert f"{texts_to_reach(0.15, 0.01)} texts a side would narrow" in html
    assert "n_forget</span> = <b>5</b>" in html, "the same on every row: said once"
    _check_in_browser([(out / "report.html", 390)], {"report.html": 10})


def _bad_extras(zoo, tmp: Path) -> dict[str, tuple[list, str]]:
    """Calls with a bad attack, membership or open-unlearning input -> what the error must say."""
    data = zoo["data"]
    keywords = _write_jsonl(tmp / "kw.jsonl", [{"question": "Who?", "keywords": ["Alice"]}])
    one_subject = _write_jsonl(
        tmp / "ada.jsonl",
        [{"question": f"Q{i}?", "answer": f"A{i}.", "subject": "Ada"} for i in range(4)],
    )
    holdout = _write_jsonl(tmp / "holdout.jsonl", HOLDOUT)
    (tmp / "ou").mkdir()
    eval_as_summary = tmp / "ou" / "TOFU_SUMMARY.json"
    eval_as_summary.write_text(json.dumps({"forget_quality": {"agg_value": 0.1}}))
    other_name = tmp / "results.json"
    other_name.write_text(json.dumps(OPEN_UNLEARNING))
    return {
        "bad-spec": (["--attack", "quant:nf5"], "--attack 'quant:nf5': attack spec 'quant:nf5'"),
        "unknown-attack": (["--attack", "bogus"], "unknown attack 'bogus'"),
        "twice": (["--attack", "quant:nf4", "--attack", "quant:type=nf4"], "given twice"),
        "relearn-no-forget": (
            ["--data", keywords, "--attack", "relearn"],
            "model 'a': attack 'relearn:20' needs the forget set",
        ),
        "relearn-all-rows": (["--attack", "relearn:examples=5"], "leaves no question"),
        "relearn-one-subject": (
            ["--data", one_subject, "--attack", "relearn:examples=2"],
            "of 'ada' (4) to attack (exclude=subject: the pairs' subjects are not judged); lower "
            "examples, or exclude=question",
        ),
        "fewshot-no-retain": (["--attack", "fewshot:3,source=retain"], "needs the retain set"),
        "dashes": (
            ["--model", f"a--b={zoo['b']}", "--attack", "quant:nf4"],
            "model 'a--b': a model to attack has no '--'",
        ),
        "stat": (["--holdout", holdout, "--membership", "loss,bogus"], "unknown statistic 'bogus'"),
        "no-reference": (
            ["--holdout", holdout, "--membership", "loss,reference"],
            "compare(s) each model with a reference model",
        ),
        "no-holdout": (["--membership", "loss"], "there is none: give --holdout FILE"),
        "overlap": (["--holdout", data], "overlaps forget set"),
        "ou-layout": (
            ["--openunlearning", f"a={eval_as_summary.parent}"],
            f"{eval_as_summary}: metric 'forget_quality' is an object",
        ),
        "ou-name": (["--openunlearning", f"a={other_name}"], f"{other_name}: not an open-unl"),
        "ou-model": (["--openunlearning", f"zz={other_name}"], "no model named 'zz'"),
    }


@pytest.mark.parametrize(
    "case",
    ["bad-spec", "unknown-attack", "twice", "relearn-no-forget", "relearn-all-rows",
     "relearn-one-subject", "fewshot-no-retain", "dashes", "stat", "no-reference", "no-holdout", "overlap", "ou-layout",
     "ou-name", "ou-model"],
)  # fmt: skip
def test_bad_attack_membership_and_openunlearning_inputs_fail_before_any_job(
    zoo, tmp_path, capsys, case
):
    args, expected = _bad_extras(zoo, tmp_path)[case]
    model = [] if "--model" in args else ["--model", f"a={zoo['a']}"]
    data = [] if "--data" in args else ["--data", zoo["data"]]
    err = _refused(capsys, tmp_path, *model, *data, *args)
    assert expected in err, err


def test_attack_and_membership_plan(zoo, tmp_path):
    """The jobs' names and settings: an attacked model and a family sampled like any model, their
    shards, the membership models and statistics."""
    from probunlearn.cli.evaluate import build_config

    holdout = _write_jsonl(tmp_path / "h.jsonl", HOLDOUT)
    args = _namespace(
        model=[f"a={zoo['a']}"],
        original=f"o={zoo['b']}",
        data=zoo["data"],
        holdout=holdout,
        attack=["quant:int8", "paraphrase"],
        membership="loss,zlib",
        chunk_size=4,
    )
    plan = Plan(build_config(args))
    plan.check()
    assert plan.membership.on and plan.membership.models() == ["a", "o"]
    assert plan.membership.statistics("a") == ["loss", "zlib"]
    assert list(plan.attacked_models) == ["a--quant__int8"]
    assert plan.model_pattern("sample_shard").split("|") == ["a", "o", r"a\-\-quant__int8"]
    assert plan.load_params("a--quant__int8")["model_path"] == plan.paths.run_model(
        "a--quant__int8"
    )
    family, null = "questions--paraphrase", "questions--null__2"
    assert list(plan.attacks.families) == [family, null]  # null: the family's before
    assert plan.attacks.family_rows(null) == plan.attacks.family_rows(family)
    members = len(plan.attacks.families[family][1].settings) and plan.attacks.family_rows(family)
    assert plan.shards(family) == range(-(-members // 4))
    assert plan.shards(plan.sampled_set) == range(2)
    cases = plan.attacks.table_cases()
    assert [c["after"] for c in cases] == [
        plan.paths.scores("a--quant__int8", "questions", "sampled"),
        plan.paths.scores("a", family, "sampled"),
    ]
    assert {c["reference"] for c in cases} == {plan.paths.scores("o", "questions", "sampled")}
    assert [c["before"] for c in cases] == [
        plan.paths.scores("a", "questions", "sampled"),
        plan.paths.scores("a", null, "sampled"),
    ]
    assert [c["control"] for c in cases] == [None, None]  # no relearning, no --reference


# ---- issue 47: the output directory, its lock and its names: nothing of the user's is lost -----------


def test_out_must_be_new_empty_or_an_evaluation(zoo, tmp_path, capsys):
    """(1) A directory holding other files is refused before a byte is written, a dry run
    included; one an older probunlearn made (its record only) is taken and marked."""
    from probunlearn.storage import outdir

    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "config.yaml").write_text("mine: 1\n")
    (project / "data" / "questions.parquet").write_bytes(b"the user's own")
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    for extra in ([], ["--dry-run"]):
        rc = _evaluate("--model", f"a={zoo['a']}", "--data", zoo["data"], "--out", project, *extra)
        err = capsys.readouterr().err
        assert rc == 2 and "not empty and not an evaluation directory" in err
        assert "config.yaml, data" in err
    assert sorted(p.relative_to(project) for p in project.rglob("*")) == before
    assert (project / "config.yaml").read_text() == "mine: 1\n"
    err = _error(capsys, "--model", f"a={zoo['a']}", "--data", zoo["data"], "--out", "/",
                 "--dry-run")  # fmt: skip
    assert "--out /: not empty" in err and not Path("/.probunlearn").exists()
    # an input inside --out would be overwritten or counted as output: refused
    inside = tmp_path / "ev"
    inside.mkdir()
    (inside / "q.jsonl").write_text(zoo["data"].read_text())
    with pytest.raises(outdir.OutDirError, match=r"it holds q\.jsonl"):
        outdir.check_out(inside)
    assert outdir.check_out(tmp_path / "new" / "dir") == "new"
    legacy = tmp_path / "legacy"
    (legacy / ".probunlearn").mkdir(parents=True)
    (legacy / ".probunlearn" / "evaluated.json").write_text("{}")
    assert outdir.check_out(legacy) == "ours"
    (legacy / outdir.MARKER).write_text(json.dumps({"format": outdir.FORMAT + 1}))
    with pytest.raises(outdir.OutDirError, match="written by a newer probunlearn"):
        outdir.check_out(legacy)
    only_lock = tmp_path / "stopped"
    (only_lock / ".probunlearn").mkdir(parents=True)
    (only_lock / outdir.LOCK).write_text("{}")
    assert outdir.check_out(only_lock) == "empty", "a call that stopped after taking the lock"


def test_inputs_inside_out_and_out_inside_a_model_are_refused(zoo, tmp_path, capsys):
    out = tmp_path / "ev"
    (out / ".probunlearn").mkdir(parents=True)
    (out / ".probunlearn" / "evaluation.json").write_text('{"format": 1}')
    data = _write_jsonl(out / "q.jsonl", QUESTIONS)
    err = _error(capsys, "--model", f"a={zoo['a']}", "--data", data, "--out", out)
    assert "lies inside --out" in err and "q.jsonl" in err
    err = _error(capsys, "--model", f"a={zoo['a']}", "--data", zoo["data"], "--out",
                 Path(zoo["a"]) / "eval")  # fmt: skip
    assert "lies inside model 'a'" in err and not (Path(zoo["a"]) / "eval").exists()


def test_a_held_lock_refuses_a_second_call_and_unlock_clears_a_stale_one(zoo, tmp_path, capsys):
    """(2, 3) One lock per call: a live holder is named (process, host, since) and nothing is
    written; another host's lock is not taken over but --unlock removes it, and Snakemake's own."""
    import os
    import socket

    from probunlearn.storage import outdir

    out = tmp_path / "ev"
    args = ("--model", f"a={zoo['a']}", "--data", zoo["data"], "--out", out)
    with outdir.Lock(out):
        err = _error(capsys, *args)
    assert f"process {os.getpid()} on host {socket.gethostname()}" in err and "--unlock" in err
    assert sorted(p.name for p in out.rglob("*")) == [".probunlearn"], "the loser wrote nothing"
    outdir.claim(out)
    holder = {"pid": 1, "host": "elsewhere", "since": "2026-01-01 00:00:00 UTC"}
    (out / outdir.LOCK).write_text(json.dumps(holder))
    (out / ".snakemake" / "locks").mkdir(parents=True)
    (out / ".snakemake" / "locks" / "0.input.lock").write_text("x")
    err = _error(capsys, *args)
    assert "process 1 on host elsewhere" in err and "on another host" in err
    assert main(["evaluate", "--out", str(out), "--unlock"]) == 0
    said = capsys.readouterr().err
    assert "removed the lock of process 1 on host elsewhere" in said and "Snakemake's" in said
    assert not (out / outdir.LOCK).exists() and not (out / ".snakemake" / "locks").exists()
    # a lock of a process that is gone on this host is stale: taken over without --unlock
    gone = {**holder, "host": socket.gethostname(), "pid": 2**22 + 12345}
    (out / outdir.LOCK).write_text(json.dumps(gone))
    lock = outdir.Lock(out).acquire()
    assert lock.stale == gone
    lock.release()
    with outdir.Lock(out):  # a live one on this host cannot be unlocked
        assert main(["evaluate", "--out", str(out), "--unlock"]) == 2
    assert "held by a running call" in capsys.readouterr().err


def test_a_name_is_bound_to_its_checkpoint(zoo, tmp_path, capsys):
    """(4) Another checkpoint under a used name is refused, naming both, unless --replace."""
    from probunlearn.storage import outdir

    out = tmp_path / "ev"
    outdir.claim(out)
    outdir.bind_names(out, {"a": {"source": str(zoo["a"]), "revision": None, "base": None}})
    err = _error(capsys, "--model", f"a={zoo['b']}", "--data", zoo["data"], "--out", out)
    assert f"bound in {out} to {zoo['a']}" in err and f"gives {zoo['b']}" in err
    assert "--replace a" in err
    args = _namespace(model=[f"a={zoo['b']}"], data=zoo["data"], out=out, replace=["a"])
    from probunlearn.cli.evaluate import prepare

    assert prepare(args).plan.bindings()["a"]["source"] == str(zoo["b"])


def _broken(zoo, tmp: Path, name: str, change) -> Path:
    import shutil

    path = tmp / name
    shutil.copytree(zoo["a"], path)
    change(path)
    return path


def test_checkpoint_problems_are_refused_before_any_job(zoo, tmp_path, capsys):
    """(5) Weights, tokenizer, context, names, n: each named before any job, nothing written."""

    def half(p):
        w = p / "model.safetensors"
        w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])

    def no_tokenizer(p):
        for f in p.glob("tokenizer*"):
            f.unlink()

    cases = [
        (_broken(zoo, tmp_path, "trunc", half), [], "model.safetensors: truncated"),
        (_broken(zoo, tmp_path, "empty", lambda p: (p / "model.safetensors").write_bytes(b"")),
         [], "model.safetensors is empty (0 bytes)"),
        (_broken(zoo, tmp_path, "notok", no_tokenizer), [], "no tokenizer files"),
        (zoo["a"], ["--max-new-tokens", "3000"], "do not fit its context of 2048 positions"),
        (zoo["a"], ["--n", "1000000000"], "--n 1000000000: a sampling job holds"),
    ]  # fmt: skip
    for path, extra, message in cases:
        err = _refused(capsys, tmp_path, "--model", f"x={path}", "--data", zoo["data"], *extra)
        assert message in err and "Traceback" not in err, err
    for name, message in [("x" * 300, "300 characters"), ("a" * 25, "repeated 20 times")]:
        err = _refused(capsys, tmp_path, "--model", f"{name}={zoo['a']}", "--data", zoo["data"])
        assert message in err
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    cfg = json.loads((zoo["adapter"] / "adapter_config.json").read_text())
    cfg["base_model_name_or_path"] = str(tmp_path / "gone")
    (orphan / "adapter_config.json").write_text(json.dumps(cfg))
    (orphan / "adapter_model.safetensors").write_bytes(
        (zoo["adapter"] / "adapter_model.safetensors").read_bytes()
    )
    err = _refused(capsys, tmp_path, "--model", f"o={orphan}", "--data", zoo["data"])
    assert f"model 'o' ({orphan}): a PEFT adapter whose base {tmp_path / 'gone'}" in err


def test_os_errors_of_out_are_messages(zoo, tmp_path, capsys, monkeypatch):
    """(6) --out a file, an --out that cannot be written, a full disk: a message, no traceback."""
    import errno
    import sys

    from probunlearn.evaluate import console
    from probunlearn.storage import outdir

    afile = tmp_path / "afile"
    afile.write_text("x")
    args = ("--model", f"a={zoo['a']}", "--data", zoo["data"])
    err = _error(capsys, *args, "--out", afile)
    assert f"--out {afile}: a file, not a directory" in err

    def refuse(*a, **k):
        raise PermissionError(errno.EROFS, "Read-only file system", str(tmp_path / "ro"))

    with monkeypatch.context() as m:
        m.setattr(outdir.os, "open", refuse)
        err = _error(capsys, *args, "--out", tmp_path / "ro")
    assert "cannot write there (Read-only file system" in err

    def full(out):
        raise OSError(errno.ENOSPC, "No space left on device", str(out))

    with monkeypatch.context() as m:
        m.setattr(outdir, "claim", full)
        rc = _evaluate(*args, "--out", tmp_path / "full")
    err = capsys.readouterr().err
    assert rc == 1 and "no space left on the disk" in err and "resumes where it stopped" in err
    assert not (tmp_path / "full" / outdir.LOCK).exists(), "the lock is released"
    stream = __import__("io").StringIO()
    script = "import sys; print('OSError: [Errno 28] No space left on device'); sys.exit(1)"
    rc = console.run_quietly([sys.executable, "-c", script], tmp_path / "l.log", stream=stream)
    assert rc == 1 and "The disk filled up" in stream.getvalue()


def test_ctrl_c_says_how_to_resume(zoo, tmp_path, capsys, monkeypatch):
    import sys

    from probunlearn.cli import evaluate as cli
    from probunlearn.evaluate import console
    from probunlearn.storage import outdir

    def interrupt(self, line):
        raise KeyboardInterrupt

    monkeypatch.setattr(console.Progress, "feed", interrupt)
    with pytest.raises(KeyboardInterrupt):
        console.run_quietly([sys.executable, "-c", "print('x')"], tmp_path / "l.log",
                            stream=__import__("io").StringIO())  # fmt: skip
    assert (tmp_path / "l.log").read_text() == "x\n", "the log is kept"
    monkeypatch.setattr(cli, "run_locked", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    rc = _evaluate("--model", f"a={zoo['a']}", "--data", zoo["data"], "--out", tmp_path / "ev")
    err = capsys.readouterr().err
    assert rc == 130 and "interrupted; run the same command again to resume" in err
    assert "Traceback" not in err and not (tmp_path / "ev" / outdir.LOCK).exists()


def test_repeated_questions_are_warned_about(zoo, tmp_path):
    from probunlearn.cli.evaluate import build_config

    rows = [*QUESTIONS, {"question": QUESTIONS[1]["question"], "answer": "Another answer."}]
    data = _write_jsonl(tmp_path / "dup.jsonl", rows)
    plan = Plan(build_config(_namespace(model=[f"a={zoo['a']}"], data=data)))
    (warning,) = [w for w in plan.warnings() if "asked twice" in w]
    assert "1 question(s) asked twice (row-6 repeats row-2)" in warning


def test_progress_names_each_job_and_reads_a_running_jobs_bar(tmp_path):
    import io

    from probunlearn.evaluate.console import Progress

    log = tmp_path / "logs" / "s.log"
    log.parent.mkdir()
    log.write_text("sampling:  40%|####  | 26/65 [00:01<00:02, 20.0sample/s]")
    stream = io.StringIO()
    p = Progress(stream, tty=False, root=tmp_path)
    block = ["Job stats:", "job  count", "sample_shard  1", "total  1", "",
             "localrule sample_shard:", "    log: logs/s.log", "    jobid: 3",
             "    wildcards: model=m1, evalset=forget10, setting=sampled, k=2"]  # fmt: skip
    for line in block:
        p.feed(line + "\n")
    p.jobs["3"]["said"] -= 60  # as if it had run a minute
    p.poll()
    for line in ["Finished jobid: 3 (Rule: sample_shard)", "1 of 1 steps (100%) done"]:
        p.feed(line + "\n")
    assert stream.getvalue().splitlines() == [
        "1 job(s) to run: sample_shard 1",
        "  ... sample_shard m1/forget10 shard 2: 26/65 (40%)",
        "[1/1] sample_shard m1/forget10 shard 2",
    ]


@pytest.mark.slow
def test_adding_a_holdout_reruns_only_what_reads_it(zoo, two_models, tmp_path):
    """(7) The data sets are rewritten only when their content changes: adding --holdout to an
    evaluation samples nothing again."""
    out, models, common = two_models["out"], two_models["models"], two_models["common"]
    holdout = _write_jsonl(tmp_path / "holdout.jsonl", HOLDOUT)
    jobs = _jobs(out, *models, *common[:-2], "--holdout", holdout)
    assert "sample_shard" not in jobs and "score" not in jobs, jobs
    assert jobs == {"membership": 2, "membership_table": 1, "summary": 1, "all": 1}


@pytest.mark.slow
def test_kill_9_of_the_group_then_rerun_and_a_concurrent_call(zoo, two_models, tmp_path):
    """A call killed with its jobs (kill -9 of the process group), rerun as documented, ends with
    the bytes of an uninterrupted run; a second call meanwhile is told who holds the directory and
    writes nothing."""
    import os
    import signal
    import time

    out = tmp_path / "ev"
    cmd = [sys.executable, "-m", "probunlearn.cli", "evaluate", "--n", "12", "--max-new-tokens",
           "6", "--cores", "1", *map(str, two_models["models"]),
           *map(str, two_models["common"][:-1]), str(out)]  # fmt: skip
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not list((out / "logs").glob("sample/*/*/*/*.log")) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.2)
    second = subprocess.run([*cmd[:-1], str(out)], capture_output=True, text=True)
    assert second.returncode == 2 and f"process {proc.pid} on host" in second.stderr
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (out / ".probunlearn" / "lock").is_file(), "the killed call's lock stays"
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0 and "took over the lock of a stopped call" in again.stderr
    first = two_models["first"]
    for name in ("summary.csv", "questions.csv", "report.html", "questions.html"):
        assert (out / name).read_bytes() == (first / name).read_bytes(), name
    for model in ("a", "lora"):
        rel = Path("scores") / model / "questions" / "sampled.parquet"
        assert (out / rel).read_bytes() == (two_models["out"] / rel).read_bytes()

"""``probunlearn bounds``: tables in, one row per prompt out, clear errors with exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from probunlearn import bounds as B
from probunlearn.cli import main


def _scores_table(seed: int = 0) -> tuple[pl.DataFrame, dict[str, np.ndarray]]:
    """Ragged prompts (n = 40, 40, 25, 1, 40), binary and continuous, in a shuffled row order."""
    rng = np.random.default_rng(seed)
    per_prompt = {
        "p-b": (rng.random(40) < 0.3).astype(float),
        "p-a": rng.integers(0, 11, 40) / 10,
        "p-c": rng.random(25),
        "p-d": np.array([1.0]),
        "p-e": np.zeros(40),
    }
    rows = [(p, float(v), i / 10) for i, (p, s) in enumerate(per_prompt.items()) for v in s]
    df = pl.DataFrame(rows, schema=["prompt_id", "score", "greedy"], orient="row")
    # interleave rows of different prompts; first appearance order stays p-b, p-a, ...
    head, tail = df.head(5), df.slice(5).sample(fraction=1.0, shuffle=True, seed=seed)
    return pl.concat([head.sort("prompt_id", descending=True), tail]), per_prompt


@pytest.fixture
def table(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    df, per_prompt = _scores_table()
    path = tmp_path / "scores.parquet"
    df.write_parquet(path)
    return path, per_prompt


def test_bounds_parquet_to_parquet(table, tmp_path: Path, capsys) -> None:
    path, per_prompt = table
    out = tmp_path / "sub" / "bounds.parquet"
    assert main(["bounds", str(path), "--out", str(out), "--alpha", "0.05", "--bins", "20"]) == 0
    printed = capsys.readouterr().out
    assert "5 prompts" in printed and "p-c" in printed and f"wrote {out}" in printed
    res = pl.read_parquet(out)
    assert sorted(res["prompt_id"].to_list()) == sorted(per_prompt)
    assert res.columns[:2] == ["prompt_id", "n"]
    assert [p.name for p in out.parent.iterdir()] == ["bounds.parquet"]  # no temp file left
    # the column is not binary as a whole: no M_bin column (not NaN rows beside binary prompts)
    assert "m_bin" not in res.columns
    for row in res.iter_rows(named=True):
        x = per_prompt[row["prompt_id"]]
        want = B.summarize(x, alpha=0.05, bins=20, m_bin=False)
        assert set(want) == set(res.columns) - {"prompt_id", "m_mu_simultaneous"}
        for key, value in want.items():
            np.testing.assert_allclose(row[key], value, rtol=1e-12, err_msg=key)


def test_bounds_prompt_order_is_first_appearance(tmp_path: Path) -> None:
    df = pl.DataFrame({"q": ["z", "a", "z", "m", "a", "m", "m"], "s": [0, 1, 1, 0, 0, 1, 1]})
    path = tmp_path / "s.csv"
    df.write_csv(path)
    out = tmp_path / "o.csv"
    assert (
        main(["bounds", str(path), "--prompt-col", "q", "--score-col", "s", "--out", str(out)]) == 0
    )
    res = pl.read_csv(out)
    assert res["q"].to_list() == ["z", "a", "m"]
    assert res["n"].to_list() == [2, 2, 3]
    np.testing.assert_allclose(
        res["m_bin"], [B.binary_leakage_bound(v) for v in ([0, 1], [1, 0], [0, 1, 1])]
    )


def test_bounds_greedy_and_thresholds(table, tmp_path: Path) -> None:
    path, per_prompt = table
    out = tmp_path / "o.parquet"
    argv = [
        "bounds",
        str(path),
        "--greedy-col",
        "greedy",
        "--thresholds",
        "0.25,0.5",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    res = pl.read_parquet(out)
    assert (
        "greedy" in res.columns and "m_gen_0.25" in res.columns and "m_gen_0.1" not in res.columns
    )
    got = dict(zip(res["prompt_id"], res["greedy"], strict=True))
    assert got == {p: i / 10 for i, p in enumerate(per_prompt)}


def test_bounds_leak_threshold(table, tmp_path: Path, capsys) -> None:
    path, per_prompt = table
    out = tmp_path / "o.csv"
    argv = ["bounds", str(path), "--leak-threshold", "0.5", "--alpha", "0.05", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "m_bin_ge_0.5" in printed and "not binary" not in printed
    res = pl.read_csv(out)
    assert "m_bin" not in res.columns
    assert res.columns[res.columns.index("ed") + 1] == "m_bin_ge_0.5"
    for row in res.iter_rows(named=True):
        x = per_prompt[row["prompt_id"]]
        s, n = int((x >= 0.5).sum()), x.size
        want = 1.0 if s == n else stats.beta.ppf(0.95, s + 1, n - s)
        assert row["m_bin_ge_0.5"] == pytest.approx(want, rel=1e-12), row["prompt_id"]
    # p-a has scores on the 0.1 grid: 0.5 itself leaks
    pa = per_prompt["p-a"]
    assert (pa == 0.5).any()
    # without a leak threshold, a note says how to get M_bin
    assert main(["bounds", str(path)]) == 0
    note = capsys.readouterr().out
    assert "column 'score' is not binary (0/1): no M_bin; pass --leak-threshold T" in note
    _fails(["bounds", str(path), "--leak-threshold", "0"], capsys, "leak_threshold", "(0, 1]")


def test_bounds_prints_without_out(table, capsys) -> None:
    path, _ = table
    assert main(["bounds", str(path)]) == 0
    out = capsys.readouterr().out
    assert "m_sigma" in out and "wrote" not in out


def _fails(argv: list[str], capsys, *fragments: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_bounds_bad_input(tmp_path: Path, capsys) -> None:
    good = tmp_path / "good.csv"
    pl.DataFrame({"prompt_id": ["a", "a", "b"], "score": [0.1, 0.2, 0.3]}).write_csv(good)
    _fails(["bounds", str(tmp_path / "missing.csv")], capsys, "missing.csv", "no such file")
    _fails(["bounds", str(tmp_path / "x.json")], capsys, "x.json", "unsupported file type")
    _fails(["bounds", str(good), "--score-col", "rouge"], capsys, "good.csv", "no column 'rouge'")
    _fails(["bounds", str(good), "--prompt-col", "pid"], capsys, "no column 'pid'")
    _fails(["bounds", str(good), "--greedy-col", "g"], capsys, "no column 'g'")
    _fails(["bounds", str(good), "--alpha", "0.7"], capsys, "alpha must be in (0, 0.5], got 0.7")
    _fails(["bounds", str(good), "--bins", "0"], capsys, "bins must be an integer >= 1")
    _fails(["bounds", str(good), "--rho", "-1"], capsys, "rho must be >= 0")
    _fails(["bounds", str(good), "--thresholds", "0.5,x"], capsys, "--thresholds")
    _fails(["bounds", str(good), "--out", str(tmp_path / "o.txt")], capsys, "o.txt", "unsupported")

    cases = {
        "range.csv": ("prompt_id,score\na,0.1\na,1.5\n", "row 2 (from 1", "1.5", "outside [0, 1]"),
        "text.csv": ("prompt_id,score\na,0.1\na,0.2\nb,abc\n", "row 3 (from 1", "not a number"),
        "null.csv": ("prompt_id,score\na,0.1\na,\n", "row 2 (from 1", "missing"),
        "nan.csv": ("prompt_id,score\na,0.1\na,NaN\n", "row 2 (from 1", "NaN"),
        "noprompt.csv": ("prompt_id,score\na,0.1\n,0.2\n", "row 2 (from 1", "missing prompt id"),
        "empty.csv": ("prompt_id,score\n", "no rows"),
        "greedy.csv": ("prompt_id,score,g\na,0.1,0.5\na,0.2,0.6\n", "different values", "'a'"),
    }
    for name, (text, *fragments) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        argv = ["bounds", str(path)] + (["--greedy-col", "g"] if name == "greedy.csv" else [])
        _fails(argv, capsys, name, *fragments)
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"not parquet")
    _fails(["bounds", str(corrupt)], capsys, "corrupt.parquet", "cannot read")


def test_bounds_argparse_errors_exit_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bounds", "x.csv", "--bins", "ten"])
    assert exc.value.code == 2


def test_console_script(table, tmp_path: Path) -> None:
    path, _ = table
    exe = Path(sys.executable).with_name("probunlearn")
    if not exe.exists():
        pytest.skip(f"console script not installed next to {sys.executable}")
    out = tmp_path / "o.csv"
    run = subprocess.run([exe, "bounds", path, "--out", out], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "m_mu" in run.stdout and "--leak-threshold" in run.stdout
    assert pl.read_csv(out).height == 5
    bad = subprocess.run(
        [exe, "bounds", path, "--score-col", "nope"], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert "no column 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_bounds_simultaneous_leak_at_k_and_set_level(table, tmp_path: Path, capsys) -> None:
    path, per_prompt = table
    out, set_out = tmp_path / "b.csv", tmp_path / "set.csv"
    args = ["bounds", str(path), "--out", str(out), "--set-out", str(set_out)]
    # p-d has n = 1: no unbiased estimate of leak@5 there, but its upper bound holds for every k
    assert main([*args, "--leak-threshold", "0.5", "--leak-at-k", "1,5", "--bins", "20"]) == 0
    res = pl.read_csv(out)
    short = res["prompt_id"].to_list().index("p-d")
    assert res["leak_at_5"][short] is None and res["leak_at_5"].null_count() == 1
    np.testing.assert_allclose(res["leak_at_5_upper"], 1 - (1 - res["m_bin_ge_0.5"]) ** 5)
    rows = [per_prompt[p] for p in res["prompt_id"]]
    np.testing.assert_allclose(  # on the grid of --bins (it used to ignore it)
        res["m_mu_simultaneous"], B.simultaneous_upper_bounds(rows, 0.01, "m_mu", bins=20)
    )
    capsys.readouterr()
    assert main([*args, "--leak-threshold", "0.5", "--leak-at-k", "1"]) == 0
    printed = capsys.readouterr().out
    assert "set level (5 prompts" in printed and "worst_prompt_p_leak" in printed
    res = pl.read_csv(out)
    rows = [per_prompt[p] for p in res["prompt_id"]]
    leaks = [(r >= 0.5).astype(float) for r in rows]
    np.testing.assert_allclose(
        res["m_mu_simultaneous"], B.simultaneous_upper_bounds(rows, 0.01, metric="m_mu")
    )
    # named as the workflow names it: M_bin of score >= 0.5
    np.testing.assert_allclose(
        res["m_bin_ge_0.5_simultaneous"], B.simultaneous_upper_bounds(leaks, 0.01)
    )
    np.testing.assert_allclose(res["leak_at_1"], [r.mean() for r in leaks])
    np.testing.assert_allclose(res["leak_at_1_upper"], res["m_bin_ge_0.5"])
    sets = pl.read_csv(set_out)
    assert sets["quantity"].to_list() == ["mean", "p_leak", "worst_prompt_p_leak"]
    assert sets["set_level_bound"][1] == pytest.approx(
        B.set_level_upper_bound(leaks, 0.01, binary=True)
    )
    assert sets["from_per_prompt_bounds"][1] == pytest.approx(res["m_bin_ge_0.5"].mean())
    assert main(["bounds", str(path), "--leak-at-k", "2"]) == 2
    assert "--leak-at-k needs a leak decision" in capsys.readouterr().err


def test_bounds_reads_utf16_and_semicolons_and_names_a_ragged_row(tmp_path: Path, capsys) -> None:
    """Issue 47: a UTF-16 file (with its byte-order mark) and a semicolon-separated one read as
    their UTF-8 comma twin does; a row with more fields than the header is named in our words."""
    text = "prompt_id,score\na,0.1\na,0.2\nb,1\nb,0\n"
    plain, utf16, semi = tmp_path / "p.csv", tmp_path / "u.csv", tmp_path / "s.csv"
    plain.write_text(text)
    utf16.write_text(text, encoding="utf-16")
    semi.write_text(text.replace(",", ";"))
    tables = []
    for path in (plain, utf16, semi):
        out = path.with_suffix(".parquet")
        assert main(["bounds", str(path), "--out", str(out)]) == 0
        tables.append(pl.read_parquet(out))
    capsys.readouterr()
    assert tables[0].columns[0] == "prompt_id" and tables[0].equals(tables[1])
    assert tables[0].equals(tables[2])
    ragged = tmp_path / "r.csv"
    ragged.write_text("prompt_id,score\na,0.5\na,0.2,0.1\n")
    _fails(["bounds", str(ragged)], capsys, "row 2 (from 1, header excluded) has 3 field(s)")
    latin = tmp_path / "l.csv"
    latin.write_bytes("prompt_id,score\nÄ,0.5\n".encode("latin-1"))
    _fails(["bounds", str(latin)], capsys, "not UTF-8 text (byte 16)")


def test_bounds_warns_where_n_is_small(tmp_path: Path, capsys) -> None:
    """One sample per prompt gives bounds of 1: the warning evaluate gives says so."""
    one = tmp_path / "one.csv"
    one.write_text("prompt_id,score\na,0\nb,1\n")
    assert main(["bounds", str(one)]) == 0
    err = capsys.readouterr().err
    assert "warning: n = 1 samples per prompt is small" in err and "--n 103" in err

"""Rule tofu_metrics: TOFU's forget quality and model utility of one model, from its log-probabilities."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from probunlearn.metrics.table import write_metrics
from probunlearn.metrics.tofu import (
    METRIC_COLUMNS,
    TOFU_UTILITY_SETS,
    ks_test,
    model_utility,
    read_eval_log,
    tofu_stats_from_logprobs,
)


def _rouge_values(
    rouge: Mapping[str, float] | str | os.PathLike,
    evalsets: Sequence[str],
    model: str,
    metric: str = "tofu_rougeL_recall",
) -> dict[str, float]:
    """ROUGE-L recall per eval set: from a mapping, or from an evaluation metrics CSV (rows of
    ``metric``; rows of ``model`` when present, greedy ``setting`` when present)."""
    if isinstance(rouge, Mapping):
        missing = [e for e in evalsets if e not in rouge]
        if missing:
            raise ValueError(f"ROUGE values missing for eval set(s) {missing}")
        return {e: float(rouge[e]) for e in evalsets}
    schema = {c: (pl.Float64 if c == "value" else pl.String) for c in METRIC_COLUMNS}
    df = pl.read_csv(rouge, schema_overrides=schema).filter(pl.col("metric") == metric)
    if "model" in df.columns and model in df["model"].to_list():
        df = df.filter(pl.col("model") == model)
    if "setting" in df.columns:  # the long table's sampling-setting column: greedy rows have ""
        df = df.filter(pl.col("setting").cast(pl.String).fill_null("") == "")
    out = {}
    for e in evalsets:
        vals = df.filter(pl.col("evalset") == e)["value"].to_list()
        if len(vals) != 1:
            raise ValueError(
                f"{rouge}: expected one {metric} row for evalset {e!r}, found {len(vals)}"
            )
        out[e] = float(vals[0])
    return out


def _reference_truth_ratio(
    fs: dict,
    fset: str,
    forget_logprobs: str | os.PathLike,
    reference_forget_logprobs: str | os.PathLike | None,
    reference_log: str | os.PathLike | None,
    forget_rows: str | os.PathLike | None,
    max_questions: int | None,
) -> np.ndarray | None:
    """The truth ratios of the forget-quality reference on the questions of ``fs`` (the model's
    forget-set statistics): from a retain-only model's log-probabilities, or from TOFU's eval log
    (its questions checked against ``forget_rows`` when given); None without a reference."""
    if reference_forget_logprobs is not None:
        rs = tofu_stats_from_logprobs(
            pl.read_parquet(reference_forget_logprobs), "forget", max_questions=max_questions
        )
        if rs["ids"] != fs["ids"]:
            raise ValueError(
                f"{forget_logprobs} and {reference_forget_logprobs} cover different questions"
            )
        return rs["truth_ratio"]
    if reference_log is not None:
        questions = None
        if forget_rows is not None:
            fr = pl.read_parquet(forget_rows, columns=["id", "question"])
            by_id = dict(zip(fr["id"].cast(pl.String).to_list(), fr["question"], strict=True))
            questions = [by_id[i] for i in fs["ids"]]
        log = read_eval_log(reference_log, questions=questions)
        if log["truth_ratio"].size != len(fs["ids"]):
            raise ValueError(
                f"{reference_log} has {log['truth_ratio'].size} questions, the model's first "
                f"{len(fs['ids'])} of {fset}: use the full TOFU split and ds_size 300, as the log"
            )
        return log["truth_ratio"]
    return None


def _forget_rows(
    fset: str,
    forget_logprobs: str | os.PathLike,
    reference_forget_logprobs: str | os.PathLike | None,
    reference_log: str | os.PathLike | None,
    forget_rows: str | os.PathLike | None,
    max_questions: int | None,
) -> list[tuple[str, str, float]]:
    """(eval set, metric, value) rows of the forget set: ``answer_prob``, ``truth_ratio_score``
    and, with a reference, ``forget_quality`` and ``ks_statistic``."""
    fs = tofu_stats_from_logprobs(
        pl.read_parquet(forget_logprobs), "forget", max_questions=max_questions
    )
    rows = [
        (fset, "answer_prob", fs["answer_prob"]),
        (fset, "truth_ratio_score", fs["truth_ratio_score"]),
    ]
    ref_tr = _reference_truth_ratio(
        fs,
        fset,
        forget_logprobs,
        reference_forget_logprobs,
        reference_log,
        forget_rows,
        max_questions,
    )
    if ref_tr is not None:
        ks = ks_test(fs["truth_ratio"], ref_tr)
        rows += [(fset, "forget_quality", ks.pvalue), (fset, "ks_statistic", ks.statistic)]
    return rows


def _utility_rows(
    paths: Mapping[str, str | os.PathLike | None],
    names: Mapping[str, str],
    max_questions: int | None,
) -> tuple[list[tuple[str, str, float]], dict[str, float]]:
    """(eval set, metric, value) rows of ``answer_prob`` and ``truth_ratio_score`` for each utility
    set given (``paths``: key of :data:`TOFU_UTILITY_SETS` → log-probabilities), and the values
    :func:`model_utility` combines (``<key>_prob``, ``<key>_tr``)."""
    rows: list[tuple[str, str, float]] = []
    utility: dict[str, float] = {}
    for key, path in paths.items():
        if path is None:
            continue
        st = tofu_stats_from_logprobs(
            pl.read_parquet(path), TOFU_UTILITY_SETS[key], max_questions=max_questions
        )
        rows.append((names[key], "answer_prob", st["answer_prob"]))
        rows.append((names[key], "truth_ratio_score", st["truth_ratio_score"]))
        utility[f"{key}_prob"] = st["answer_prob"]
        utility[f"{key}_tr"] = st["truth_ratio_score"]
    return rows, utility


def run_tofu_metrics(
    *,
    out_csv: str | os.PathLike,
    model: str,
    method: str,
    split: str,
    forget_logprobs: str | os.PathLike | None = None,
    reference_forget_logprobs: str | os.PathLike | None = None,
    reference_log: str | os.PathLike | None = None,
    forget_rows: str | os.PathLike | None = None,
    retain_logprobs: str | os.PathLike | None = None,
    real_authors_logprobs: str | os.PathLike | None = None,
    world_facts_logprobs: str | os.PathLike | None = None,
    rouge: Mapping[str, float] | str | os.PathLike | None = None,
    rouge_metric: str = "tofu_rougeL_recall",
    forget_evalset: str | None = None,
    utility_evalsets: Mapping[str, str] | None = None,
    max_questions: int | None = None,
) -> pl.DataFrame:
    """TOFU metrics of one model → metric rows CSV (columns model, method, split, evalset, metric, value).

    Inputs are per-token log-probability parquet files (:func:`probunlearn.metrics.token_scores.answer_token_table`),
    of which the first ``max_questions`` questions count (TOFU: 300). Rows written:
    - forget set (evalset = ``forget_evalset``, default ``split``): ``answer_prob``, ``truth_ratio_score``
      (forget form), and ``forget_quality`` and ``ks_statistic`` against a reference: the forget-set
      log-probabilities of a retain-only model (``reference_forget_logprobs``), or TOFU's published eval log
      of its retain model (``reference_log``, an ``eval_log_forget.json``; with ``forget_rows``, the forget
      set's rows, its questions are checked against the log's);
    - each utility set (retain, real_authors, world_facts by default; rename with ``utility_evalsets``):
      ``answer_prob`` and ``truth_ratio_score``;
    - ``model_utility`` (evalset ``utility``) when all three utility sets and ``rouge`` (a mapping evalset →
      ROUGE-L recall, or the evaluation metrics CSV with ``rouge_metric`` rows: TOFU's own greedy answers
      by default) are given.
    Returns the rows as a DataFrame.
    """
    base = {"model": model, "method": method, "split": split}
    rows: list[dict] = []

    def add(evalset: str, metric: str, value: float) -> None:
        rows.append({**base, "evalset": evalset, "metric": metric, "value": float(value)})

    fset = forget_evalset or split
    if reference_forget_logprobs is not None and reference_log is not None:
        raise ValueError("give reference_forget_logprobs or reference_log, not both")
    if (reference_forget_logprobs is not None or reference_log is not None) and (
        forget_logprobs is None
    ):
        raise ValueError("a forget-quality reference needs forget_logprobs")
    if forget_logprobs is not None:
        refs = (reference_forget_logprobs, reference_log, forget_rows)
        for row in _forget_rows(fset, forget_logprobs, *refs, max_questions):
            add(*row)

    names = {**TOFU_UTILITY_SETS, **(utility_evalsets or {})}
    paths = {"retain": retain_logprobs, "ra": real_authors_logprobs, "wf": world_facts_logprobs}
    utility_rows, utility = _utility_rows(paths, names, max_questions)
    for row in utility_rows:
        add(*row)
    if len(utility) == 6 and rouge is not None:
        rv = _rouge_values(rouge, [names[k] for k in paths], model, rouge_metric)
        for key in paths:
            utility[f"{key}_rouge"] = rv[names[key]]
        add("utility", "model_utility", model_utility(utility))
    write_metrics(rows, out_csv)
    return pl.DataFrame(
        rows, schema={c: (pl.Float64 if c == "value" else pl.String) for c in METRIC_COLUMNS}
    )

"""Greedy evaluation (one greedy answer per question, scored, as rows of metrics.csv), TOFU's own greedy
answers for its ROUGE, and the teacher-forced per-token log-probabilities of TOFU's metrics and DCUE, for
one model in one job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from probunlearn import models
from probunlearn.data import qa
from probunlearn.metrics.table import write_metrics
from probunlearn.metrics.token_scores import QAFormat
from probunlearn.scoring import keyword_leak, rouge_l
from probunlearn.storage.atomic import write_parquet


def greedy_answers(
    model,
    tokenizer,
    questions: Sequence[str],
    *,
    template: str = qa.DEFAULT_TEMPLATE,
    max_new_tokens: int = 64,
    batch_size: int = 64,
) -> list[str]:
    """Greedy (argmax) answers, through the sampler's decoding engine: each distinct question is decoded
    once, prompts of any length share a batch (left padding) and finished rows leave it."""
    from probunlearn.sampling import sample_answers

    distinct = list(dict.fromkeys(questions))
    df = sample_answers(
        model,
        tokenizer,
        [str(i) for i in range(len(distinct))],
        distinct,
        n=1,
        temperature=0.0,
        max_new_tokens=max_new_tokens,
        template=template,
        seed_key="greedy",
        batch_size=batch_size,
        pack_prompts=True,
        progress=False,
    ).filter(pl.col("sample") == -1)
    answer = dict(zip(distinct, df["text"].to_list(), strict=True))
    return [answer[q] for q in questions]


def rouge_recall(predictions: Sequence[str], references: Sequence[str]) -> list[float]:
    """ROUGE-L recall as TOFU computes it (rouge_score, stemming on; :func:`scoring.rouge_l` is identical
    to the last bit)."""
    return [float(v) for v in rouge_l(list(predictions), list(references))]


def keyword_hits(texts: Sequence[str], keywords: Sequence[Sequence[str]]) -> list[int]:
    """1 where a text names any of its keywords: :func:`scoring.keyword_leak`, the samples' scorer,
    so that a greedy answer and a sampled one count the same matches (case-insensitive, word
    boundaries, curly apostrophes, multi-word keywords across line breaks)."""
    return [int(v) for v in keyword_leak(list(texts), list(keywords))]


def greedy_eval(
    model,
    tokenizer,
    evalset_paths: Sequence[str],
    out_csv: str,
    out_answers: str,
    *,
    model_name: str,
    method: str,
    split: str,
    evalsets: Sequence[str],
    template: str,
    max_new_tokens: int,
    batch_size: int = 64,
    extra_rows: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Greedy answers of a loaded model for each eval set → one answers parquet and metric rows
    (``extra_rows``, already complete metric rows, are written with them). With no eval sets, the
    answers parquet is empty and only ``extra_rows`` are written."""
    base = {"model": model_name, "method": method, "split": split}
    frames, rows = [], []
    if not evalset_paths:
        schema = {"id": pl.String, "question": pl.String, "answer": pl.String, "evalset": pl.String}
        write_parquet(pl.DataFrame(schema=schema), out_answers)
        write_metrics([dict(r) for r in extra_rows], out_csv)
        return
    sets = [pl.read_parquet(path) for path in evalset_paths]
    # the forget splits are nested (forget01 in forget05 in forget10): answer each question once
    questions = [q for df in sets for q in df["question"].to_list()]
    every = greedy_answers(
        model,
        tokenizer,
        questions,
        template=template,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
    )
    start = 0
    for name, df in zip(evalsets, sets, strict=True):
        answers, start = every[start : start + df.height], start + df.height
        rouge = rouge_recall(answers, df["answer"].to_list())
        leak = keyword_hits(answers, df["keywords"].to_list())
        frames.append(
            df.select("id", "question", "answer").with_columns(
                pl.lit(name).alias("evalset"),
                pl.Series("greedy", answers),
                pl.Series("rougeL_recall", rouge, dtype=pl.Float64),
                pl.Series("keyword_leak", leak, dtype=pl.Int64),
            )
        )
        rows.append(
            {
                **base,
                "evalset": name,
                "metric": "greedy_rougeL_recall",
                "value": float(sum(rouge) / len(rouge)),
            }
        )
        if any(len(k) for k in df["keywords"].to_list()):
            rows.append(
                {
                    **base,
                    "evalset": name,
                    "metric": "greedy_keyword_leak",
                    "value": float(sum(leak) / len(leak)),
                }
            )
    write_parquet(pl.concat(frames), out_answers)
    write_metrics(rows + [dict(r) for r in extra_rows], out_csv)


def logprobs_sets(
    model,
    tokenizer,
    evalset_paths: Sequence[str],
    out_paths: Sequence[str],
    *,
    template: str,
    batch_size: int = 64,
    fmt: QAFormat | None = None,
) -> None:
    """Per-token log-probabilities of a loaded model on several eval sets (one parquet each), with TOFU's
    encoding in ``fmt`` (None: the format of ``template``)."""
    from probunlearn.sampling import teacher_forced_logprobs

    for src, dst in zip(evalset_paths, out_paths, strict=True):
        df = teacher_forced_logprobs(
            model,
            tokenizer,
            pl.read_parquet(src),
            template=template,
            fmt=fmt,
            batch_size=batch_size,
        )
        write_parquet(df, dst)


def tofu_format(tofu: Mapping[str, Any]) -> QAFormat:
    """The :class:`~probunlearn.metrics.token_scores.QAFormat` of the config's ``tofu_eval`` section."""
    return QAFormat(
        tofu["question_start_tag"],
        tofu["question_end_tag"],
        tofu["answer_tag"],
        max_length=int(tofu["max_length"]),
    )


def tofu_answers(
    model,
    tokenizer,
    evalset_paths: Sequence[str],
    evalsets: Sequence[str],
    out_answers: str,
    *,
    model_name: str,
    method: str,
    split: str,
    tofu: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """TOFU's own greedy answers (:func:`probunlearn.metrics.tofu.tofu_generate`) on the first
    ``tofu["ds_size"]`` questions of each eval set → an answers parquet; returns the metric rows
    ``tofu_rougeL_recall`` (mean ROUGE-L recall per set, TOFU's "ROUGE")."""
    from probunlearn.metrics.tofu import tofu_generate

    fmt = tofu_format(tofu)
    base = {"model": model_name, "method": method, "split": split}
    frames, rows = [], []
    for name, path in zip(evalsets, evalset_paths, strict=True):
        df = pl.read_parquet(path)
        if tofu.get("ds_size"):
            df = df.head(int(tofu["ds_size"]))
        out = tofu_generate(
            model,
            tokenizer,
            df,
            fmt,
            max_length=int(tofu["generation_max_length"]),
            batch_size=int(tofu["generation_batch_size"]),
        )
        frames.append(out.with_columns(pl.lit(name).alias("evalset")))
        rows.append(
            {
                **base,
                "evalset": name,
                "metric": "tofu_rougeL_recall",
                "value": float(out["rougeL_recall"].mean()),
            }
        )
    schema = {"evalset": pl.String, "id": pl.String, "prompt": pl.String, "generated": pl.String}
    table = (
        pl.concat(frames).select("evalset", pl.exclude("evalset"))
        if frames
        else pl.DataFrame(schema={**schema, "ground_truth": pl.String, "rougeL_recall": pl.Float64})
    )
    write_parquet(table, out_answers)
    return rows


def run_evaluation(
    model_path: str,
    *,
    greedy_paths: Sequence[str],
    greedy_sets: Sequence[str],
    out_csv: str,
    out_answers: str,
    logprob_paths: Sequence[str],
    out_logprobs: Sequence[str],
    model_name: str,
    method: str,
    split: str,
    template: str,
    max_new_tokens: int,
    batch_size: int = 64,
    dtype: str = "float32",
    device: str | None = "auto",
    threads: int | None = None,
    tofu: Mapping[str, Any] | None = None,
    tofu_paths: Sequence[str] = (),
    tofu_sets: Sequence[str] = (),
    out_tofu_answers: str | None = None,
    revision: str | None = None,
    base: str | None = None,
) -> None:
    """Rule evaluate: load one model once; greedy answers, TOFU's own greedy answers (``tofu``: the
    config's ``tofu_eval``, on ``tofu_sets``) and the per-token log-probabilities (with TOFU's encoding
    when ``tofu`` is given, else the format of ``template``). ``model_path``: a model directory, a hub id
    (at ``revision``) or a PEFT adapter on ``base``."""
    models.set_threads(threads)
    tok = models.load_tokenizer(model_path, revision=revision, base=base)
    model = models.load_model(model_path, revision=revision, dtype=dtype, device=device, base=base)
    extra: list[dict[str, Any]] = []
    if tofu is not None and out_tofu_answers is not None:
        extra = tofu_answers(
            model,
            tok,
            tofu_paths,
            tofu_sets,
            out_tofu_answers,
            model_name=model_name,
            method=method,
            split=split,
            tofu=tofu,
        )
    greedy_eval(
        model,
        tok,
        greedy_paths,
        out_csv,
        out_answers,
        model_name=model_name,
        method=method,
        split=split,
        evalsets=greedy_sets,
        template=template,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        extra_rows=extra,
    )
    logprobs_sets(
        model,
        tok,
        logprob_paths,
        out_logprobs,
        template=template,
        batch_size=batch_size,
        fmt=tofu_format(tofu) if tofu is not None else None,
    )

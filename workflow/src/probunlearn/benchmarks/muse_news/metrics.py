"""MUSE-News's own greedy metrics, and the MUSE table: greedy and sampled scores side by side.

MUSE's evaluation (swj0419/muse_bench, metrics/knowmem.py, verbmem.py, logger.py): the greedy answer
(knowmem: 32 new tokens after the few-shot prompt, cut at the first ``\\n\\n``, ``\\nQuestion`` or
``Question:``; verbmem: 128 new tokens after the article prefix) is scored with rouge_score's ROUGE-L
*without* stemming against the reference: the short answer (knowmem) or the true continuation cut to
its first 128 tokens, the tokenizer's BOS counted among them, as MUSE cuts it (verbmem). MUSE reports
the mean F-measure (``mean_rougeL``) ×100; here as a fraction, with the recall beside it.

The greedy answer is the one the sampler decodes for each prompt beside its n samples (its row
``sample = -1``), so the greedy and the sampled columns of the table come from one decoding engine.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from probunlearn.benchmarks.muse_news.sets import KNOWMEM_STOPS, MAX_NEW_TOKENS
from probunlearn.metrics.table import read_metrics
from probunlearn.sampling.sampler import cut_at_stops
from probunlearn.scoring import rouge_l
from probunlearn.storage.atomic import write_csv

__all__ = [
    "TABLE_METRICS",
    "clean_up_tokenization",
    "muse_greedy_scores",
    "muse_table",
    "verbmem_reference",
]

TABLE_METRICS = {
    "muse_rougeL_f1": "greedy_rougeL_f1 (MUSE)",
    "muse_rougeL_recall": "greedy_rougeL_recall (MUSE)",
    "sampled_mean_rougeL_recall": "sampled_mean_rougeL_recall",
    "ed_rougeL_recall": "ed_rougeL_recall",
    "m_mu_rougeL_recall": "m_mu_rougeL_recall",
    "m_sigma_rougeL_recall": "m_sigma_rougeL_recall",
    "greedy_keyword_leak": "greedy_contains_answer",
    "sampled_keyword_leak": "sampled_contains_answer",
    "m_bin_keyword_leak": "m_bin_contains_answer",
}
"""Metric of the long table -> column of the MUSE table, in order."""


_CLEAN_UP = (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't")
_CLEAN_UP += (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")


def clean_up_tokenization(text: str) -> str:
    """transformers' ``clean_up_tokenization`` (the spaces before punctuation and contractions that
    ``decode(..., clean_up_tokenization_spaces=True)`` removes), which MUSE's decoding applies."""
    for a, b in _CLEAN_UP:
        text = text.replace(a, b)
    return text


def verbmem_reference(
    tokenizer, gt: str, max_tokens: int = MAX_NEW_TOKENS["verbmem_forget"]
) -> str:
    """MUSE's verbmem reference: ``gt`` tokenised with the tokenizer's special tokens, cut to its first
    ``max_tokens`` ids, decoded without special tokens and with transformers' clean-up."""
    ids = tokenizer(gt, add_special_tokens=True)["input_ids"][:max_tokens]
    return clean_up_tokenization(tokenizer.decode(ids, skip_special_tokens=True))


def muse_greedy_scores(
    rows: pl.DataFrame, greedy: pl.DataFrame, evalset: str, tokenizer=None
) -> pl.DataFrame:
    """MUSE's ROUGE-L (F1 and recall, no stemming) of each row's greedy answer.

    ``greedy``: ``id``, ``text`` (the greedy rows of the sample shards). ``tokenizer`` (verbmem only)
    cuts the reference as MUSE does. Columns: id, evalset, answer, reference, rougeL_f1,
    rougeL_recall; an id without a greedy answer is an error naming it."""
    by_id = dict(zip(greedy["id"].to_list(), greedy["text"].to_list(), strict=True))
    ids = rows["id"].to_list()
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ValueError(
            f"{evalset}: no greedy answer for {len(missing)} row(s), e.g. {missing[:3]}"
        )
    answers = [by_id[i] for i in ids]
    refs = rows["answer"].to_list()
    if evalset.startswith("knowmem"):
        answers = [cut_at_stops(a, KNOWMEM_STOPS) for a in answers]
    elif tokenizer is not None:
        refs = [verbmem_reference(tokenizer, r) for r in refs]
    return pl.DataFrame(
        {
            "id": ids,
            "evalset": [evalset] * len(ids),
            "answer": answers,
            "reference": refs,
            "rougeL_f1": rouge_l(answers, refs, kind="fmeasure", stem=False),
            "rougeL_recall": rouge_l(answers, refs, kind="recall", stem=False),
        }
    )


def metric_rows(scores: pl.DataFrame, model: str, method: str, split: str) -> list[dict]:
    """The long table's rows of MUSE's greedy metrics: the mean per eval set."""
    out = []
    for (evalset,), part in scores.group_by(["evalset"], maintain_order=True):
        for col in ("rougeL_f1", "rougeL_recall"):
            out.append(
                {
                    "model": model,
                    "method": method,
                    "split": split,
                    "evalset": evalset,
                    "metric": f"muse_{col}",
                    "value": float(part[col].mean()),
                }
            )
    return out


def muse_table(parts: Sequence[str | os.PathLike], out_csv: str | os.PathLike) -> pl.DataFrame:
    """One row per (model, MUSE set): MUSE's greedy ROUGE-L beside the sampled scores and bounds,
    and the model's DCUE p-value (D_f: knowmem forget QA, D_v: holdout continuations; empty for the
    real models). Written atomically to ``out_csv``."""
    long = pl.concat([read_metrics(p) for p in parts])
    models = list(dict.fromkeys(long["model"].to_list()))
    dcue = long.filter(pl.col("metric") == "dcue_pvalue").select("model", "value")
    dcue_of = dict(zip(dcue["model"].to_list(), dcue["value"].to_list(), strict=True))
    cells = long.filter(pl.col("metric").is_in(list(TABLE_METRICS)))
    rows = []
    for model in models:
        mine = cells.filter(pl.col("model") == model)
        method = mine["method"][0] if mine.height else ""
        for evalset in ("knowmem_forget", "knowmem_retain", "verbmem_forget"):
            got = mine.filter(pl.col("evalset") == evalset)
            vals = dict(zip(got["metric"].to_list(), got["value"].to_list(), strict=True))
            row = {"model": model, "method": method, "evalset": evalset}
            row |= {col: vals.get(m) for m, col in TABLE_METRICS.items()}
            row["dcue_pvalue"] = dcue_of.get(model)
            rows.append(row)
    schema = {"model": pl.String, "method": pl.String, "evalset": pl.String}
    schema |= {c: pl.Float64 for c in [*TABLE_METRICS.values(), "dcue_pvalue"]}
    df = pl.DataFrame(rows, schema=schema)
    write_csv(df, out_csv)
    return df

"""Robustness of unlearning metrics to post-processing (DCUE's meta-evaluation).

An unlearned model is fine-tuned briefly on data unrelated to the forget set (e.g. the Real-Authors and
World-Facts QA pairs). The knowledge of the forget set is neither restored nor removed by this, so a
robust metric should barely move. ``run_postfinetune`` does the fine-tune in memory, stores the
teacher-forced log-probabilities of the fine-tuned model on the forget split and the validation set, and
writes TOFU's forget quality and DCUE of the fine-tuned model as metric rows with setting
``postfinetune`` (next to the rows of the unlearned model itself, which have setting "").
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from probunlearn import models
from probunlearn.data.rows import read_rows
from probunlearn.metrics.dcue import check_disjoint
from probunlearn.metrics.table import read_metrics, write_metrics
from probunlearn.steps.dcue import run_dcue
from probunlearn.steps.tofu import run_tofu_metrics
from probunlearn.storage.atomic import write_parquet
from probunlearn.training import train_lm

SETTING = "postfinetune"
# metric rows copied from the TOFU and DCUE parts of the fine-tuned model
KEPT = {
    "forget_quality",
    "ks_statistic",
    "dcue_pvalue",
    "dcue_pvalue_alltokens",
    "dcue_statistic",
    "dcue_delta",
}


def unrelated_examples(paths: Sequence[str], forget_rows: pl.DataFrame) -> list[tuple[str, str]]:
    """QA pairs of the unrelated sets; refuses a set that shares a question with the forget set."""
    forget_q = set(forget_rows["question"].to_list())
    pairs: list[tuple[str, str]] = []
    for p in paths:
        df = pl.read_parquet(p)
        shared = forget_q & set(df["question"].to_list())
        if shared:
            raise ValueError(
                f"{p}: post-processing data must be unrelated to the forget set, but it shares "
                f"{len(shared)} question(s) with it, e.g. {sorted(shared)[0]!r}"
            )
        pairs += list(zip(df["question"].to_list(), df["answer"].to_list(), strict=True))
    return pairs


def _metric_rows(
    forget_logprobs: str,
    val_logprobs: str,
    orig_forget_logprobs: str,
    orig_val_logprobs: str,
    reference_forget_logprobs: str | None,
    reference_log: str | None,
    forget_rows_path: str,
    val_rows_path: str,
    *,
    model_name: str,
    method: str,
    split: str,
    max_questions: int | None,
) -> pl.DataFrame:
    """The rows of :data:`KEPT` (setting :data:`SETTING`) of TOFU's forget quality and DCUE of the
    fine-tuned model, from its log-probabilities on the forget and validation sets."""
    with tempfile.TemporaryDirectory() as tmp:
        tofu_csv, dcue_csv = Path(tmp, "tofu.csv"), Path(tmp, "dcue.csv")
        run_tofu_metrics(
            out_csv=tofu_csv,
            model=model_name,
            method=method,
            split=split,
            forget_logprobs=forget_logprobs,
            reference_forget_logprobs=reference_forget_logprobs,
            reference_log=reference_log,
            forget_rows=forget_rows_path if reference_log is not None else None,
            max_questions=max_questions,
        )
        run_dcue(
            orig_forget_logprobs,
            forget_logprobs,
            orig_val_logprobs,
            val_logprobs,
            forget_rows_path,
            val_rows_path,
            dcue_csv,
            model_name=model_name,
            method=method,
            split=split,
        )
        df = pl.concat([read_metrics(tofu_csv), read_metrics(dcue_csv)])
    return df.filter(pl.col("metric").is_in(sorted(KEPT))).with_columns(
        pl.lit(SETTING).alias("setting")
    )


def run_postfinetune(
    model_dir: str,
    unrelated_paths: Sequence[str],
    forget_rows_path: str,
    val_rows_path: str,
    orig_forget_logprobs: str,
    orig_val_logprobs: str,
    reference_forget_logprobs: str | None,
    out_forget_logprobs: str,
    out_val_logprobs: str,
    out_csv: str,
    *,
    model_name: str,
    method: str,
    split: str,
    train: Mapping[str, float],
    seed: int,
    template: str,
    threads: int | None = None,
    tofu: Mapping[str, Any] | None = None,
    reference_log: str | None = None,
    device: str | None = "auto",
    mixed_precision: bool = False,
) -> pl.DataFrame:
    """Fine-tune an unlearned model on unrelated data, then its forget quality and DCUE.

    ``train``: epochs, lr, batch_size (and optionally warmup_ratio, weight_decay) of the fine-tune.
    ``tofu``: the config's ``tofu_eval`` (TOFU's encoding of the log-probabilities, its ``ds_size``);
    None = the format of ``template`` and every question. The forget quality's reference is
    ``reference_forget_logprobs`` or TOFU's published eval log ``reference_log``.
    The fine-tune runs on ``device`` ("auto" = cuda when available), in bf16 autocast if
    ``mixed_precision``. Returns the metric rows written to ``out_csv`` (setting ``postfinetune``).
    """
    from probunlearn.sampling import teacher_forced_logprobs
    from probunlearn.steps.greedy import tofu_format

    forget_rows, val_rows = read_rows(forget_rows_path), read_rows(val_rows_path)
    check_disjoint(forget_rows, val_rows)
    examples = unrelated_examples(unrelated_paths, forget_rows)
    models.set_threads(threads)
    tok = models.load_tokenizer(model_dir)
    model = models.load_model(model_dir, device=device, merge=True)  # LoRA: fine-tuned whole
    train_lm(
        model,
        tok,
        examples,
        seed=seed,
        template=template,
        loss_on_prompt=False,
        desc="post-processing fine-tune",
        mixed_precision=mixed_precision,
        **train,
    )
    for rows, out in ((forget_rows, out_forget_logprobs), (val_rows, out_val_logprobs)):
        fmt = tofu_format(tofu) if tofu is not None else None
        lp = teacher_forced_logprobs(model, tok, rows, template=template, fmt=fmt)
        write_parquet(lp, out)
    df = _metric_rows(
        out_forget_logprobs,
        out_val_logprobs,
        orig_forget_logprobs,
        orig_val_logprobs,
        reference_forget_logprobs,
        reference_log,
        forget_rows_path,
        val_rows_path,
        model_name=model_name,
        method=method,
        split=split,
        max_questions=(tofu or {}).get("ds_size"),
    )
    write_metrics(df.to_dicts(), out_csv)
    return df

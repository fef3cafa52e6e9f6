"""Rules membership and membership_table: one model's per-example attack statistics on a forget and a
holdout set, and the run's table of AUCs with intervals and PrivLeak, with its figure. Torch is
imported where a model is loaded."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from probunlearn.metrics.membership import membership_table, text_format
from probunlearn.storage.atomic import write_parquet

GRADNORM_P = 2
"""The p-norm of GradNorm's gradients (Wang et al. 2024; open-unlearning's default)."""


def _plain_text(rows: pl.DataFrame) -> bool:
    """Whether rows are raw texts (no question: MUSE's privleak texts), scored whole."""
    return bool((rows["question"] == "").all())


def membership_rows(
    forget_path: str | os.PathLike,
    holdout_path: str | os.PathLike,
    holdout_rows: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The forget set's rows and the holdout set's first ``holdout_rows`` (all: None)."""
    forget = pl.read_parquet(forget_path)
    holdout = pl.read_parquet(holdout_path)
    if holdout_rows is not None:
        if holdout.height < holdout_rows:
            raise ValueError(
                f"{holdout_path}: {holdout.height} rows, {holdout_rows} expected (the config's size)"
            )
        holdout = holdout.head(holdout_rows)
    return forget, holdout


def run_membership(
    model_path: str,
    *,
    forget_path: str | os.PathLike,
    holdout_path: str | os.PathLike,
    out_path: str | os.PathLike,
    model_name: str,
    forget_set: str,
    holdout_set: str,
    statistics: Sequence[str],
    k: float,
    encoding: Mapping[str, Any],
    holdout_rows: int | None = None,
    reference_path: str | os.PathLike | None = None,
    batch_size: int = 32,
    dtype: str = "float32",
    device: str | None = "auto",
    threads: int | None = None,
    revision: str | None = None,
    base: str | None = None,
) -> None:
    """Rule membership: the statistics of one model, teacher-forced on the forget set's rows and
    the holdout set's (its first ``holdout_rows``), one row per example (``set``, ``id``, one column
    per statistic, the scored tokens' ``logprobs``) → ``out_path``.

    Question/answer rows are encoded with ``encoding`` (config ``tofu_eval``'s tags and
    ``max_length``: the tokens TOFU's losses score); sets of raw texts (no question) are scored
    whole (:func:`probunlearn.metrics.membership.text_format`). ``reference_path``: the reference
    model's file of this rule (its ``logprobs``), for the statistics that compare with it. The sets
    are checked before the model is loaded (an overlap is an error naming both)."""
    from probunlearn import models
    from probunlearn.metrics.membership import check_membership_sets, score_membership
    from probunlearn.metrics.token_scores import QAFormat

    forget, holdout = membership_rows(forget_path, holdout_path, holdout_rows)
    check_membership_sets(forget, holdout, forget_name=forget_set, holdout_name=holdout_set)
    plain = _plain_text(forget), _plain_text(holdout)
    if plain[0] != plain[1]:
        raise ValueError(
            f"forget set {forget_set!r} and holdout set {holdout_set!r}: one holds raw texts (no "
            "question), the other question/answer rows; both must be of one kind"
        )
    fmt = text_format() if plain[0] else QAFormat(**encoding)
    reference = None
    if reference_path is not None:
        reference = pl.read_parquet(reference_path, columns=["id", "logprobs"])
    models.set_threads(threads)
    tok = models.load_tokenizer(model_path, revision=revision, base=base)
    model = models.load_model(model_path, revision=revision, dtype=dtype, device=device, base=base)
    frame = score_membership(
        model,
        tok,
        forget,
        holdout,
        fmt,
        k=k,
        statistics=statistics,
        reference_table=reference,
        gradnorm_p=GRADNORM_P,
        batch_size=batch_size,
        model_name=model_name,
        forget_name=forget_set,
        holdout_name=holdout_set,
        keep_logprobs=True,
    )
    write_parquet(frame, out_path)


def run_membership_table(
    parts: Mapping[str, str | os.PathLike],
    *,
    csv_path: str | os.PathLike,
    figure_stem: str | os.PathLike,
    retrained: str | None,
    alpha: float,
    k: float,
) -> None:
    """Rule membership_table: each model's AUC of forget against holdout per statistic with its
    ``1 - alpha`` interval, and PrivLeak against the ``retrained`` model (None: none), from the
    models' files of rule membership (``parts``: model -> file, in the table's order) → the table
    (``csv_path``) and its figure (``figure_stem``.png / .pdf)."""
    from probunlearn.report.figures import fig_membership

    stats = {m: pl.read_parquet(p).drop("logprobs", strict=False) for m, p in parts.items()}
    table = membership_table(stats, retrained=retrained, alpha=alpha, k=k)
    fig_membership(table, figure_stem, os.fspath(csv_path))

"""Membership inference: per-example attack statistics from teacher forcing, their AUC of separating
the forget set from a holdout set with a distribution-free interval, and MUSE's PrivLeak.

Every statistic is computed from the per-token layer (:mod:`probunlearn.metrics.token_scores`), so it
sees the tokens TOFU's losses see. Which text is scored follows open-unlearning's MIA data (the
published choice): for question/answer rows (TOFU, the mini world) the **answer given the question**
(TOFU's labels: the answer tag, the answer and eos; the question part is context only, as in
open-unlearning's ``QADataset``); for MUSE-News's privleak texts the **whole text** (rows with an empty
question and :data:`TEXT_FORMAT`: every token after the first, as MUSE's ``compute_ppl`` and
open-unlearning's ``CompletionDataset``), plus the eos label of the token layer. With ``lp_t`` the
log-probability of scored token t (n of them), the built-in statistics (:mod:`.statistics`; every
statistic is an entry of the registry :data:`STATISTICS`, :mod:`.base`, so a researcher adds one as a
module here or an entry point of the group ``probunlearn.membership_statistics``):

- ``loss`` (LOSS; Yeom et al. 2018): ``-mean_t lp_t``; members low.
- ``zlib`` (Carlini et al. 2021, "zlib"): the log-perplexity over the zlib entropy,
  ``-mean_t lp_t / len(zlib.compress(text.encode("utf-8")))``, text = the row's answer (the scored
  text without the answer tag and eos); members low.
- ``min_k`` (Min-K% Prob, Shi et al. 2024): the mean of the ``max(1, floor(k n))`` lowest ``lp_t``;
  members high. k = 0.4 is MUSE's PrivLeak setting (Shi et al. default to 0.2).
- ``min_k_plus_plus`` (Min-K%++, Zhang et al. 2024): each ``lp_t`` standardised,
  ``(lp_t - mu_t) / sigma_t`` with ``mu_t = E_z[log p(z|x<t)]`` and ``sigma_t^2 = E_z[(log p(z|x<t) -
  mu_t)^2]`` under the model's own next-token distribution ``z ~ p(.|x<t)``, then the mean of the
  ``max(1, floor(k n))`` lowest; members high. Needs a table with ``vocab_stats``.
- ``reference`` (Carlini et al. 2021 compare with a reference model's log-perplexity; here the
  difference, as open-unlearning's ``ReferenceAttack``): ``loss(model) - loss(reference model)``;
  members low. Needs a reference model's token table of the same rows (open-unlearning uses the
  retrained model).
- ``gradnorm`` (Wang et al. 2024; open-unlearning's ``GradNormAttack``): the mean over parameter
  tensors of the ``p``-norm of the gradient of ``loss`` (one backward pass per example, model in eval
  mode); members low. :func:`gradient_norms`.

``floor(k n)`` is the papers' ``int(len * ratio)``, kept at least 1 as open-unlearning does (the papers'
code averages an empty set for short texts). open-unlearning's Min-K% and Min-K%++ drop the last
labelled (eos) token; here every statistic sees the same tokens.

AUC (:func:`probunlearn.bounds.auc_interval`): each statistic oriented so that larger = more
member-like, ``P(forget > holdout) + P(tie) / 2``: 1 = the forget set is fully identifiable, 0.5 =
chance; open-unlearning's ``mia_*`` AUCs have this orientation. PrivLeak: :func:`probunlearn.bounds.privleak`
(MUSE's orientation, -100 for a model that still holds the forget set; MUSE's PrivLeak is the
``min_k`` row with k = 0.4).

Torch-free on import: the token layer (and torch) is loaded where a model is scored.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from probunlearn.metrics.membership.base import (
    NEEDS,
    STATISTICS,
    Statistic,
    Tokens,
    statistic,
    statistic_names,
    statistics,
    statistics_of,
    uses_reference,
)
from probunlearn.storage.atomic import write_csv, write_parquet

if TYPE_CHECKING:  # the token layer imports torch: loaded where a model is scored
    from probunlearn.metrics.token_scores import QAFormat

__all__ = [
    "NEEDS",
    "STATISTICS",
    "TABLE_COLUMNS",
    "TEXT_FORMAT",  # noqa: F822 (module __getattr__: a QAFormat, whose module imports torch)
    "Statistic",
    "Tokens",
    "check_membership_sets",
    "check_statistics",
    "gradient_norms",
    "membership_aucs",
    "membership_statistics",
    "membership_table",
    "min_k_count",
    "score_membership",
    "statistic",
    "statistic_label",
    "statistic_names",
    "statistics",
    "statistics_of",
    "text_format",
    "uses_reference",
    "write_membership_table",
]


def text_format() -> QAFormat:
    """Plain texts (MUSE-News's privleak articles as rows with an empty question): every token
    scored, up to MUSE's 2048 tokens (:data:`TEXT_FORMAT`)."""
    from probunlearn.metrics.token_scores import QAFormat

    return QAFormat("", "", "", max_length=2048)


def __getattr__(name: str) -> Any:
    if name == "TEXT_FORMAT":
        return text_format()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _rows_as_dicts(rows) -> list[dict[str, Any]]:
    """Rows (a frame or dicts) as dicts of ``id`` (the row's, else its position), ``question`` and
    ``answer``: :func:`probunlearn.metrics.token_scores.rows_as_dicts` without its torch import."""
    it = rows.iter_rows(named=True) if isinstance(rows, pl.DataFrame) else rows
    return [
        {
            "id": str(r["id"]) if r.get("id") is not None else str(k),
            "question": r["question"],
            "answer": r["answer"],
        }
        for k, r in enumerate(it)
    ]


TABLE_COLUMNS = {
    "model": pl.String,
    "statistic": pl.String,
    "label": pl.String,
    "member_high": pl.Boolean,
    "n_forget": pl.Int64,
    "n_holdout": pl.Int64,
    "alpha": pl.Float64,
    "auc": pl.Float64,
    "auc_lo": pl.Float64,
    "auc_hi": pl.Float64,
    "retrained": pl.Boolean,
    "privleak": pl.Float64,
    "privleak_lo": pl.Float64,
    "privleak_hi": pl.Float64,
}
"""Columns of the per-run membership table (:func:`membership_table`)."""


def _check_k(k: float) -> float:
    if isinstance(k, bool) or not isinstance(k, int | float) or not 0.0 < float(k) <= 1.0:
        raise ValueError(f"k must be a fraction in (0, 1], got {k!r}")
    return float(k)


def statistic_label(name: str, k: float = 0.4) -> str:
    """The figure label of a statistic (``Min-40%`` for ``min_k`` at k = 0.4)."""
    return statistic(name).label_for(_check_k(k))


def min_k_count(n: int, k: float) -> int:
    """How many of n tokens Min-K% averages: ``max(1, int(n * k))`` (module docstring)."""
    return max(1, int(n * _check_k(k)))


def check_statistics(
    statistics: Sequence[str] | None,
    *,
    reference: bool,
    vocab_stats: bool,
    backward: bool,
    model: str = "model",
) -> list[str]:
    """The statistics to compute: ``statistics`` checked (None = every one the inputs allow), in
    the order given.

    A statistic whose input is missing is a ValueError naming it and the model: ``reference``
    without a reference model, ``min_k_plus_plus`` without the next-token moments, ``gradnorm``
    without gradient norms."""
    have = {"reference": reference, "vocab_stats": vocab_stats, "backward": backward}
    known = statistic_names()
    if statistics is None:
        return [s for s in known if all(have.get(n) for n in statistic(s).needs)]
    names = list(statistics)
    unknown = [s for s in names if s not in known]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"statistics must be distinct names out of {known}, got {names}")
    for s in names:
        for need in statistic(s).needs:
            if need not in NEEDS:
                raise ValueError(
                    f"statistic {s!r} needs {need!r}, which is none of the inputs {list(NEEDS)}"
                )
            if not have[need]:
                raise ValueError(
                    f"statistic {s!r} of model {model!r} needs {NEEDS[need]}; none given"
                )
    return names


# --------------------------------------------------------------------------------------------------------
# the sets


def _ids_questions(rows) -> list[tuple[str, str]]:
    return [(r["id"], r["question"]) for r in _rows_as_dicts(rows)]


def check_membership_sets(
    forget_rows,
    holdout_rows,
    *,
    forget_name: str = "forget",
    holdout_name: str = "holdout",
) -> None:
    """Refuse a holdout set that overlaps the forget set (a shared id, or a shared non-empty question
    or text): ValueError naming both sets and the first shared item. Warn when the sizes differ (the
    AUC is still defined; its interval then rests on the smaller set)."""
    forget, holdout = _ids_questions(forget_rows), _ids_questions(holdout_rows)
    for name, rows in ((forget_name, forget), (holdout_name, holdout)):
        if not rows:
            raise ValueError(f"the {name} set is empty: membership inference needs examples in it")
    f_ids = {i for i, _ in forget}
    if shared := [i for i, _ in holdout if i in f_ids]:
        raise ValueError(
            f"holdout set {holdout_name!r} overlaps forget set {forget_name!r}: {len(shared)} shared "
            f"id(s), first {shared[0]!r}; a holdout set must hold examples the model never trained on"
        )
    f_q = {q for _, q in forget if q.strip()}
    if shared := [q for _, q in holdout if q.strip() and q in f_q]:
        raise ValueError(
            f"holdout set {holdout_name!r} overlaps forget set {forget_name!r}: {len(shared)} shared "
            f"question(s), first {shared[0]!r}"
        )
    f_a = {a for a in (r["answer"] for r in _rows_as_dicts(forget_rows)) if a.strip()}
    h_a = [r["answer"] for r in _rows_as_dicts(holdout_rows) if r["question"] == ""]
    if shared := [a for a in h_a if a.strip() and a in f_a]:
        raise ValueError(
            f"holdout set {holdout_name!r} overlaps forget set {forget_name!r}: {len(shared)} shared "
            f"text(s), first starting {shared[0][:60]!r}"
        )
    if len(forget) != len(holdout):
        warnings.warn(
            f"holdout set {holdout_name!r} has {len(holdout)} examples, forget set {forget_name!r} "
            f"{len(forget)}: the AUC's interval rests on the smaller one",
            UserWarning,
            stacklevel=2,
        )


# --------------------------------------------------------------------------------------------------------
# the statistics


def _answers(table: pl.DataFrame, name: str, need: Sequence[str] = ("id", "logprobs", "text")):
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing} (a token_scores.answer_token_table)")
    if "kind" in table.columns:
        table = table.filter(pl.col("kind") == "answer")
    if table.height == 0:
        raise ValueError(f"{name}: no answer rows")
    if table["id"].is_duplicated().any():
        dup = table.filter(table["id"].is_duplicated())["id"][0]
        raise ValueError(f"{name}: id {dup!r} appears twice")
    empty = table.filter(pl.col("logprobs").list.len().fill_null(0) == 0)
    if empty.height:
        raise ValueError(
            f"{name}: id {empty['id'][0]!r} has no scored token (its question part fills max_length?)"
        )
    return table


def _floats(values: list) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.float64) for v in values]


def membership_statistics(
    table: pl.DataFrame,
    *,
    k: float = 0.4,
    statistics: Sequence[str] | None = None,
    reference: pl.DataFrame | None = None,
    gradnorm: pl.DataFrame | Mapping[str, float] | None = None,
    model: str = "model",
) -> pl.DataFrame:
    """Per-example statistics (:data:`STATISTICS`) from a token table of one model.

    ``table``: :func:`probunlearn.metrics.token_scores.answer_token_table` of the rows (its ``answer``
    rows are used; ``vocab_stats=True`` for Min-K%++); ``reference``: the ``id`` and ``logprobs`` of a
    reference model on the same ids (its token table, or its :func:`score_membership` frame with
    ``keep_logprobs``); ``gradnorm``: id -> gradient norm (:func:`gradient_norms`). ``statistics``:
    None = every one these inputs allow. Returns ``id`` and one Float64 column per statistic, in
    the order asked (registry order for None).
    """
    k = _check_k(k)
    t = _answers(table, f"token table of {model!r}")
    vocab = {"vocab_mean", "vocab_std"} <= set(t.columns)
    names = check_statistics(
        statistics,
        reference=reference is not None,
        vocab_stats=vocab,
        backward=gradnorm is not None,
        model=model,
    )
    ids = t["id"].to_list()
    ref = grads = None
    if reference is not None and any(uses_reference(s) for s in names):
        r = _answers(reference, f"reference token table of {model!r}", ("id", "logprobs"))
        by_id = dict(zip(r["id"].to_list(), r["logprobs"].to_list(), strict=True))
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise ValueError(
                f"reference token table of {model!r} lacks id(s) {missing[:3]} of the model's"
            )
        ref = _floats([by_id[i] for i in ids])
    if gradnorm is not None and any("backward" in statistic(s).needs for s in names):
        g = (
            dict(zip(gradnorm["id"].to_list(), gradnorm["gradnorm"].to_list(), strict=True))
            if isinstance(gradnorm, pl.DataFrame)
            else dict(gradnorm)
        )
        missing = [i for i in ids if i not in g]
        if missing:
            raise ValueError(f"gradnorm of {model!r} lacks id(s) {missing[:3]}")
        grads = np.array([float(g[i]) for i in ids], dtype=np.float64)
    tokens = Tokens(
        ids=ids,
        logprobs=_floats(t["logprobs"].to_list()),
        texts=[str(x) for x in t["text"].to_list()],
        k=k,
        vocab_mean=_floats(t["vocab_mean"].to_list()) if vocab else None,
        vocab_std=_floats(t["vocab_std"].to_list()) if vocab else None,
        reference=ref,
        gradnorm=grads,
        model=model,
    )
    out: dict[str, Any] = {"id": ids}
    for s in names:
        values = np.asarray(statistic(s).compute(tokens), dtype=np.float64)
        if values.shape != (len(ids),):
            raise ValueError(
                f"statistic {s!r} of model {model!r} returned shape {values.shape}, expected one "
                f"value per example ({len(ids)})"
            )
        out[s] = values
    return pl.DataFrame(out, schema={"id": pl.String, **{s: pl.Float64 for s in names}})


def gradient_norms(
    model,
    tokenizer,
    rows,
    fmt: QAFormat,
    *,
    p: float = 2.0,
    device: str | None = None,
) -> pl.DataFrame:
    """GradNorm of each row's answer: the mean over the model's parameter tensors of the ``p``-norm
    (1, 2 or inf) of the gradient of the answer's loss (the mean token NLL of TOFU's labels, one
    sequence at a time, model in eval mode; the parameters' ``.grad`` are left untouched). Returns
    ``id``, ``gradnorm``."""
    import torch

    from probunlearn import models
    from probunlearn.metrics.token_scores import encode_pair

    if p not in (1, 2, math.inf):
        raise ValueError(f"p must be 1, 2 or inf, got {p!r}")
    dev = next(model.parameters()).device
    if device is not None and models.resolve_device(str(device)) != dev:
        dev = models.resolve_device(str(device))
        model.to(dev)
    params = list(model.parameters())
    frozen = [q.requires_grad for q in params]
    was_training = model.training
    model.eval()
    out_ids, norms = [], []
    try:
        for q in params:
            q.requires_grad_(True)
        for r in _rows_as_dicts(rows):
            e = encode_pair(tokenizer, r["question"], r["answer"], fmt)
            js = e.scored
            if not js:
                raise ValueError(f"row {r['id']!r} has no scored token")
            ids = torch.tensor([e.input_ids], dtype=torch.long, device=dev)
            logits = model(input_ids=ids).logits[0]
            pos = torch.tensor([j - 1 for j in js], device=dev)
            tgt = torch.tensor([e.labels[j] for j in js], device=dev)
            logp = logits[pos].float().log_softmax(-1).gather(-1, tgt.unsqueeze(-1))
            loss = -logp.mean()
            grads = torch.autograd.grad(loss, params, allow_unused=True)
            each = [torch.linalg.vector_norm(g.float(), ord=p) for g in grads if g is not None]
            out_ids.append(r["id"])
            norms.append(float(torch.stack(each).mean()))
    finally:
        for q, f in zip(params, frozen, strict=True):
            q.requires_grad_(f)
        model.train(was_training)
    return pl.DataFrame(
        {"id": out_ids, "gradnorm": norms}, schema={"id": pl.String, "gradnorm": pl.Float64}
    )


def score_membership(
    model,
    tokenizer,
    forget_rows,
    holdout_rows,
    fmt: QAFormat,
    *,
    k: float = 0.4,
    statistics: Sequence[str] | None = None,
    reference_model=None,
    reference_tokenizer=None,
    reference_fmt: QAFormat | None = None,
    reference_table: pl.DataFrame | None = None,
    gradnorm_p: float | None = None,
    batch_size: int = 32,
    device: str | None = None,
    model_name: str = "model",
    forget_name: str = "forget",
    holdout_name: str = "holdout",
    keep_logprobs: bool = False,
) -> pl.DataFrame:
    """Per-example statistics of a model on a forget and a holdout set (one row per example, with
    ``set`` = forget / holdout), from token tables with the next-token moments (Min-K%++).

    The sets are checked first (:func:`check_membership_sets`), and so are the statistics asked for
    (:func:`check_statistics`), before the model runs. The Reference statistic takes the reference
    model's log-probabilities from ``reference_model`` (scored here, with its own tokenizer and
    format, default the model's) or from ``reference_table`` (``id`` and ``logprobs`` of both sets:
    a reference model's frame of this function with ``keep_logprobs``); ``gradnorm_p`` (1, 2 or
    inf): GradNorm (a backward pass per example). ``keep_logprobs`` adds each example's scored-token
    log-probabilities (column ``logprobs``)."""
    from probunlearn.metrics.token_scores import answer_token_table

    check_membership_sets(
        forget_rows, holdout_rows, forget_name=forget_name, holdout_name=holdout_name
    )
    if reference_model is not None and reference_table is not None:
        raise ValueError("give reference_model or reference_table, not both")
    names = check_statistics(
        statistics,
        reference=reference_model is not None or reference_table is not None,
        vocab_stats=True,
        backward=gradnorm_p is not None,
        model=model_name,
    )
    needs = {n for s in names for n in statistic(s).needs}
    frames = []
    for set_name, rows in (("forget", forget_rows), ("holdout", holdout_rows)):
        plain = [
            {"id": r["id"], "question": r["question"], "answer": r["answer"]}
            for r in _rows_as_dicts(rows)
        ]
        table = answer_token_table(
            model, tokenizer, plain, fmt, batch_size=batch_size, device=device, vocab_stats=True
        )
        ref = reference_table if "reference" in needs else None
        if reference_model is not None and "reference" in needs:
            ref = answer_token_table(
                reference_model,
                reference_tokenizer if reference_tokenizer is not None else tokenizer,
                plain,
                reference_fmt if reference_fmt is not None else fmt,
                batch_size=batch_size,
                device=device,
            )
        grads = None
        if gradnorm_p is not None and "backward" in needs:
            grads = gradient_norms(model, tokenizer, plain, fmt, p=gradnorm_p, device=device)
        stats = membership_statistics(
            table, k=k, statistics=names, reference=ref, gradnorm=grads, model=model_name
        )
        stats = stats.with_columns(pl.lit(set_name).alias("set")).select("set", *stats.columns)
        if keep_logprobs:
            lps = _answers(table, f"token table of {model_name!r}").select("id", "logprobs")
            stats = stats.join(lps, on="id", how="left", maintain_order="left").with_columns(
                pl.col("logprobs").cast(pl.List(pl.Float64))
            )
        frames.append(stats)
    return pl.concat(frames)


# --------------------------------------------------------------------------------------------------------
# AUCs, PrivLeak, the per-run table


def _oriented(stats: pl.DataFrame, name: str, model: str) -> tuple[np.ndarray, np.ndarray]:
    if "set" not in stats.columns or name not in stats.columns:
        raise ValueError(
            f"statistics of {model!r} need columns 'set' and {name!r} (has {stats.columns})"
        )
    sets = set(stats["set"].unique().to_list())
    if not sets <= {"forget", "holdout"}:
        raise ValueError(
            f"statistics of {model!r}: set must be forget or holdout, got {sorted(sets)}"
        )
    sign = 1.0 if statistic(name).member_high else -1.0
    f = stats.filter(pl.col("set") == "forget")[name].to_numpy().astype(np.float64)
    h = stats.filter(pl.col("set") == "holdout")[name].to_numpy().astype(np.float64)
    for set_name, v in (("forget", f), ("holdout", h)):
        if v.size == 0:
            raise ValueError(f"statistics of {model!r}: no {set_name} example")
        if not np.isfinite(v).all():
            raise ValueError(f"statistics of {model!r}: {name} is not finite on the {set_name} set")
    return sign * f, sign * h


def _stat_names(stats: pl.DataFrame) -> list[str]:
    return [s for s in statistic_names() if s in stats.columns]


def membership_aucs(
    stats: pl.DataFrame,
    *,
    alpha: float = 0.05,
    method: str = "kl",
    k: float = 0.4,
    model: str = "model",
) -> pl.DataFrame:
    """AUC of forget against holdout with a ``1 - alpha`` interval, per statistic of
    :func:`score_membership`'s frame: ``model``, ``statistic``, ``label``, ``member_high``,
    ``n_forget``, ``n_holdout``, ``alpha``, ``auc``, ``auc_lo``, ``auc_hi``."""
    from probunlearn import bounds  # on use: scipy is slow to import (the DAG reads this package)

    a = bounds.check_alpha(alpha)
    rows = []
    for s in _stat_names(stats):
        f, h = _oriented(stats, s, model)
        auc, lo, hi = bounds.auc_interval(f, h, a, method=method)
        rows.append(
            {
                "model": model,
                "statistic": s,
                "label": statistic_label(s, k),
                "member_high": statistic(s).member_high,
                "n_forget": int(f.size),
                "n_holdout": int(h.size),
                "alpha": a,
                "auc": auc,
                "auc_lo": lo,
                "auc_hi": hi,
            }
        )
    if not rows:
        raise ValueError(f"statistics of {model!r} hold no statistic column {statistic_names()}")
    return pl.DataFrame(rows, schema={c: TABLE_COLUMNS[c] for c in rows[0]})


def membership_table(
    stats: Mapping[str, pl.DataFrame],
    *,
    retrained: str | None = None,
    alpha: float = 0.05,
    method: str = "kl",
    k: float = 0.4,
) -> pl.DataFrame:
    """The per-run membership table: per (model, statistic) the AUC with its ``1 - alpha`` interval,
    and, against the ``retrained`` model (the retain-only reference, the line to reach), PrivLeak in
    MUSE's orientation with a ``1 - alpha`` interval from the two AUCs' intervals at ``alpha / 2``
    each (:func:`probunlearn.bounds.privleak_interval`). ``stats``: model name -> its
    :func:`score_membership` frame, in the table's order. Columns: :data:`TABLE_COLUMNS`."""
    from probunlearn import bounds

    a = bounds.check_alpha(alpha)
    if not stats:
        raise ValueError("stats is empty: no model to tabulate")
    if retrained is not None and retrained not in stats:
        raise ValueError(f"retrained model {retrained!r} is not among the models {list(stats)}")
    half: dict[tuple[str, str], tuple[float, float, float]] = {}
    frames = []
    for name, frame in stats.items():
        t = membership_aucs(frame, alpha=a, method=method, k=k, model=name)
        frames.append(t)
        for s in t["statistic"].to_list():
            f, h = _oriented(frame, s, name)
            half[(name, s)] = bounds.auc_interval(f, h, a / 2, method=method)
    rows = []
    for t in frames:
        for r in t.iter_rows(named=True):
            key_r = (retrained, r["statistic"])
            pl_val = pl_lo = pl_hi = None
            if retrained is not None and r["model"] != retrained and key_r in half:
                u, r_ = half[(r["model"], r["statistic"])], half[key_r]
                pl_val = bounds.privleak(r["auc"], r_[0])
                pl_lo, pl_hi = bounds.privleak_interval(u[1:], r_[1:])
            rows.append(
                {
                    **r,
                    "retrained": r["model"] == retrained,
                    "privleak": pl_val,
                    "privleak_lo": pl_lo,
                    "privleak_hi": pl_hi,
                }
            )
    return pl.DataFrame(rows, schema=TABLE_COLUMNS)


def write_membership_table(df: pl.DataFrame, path: str | os.PathLike) -> Path:
    """Write a membership table atomically: parquet for ``.parquet``, CSV for ``.csv``."""
    missing = [c for c in TABLE_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"membership table lacks column(s) {missing}")
    suffix = Path(path).suffix
    if suffix == ".parquet":
        return write_parquet(df.select(list(TABLE_COLUMNS)), path)
    if suffix == ".csv":
        return write_csv(df.select(list(TABLE_COLUMNS)), path)
    raise ValueError(f"{path}: expected a .parquet or .csv path")

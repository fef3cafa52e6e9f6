"""Rule dcue: DCUE of one unlearned model from the log-probability tables, written as metric rows."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import polars as pl

from probunlearn.data.rows import read_rows
from probunlearn.metrics.dcue import (
    Extractor,
    LLMCoreExtractor,
    check_disjoint,
    core_confidence,
    core_spans,
    dcue,
)
from probunlearn.metrics.table import write_metrics
from probunlearn.storage.atomic import write_parquet


def _aligned(conf: pl.DataFrame, ids: list[str]) -> np.ndarray:
    c = dict(zip(conf["id"].to_list(), conf["confidence"].to_list(), strict=True))
    a = np.array([c[i] for i in ids], dtype=np.float64)
    return a[np.isfinite(a)]


def _confidences(
    tables: Mapping[str, str | os.PathLike],
    forget_rows: pl.DataFrame,
    val_rows: pl.DataFrame,
    spans: Mapping,
) -> dict[tuple[str, bool], pl.DataFrame]:
    """Per-row confidences of each log-probability table (``of``, ``uf``, ``ov``, ``uv``: original
    or unlearned model on the forget or validation set), on the core tokens and on all tokens:
    ``{(table, core): frame}``."""
    frames = {k: pl.read_parquet(p) for k, p in tables.items()}
    conf: dict[tuple[str, bool], pl.DataFrame] = {}
    for core in (True, False):
        for k, tab in frames.items():
            rows_ = forget_rows if k[1] == "f" else val_rows
            conf[(k, core)] = core_confidence(tab, rows_, use_core=core, spans=spans)
    return conf


def _write_confidences(
    conf: Mapping[tuple[str, bool], pl.DataFrame], path: str | os.PathLike
) -> None:
    """All confidences in one parquet file, with columns ``model`` (original / unlearned),
    ``set`` (forget / val) and ``core``."""
    frames = []
    for (k, core), df in conf.items():
        frames.append(
            df.with_columns(
                pl.lit({"o": "original", "u": "unlearned"}[k[0]]).alias("model"),
                pl.lit({"f": "forget", "v": "val"}[k[1]]).alias("set"),
                pl.lit(core).alias("core"),
            )
        )
    write_parquet(pl.concat(frames), path)


def run_dcue(
    orig_forget_logprobs: str | os.PathLike,
    unl_forget_logprobs: str | os.PathLike,
    orig_val_logprobs: str | os.PathLike,
    unl_val_logprobs: str | os.PathLike,
    forget_rows_path: str | os.PathLike,
    val_rows_path: str | os.PathLike,
    out_csv: str | os.PathLike,
    *,
    model_name: str,
    method: str,
    split: str,
    evalset: str | None = None,
    use_core: bool = True,
    location: str = "median",
    correction: str = "capped",
    core_model: str | None = None,
    core_model_revision: str | None = None,
    core_prompts: Mapping[str, str] | None = None,
    extractor: Extractor | None = None,
    out_confidences: str | os.PathLike | None = None,
) -> dict[str, float]:
    """DCUE of one unlearned model on one forget split → metric rows in ``out_csv``.

    Metrics: ``dcue_pvalue`` / ``dcue_statistic`` (core tokens when ``use_core``), ``dcue_pvalue_alltokens``
    / ``dcue_statistic_alltokens`` (exactness ablation), ``dcue_shift_forget``, ``dcue_shift_val``,
    ``dcue_delta``, ``dcue_pvalue_uncorrected`` and ``dcue_core_fallback`` (fraction of rows without a core
    token); ``evalset`` defaults to ``split``. Core spans come from the rows, else from the LLM extractor
    ``core_model`` (or ``extractor``), else the heuristic; the same spans serve both models.
    ``core_prompts`` may set ``reformulation_prompt`` and ``core_prompt`` of the LLM extractor (a missing
    or null prompt keeps the built-in one).
    """
    forget_rows, val_rows = read_rows(forget_rows_path), read_rows(val_rows_path)
    check_disjoint(forget_rows, val_rows)
    if extractor is None and core_model:
        prompts = {k: v for k, v in (core_prompts or {}).items() if v}
        extractor = LLMCoreExtractor(core_model, revision=core_model_revision, **prompts)
    spans = {**core_spans(forget_rows, extractor), **core_spans(val_rows, extractor)}
    tables = {
        "of": orig_forget_logprobs,
        "uf": unl_forget_logprobs,
        "ov": orig_val_logprobs,
        "uv": unl_val_logprobs,
    }
    conf = _confidences(tables, forget_rows, val_rows, spans)
    f_ids = [str(i) for i in forget_rows["id"].to_list()]
    v_ids = [str(i) for i in val_rows["id"].to_list()]

    def _run(core: bool) -> dict[str, float]:
        return dcue(
            _aligned(conf[("of", core)], f_ids),
            _aligned(conf[("uf", core)], f_ids),
            _aligned(conf[("ov", core)], v_ids),
            _aligned(conf[("uv", core)], v_ids),
            location=location,
            correction=correction,
        )

    main, alltok = _run(use_core), _run(False)
    fb = conf[("of", True)]["fallback"].mean()
    values = {
        "dcue_pvalue": main["pvalue"],
        "dcue_statistic": main["statistic"],
        "dcue_pvalue_alltokens": alltok["pvalue"],
        "dcue_statistic_alltokens": alltok["statistic"],
        "dcue_shift_forget": main["shift_forget"],
        "dcue_shift_val": main["shift_val"],
        "dcue_delta": main["delta"],
        "dcue_pvalue_uncorrected": main["pvalue_uncorrected"],
        "dcue_core_fallback": float(fb) if use_core else 0.0,
    }
    base = {"model": model_name, "method": method, "split": split, "evalset": evalset or split}
    write_metrics([{**base, "metric": m, "value": v} for m, v in values.items()], out_csv)
    if out_confidences is not None:
        _write_confidences(conf, out_confidences)
    return values

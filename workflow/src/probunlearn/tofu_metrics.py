"""TOFU's metrics: truth ratio, forget quality and model utility (Maini et al., 2024).

The formulas replicate TOFU's reference code (github.com/locuslab/tofu, ``evaluate_util.py`` and
``aggregate_eval_stat.py``). All inputs are **mean per-token negative log-likelihoods** (TOFU's
``avg_gt_loss``, ``avg_paraphrased_loss`` and ``average_perturb_loss``: the summed token NLL of an answer
divided by its number of tokens).

- Truth ratio of a question: ``R = exp(nll_para - mean_j nll_pert_j)`` = P̃(perturbed) / P̃(paraphrased), with
  P̃ = exp(-mean token NLL) and the perturbed answers combined by a geometric mean (an arithmetic mean of
  their mean NLLs). TOFU stores its reciprocal ``exp(mean_j nll_pert_j - nll_para)``.
- Truth-ratio score ("Truth Ratio" in TOFU's tables): ``mean(max(0, 1 - R))`` on retain / Real Authors /
  World Facts, ``mean(min(R, 1/R))`` on a forget set.
- Answer probability ("Prob."): ``mean(exp(-nll_answer))`` on retain and forget sets; on Real Authors and
  World Facts the options-normalised ``P̃(answer) / (P̃(answer) + Σ_j P̃(perturbed_j))``.
- Forget quality: the two-sided KS-test p-value (``scipy.stats.ks_2samp``, default method) between the
  truth ratios of the model and of the retain-only reference model on the forget set. TOFU runs the test on
  the stored reciprocal 1/R; the KS statistic and p-value are invariant under a strictly monotone map applied
  to both samples, so running it on R gives the same result.
- Model utility: the harmonic mean of the nine numbers (Prob., ROUGE-L recall, truth-ratio score) × (retain,
  Real Authors, World Facts).
- For Real Authors and World Facts, which have no paraphrased answer, TOFU's eval config
  (``base_answer_key: answer``) uses the answer itself in the truth ratio's place of the paraphrase.
- TOFU evaluates the first ``ds_size = 300`` questions of each set (``config/eval_everything.yaml``): pass
  ``max_questions=300`` to replicate that cut; the default uses every question.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl
from scipy import special, stats

from probunlearn import metrics_io

__all__ = [
    "METRIC_COLUMNS",
    "TOFU_EVAL_SIZE",
    "UTILITY_KEYS",
    "answer_probability",
    "evalset_role",
    "forget_quality",
    "model_utility",
    "question_nlls",
    "run_tofu_metrics",
    "tofu_stats_from_logprobs",
    "truth_ratio",
    "truth_ratio_score",
]

METRIC_COLUMNS = metrics_io.METRIC_COLUMNS
TOFU_EVAL_SIZE = 300  # TOFU's ds_size: questions per eval set in its reference evaluation
UTILITY_KEYS = (
    "retain_prob",
    "retain_rouge",
    "retain_tr",
    "ra_prob",
    "ra_rouge",
    "ra_tr",
    "wf_prob",
    "wf_rouge",
    "wf_tr",
)
_UTILITY_SETS = {"retain": "retain", "ra": "real_authors", "wf": "world_facts"}


# --------------------------------------------------------------------------------------------------------
# input checks


def _vector(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per question), got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


def _options(x, n: int, name: str) -> list[np.ndarray]:
    """Per-question arrays of perturbed NLLs: a 2-D array or a (possibly ragged) sequence of sequences."""
    if isinstance(x, np.ndarray) and x.ndim == 2:
        rows = [np.asarray(r, dtype=np.float64) for r in x]
    else:
        try:
            rows = [np.asarray(r, dtype=np.float64) for r in x]
        except TypeError as e:
            raise ValueError(f"{name} must be 2-D (questions × perturbed answers)") from e
    if len(rows) != n:
        raise ValueError(f"{name} has {len(rows)} questions, expected {n}")
    for i, r in enumerate(rows):
        if r.ndim != 1:
            raise ValueError(
                f"{name} must be 2-D (questions × perturbed answers); question {i} is not 1-D"
            )
        if r.size == 0:
            raise ValueError(f"{name}: question {i} has no perturbed answers")
        if not np.all(np.isfinite(r)):
            raise ValueError(f"{name}: question {i} has NaN or infinite values")
    return rows


# --------------------------------------------------------------------------------------------------------
# the formulas


def truth_ratio(paraphrased_nll, perturbed_nll) -> np.ndarray:
    """Per-question truth ratio R = exp(nll_para − mean_j nll_pert_j) = P̃(perturbed) / P̃(paraphrased).

    ``paraphrased_nll``: (questions,) mean per-token NLLs; ``perturbed_nll``: (questions × k) mean per-token
    NLLs (rows may differ in length). R < 1 when the model prefers the paraphrased (true) answer.
    """
    para = _vector(paraphrased_nll, "paraphrased_nll")
    pert = _options(perturbed_nll, para.size, "perturbed_nll")
    mean_pert = np.array([r.mean() for r in pert])
    with np.errstate(over="ignore"):
        return np.exp(para - mean_pert)


def truth_ratio_score(tr, forget: bool = False) -> float:
    """TOFU's "Truth Ratio" statistic: mean(max(0, 1 − R)) (retain / utility sets; higher = prefers the
    truth), or mean(min(R, 1/R)) with ``forget=True`` (forget set; 1 = indifferent between true and false)."""
    r = np.asarray(tr, dtype=np.float64)
    if r.ndim != 1 or r.size == 0:
        raise ValueError(f"truth ratios must be a non-empty 1-D array, got shape {r.shape}")
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError("truth ratios must be non-negative numbers")
    with np.errstate(divide="ignore"):
        if forget:
            return float(np.mean(np.minimum(r, 1.0 / r)))
        return float(np.mean(np.maximum(0.0, 1.0 - r)))


def forget_quality(tr_model, tr_reference) -> float:
    """Forget quality: p-value of the two-sample KS test between the forget-set truth ratios of the model
    and of the reference (retain-only) model. High (→ 1) = indistinguishable from the reference."""
    return float(_ks(tr_model, tr_reference).pvalue)


def _ks(tr_model, tr_reference):
    a = np.asarray(tr_model, dtype=np.float64)
    b = np.asarray(tr_reference, dtype=np.float64)
    for name, x in (("tr_model", a), ("tr_reference", b)):
        if x.ndim != 1 or x.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array, got shape {x.shape}")
        if np.any(np.isnan(x)):
            raise ValueError(f"{name} contains NaN")
    return stats.ks_2samp(a, b)


def answer_probability(answer_nll, perturbed_nll=None) -> float:
    """TOFU's "Prob.": mean over questions of P̃(answer) = exp(−mean token NLL) (retain, forget); with
    ``perturbed_nll`` (Real Authors, World Facts) the options-normalised P̃(answer) / (P̃(answer) +
    Σ_j P̃(perturbed_j)), computed in log space (a softmax over −NLLs) so that it cannot underflow."""
    ans = _vector(answer_nll, "answer_nll")
    if perturbed_nll is None:
        return float(np.mean(np.exp(-ans)))
    pert = _options(perturbed_nll, ans.size, "perturbed_nll")
    probs = [special.softmax(-np.concatenate([[a], p]))[0] for a, p in zip(ans, pert, strict=True)]
    return float(np.mean(probs))


def model_utility(values: Mapping[str, float]) -> float:
    """Harmonic mean of TOFU's nine utility numbers, keyed by :data:`UTILITY_KEYS` (``retain_prob``,
    ``retain_rouge``, ``retain_tr``, ``ra_*`` for Real Authors, ``wf_*`` for World Facts); each in [0, 1].
    0 when any of them is 0."""
    missing = [k for k in UTILITY_KEYS if k not in values]
    if missing:
        raise ValueError(
            f"model_utility: missing value(s) {missing}; expected keys {list(UTILITY_KEYS)}"
        )
    unknown = [k for k in values if k not in UTILITY_KEYS]
    if unknown:
        raise ValueError(
            f"model_utility: unknown key(s) {unknown}; expected keys {list(UTILITY_KEYS)}"
        )
    xs = []
    for k in UTILITY_KEYS:
        try:
            v = float(values[k])
        except (TypeError, ValueError) as e:
            raise ValueError(f"model_utility: {k} is not a number: {values[k]!r}") from e
        if not (0.0 <= v <= 1.0):  # also rejects NaN
            raise ValueError(f"model_utility: {k} = {v} is outside [0, 1]")
        xs.append(v)
    if min(xs) == 0.0:
        return 0.0
    return float(stats.hmean(xs))


# --------------------------------------------------------------------------------------------------------
# from the teacher-forced log-probability table


def evalset_role(evalset: str) -> str:
    """'forget', 'retain' (retain / holdout and other author sets), 'real_authors' or 'world_facts'."""
    name = evalset.lower()
    for role in ("forget", "real_authors", "world_facts"):
        if name.startswith(role):
            return role
    return "retain"


def question_nlls(logprobs_df: pl.DataFrame) -> dict[str, dict]:
    """Mean per-token NLL of each answer in a ``teacher_forced_logprobs`` table.

    Returns {id: {"answer": float | None, "paraphrased": float | None, "perturbed": list[float]}} in the
    order of first appearance (perturbed sorted by index). Raises on a duplicate (id, kind, index), an
    unknown kind or an answer with no tokens.
    """
    need = {"id", "kind", "index", "logprobs"}
    missing = need - set(logprobs_df.columns)
    if missing:
        raise ValueError(f"log-probability table: missing column(s) {sorted(missing)}")
    df = logprobs_df.select(
        pl.col("id").cast(pl.String),
        "kind",
        pl.col("index").cast(pl.Int64),
        (-pl.col("logprobs").list.mean()).alias("nll"),
        pl.col("logprobs").list.len().alias("n_tokens"),
    )
    out: dict[str, dict] = {}
    seen: set[tuple[str, str, int]] = set()
    pert: dict[str, list[tuple[int, float]]] = {}
    for pid, kind, index, nll, n_tokens in df.iter_rows():
        key = (pid, kind, index)
        if key in seen:
            raise ValueError(
                f"log-probability table: duplicate row id={pid!r} kind={kind!r} index={index}"
            )
        seen.add(key)
        if kind not in ("answer", "paraphrased", "perturbed"):
            raise ValueError(f"log-probability table: unknown kind {kind!r} (id={pid!r})")
        if not n_tokens or nll is None or not math.isfinite(nll):
            raise ValueError(
                f"log-probability table: id={pid!r} kind={kind!r} index={index} has no finite token log-probs"
            )
        entry = out.setdefault(pid, {"answer": None, "paraphrased": None, "perturbed": []})
        if kind == "perturbed":
            pert.setdefault(pid, []).append((index, float(nll)))
        else:
            entry[kind] = float(nll)
    for pid, items in pert.items():
        out[pid]["perturbed"] = [v for _, v in sorted(items)]
    return out


def tofu_stats_from_logprobs(
    logprobs_df: pl.DataFrame, evalset_kind: str, *, max_questions: int | None = None
) -> dict:
    """TOFU's per-question NLLs and statistics for one eval set from its log-probability table.

    ``evalset_kind``: 'forget' / 'retain' / 'real_authors' / 'world_facts' (or an eval-set name starting
    with one; other names count as 'retain'). Real Authors / World Facts use the answer in place of the
    paraphrased answer and options-normalised probabilities, as TOFU does. ``max_questions`` keeps the first
    questions only (TOFU: 300).

    Returns ids, answer_nll, paraphrased_nll, perturbed_nll (list of arrays), truth_ratio (arrays), and
    answer_prob and truth_ratio_score (floats).
    """
    role = evalset_role(evalset_kind)
    nlls = question_nlls(logprobs_df)
    ids = list(nlls)
    if max_questions is not None:
        if max_questions < 1:
            raise ValueError(f"max_questions must be >= 1, got {max_questions}")
        ids = ids[:max_questions]
    if not ids:
        raise ValueError("log-probability table is empty")
    options = role in ("real_authors", "world_facts")
    answer, para, pert = [], [], []
    for pid in ids:
        e = nlls[pid]
        if e["answer"] is None:
            raise ValueError(f"{role}: id={pid!r} has no 'answer' row")
        if not e["perturbed"]:
            raise ValueError(
                f"{role}: id={pid!r} has no 'perturbed' rows (needed for the truth ratio)"
            )
        base = e["answer"] if options else e["paraphrased"]
        if base is None:
            raise ValueError(f"{role}: id={pid!r} has no 'paraphrased' row")
        answer.append(e["answer"])
        para.append(base)
        pert.append(np.asarray(e["perturbed"]))
    tr = truth_ratio(para, pert)
    return {
        "ids": ids,
        "answer_nll": np.asarray(answer),
        "paraphrased_nll": np.asarray(para),
        "perturbed_nll": pert,
        "truth_ratio": tr,
        "answer_prob": answer_probability(answer, pert if options else None),
        "truth_ratio_score": truth_ratio_score(tr, forget=role == "forget"),
    }


# --------------------------------------------------------------------------------------------------------
# file-level entry point


def _write_metrics(rows: list[dict], path: str | os.PathLike) -> Path:
    metrics_io.write_metrics(rows, path)
    return Path(path)


def _rouge_values(
    rouge: Mapping[str, float] | str | os.PathLike, evalsets: Sequence[str], model: str
) -> dict[str, float]:
    """ROUGE-L recall per eval set: from a mapping, or from a greedy-eval metrics CSV
    (metric ``greedy_rougeL_recall``; rows of ``model`` when present, greedy ``setting`` when present)."""
    if isinstance(rouge, Mapping):
        missing = [e for e in evalsets if e not in rouge]
        if missing:
            raise ValueError(f"ROUGE values missing for eval set(s) {missing}")
        return {e: float(rouge[e]) for e in evalsets}
    schema = {c: (pl.Float64 if c == "value" else pl.String) for c in METRIC_COLUMNS}
    df = pl.read_csv(rouge, schema_overrides=schema).filter(
        pl.col("metric") == "greedy_rougeL_recall"
    )
    if "model" in df.columns and model in df["model"].to_list():
        df = df.filter(pl.col("model") == model)
    if "setting" in df.columns:  # the long table's sampling-setting column: greedy rows have ""
        df = df.filter(pl.col("setting").cast(pl.String).fill_null("") == "")
    out = {}
    for e in evalsets:
        vals = df.filter(pl.col("evalset") == e)["value"].to_list()
        if len(vals) != 1:
            raise ValueError(
                f"{rouge}: expected one greedy_rougeL_recall row for evalset {e!r}, found {len(vals)}"
            )
        out[e] = float(vals[0])
    return out


def run_tofu_metrics(
    *,
    out_csv: str | os.PathLike,
    model: str,
    method: str,
    split: str,
    forget_logprobs: str | os.PathLike | None = None,
    reference_forget_logprobs: str | os.PathLike | None = None,
    retain_logprobs: str | os.PathLike | None = None,
    real_authors_logprobs: str | os.PathLike | None = None,
    world_facts_logprobs: str | os.PathLike | None = None,
    rouge: Mapping[str, float] | str | os.PathLike | None = None,
    forget_evalset: str | None = None,
    utility_evalsets: Mapping[str, str] | None = None,
    max_questions: int | None = None,
) -> pl.DataFrame:
    """TOFU metrics of one model → metric rows CSV (columns model, method, split, evalset, metric, value).

    Inputs are ``teacher_forced_logprobs`` parquet files. Rows written:
    - forget set (evalset = ``forget_evalset``, default ``split``): ``answer_prob``, ``truth_ratio_score``
      (forget form), and with ``reference_forget_logprobs`` ``forget_quality`` and ``ks_statistic``;
    - each utility set (retain, real_authors, world_facts by default; rename with ``utility_evalsets``):
      ``answer_prob`` and ``truth_ratio_score``;
    - ``model_utility`` (evalset ``utility``) when all three utility sets and ``rouge`` (a mapping evalset →
      ROUGE-L recall, or the greedy-eval metrics CSV) are given.
    Returns the rows as a DataFrame.
    """
    base = {"model": model, "method": method, "split": split}
    rows: list[dict] = []

    def add(evalset: str, metric: str, value: float) -> None:
        rows.append({**base, "evalset": evalset, "metric": metric, "value": float(value)})

    fset = forget_evalset or split
    if reference_forget_logprobs is not None and forget_logprobs is None:
        raise ValueError("reference_forget_logprobs needs forget_logprobs")
    if forget_logprobs is not None:
        fs = tofu_stats_from_logprobs(
            pl.read_parquet(forget_logprobs), "forget", max_questions=max_questions
        )
        add(fset, "answer_prob", fs["answer_prob"])
        add(fset, "truth_ratio_score", fs["truth_ratio_score"])
        if reference_forget_logprobs is not None:
            rs = tofu_stats_from_logprobs(
                pl.read_parquet(reference_forget_logprobs), "forget", max_questions=max_questions
            )
            if rs["ids"] != fs["ids"]:
                raise ValueError(
                    f"{forget_logprobs} and {reference_forget_logprobs} cover different questions"
                )
            ks = _ks(fs["truth_ratio"], rs["truth_ratio"])
            add(fset, "forget_quality", ks.pvalue)
            add(fset, "ks_statistic", ks.statistic)

    names = {**_UTILITY_SETS, **(utility_evalsets or {})}
    paths = {"retain": retain_logprobs, "ra": real_authors_logprobs, "wf": world_facts_logprobs}
    utility: dict[str, float] = {}
    for key, path in paths.items():
        if path is None:
            continue
        st = tofu_stats_from_logprobs(
            pl.read_parquet(path), _UTILITY_SETS[key], max_questions=max_questions
        )
        add(names[key], "answer_prob", st["answer_prob"])
        add(names[key], "truth_ratio_score", st["truth_ratio_score"])
        utility[f"{key}_prob"] = st["answer_prob"]
        utility[f"{key}_tr"] = st["truth_ratio_score"]
    if len(utility) == 6 and rouge is not None:
        rv = _rouge_values(rouge, [names[k] for k in paths], model)
        for key in paths:
            utility[f"{key}_rouge"] = rv[names[key]]
        add("utility", "model_utility", model_utility(utility))
    _write_metrics(rows, out_csv)
    return pl.DataFrame(
        rows, schema={c: (pl.Float64 if c == "value" else pl.String) for c in METRIC_COLUMNS}
    )

"""TOFU's metrics: per-question losses, truth ratio, forget quality and model utility (Maini et al., 2024).

The formulas replicate TOFU's reference code (github.com/locuslab/tofu, ``data_module.py``,
``evaluate_util.py`` and ``utils.py``).

- Losses (:func:`tofu_losses`): TOFU's normalised loss of an answer, the summed token NLL of its labels
  divided by their number, with TOFU's labels (``answer_tag + answer`` and one eos, the question part
  ``question_start_tag + question + question_end_tag`` masked), the tokenizer's own special tokens and
  truncation at ``max_length`` (see :mod:`probunlearn.metrics.token_scores`, the token layer DCUE shares). These are
  TOFU's ``avg_gt_loss``, ``avg_paraphrased_loss`` and ``average_perturb_loss``; every statistic below takes
  them as input.
- Truth ratio of a question: ``R = exp(nll_para - mean_j nll_pert_j)`` = P̃(perturbed) / P̃(paraphrased), with
  P̃ = exp(-mean token NLL) and the perturbed answers combined by a geometric mean (an arithmetic mean of
  their mean NLLs). TOFU's eval logs store R (``truth_ratio``); its ``get_forget_quality`` recomputes the
  reciprocal ``exp(mean_j nll_pert_j - nll_para)``.
- Truth-ratio score ("Truth Ratio" in TOFU's tables): ``mean(max(0, 1 - R))`` on retain / Real Authors /
  World Facts, ``mean(min(R, 1/R))`` on a forget set.
- Answer probability ("Prob."): ``mean(exp(-nll_answer))`` on retain and forget sets; on Real Authors and
  World Facts the options-normalised ``P̃(answer) / (P̃(answer) + Σ_j P̃(perturbed_j))``.
- ROUGE (:func:`tofu_generate`): ROUGE-L recall of TOFU's own greedy answer (``run_generation``): the prompt
  is the question part *without* the answer tag (for Phi ``"Question: {q}\\n"``), batches are left-padded,
  and ``max_length`` counts the padded prompt.
- Forget quality: the two-sided KS-test p-value (``scipy.stats.ks_2samp``, default method) between the
  truth ratios of the model and of the retain-only reference model on the forget set: a reference model
  of the run, or TOFU's published eval log of its own retain model (:func:`read_eval_log`). The KS
  statistic and p-value are invariant under a strictly monotone map applied to both samples, so running it
  on R or on 1/R gives the same result.
- Model utility: the harmonic mean of the nine numbers (Prob., ROUGE-L recall, truth-ratio score) × (retain,
  Real Authors, World Facts).
- For Real Authors and World Facts, which have no paraphrased answer, TOFU's eval config
  (``base_answer_key: answer``) uses the answer itself in the truth ratio's place of the paraphrase.
- TOFU evaluates the first ``ds_size = 300`` questions of each set (``config/eval_everything.yaml``): pass
  ``max_questions=300`` to replicate that cut; the default uses every question.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from probunlearn.metrics.table import METRIC_COLUMNS

__all__ = [
    "METRIC_COLUMNS",
    "TOFU_EVAL_SIZE",
    "UTILITY_KEYS",
    "answer_probability",
    "evalset_role",
    "forget_quality",
    "model_utility",
    "losses_from_token_table",
    "question_nlls",
    "read_eval_log",
    "tofu_generate",
    "tofu_generation_inputs",
    "tofu_losses",
    "tofu_stats_from_logprobs",
    "truth_ratio",
    "truth_ratio_score",
]

METRIC_COLUMNS = METRIC_COLUMNS
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
TOFU_UTILITY_SETS = {"retain": "retain", "ra": "real_authors", "wf": "world_facts"}


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
    return float(ks_test(tr_model, tr_reference).pvalue)


def ks_test(tr_model, tr_reference):
    a = np.asarray(tr_model, dtype=np.float64)
    b = np.asarray(tr_reference, dtype=np.float64)
    for name, x in (("tr_model", a), ("tr_reference", b)):
        if x.ndim != 1 or x.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array, got shape {x.shape}")
        if np.any(np.isnan(x)):
            raise ValueError(f"{name} contains NaN")
    from scipy import stats  # imported on use: the evaluate jobs only generate

    return stats.ks_2samp(a, b)


def answer_probability(answer_nll, perturbed_nll=None) -> float:
    """TOFU's "Prob.": mean over questions of P̃(answer) = exp(−mean token NLL) (retain, forget); with
    ``perturbed_nll`` (Real Authors, World Facts) the options-normalised P̃(answer) / (P̃(answer) +
    Σ_j P̃(perturbed_j)), computed in log space (a softmax over −NLLs) so that it cannot underflow."""
    ans = _vector(answer_nll, "answer_nll")
    if perturbed_nll is None:
        return float(np.mean(np.exp(-ans)))
    pert = _options(perturbed_nll, ans.size, "perturbed_nll")
    from scipy import special

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
    from scipy import stats

    return float(stats.hmean(xs))


# --------------------------------------------------------------------------------------------------------
# TOFU's losses and greedy answers, from a model


def tofu_losses(
    model,
    tokenizer,
    rows: pl.DataFrame | Sequence[Mapping[str, Any]],
    *,
    question_start_tag: str,
    question_end_tag: str,
    answer_tag: str,
    max_length: int = 200,
    batch_size: int = 32,
    device: str | None = None,
) -> pl.DataFrame:
    """TOFU's normalised losses of each row's answer, paraphrased answer and perturbed answers.

    ``rows``: eval-set rows (a DataFrame or mappings) with ``question``, ``answer`` and optionally ``id``,
    ``paraphrased_answer`` and ``perturbed_answers`` (or TOFU's ``perturbed_answer``). Each answer is
    encoded as TOFU's ``convert_raw_data_to_model_format`` does (:mod:`probunlearn.metrics.token_scores`) and its
    loss is the summed NLL of its labelled tokens divided by their number, as ``get_batch_loss`` and
    ``evaluate_util`` compute it (in float32 from the model's logits).

    Returns one row per question, in order: ``id``, ``answer_loss``, ``paraphrased_loss`` (null where the
    row has no paraphrased answer), ``perturbed_loss`` (list), and the numbers of labelled tokens
    ``answer_tokens``, ``paraphrased_tokens``, ``perturbed_tokens`` (TOFU's ``num_token_*``). A loss over
    no labelled token (a question part longer than ``max_length``) is NaN, as TOFU's 0/0.
    """
    from probunlearn.metrics.token_scores import QAFormat, answer_token_table

    fmt = QAFormat(question_start_tag, question_end_tag, answer_tag, max_length=max_length)
    table = answer_token_table(model, tokenizer, rows, fmt, batch_size=batch_size, device=device)
    return losses_from_token_table(table)


def losses_from_token_table(table: pl.DataFrame) -> pl.DataFrame:
    """:func:`tofu_losses`' rows from a per-token table (:func:`probunlearn.metrics.token_scores.answer_token_table`,
    the ``logprobs/*.parquet`` files of the workflow)."""
    out: dict[str, dict[str, Any]] = {}
    for pid, kind, index, lps in table.select("id", "kind", "index", "logprobs").iter_rows():
        e = out.setdefault(
            pid,
            {
                "id": pid,
                "answer_loss": None,
                "paraphrased_loss": None,
                "perturbed_loss": [],
                "answer_tokens": None,
                "paraphrased_tokens": None,
                "perturbed_tokens": [],
                "_pert": [],
            },
        )
        n = len(lps or [])
        loss = -float(np.sum(lps)) / n if n else float("nan")
        if kind == "perturbed":
            e["_pert"].append((index, loss, n))
        elif kind in ("answer", "paraphrased"):
            e[f"{kind}_loss"], e[f"{kind}_tokens"] = loss, n
        else:
            raise ValueError(f"token table: unknown kind {kind!r} (id={pid!r})")
    for e in out.values():
        pert = sorted(e.pop("_pert"))
        e["perturbed_loss"] = [x[1] for x in pert]
        e["perturbed_tokens"] = [x[2] for x in pert]
    return pl.DataFrame(
        list(out.values()),
        schema={
            "id": pl.String,
            "answer_loss": pl.Float64,
            "paraphrased_loss": pl.Float64,
            "perturbed_loss": pl.List(pl.Float64),
            "answer_tokens": pl.Int64,
            "paraphrased_tokens": pl.Int64,
            "perturbed_tokens": pl.List(pl.Int64),
        },
    )


def tofu_generation_inputs(tokenizer, rows, fmt) -> tuple[list[str], list[str]]:
    """(prompts, ground truths) of TOFU's greedy generation (``evaluate_util.run_generation``).

    TOFU decodes each encoded question/answer text (:func:`probunlearn.metrics.token_scores.encode_pair`: tags,
    special tokens, truncation at ``fmt.max_length``) without special tokens and splits it at a symbol:
    the answer tag (Phi: ``"Answer: "``; the prompt is then ``"Question: {q}\\n"``, without the tag), or,
    when the answer tag is blank, the question end tag, which is added back to the prompt (Llama-2:
    ``" [/INST]"``). The ground truth is the text after the symbol (up to a further occurrence of it).
    """
    from probunlearn.metrics.token_scores import rows_as_dicts

    symbol = fmt.answer_tag if fmt.answer_tag.strip() else fmt.question_end_tag
    if not symbol:
        raise ValueError("TOFU's generation needs a non-empty answer tag or question end tag")
    keep = not fmt.answer_tag.strip()
    prompts, truths = [], []
    for r in rows_as_dicts(rows):
        ids = tokenizer(
            fmt.full_text(r["question"], r["answer"]),
            add_special_tokens=fmt.add_special_tokens,
            max_length=int(fmt.max_length),
            truncation=True,
        )["input_ids"]
        parts = tokenizer.decode(ids, skip_special_tokens=True).split(symbol)
        if len(parts) < 2:
            raise ValueError(
                f"question {r['id']!r}: {symbol!r} is not in the encoded text (truncated at "
                f"max_length={fmt.max_length}?), so TOFU's generation has no prompt"
            )
        prompts.append(parts[0] + (symbol if keep else ""))
        truths.append(parts[1])
    return prompts, truths


def _generate_left_padded(
    model, tokenizer, prompts: list[str], fmt, *, max_length: int, batch_size: int, dev
) -> list[str]:
    """Greedy answers to ``prompts`` as TOFU generates them: consecutive batches left-padded with
    the eos token, decoded until eos or ``max_length`` tokens counting the padded prompt (an empty
    answer where the prompt fills it). The tokenizer's padding settings are restored after."""
    import torch

    eos = tokenizer.eos_token_id
    side = tokenizer.padding_side
    pad_token = tokenizer.pad_token
    generated: list[str] = []
    try:
        tokenizer.padding_side = "left"
        tokenizer.pad_token = tokenizer.eos_token
        for b in range(0, len(prompts), batch_size):
            chunk = prompts[b : b + batch_size]
            enc = tokenizer(
                chunk,
                add_special_tokens=fmt.add_special_tokens,
                padding=True,
                return_tensors="pt",
            )
            width = enc["input_ids"].shape[-1]
            budget = int(max_length) - width
            if budget <= 0:
                generated += [""] * len(chunk)
                continue
            with torch.inference_mode():
                out = model.generate(
                    enc["input_ids"].to(dev),
                    attention_mask=enc["attention_mask"].to(dev),
                    max_new_tokens=budget,
                    do_sample=False,
                    use_cache=True,
                    pad_token_id=eos,
                )
            generated += tokenizer.batch_decode(out[:, width:], skip_special_tokens=True)
    finally:
        tokenizer.padding_side = side
        tokenizer.pad_token = pad_token
    return generated


def tofu_generate(
    model,
    tokenizer,
    rows,
    fmt,
    *,
    max_length: int = 200,
    batch_size: int = 30,
    device: str | None = None,
) -> pl.DataFrame:
    """TOFU's greedy answers and their ROUGE-L recall (``evaluate_util.run_generation`` and
    ``eval_rouge_recall``).

    Prompts and ground truths from :func:`tofu_generation_inputs`; consecutive batches of ``batch_size``
    prompts (TOFU's eval ``batch_size``: 30) are left-padded with the eos token, tokenised with the
    tokenizer's own special tokens, and decoded greedily until eos or until ``max_length`` tokens counting
    the padded prompt (TOFU's ``generation.max_length``: 200). ROUGE-L recall against the ground truth
    with stemming (rouge_score's, :func:`probunlearn.scoring.rouge_l`).

    Returns one row per question: ``id``, ``prompt``, ``generated``, ``ground_truth``, ``rougeL_recall``.
    """

    from probunlearn import models
    from probunlearn.metrics.token_scores import rows_as_dicts
    from probunlearn.scoring import rouge_l

    if batch_size < 1 or max_length < 1:
        raise ValueError(f"batch_size and max_length must be >= 1, got {batch_size}, {max_length}")
    ids_ = [r["id"] for r in rows_as_dicts(rows)]
    prompts, truths = tofu_generation_inputs(tokenizer, rows, fmt)
    dev = next(model.parameters()).device
    if device is not None and models.resolve_device(str(device)) != dev:
        dev = models.resolve_device(str(device))
        model.to(dev)
    generated = _generate_left_padded(
        model, tokenizer, prompts, fmt, max_length=max_length, batch_size=batch_size, dev=dev
    )
    scores = rouge_l(generated, truths) if generated else np.zeros(0)
    return pl.DataFrame(
        {
            "id": ids_,
            "prompt": prompts,
            "generated": generated,
            "ground_truth": truths,
            "rougeL_recall": [float(x) for x in scores],
        },
        schema={
            "id": pl.String,
            "prompt": pl.String,
            "generated": pl.String,
            "ground_truth": pl.String,
            "rougeL_recall": pl.Float64,
        },
    )


# --------------------------------------------------------------------------------------------------------
# TOFU's published eval logs


def read_eval_log(
    path: str | os.PathLike, *, questions: Sequence[str] | None = None
) -> dict[str, Any]:
    """Per-question losses and truth ratios of one of TOFU's eval logs (``eval_log_forget.json`` and
    its siblings: ``{"avg_paraphrased_loss": {"0": v, ...}, "average_perturb_loss": {"0": [v, ...], ...},
    ...}``), in the file's order, as TOFU's ``get_forget_quality`` reads them.

    Returns ``indices`` (ints), ``paraphrased_nll``, ``perturbed_nll`` (questions × k), ``truth_ratio``
    (R, as :func:`truth_ratio`), ``answer_nll`` (``avg_gt_loss``, or None) and ``prompts`` (the generation
    prompts of ``generated_text``, or None). With ``questions`` (the eval set's first questions, in
    order), checks that the log has as many questions and that each of its prompts contains the
    question, and raises ValueError otherwise.
    """
    try:
        log = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable TOFU eval log ({e})") from e
    need = ("avg_paraphrased_loss", "average_perturb_loss")
    if not isinstance(log, dict) or any(not isinstance(log.get(k), dict) for k in need):
        raise ValueError(f"{path}: a TOFU eval log needs the mappings {list(need)}")
    para_d, pert_d = log["avg_paraphrased_loss"], log["average_perturb_loss"]
    if list(para_d) != list(pert_d):
        raise ValueError(
            f"{path}: avg_paraphrased_loss and average_perturb_loss differ in questions"
        )
    try:
        indices = [int(k) for k in para_d]
    except ValueError as e:
        raise ValueError(f"{path}: question keys must be integers ({e})") from e
    if indices != list(range(len(indices))):
        raise ValueError(f"{path}: question keys must be 0..n-1 in order")
    para = _vector(list(para_d.values()), f"{path}: avg_paraphrased_loss")
    pert = _options(list(pert_d.values()), para.size, f"{path}: average_perturb_loss")
    gt = log.get("avg_gt_loss")
    prompts = None
    if isinstance(log.get("generated_text"), dict):
        prompts = [str(v[0]) for v in log["generated_text"].values()]
    if questions is not None:
        qs = list(questions)
        if len(qs) != para.size:
            raise ValueError(
                f"{path}: the log has {para.size} questions, the eval set's first ones are {len(qs)}"
            )
        if prompts is not None:
            bad = [i for i, (q, p) in enumerate(zip(qs, prompts, strict=False)) if q not in p]
            if bad or len(prompts) != len(qs):
                raise ValueError(
                    f"{path}: question {bad[0] if bad else len(prompts)} of the log is not the eval "
                    "set's: the log was made on other questions or in another order"
                )
    return {
        "indices": indices,
        "paraphrased_nll": para,
        "perturbed_nll": pert,
        "truth_ratio": truth_ratio(para, pert),
        "answer_nll": None if not isinstance(gt, dict) else np.asarray(list(gt.values()), float),
        "prompts": prompts,
    }


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


# TOFU's config/eval_everything.yaml: 300 questions a set, 200 tokens, and greedy generation in batches
# of 30, left-padded: the padded prompt counts towards the 200, so the batch sets each answer's budget
TOFU_LIMITS = {
    "ds_size": 300,
    "max_length": 200,
    "generation_max_length": 200,
    "generation_batch_size": 30,
}

TOFU_TAGS = {
    # TOFU's own tags (DESIGN §6): the answer tag is part of the scored labels, as in TOFU
    "phi": {"question_start_tag": "Question: ", "question_end_tag": "\n", "answer_tag": "Answer: "},
    "llama2": {"question_start_tag": "[INST] ", "question_end_tag": " [/INST]", "answer_tag": ""},
}


def tofu_tags(tofu_format: str) -> dict:
    """TOFU's encoding of a model family (``phi`` or ``llama2``) with TOFU's lengths: the forget
    quality and model utility of ``probunlearn evaluate`` are computed exactly as TOFU computes them."""
    if tofu_format not in TOFU_TAGS:
        raise ValueError(f"tofu_format {tofu_format!r}: expected one of {sorted(TOFU_TAGS)}")
    return {**TOFU_TAGS[tofu_format], **TOFU_LIMITS}

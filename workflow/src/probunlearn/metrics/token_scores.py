"""Teacher-forced per-token scores of question/answer pairs: the one token layer under TOFU's losses
(:func:`probunlearn.metrics.tofu.tofu_losses`) and DCUE's core-token confidences, so that both see the
same tokens.

A pair is encoded as TOFU encodes it (``data_module.convert_raw_data_to_model_format`` of
github.com/locuslab/tofu):

- the text is ``question_start_tag + question + question_end_tag + answer_tag + answer``, tokenised in
  one piece with the tokenizer's own special tokens (``add_special_tokens=True``: a Llama tokenizer adds
  its bos token, Phi's and GPT-2's add nothing) and truncated to ``max_length`` tokens;
- the labels are those tokens followed by one eos token, unless the text fills ``max_length`` (then the
  eos label is lost);
- the first ``len(tokenize(question_start_tag + question + question_end_tag, add_special_tokens=True))``
  labels are masked (the question part, counted on its own tokenisation), every other label is scored:
  ``answer_tag + answer`` and eos.

:func:`score_encodings` runs the model on such encodings in batches (right padding, any device) and
returns, for every scored label, its log-probability and the top-1 probability of that position; with
``vocab_stats=True`` also the mean and standard deviation of log p(z | x<t) over z drawn from the model's
own next-token distribution at that position (Min-K%++'s normalisation, Zhang et al. 2024).
:func:`answer_token_table` does this for the answer, paraphrased and perturbed answers of eval-set rows
and keeps each scored token's character span in the answer, for DCUE's core tokens.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from probunlearn import models

if TYPE_CHECKING:  # polars is imported where a table is built: scoring needs only torch
    import polars as pl

__all__ = [
    "IGNORE_INDEX",
    "TABLE_SCHEMA",  # noqa: F822 (module __getattr__: built on first use, it needs polars)
    "TOFU_LLAMA2",
    "VOCAB_SCHEMA",  # noqa: F822 (as TABLE_SCHEMA)
    "TOFU_PHI",
    "Encoded",
    "QAFormat",
    "answer_token_table",
    "encode_pair",
    "format_from_template",
    "rows_as_dicts",
    "score_encodings",
]

IGNORE_INDEX = -100


@dataclass(frozen=True)
class QAFormat:
    """How a question/answer pair becomes text, as TOFU's model configs say it
    (``config/model_config.yaml``), and the longest encoding in tokens (TOFU's ``max_length``).

    ``add_special_tokens``: whether the tokenizer adds its own special tokens (TOFU: always; False for
    a format taken from a chat template, which writes its special tokens itself)."""

    question_start_tag: str
    question_end_tag: str
    answer_tag: str
    max_length: int = 200
    add_special_tokens: bool = True

    def __post_init__(self) -> None:
        if int(self.max_length) < 2:
            raise ValueError(f"max_length must be >= 2, got {self.max_length}")

    def question_text(self, question: str) -> str:
        """The question part: ``question_start_tag + question + question_end_tag``."""
        return self.question_start_tag + question + self.question_end_tag

    def full_text(self, question: str, answer: str) -> str:
        """The whole text: the question part, ``answer_tag``, the answer."""
        return self.question_text(question) + self.answer_tag + answer


TOFU_PHI = QAFormat(
    "Question: ", "\n", "Answer: "
)  # TOFU's tags for Phi-1.5 (and StableLM, Pythia)
TOFU_LLAMA2 = QAFormat("[INST] ", " [/INST]", "")  # TOFU's tags for Llama-2-7b-chat


def format_from_template(
    template: str, *, answer_tag: str = " ", max_length: int = 200, add_special_tokens: bool = True
) -> QAFormat:
    """The format of a prompt template ``"...{question}..."`` (literal braces doubled, as for
    ``str.format``) whose answer follows after ``answer_tag`` (the workflow's templates: a space)."""
    if template.count("{question}") != 1:
        raise ValueError(f"template must contain {{question}} exactly once, got {template!r}")
    start, end = template.split("{question}")
    unesc = lambda s: s.replace("{{", "{").replace("}}", "}")  # noqa: E731
    return QAFormat(
        unesc(start),
        unesc(end),
        answer_tag,
        max_length=max_length,
        add_special_tokens=add_special_tokens,
    )


@dataclass(frozen=True)
class Encoded:
    """One encoded pair. ``labels`` has one entry per input token, plus the eos label when the text did
    not reach ``max_length``; ``IGNORE_INDEX`` marks unscored labels. ``offsets`` and ``in_answer`` hold
    one entry per scored label (in order): its [start, end) characters within the answer (clipped to the
    answer; (-1, -1) for a token with no character of the answer: the answer tag, eos) and whether it
    covers any character of the answer."""

    input_ids: list[int]
    labels: list[int]
    offsets: list[tuple[int, int]]
    in_answer: list[bool]

    @property
    def scored(self) -> list[int]:
        """Indices j >= 1 of the scored labels (the label at j is predicted from position j - 1)."""
        return [j for j in range(1, len(self.labels)) if self.labels[j] != IGNORE_INDEX]


def encode_pair(tokenizer, question: str, answer: str, fmt: QAFormat) -> Encoded:
    """Encode one question/answer pair as TOFU does (see the module docstring)."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer has no eos token: TOFU's labels end with one")
    qtext = fmt.question_text(question)
    full = qtext + fmt.answer_tag + answer
    n_question = len(tokenizer.tokenize(qtext, add_special_tokens=fmt.add_special_tokens))
    fast = bool(getattr(tokenizer, "is_fast", False))
    enc = tokenizer(
        full,
        add_special_tokens=fmt.add_special_tokens,
        max_length=int(fmt.max_length),
        truncation=True,
        return_offsets_mapping=fast,
    )
    ids = list(enc["input_ids"])
    labels = ids + ([eos] if len(ids) < fmt.max_length else [])
    for i in range(min(n_question, len(labels))):
        labels[i] = IGNORE_INDEX
    a0 = len(qtext) + len(fmt.answer_tag)
    a1 = a0 + len(answer)
    char = list(enc["offset_mapping"]) if fast else None
    offsets: list[tuple[int, int]] = []
    in_answer: list[bool] = []
    for j in range(1, len(labels)):
        if labels[j] == IGNORE_INDEX:
            continue
        if char is None or j >= len(ids):
            s = e = 0
        else:
            s, e = max(char[j][0], a0), min(char[j][1], a1)
        if s < e:
            offsets.append((s - a0, e - a0))
            in_answer.append(True)
        else:
            offsets.append((-1, -1))
            in_answer.append(False)
    return Encoded(ids, labels, offsets, in_answer)


def _device_of(model) -> torch.device:
    return next(model.parameters()).device


def score_encodings(
    model,
    encodings: Sequence[Encoded],
    *,
    batch_size: int = 32,
    device: str | torch.device | None = None,
    pad_token_id: int = 0,
    vocab_stats: bool = False,
) -> list[tuple[np.ndarray, ...]]:
    """(log-probabilities, top-1 probabilities) of the scored labels of each encoding, in order.

    Encodings of similar length share a forward pass (right padding with an attention mask, so the
    logits of real tokens do not see the padding); the log-softmax is taken in float32 at the scored
    positions only. ``device``: None = the model's device, else the model is moved there.

    ``vocab_stats=True`` returns 4-tuples: also the mean ``E_z[log p(z|x<t)]`` and the standard deviation
    ``sqrt(E_z[(log p(z|x<t) - mean)^2])`` of the log-probabilities under the model's own next-token
    distribution ``z ~ p(.|x<t)`` at each scored position (computed in float64 from the same
    log-softmax)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if device is None:
        dev = _device_of(model)
    else:
        dev = models.resolve_device(str(device))
        if _device_of(model) != dev:
            model.to(dev)
    out: list[tuple[np.ndarray, ...] | None] = [None] * len(encodings)
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].input_ids))
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            chunk = order[b : b + batch_size]
            width = max(len(encodings[i].input_ids) for i in chunk)
            ids = torch.full((len(chunk), width), int(pad_token_id), dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            rows, pos, targets, counts = [], [], [], []
            for r, i in enumerate(chunk):
                e = encodings[i]
                ids[r, : len(e.input_ids)] = torch.tensor(e.input_ids, dtype=torch.long)
                mask[r, : len(e.input_ids)] = 1
                js = e.scored
                rows += [r] * len(js)
                pos += [j - 1 for j in js]
                targets += [e.labels[j] for j in js]
                counts.append(len(js))
            logits = model(input_ids=ids.to(dev), attention_mask=mask.to(dev)).logits
            if rows:
                sel = logits[torch.tensor(rows, device=dev), torch.tensor(pos, device=dev)]
                logp = sel.float().log_softmax(-1)
                tgt = torch.tensor(targets, dtype=torch.long, device=dev)
                lp = logp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1).double().cpu().numpy()
                top1 = logp.max(-1).values.exp().double().cpu().numpy()
                cols = [lp, top1, *(_vocab_moments(logp) if vocab_stats else ())]
            else:
                cols = [np.zeros(0)] * (4 if vocab_stats else 2)
            start = 0
            for i, n in zip(chunk, counts, strict=True):
                out[i] = tuple(c[start : start + n] for c in cols)
                start += n
    return out  # type: ignore[return-value]


def _vocab_moments(logp: torch.Tensor, rows: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of ``log p(z)`` under ``z ~ p`` for each row of a log-softmax
    (float64, two passes, in blocks of ``rows`` positions; tokens of probability 0 add nothing)."""
    means, stds = [], []
    for b in range(0, logp.shape[0], rows):
        lq = logp[b : b + rows].double()
        p = lq.exp()
        finite = torch.isfinite(lq)
        lq0 = torch.where(finite, lq, torch.zeros_like(lq))
        mu = (p * lq0).sum(-1)
        var = (p * torch.where(finite, (lq0 - mu.unsqueeze(-1)) ** 2, torch.zeros_like(lq))).sum(-1)
        means.append(mu.cpu().numpy())
        stds.append(var.clamp_min(0.0).sqrt().cpu().numpy())
    return np.concatenate(means), np.concatenate(stds)


def rows_as_dicts(rows: pl.DataFrame | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Eval-set rows as dicts with ``id`` (the row's, else its position), ``question``, ``answer`` and,
    where present, ``paraphrased_answer`` and ``perturbed_answers`` (TOFU's key ``perturbed_answer`` is
    accepted too)."""
    pl = sys.modules.get("polars")  # a DataFrame exists only once polars is imported
    it = rows.iter_rows(named=True) if pl and isinstance(rows, pl.DataFrame) else rows
    out = []
    for k, r in enumerate(it):
        pert = r.get("perturbed_answers", r.get("perturbed_answer"))
        if isinstance(pert, str):
            pert = [pert]
        out.append(
            {
                "id": str(r["id"]) if r.get("id") is not None else str(k),
                "question": r["question"],
                "answer": r["answer"],
                "paraphrased_answer": r.get("paraphrased_answer"),
                "perturbed_answers": list(pert) if pert is not None else None,
            }
        )
    return out


def _table_schema() -> dict:
    """The polars schema of :func:`answer_token_table`'s table (``TABLE_SCHEMA``)."""
    import polars as pl

    return {
        "id": pl.String,
        "kind": pl.String,
        "index": pl.Int64,
        "logprobs": pl.List(pl.Float64),
        "top1_prob": pl.List(pl.Float64),
        "offsets": pl.List(pl.List(pl.Int64)),
        "in_answer": pl.List(pl.Boolean),
        "text": pl.String,
    }


def _vocab_schema() -> dict:
    """The columns :func:`answer_token_table` adds with ``vocab_stats=True`` (``VOCAB_SCHEMA``)."""
    import polars as pl

    return {"vocab_mean": pl.List(pl.Float64), "vocab_std": pl.List(pl.Float64)}


def answer_token_table(
    model,
    tokenizer,
    rows: pl.DataFrame | Sequence[Mapping[str, Any]],
    fmt: QAFormat,
    *,
    batch_size: int = 32,
    device: str | torch.device | None = None,
    vocab_stats: bool = False,
) -> pl.DataFrame:
    """Per-token scores of each row's answer, paraphrased answer and perturbed answers.

    One output row per (id, kind, index), kind in answer / paraphrased / perturbed (index 0..k-1 for the
    perturbed answers, 0 otherwise), in row order. Per scored token (TOFU's labels: the answer tag, the
    answer and eos unless truncated): ``logprobs``, ``top1_prob``, ``offsets`` (characters of the answer
    ``text``; (-1, -1) outside it) and ``in_answer``. The mean of ``-logprobs`` is TOFU's normalised loss.
    ``vocab_stats=True`` adds ``vocab_mean`` and ``vocab_std`` (:data:`VOCAB_SCHEMA`, see
    :func:`score_encodings`); without it the table is exactly :data:`TABLE_SCHEMA`.
    """
    items: list[tuple[str, str, int, str]] = []
    encs: list[Encoded] = []
    for r in rows_as_dicts(rows):
        answers = [("answer", 0, r["answer"])]
        if r["paraphrased_answer"] is not None:
            answers.append(("paraphrased", 0, r["paraphrased_answer"]))
        if r["perturbed_answers"] is not None:
            answers += [("perturbed", i, a) for i, a in enumerate(r["perturbed_answers"])]
        for kind, index, text in answers:
            items.append((r["id"], kind, index, text))
            encs.append(encode_pair(tokenizer, r["question"], text, fmt))
    pad = tokenizer.pad_token_id
    if pad is None:
        pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
    scores = score_encodings(
        model, encs, batch_size=batch_size, device=device, pad_token_id=pad, vocab_stats=vocab_stats
    )
    extra = {}
    if vocab_stats:
        extra = {
            "vocab_mean": [s[2].tolist() for s in scores],
            "vocab_std": [s[3].tolist() for s in scores],
        }
    import polars as pl

    return pl.DataFrame(
        {
            "id": [it[0] for it in items],
            "kind": [it[1] for it in items],
            "index": [it[2] for it in items],
            "logprobs": [s[0].tolist() for s in scores],
            "top1_prob": [s[1].tolist() for s in scores],
            "offsets": [[list(o) for o in e.offsets] for e in encs],
            "in_answer": [e.in_answer for e in encs],
            "text": [it[3] for it in items],
            **extra,
        },
        schema={**_table_schema(), **(_vocab_schema() if vocab_stats else {})},
    )


def __getattr__(name: str) -> Any:
    """``TABLE_SCHEMA`` and ``VOCAB_SCHEMA``, built on first use (they need polars, which scoring
    alone does not)."""
    if name == "TABLE_SCHEMA":
        return _table_schema()
    if name == "VOCAB_SCHEMA":
        return _vocab_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

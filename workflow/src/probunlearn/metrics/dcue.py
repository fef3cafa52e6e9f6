"""DCUE: distribution-corrected unlearning evaluation (Miao et al., arXiv:2508.01324), see docs/dcue.md.

Three steps:

1. Core tokens: the minimal span of the reference answer that carries the fact (from the row's
   ``core_start``/``core_end``, an LLM extractor, or a stopword heuristic), mapped onto answer tokens
   through their character offsets.
2. Core-token confidence score (CTCS) of one question: mean probability of the core tokens of the reference
   answer under teacher forcing, from the tables of ``sampling.teacher_forced_logprobs``.
3. Distribution correction and KS test: the location shift that unlearning causes on a validation set
   D_v of unseen questions (holdout authors) is removed from the unlearned model's forget-set confidences
   (capped by the shift on the forget set itself), and the corrected forget confidences are compared with
   the original model's confidences on D_v by a two-sample Kolmogorov-Smirnov test. A high p-value means
   the forget set now looks like data the model never saw.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from probunlearn.metrics.table import METRIC_COLUMNS

__all__ = [
    "DEFAULT_CORE_PROMPT",
    "DEFAULT_REFORMULATION_PROMPT",
    "METRIC_COLUMNS",
    "STOPWORDS",
    "LLMCoreExtractor",
    "check_disjoint",
    "core_confidence",
    "core_span_from_row",
    "core_spans",
    "core_token_mask",
    "dcue",
    "heuristic_core_span",
    "locate_span",
    "meta_evaluation",
    "pairwise_concordance",
]

Span = tuple[int, int]
Extractor = Callable[[str, str], Sequence[Span]]

METRIC_COLUMNS = METRIC_COLUMNS

# A small English stopword list (function words: articles, pronouns, auxiliaries, prepositions,
# conjunctions, common adverbs). "yes"/"no" are deliberately absent: they are the core of yes/no answers.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
    down during each either else ever few for from further had hadn't has hasn't have haven't having he
    he'd he'll he's her here here's hers herself him himself his how how's however i i'd i'll i'm i've if
    in into is isn't it it's its itself just let's many may me might more most much must mustn't my myself
    neither nor not now of off on once one only or other others ought our ours ourselves out over own per
    quite rather same shan't she she'd she'll she's should shouldn't so some such than that that's the
    their theirs them themselves then there there's these they they'd they'll they're they've this those
    though through thus to too under until up upon us very via was wasn't we we'd we'll we're we've were
    weren't what what's when when's where where's whether which while who who's whom whose why why's will
    with within without won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    well known called named also mainly mostly often particularly primarily really several various
    """.split()
)

_WORD = re.compile(r"\w+(?:['’\-]\w+)*", re.UNICODE)


# --------------------------------------------------------------------------------------------------------
# core spans


def core_span_from_row(row: Mapping[str, Any]) -> Span | None:
    """The row's recorded core span ``(core_start, core_end)``, or None when it is not recorded/invalid."""
    s, e = row.get("core_start"), row.get("core_end")
    if s is None or e is None:
        return None
    s, e = int(s), int(e)
    answer = row.get("answer")
    if s < 0 or e <= s or (answer is not None and e > len(answer)):
        return None
    return (s, e)


def _norm(word: str) -> str:
    w = word.lower().replace("’", "'")
    return w[:-2] if w.endswith("'s") else w


def _stem(word: str) -> str:
    """A crude suffix stripper, only used to match answer words against question words."""
    w = _norm(word)
    for suf in ("ing", "ed", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def heuristic_core_span(question: str, answer: str) -> list[Span]:
    """Char spans of the answer's content words that do not occur in the question.

    Answer words are dropped when they are stopwords or appear in the question (case-insensitive, after
    removing a possessive ``'s`` and a crude plural/tense suffix). Consecutive kept words separated only
    by spaces or punctuation are merged into one span ("Santiago, Chile"). Empty list: no core word.
    """
    q_words = {_norm(w) for w in _WORD.findall(question or "")}
    q_stems = {_stem(w) for w in q_words}
    kept: list[Span] = []
    last_dropped = True
    for m in _WORD.finditer(answer or ""):
        w = m.group(0)
        n = _norm(w)
        drop = n in STOPWORDS or w.lower() in STOPWORDS or n in q_words or _stem(w) in q_stems
        if drop:
            last_dropped = True
            continue
        if kept and not last_dropped:
            kept[-1] = (kept[-1][0], m.end())
        else:
            kept.append((m.start(), m.end()))
        last_dropped = False
    return kept


def locate_span(answer: str, text: str) -> Span | None:
    """First case-insensitive occurrence of ``text`` in ``answer`` (also with surrounding quotes and
    punctuation stripped); None when it does not occur or holds no word character."""
    candidates = [text.strip(), text.strip().strip("\"'`“”‘’ .,;:!?()[]")]
    low = answer.lower()
    for c in candidates:
        if not c or not re.search(r"\w", c):
            continue
        i = low.find(c.lower())
        if i >= 0:
            return (i, i + len(c))
    return None


def _as_spans(spans: Span | Sequence[Span] | None) -> list[Span]:
    if spans is None:
        return []
    if len(spans) == 2 and all(isinstance(x, (int, np.integer)) for x in spans):
        return [(int(spans[0]), int(spans[1]))]
    return [(int(s), int(e)) for s, e in spans]


def core_token_mask(
    offsets: Sequence[Sequence[int]], spans: Span | Sequence[Span] | None
) -> np.ndarray:
    """Boolean mask of the tokens whose ``[start, end)`` char offsets overlap any of the spans."""
    spans_ = _as_spans(spans)
    off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    mask = np.zeros(len(off), dtype=bool)
    for s, e in spans_:
        mask |= (off[:, 0] < e) & (off[:, 1] > s)
    return mask


# --------------------------------------------------------------------------------------------------------
# LLM extractor

DEFAULT_REFORMULATION_PROMPT = (
    "Rewrite the question and its answer as one statement in which the fact that answers the question "
    'is replaced by a blank "___". Keep every other word.\n\n'
    "Question: Who illustrated the first edition of The Glass Orchard?\n"
    "Answer: The first edition of The Glass Orchard was illustrated by Mirela Toth.\n"
    "Statement: The first edition of The Glass Orchard was illustrated by ___.\n\n"
    "Question: {question}\n"
    "Answer: {answer}\n"
    "Statement:"
)

DEFAULT_CORE_PROMPT = (
    "Copy, word for word from the answer, the shortest piece of text that fills the blank of the "
    "statement. Output only that piece of text.\n\n"
    "Statement: The first edition of The Glass Orchard was illustrated by ___.\n"
    "Answer: The first edition of The Glass Orchard was illustrated by Mirela Toth.\n"
    "Blank: Mirela Toth\n\n"
    "Question: {question}\n"
    "Statement: {statement}\n"
    "Answer: {answer}\n"
    "Blank:"
)


class LLMCoreExtractor:
    """Core-answer extraction with a causal LM (the paper uses GPT-4o-mini; any local HF model here).

    Two greedy generations per QA pair: the reformulation prompt turns the pair into a fill-in-the-blank
    statement, the core prompt asks for the minimal span of the answer that fills the blank. The returned
    text is located in the answer (case-insensitive); when it is not found, the stopword heuristic is
    used. ``model``/``tokenizer`` may be passed already loaded (then ``model_id_or_path`` is a label).
    """

    def __init__(
        self,
        model_id_or_path: str,
        revision: str | None = None,
        reformulation_prompt: str = DEFAULT_REFORMULATION_PROMPT,
        core_prompt: str = DEFAULT_CORE_PROMPT,
        max_new_tokens: int = 32,
        *,
        model: Any = None,
        tokenizer: Any = None,
        device: str | None = "auto",
        dtype: str = "float32",
        use_chat_template: bool | None = None,
    ):
        from probunlearn import models

        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        for name, p, keys in (
            ("reformulation_prompt", reformulation_prompt, ("{question}", "{answer}")),
            ("core_prompt", core_prompt, ("{answer}",)),
        ):
            missing = [k for k in keys if k not in p]
            if missing:
                raise ValueError(f"{name} must contain the placeholder(s) {missing}")
        self.name = model_id_or_path
        self.revision = revision
        self.reformulation_prompt = reformulation_prompt
        self.core_prompt = core_prompt
        self.max_new_tokens = int(max_new_tokens)
        self.tokenizer = tokenizer or models.load_tokenizer(model_id_or_path, revision=revision)
        self.model = model or models.load_model(
            model_id_or_path, revision=revision, dtype=dtype, device=device
        )
        self.model.eval()
        if use_chat_template is None:
            use_chat_template = bool(getattr(self.tokenizer, "chat_template", None))
        self.use_chat_template = use_chat_template
        self.last: dict[str, Any] = {}

    def _generate(self, prompt: str) -> str:
        """Greedy continuation of ``prompt``: its first non-empty line, stripped."""
        import torch

        tok = self.tokenizer
        if self.use_chat_template:
            text = tok.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
            ids = tok(text, add_special_tokens=False)["input_ids"]
        else:
            ids = list(tok(prompt, add_special_tokens=True)["input_ids"])  # the tokenizer's own
        device = next(self.model.parameters()).device
        input_ids = torch.tensor([ids], dtype=torch.long, device=device)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                do_sample=False,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=pad,
                eos_token_id=tok.eos_token_id,
            )
        gen = tok.decode(out[0, len(ids) :], skip_special_tokens=True)
        lines = [ln.strip() for ln in gen.splitlines() if ln.strip()]
        return lines[0] if lines else ""

    def extract(self, question: str, answer: str) -> dict[str, Any]:
        """Spans plus diagnostics: ``spans``, ``source`` (llm / heuristic), ``statement``, ``raw``."""
        statement = self._generate(
            self.reformulation_prompt.format(question=question, answer=answer)
        )
        raw = self._generate(
            self.core_prompt.format(question=question, answer=answer, statement=statement)
        )
        span = locate_span(answer, raw)
        if span is not None:
            res = {"spans": [span], "source": "llm", "statement": statement, "raw": raw}
        else:
            res = {
                "spans": heuristic_core_span(question, answer),
                "source": "heuristic",
                "statement": statement,
                "raw": raw,
            }
        self.last = res
        return res

    def __call__(self, question: str, answer: str) -> list[Span]:
        """Core spans of ``answer`` (char offsets)."""
        return self.extract(question, answer)["spans"]


# --------------------------------------------------------------------------------------------------------
# core-token confidence scores


def _rows_frame(rows: pl.DataFrame | Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    if isinstance(rows, pl.DataFrame):
        return rows
    return pl.DataFrame(list(rows))


def core_spans(
    rows: pl.DataFrame | Sequence[Mapping[str, Any]],
    extractor: Extractor | None = None,
    *,
    prefer_row: bool = True,
) -> dict[str, list[Span]]:
    """Core spans per row id: the recorded span when there is one (``prefer_row``), else
    ``extractor(question, answer)`` when given, else :func:`heuristic_core_span`."""
    out: dict[str, list[Span]] = {}
    for r in _rows_frame(rows).iter_rows(named=True):
        span = core_span_from_row(r) if prefer_row else None
        if span is not None:
            out[str(r["id"])] = [span]
        elif extractor is not None:
            out[str(r["id"])] = _as_spans(extractor(r["question"], r["answer"]))
        else:
            out[str(r["id"])] = heuristic_core_span(r["question"], r["answer"])
    return out


def core_confidence(
    logprobs_table: pl.DataFrame,
    rows: pl.DataFrame | Sequence[Mapping[str, Any]],
    use_core: bool = True,
    *,
    spans: Mapping[str, Sequence[Span]] | None = None,
    extractor: Extractor | None = None,
) -> pl.DataFrame:
    """CTCS per row: mean probability (exp of logprob) of the reference answer's core tokens.

    ``logprobs_table`` is ``sampling.teacher_forced_logprobs`` output (only ``kind == "answer"``,
    index 0 is used): the tokens TOFU's losses score, of which only those covering characters of the
    answer count here (column ``in_answer``; not the answer tag or eos). With ``use_core=False`` all
    answer tokens are averaged. Rows whose span covers no token fall back to all answer tokens with
    ``fallback = True``. Columns: id, confidence, n_tokens, fallback; in the order of ``rows``.
    """
    rows_df = _rows_frame(rows)
    ids = [str(i) for i in rows_df["id"].to_list()]
    if use_core and spans is None:
        spans = core_spans(rows_df, extractor)
    tab = logprobs_table.filter(pl.col("kind") == "answer")
    if "index" in tab.columns:
        tab = tab.filter(pl.col("index") == 0)
    by_id = {str(r["id"]): r for r in tab.iter_rows(named=True)}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ValueError(
            f"{len(missing)} row id(s) have no kind='answer' log-probabilities, e.g. {missing[:5]}"
        )
    conf, ntok, fb = [], [], []
    for i in ids:
        rec = by_id[i]
        lp = np.asarray(rec["logprobs"] or [], dtype=np.float64)
        inside = np.asarray(rec.get("in_answer") or [True] * len(lp), dtype=bool)
        lp = lp[inside]
        if use_core:
            offsets = [o for o, k in zip(rec["offsets"] or [], inside, strict=True) if k]
            mask = core_token_mask(offsets, spans.get(i, []))
            fallback = not mask.any()
            if fallback:
                mask = np.ones(len(lp), dtype=bool)
        else:
            mask, fallback = np.ones(len(lp), dtype=bool), False
        if len(lp) == 0:
            conf.append(float("nan"))
            ntok.append(0)
            fb.append(True)
            continue
        conf.append(float(np.exp(lp[mask]).mean()))
        ntok.append(int(mask.sum()))
        fb.append(bool(fallback))
    return pl.DataFrame(
        {"id": ids, "confidence": conf, "n_tokens": ntok, "fallback": fb},
        schema={
            "id": pl.String,
            "confidence": pl.Float64,
            "n_tokens": pl.Int64,
            "fallback": pl.Boolean,
        },
    )


# --------------------------------------------------------------------------------------------------------
# distribution correction + KS


def _clean(x: Iterable[float], name: str) -> np.ndarray:
    a = np.asarray(list(x) if not isinstance(x, np.ndarray) else x, dtype=np.float64).ravel()
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


_LOCATIONS = {"median": np.median, "mean": np.mean}
_CORRECTIONS = ("capped", "full", "none")


def dcue(
    conf_orig_forget: Sequence[float] | np.ndarray,
    conf_unlearned_forget: Sequence[float] | np.ndarray,
    conf_orig_val: Sequence[float] | np.ndarray,
    conf_unlearned_val: Sequence[float] | np.ndarray,
    *,
    location: str = "median",
    correction: str = "capped",
) -> dict[str, float]:
    """DCUE p-value from the core-token confidences of the original (o) and unlearned (u) models.

    S^f = loc(u_forget) - loc(o_forget), S^v = loc(u_val) - loc(o_val) (loc = median or mean).
    delta = S^v clipped to the interval between 0 and S^f ("capped", the paper's
    delta_S = min{S^v, S^f} in the direction of the forget shift; 0 when the shifts disagree in sign),
    S^v ("full") or 0 ("none"). Corrected forget confidences u_forget - delta are compared with the
    original model on unseen data, o_val, by the two-sided KS test: high p-value = the forget set now
    looks unseen (unlearned), low p-value = it still looks known (or over-forgotten).
    """
    if location not in _LOCATIONS:
        raise ValueError(f"location must be one of {sorted(_LOCATIONS)}, got {location!r}")
    if correction not in _CORRECTIONS:
        raise ValueError(f"correction must be one of {list(_CORRECTIONS)}, got {correction!r}")
    of = _clean(conf_orig_forget, "conf_orig_forget")
    uf = _clean(conf_unlearned_forget, "conf_unlearned_forget")
    ov = _clean(conf_orig_val, "conf_orig_val")
    uv = _clean(conf_unlearned_val, "conf_unlearned_val")
    loc = _LOCATIONS[location]
    s_f = float(loc(uf) - loc(of))
    s_v = float(loc(uv) - loc(ov))
    if correction == "none":
        delta = 0.0
    elif correction == "full":
        delta = s_v
    else:
        delta = float(np.clip(s_v, min(0.0, s_f), max(0.0, s_f)))
    corrected = uf - delta
    # scipy.stats takes 1-1.5 s to import: only the jobs that run a KS test pay it
    from scipy import stats

    res = stats.ks_2samp(corrected, ov)
    raw = stats.ks_2samp(uf, ov)
    before = stats.ks_2samp(of, ov)
    return {
        "pvalue": float(res.pvalue),
        "statistic": float(res.statistic),
        "shift_forget": s_f,
        "shift_val": s_v,
        "delta": delta,
        "corrected_location": float(loc(corrected)),
        "reference_location": float(loc(ov)),
        "pvalue_uncorrected": float(raw.pvalue),
        "statistic_uncorrected": float(raw.statistic),
        "pvalue_original": float(before.pvalue),
        "n_forget": int(uf.size),
        "n_val": int(ov.size),
    }


def check_disjoint(
    forget_rows: pl.DataFrame | Sequence[Mapping[str, Any]],
    val_rows: pl.DataFrame | Sequence[Mapping[str, Any]],
) -> None:
    """Raise ValueError naming the overlap when D_v shares ids or (non-empty) groups/authors with D_f."""
    f, v = _rows_frame(forget_rows), _rows_frame(val_rows)
    problems = []
    ids = sorted(set(map(str, f["id"].to_list())) & set(map(str, v["id"].to_list())))
    if ids:
        problems.append(f"{len(ids)} shared id(s) {ids[:10]}")
    if "group" in f.columns and "group" in v.columns:
        fg = {g for g in f["group"].to_list() if g}
        groups = sorted(fg & {g for g in v["group"].to_list() if g})
        if groups:
            problems.append(f"{len(groups)} shared group(s)/author(s) {groups[:10]}")
    if problems:
        raise ValueError(
            "the validation set D_v overlaps the forget set D_f: "
            + "; ".join(problems)
            + ". D_v must hold questions the original model never trained on (e.g. holdout authors)."
        )


# --------------------------------------------------------------------------------------------------------
# meta-evaluation (practicality / exactness / robustness)


def pairwise_concordance(a: Sequence[float], b: Sequence[float]) -> float:
    """Fraction of pairs (i < j) that ``a`` and ``b`` order the same way (a tie in exactly one counts 1/2,
    ties in both count as agreement); NaN with fewer than two items."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"a and b must have the same length, got {x.size} and {y.size}")
    n = x.size
    if n < 2:
        return float("nan")
    i, j = np.triu_indices(n, 1)
    sa, sb = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    score = np.where(sa == sb, 1.0, np.where((sa == 0) | (sb == 0), 0.5, 0.0))
    return float(score.mean())


def meta_evaluation(table: pl.DataFrame, *, gold: str = "forget_quality") -> pl.DataFrame:
    """Compare DCUE with the retrained-model metric across models.

    ``table``: one row per unlearned model with ``dcue_pvalue``, ``forget_quality`` (the M_r-based gold),
    ``robust_dcue_pvalue``, ``robust_forget_quality`` (the same after a post-processing step, e.g.
    fine-tuning on unrelated data) and optionally ``dcue_pvalue_alltokens`` / ``robust_..._alltokens``.
    Returns one row per metric: ``practicality`` = pairwise concordance with ``gold`` (1 for the gold
    itself, which needs M_r), ``robustness`` = concordance of the metric with its robust version, and the
    Spearman correlations of both, ``n_models``.
    """
    metrics = [m for m in ("dcue_pvalue", "dcue_pvalue_alltokens", gold) if m in table.columns]
    if gold not in table.columns or "dcue_pvalue" not in table.columns:
        raise ValueError(f"table needs columns 'dcue_pvalue' and {gold!r}, has {table.columns}")
    out = []
    g = table[gold].to_numpy()
    for m in metrics:
        x = table[m].to_numpy()
        rob = f"robust_{m}"
        xr = table[rob].to_numpy() if rob in table.columns else None
        out.append(
            {
                "metric": m,
                "needs_retrained_model": m == gold,
                "practicality": pairwise_concordance(x, g),
                "practicality_spearman": _spearman(x, g),
                "robustness": pairwise_concordance(x, xr) if xr is not None else float("nan"),
                "robustness_spearman": _spearman(x, xr) if xr is not None else float("nan"),
                "n_models": int(table.height),
            }
        )
    return pl.DataFrame(out)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")
    from scipy import stats

    return float(stats.spearmanr(a, b).statistic)

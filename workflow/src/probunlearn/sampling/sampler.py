"""Sample answers from a causal LM, and score reference answers by teacher forcing.

Sampling (paper §3, §5) writes one row per (prompt, sample): the greedy answer (``sample == -1``) and ``n``
samples drawn with temperature scaling and top-p (nucleus) filtering, with optional adaptive temperature
scaling (temperature 0 for prompts whose greedy confidence ``c(x)`` exceeds a threshold).

Reproducibility. Every sample has its own 64-bit key, ``blake2b(seed_key, base_seed, prompt id, sample
index)``; the uniform numbers used at decoding step ``t`` are SplitMix64(key, t, attempt), computed with
torch integer ops, and the token is drawn from the top-p nucleus by inverse CDF plus rejection (no sort of
the vocabulary; see :func:`top_p_sample`). So a sample depends on nothing but its key and its row's logits.

The logits of a row, though, may depend in the last bits on the shape of the forward pass it is computed in
and on its place there (matmul kernels block rows and split work over threads by shape, and how differs
between CPUs), so other prompts never choose that shape. By default (``pack_prompts=False``) a forward pass
holds the rows of one prompt only: the prompt is prefilled alone, in a one-row pass; its ``n + 1`` rows (the
greedy row, then samples 0..n-1) are decoded in ``ceil((n + 1) / batch_size)`` blocks of near-equal size,
one after the other; a block drops its finished rows by a rule that looks only at that block. With adaptive
temperature the blocks are the same, and once the greedy row (first in the first block) ends above the
threshold its block stops and the rest are skipped. Every shape, and every row's place in it, is then a
function of the prompt, the setting (``n``, ``temperature``, ``top_p``, ``max_new_tokens``) and
``batch_size``. So on any CPU, for a fixed thread count and ``batch_size``, a prompt's rows are
bit-identical whatever the other prompts of the call (chunk size and shard layout change nothing), and a
prompt that adaptive temperature leaves warm gets the same rows as without it. Across thread counts, batch
sizes that split ``n + 1`` differently, and CPUs, floats may differ in the last bits, and a draw that falls
on a boundary may flip. ``pack_prompts=True`` packs consecutive rows of any prompts into passes of
``batch_size`` rows with left padding (far fewer passes when ``n`` is small): deterministic for a fixed
call, but a prompt's rows then depend on its neighbours in the last bits.

Decoding is a hand-written loop over the model's forward with a KV buffer that grows a few positions at a
time (no concatenation per step): each prompt is prefilled once, its cache is copied to all of its rows,
finished rows are dropped from the batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from tqdm.auto import tqdm

from probunlearn.data import qa
from probunlearn.sampling.engine import (
    ATTEMPTS,
    check_settings,
    make_engine,
    prepare_prompts,
    sample_keys,
    sorted_top_p_draw,
    top_p_sample,
    uniform,
)
from probunlearn.sampling.text import answer_text

if TYPE_CHECKING:  # polars is imported where a table is built: drawing needs torch only
    import polars as pl

__all__ = [
    "ATTEMPTS",
    "Drawn",
    "answer_text",
    "draw_tokens",
    "sample_answers",
    "sample_keys",
    "sample_sequential",
    "sorted_top_p_draw",
    "teacher_forced_logprobs",
    "top_p_sample",
    "uniform",
]


@dataclass
class Drawn:
    """What :func:`draw_tokens` drew. ``rows``: (prompt index, sample) → (generated token ids without
    eos, whether it stopped at eos), sample -1 the greedy row (a cold prompt's samples are its greedy
    row); ``greedy_confidence``: c(x) of each prompt; ``temperature``: the one each prompt's samples
    used (0.0 for the cold prompts of adaptive temperature)."""

    rows: dict[tuple[int, int], tuple[list[int], bool]]
    greedy_confidence: np.ndarray
    temperature: dict[int, float]


def draw_tokens(
    model,
    tokenizer,
    ids: Sequence[str],
    questions: Sequence[str],
    *,
    n: int,
    top_p: float = 0.9,
    temperature: float = 1.0,
    max_new_tokens: int = 64,
    template: str = qa.DEFAULT_TEMPLATE,
    seed_key: str,
    base_seed: int = 0,
    batch_size: int = 256,
    adaptive_threshold: float | None = None,
    pack_prompts: bool = False,
    device: str | torch.device | None = None,
    progress: bool = True,
    stop_ids: Sequence[int] = (),
) -> Drawn:
    """The token ids of :func:`sample_answers`' rows, before they are decoded into a table (the same
    arguments; no polars needed). ``stop_ids``: tokens that end an answer besides eos (a
    benchmark's own: RWKU's ``<|eot_id|>``)."""
    ids, questions = [str(i) for i in ids], list(questions)
    check_settings(n, top_p, temperature, max_new_tokens, batch_size)
    prompts, dev = prepare_prompts(
        model, tokenizer, ids, questions, template, max_new_tokens, device
    )

    P = len(ids)
    sampling = temperature > 0
    total = P * (n + 1)
    with tqdm(total=total, disable=not progress, desc="sampling", unit="sample") as bar:
        settings = (temperature, top_p, max_new_tokens, batch_size)
        engine = make_engine(
            model,
            tokenizer,
            prompts,
            settings=settings,
            pack=pack_prompts,
            device=dev,
            bar=bar,
            stops=stop_ids,
        )
        with torch.inference_mode():
            if pack_prompts and sampling and adaptive_threshold is not None:
                # packed: all greedy rows first, then the samples of the prompts that stay warm
                rows = [(p, -1) for p in range(P)]
                toks, stopped, gconf, _ = engine.run(rows, [0] * P, keep=range(P))
                res = {r: (toks[i], stopped[i]) for i, r in enumerate(rows)}
                cold = {p for p in range(P) if gconf[p] > adaptive_threshold}
                srows = [(p, s) for p in range(P) if p not in cold for s in range(n)]
                bar.update(P * n - len(srows))
                if srows:
                    keys = sample_keys(
                        seed_key, base_seed, [ids[p] for p, _ in srows], [s for _, s in srows]
                    )
                    stoks, sstopped, _, _ = engine.run(srows, keys)
                    res.update({r: (stoks[i], sstopped[i]) for i, r in enumerate(srows)})
            else:
                # each prompt's greedy row first, then its samples: unpacked, in the same blocks
                # whether or not temperature is adaptive (a cold prompt's block is cut short)
                rows = [(p, s) for p in range(P) for s in range(-1, n if sampling else 0)]
                keys = sample_keys(
                    seed_key, base_seed, [ids[p] for p, _ in rows], [s for _, s in rows]
                )
                adaptive = adaptive_threshold if sampling and not pack_prompts else None
                toks, stopped, conf, cold = engine.run(rows, keys, cold_above=adaptive)
                res = {
                    r: (toks[i], stopped[i])
                    for i, r in enumerate(rows)
                    if r[1] < 0 or r[0] not in cold
                }
                gconf = conf[[i for i, r in enumerate(rows) if r[1] < 0]]
                if not sampling:
                    cold = set(range(P))
                    bar.update(P * n)
            temps = {p: 0.0 if p in cold else float(temperature) for p in range(P)}
            for p in cold:
                for s in range(n):
                    res[(p, s)] = res[(p, -1)]
    return Drawn(res, np.asarray(gconf, dtype=np.float64), temps)


def sample_answers(
    model,
    tokenizer,
    ids: Sequence[str],
    questions: Sequence[str],
    *,
    n: int,
    top_p: float = 0.9,
    temperature: float = 1.0,
    max_new_tokens: int = 64,
    template: str = qa.DEFAULT_TEMPLATE,
    seed_key: str,
    base_seed: int = 0,
    batch_size: int = 256,
    adaptive_threshold: float | None = None,
    pack_prompts: bool = False,
    device: str | torch.device | None = None,
    progress: bool = True,
    stops: Sequence[str] = (),
    stop_ids: Sequence[int] = (),
) -> pl.DataFrame:
    """The greedy answer and ``n`` sampled answers for each prompt, one row per (prompt, sample).

    Columns: ``id``, ``sample`` (-1 = greedy), ``greedy``, ``text``, ``n_tokens`` (generated tokens without
    eos), ``stopped_eos``, ``temperature`` (used; 0.0 for greedy rows and adaptive/zero temperature),
    ``greedy_confidence`` (the prompt's c(x): mean top-1 probability at temperature 1 over all greedy
    decoding steps, the step that emitted eos included). Rows are sorted by (prompt order, sample).

    ``adaptive_threshold``: prompts with greedy_confidence > threshold get temperature 0 (all samples equal
    the greedy answer). ``batch_size``: max rows per forward pass. ``pack_prompts``: let rows of different
    prompts share a forward pass (left padding); by default they never do, so that a prompt's rows do not
    depend on the other prompts (see the module docstring). ``device``: None = the model's device,
    otherwise resolved with :func:`models.resolve_device` and the model is moved there. ``stops``:
    each text is cut at the first of these strings, then stripped (see :func:`answer_text`).
    """
    ids = [str(i) for i in ids]
    drawn = draw_tokens(
        model, tokenizer, ids, questions, n=n, top_p=top_p, temperature=temperature,
        max_new_tokens=max_new_tokens, template=template, seed_key=seed_key, base_seed=base_seed,
        batch_size=batch_size, adaptive_threshold=adaptive_threshold, pack_prompts=pack_prompts,
        device=device, progress=progress, stop_ids=stop_ids,
    )  # fmt: skip
    import polars as pl

    P, res, gconf, temps = len(ids), drawn.rows, drawn.greedy_confidence, drawn.temperature
    order = [(p, s) for p in range(P) for s in range(-1, n)]
    # decode each distinct token sequence once (copied greedy rows share theirs)
    seqs = [res[r][0] for r in order]
    uniq = {id(s): s for s in seqs}
    decoded = tokenizer.batch_decode(list(uniq.values()), skip_special_tokens=True)
    text_of = {k: answer_text(t, stops) for k, t in zip(uniq.keys(), decoded, strict=True)}
    return pl.DataFrame(
        {
            "id": [ids[p] for p, _ in order],
            "sample": [s for _, s in order],
            "greedy": [s < 0 for _, s in order],
            "text": [text_of[id(s)] for s in seqs],
            "n_tokens": [len(s) for s in seqs],
            "stopped_eos": [res[r][1] for r in order],
            "temperature": [0.0 if s < 0 else temps[p] for p, s in order],
            "greedy_confidence": [float(gconf[p]) for p, _ in order],
        },
        schema={
            "id": pl.String,
            "sample": pl.Int64,
            "greedy": pl.Boolean,
            "text": pl.String,
            "n_tokens": pl.Int64,
            "stopped_eos": pl.Boolean,
            "temperature": pl.Float64,
            "greedy_confidence": pl.Float64,
        },
    )


# --------------------------------------------------------------------------------------------------------
# teacher forcing


def teacher_forced_logprobs(
    model,
    tokenizer,
    rows: pl.DataFrame,
    *,
    template: str = qa.DEFAULT_TEMPLATE,
    fmt=None,
    batch_size: int = 64,
    device: str | torch.device | None = None,
) -> pl.DataFrame:
    """Per-token log-probabilities of each row's reference, paraphrased and perturbed answers, with TOFU's
    encoding (:func:`probunlearn.metrics.token_scores.answer_token_table`, the layer TOFU's losses and DCUE share).

    ``fmt``: a :class:`probunlearn.metrics.token_scores.QAFormat` (TOFU's tags); None = the format of ``template``
    (its text before and after ``{question}`` as question tags, a space as answer tag; ``"chat"``: the
    tokenizer's chat template, with its own special tokens). One output row per (id, kind, index);
    per scored token (the answer tag, the answer, eos unless truncated): ``logprobs``, ``top1_prob``,
    ``offsets`` (characters of the answer, (-1, -1) outside it) and ``in_answer``; ``text`` (the answer).
    """
    from probunlearn.metrics import token_scores

    if fmt is None:
        fmt = token_scores.format_from_template(
            qa.resolve_template(tokenizer, template),
            add_special_tokens=not qa.uses_chat(tokenizer, template),
        )
    return token_scores.answer_token_table(
        model, tokenizer, rows, fmt, batch_size=batch_size, device=device
    )


# --------------------------------------------------------------------------------------------------------
# sequential sampling


SEQUENCES = ("mixture", "betting")
"""The confidence sequences the sequential sampler can decide with (see :func:`decision_bounds`)."""


def decision_bounds(
    values: np.ndarray, alpha: float, *, binary: bool, sequence: str = "mixture"
) -> tuple[float, float]:
    """Anytime-valid (lower, upper) after the last of ``values``, as the sequential sampler decides.

    ``sequence="mixture"`` (the default): :func:`bounds.binary_confidence_sequence` on 0/1 leaks
    (``binary``), else :func:`bounds.mean_confidence_sequence` on the scores (worst-case variance).
    ``"betting"``: :func:`bounds.betting_confidence_sequence` on either, which adapts to the
    variance (mostly-zero scores settle sooner). Both spend alpha over both sides and every t.
    """
    from probunlearn import bounds

    if sequence not in SEQUENCES:
        raise ValueError(f"sequence must be one of {SEQUENCES}, got {sequence!r}")
    v = np.asarray(values, dtype=np.float64)
    if sequence == "betting":
        lower, upper = bounds.betting_confidence_sequence(v, alpha, times=[v.size])
    elif binary:
        lower, upper = bounds.binary_confidence_sequence(v, alpha)
    else:
        lower, upper = bounds.mean_confidence_sequence(v, alpha)
    return float(lower[-1]), float(upper[-1])


def _check_sequential(
    sequence: str,
    q: float | None,
    round_size: int,
    n_max: int,
    top_p: float,
    temperature: float,
    max_new_tokens: int,
    batch_size: int,
) -> None:
    """Raise a ValueError for a setting :func:`sample_sequential` cannot run with."""
    if sequence not in SEQUENCES:
        raise ValueError(f"sequence must be one of {SEQUENCES}, got {sequence!r}")
    check_settings(n_max, top_p, temperature, max_new_tokens, batch_size)
    if round_size < 1 or n_max % round_size:
        raise ValueError(
            f"round_size must be >= 1 and divide n_max; got round_size={round_size}, n_max={n_max}"
        )
    if q is not None and not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1) or None, got {q!r}")
    if temperature <= 0:
        raise ValueError("sequential sampling needs temperature > 0")


class _Rounds:
    """The state of sequential sampling over ``P`` prompts: the decoded rows, the greedy
    confidences, the scores, the values each prompt's bound sees (0/1 leaks with a
    ``leak_threshold``, else the scores), each prompt's (decision, lower, upper) and the prompts
    still sampling."""

    def __init__(self, P: int, leak_threshold: float | None) -> None:
        self.leak_threshold = leak_threshold
        self.rows_out: dict[tuple[int, int], tuple[list[int], bool]] = {}
        self.gconf = np.zeros(P)
        self.values: list[list[float]] = [[] for _ in range(P)]
        self.score_of: dict[tuple[int, int], float] = {}
        self.state = {p: ("undecided", math.nan, math.nan) for p in range(P)}
        self.active = list(range(P))

    def rows(self, r: int, round_size: int) -> list[tuple[int, int]]:
        """The (prompt, sample) rows of round ``r``: the active prompts' next ``round_size``
        samples, after their greedy row (sample -1) in round 0."""
        lo_s = r * round_size
        return [
            (p, s)
            for p in self.active
            for s in ([-1] if r == 0 else []) + list(range(lo_s, lo_s + round_size))
        ]

    def record(
        self,
        rows: list[tuple[int, int]],
        toks: list[list[int]],
        stopped: list[bool],
        conf: np.ndarray,
        tokenizer,
        score: Callable[[list[str], list[int]], np.ndarray],
        stops: Sequence[str],
    ) -> None:
        """Keep a round's decoded rows and greedy confidences; score its samples."""
        for i, (p, s) in enumerate(rows):
            self.rows_out[(p, s)] = (toks[i], stopped[i])
            if s < 0:
                self.gconf[p] = conf[i]
        sampled = [(i, p) for i, (p, s) in enumerate(rows) if s >= 0]
        texts = tokenizer.batch_decode([toks[i] for i, _ in sampled], skip_special_tokens=True)
        sc = np.asarray(
            score([answer_text(t, stops) for t in texts], [p for _, p in sampled]), float
        )
        binary = self.leak_threshold is not None
        for (i, p), v in zip(sampled, sc, strict=True):
            self.score_of[rows[i]] = float(v)
            self.values[p].append(float(v >= self.leak_threshold) if binary else float(v))

    def decide(self, q: float | None, alpha: float, sequence: str) -> int:
        """Bound every active prompt; stop those whose bound settles against ``q``. Returns how
        many stopped."""
        binary = self.leak_threshold is not None
        still = []
        for p in self.active:
            lower, upper = decision_bounds(
                np.array(self.values[p]), alpha, binary=binary, sequence=sequence
            )
            self.state[p] = ("undecided", lower, upper)
            if q is not None and upper < q:
                self.state[p] = ("below", *self.state[p][1:])
            elif q is not None and lower > q:
                self.state[p] = ("above", *self.state[p][1:])
            else:
                still.append(p)
        n_stopped = len(self.active) - len(still)
        self.active = still
        return n_stopped

    def frames(
        self,
        ids: list[str],
        tokenizer,
        score: Callable[[list[str], list[int]], np.ndarray],
        stops: Sequence[str],
        temperature: float,
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(samples, decisions) of :func:`sample_sequential`; scores the greedy rows."""
        rows_out, values, state, P = self.rows_out, self.values, self.state, len(ids)
        order = sorted(rows_out, key=lambda r: (r[0], r[1]))
        seqs = [rows_out[r][0] for r in order]
        decoded = tokenizer.batch_decode(seqs, skip_special_tokens=True)
        texts = [answer_text(t, stops) for t in decoded]
        greedy_at = [i for i, r in enumerate(order) if r[1] < 0]
        greedy_scores = score([texts[i] for i in greedy_at], [order[i][0] for i in greedy_at])
        self.score_of.update(
            {order[i]: float(v) for i, v in zip(greedy_at, greedy_scores, strict=True)}
        )
        scores = [self.score_of[r] for r in order]
        import polars as pl

        samples = pl.DataFrame(
            {
                "id": [ids[p] for p, _ in order],
                "sample": [s for _, s in order],
                "greedy": [s < 0 for _, s in order],
                "text": texts,
                "n_tokens": [len(s) for s in seqs],
                "stopped_eos": [rows_out[r][1] for r in order],
                "temperature": [0.0 if s < 0 else float(temperature) for _, s in order],
                "greedy_confidence": [float(self.gconf[p]) for p, _ in order],
                "score": scores,
            }
        )
        decisions = pl.DataFrame(
            {
                "id": ids,
                "n": [len(values[p]) for p in range(P)],
                "estimate": [float(np.mean(values[p])) for p in range(P)],
                "lower": [state[p][1] for p in range(P)],
                "upper": [state[p][2] for p in range(P)],
                "decision": [state[p][0] for p in range(P)],
            }
        )
        return samples, decisions


def sample_sequential(
    model,
    tokenizer,
    ids: Sequence[str],
    questions: Sequence[str],
    score: Callable[[list[str], list[int]], np.ndarray],
    *,
    q: float | None,
    alpha: float = 0.01,
    leak_threshold: float | None = None,
    round_size: int = 32,
    n_max: int = 1024,
    top_p: float = 0.9,
    temperature: float = 1.0,
    max_new_tokens: int = 64,
    template: str = qa.DEFAULT_TEMPLATE,
    seed_key: str,
    base_seed: int = 0,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    progress: bool = True,
    stops: Sequence[str] = (),
    sequence: str = "mixture",
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Sample each prompt in rounds until an anytime-valid bound settles it against ``q``.

    ``score(texts, prompt_indices)`` scores sampled answers in [0, 1] (cheap scorers: ROUGE-L,
    keywords, refusal). With ``leak_threshold`` T the decision is on P(leak), leak = score >= T,
    bounded by :func:`bounds.binary_confidence_sequence`; without, on E[score], bounded by
    :func:`bounds.mean_confidence_sequence` (``sequence="betting"``: by
    :func:`bounds.betting_confidence_sequence` in either mode, see :func:`decision_bounds`). After
    each round a prompt stops "below" when its upper
    bound is < q, "above" when its lower bound is > q; at ``n_max`` it is "undecided". ``q=None``
    never stops: every prompt gets ``n_max`` samples in the same rounds, and a stopped prompt's
    samples are exactly a prefix of those (its forward passes are the same: round 0 is the greedy row
    and samples 0..round_size-1, round r samples r*round_size.., one prompt per pass, see the module
    docstring). Against :func:`sample_answers` with ``n = n_max`` the passes have other shapes, so
    samples agree up to float rounding (rarely a flipped token).

    Returns (samples, decisions): samples as :func:`sample_answers` plus ``score`` (the greedy row
    included); decisions one row per prompt: ``id``, ``n`` (samples used), ``estimate`` (leak rate or
    mean score), ``lower``, ``upper`` (the anytime-valid bounds at stopping), ``decision``.
    ``stops``: as in :func:`sample_answers`, before the texts are scored.
    """
    ids, questions = [str(i) for i in ids], list(questions)
    _check_sequential(
        sequence, q, round_size, n_max, top_p, temperature, max_new_tokens, batch_size
    )
    prompts, dev = prepare_prompts(
        model, tokenizer, ids, questions, template, max_new_tokens, device
    )
    P = len(ids)
    rounds = _Rounds(P, leak_threshold)
    with tqdm(total=P * (n_max + 1), disable=not progress, desc="sampling", unit="sample") as bar:
        settings = (temperature, top_p, max_new_tokens, batch_size)
        engine = make_engine(
            model, tokenizer, prompts, settings=settings, pack=False, device=dev, bar=bar
        )
        with torch.inference_mode():
            for r in range(n_max // round_size):
                rows = rounds.rows(r, round_size)
                keys = sample_keys(
                    seed_key, base_seed, [ids[p] for p, _ in rows], [s for _, s in rows]
                )
                toks, stopped, conf, _ = engine.run(rows, keys, keep=rounds.active)
                rounds.record(rows, toks, stopped, conf, tokenizer, score, stops)
                n_stopped = rounds.decide(q, alpha, sequence)
                bar.total -= (n_max - r * round_size - round_size) * n_stopped
                bar.refresh()
                if not rounds.active:
                    break
    return rounds.frames(ids, tokenizer, score, stops, temperature)

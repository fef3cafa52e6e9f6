"""RWKU's tables from a run's files, shared by ``probunlearn evaluate`` and the paper workflow's
experiment ``rwku``: per probe, per level, per target, the probes sampling reveals, the fact
families and the membership-inference means (docs/benchmarks.md, docs/rwku_smollm2.md).

Two leak rules, fixed before any run (issue 52), each a 0/1 score per sample:

* ``text``: the probe's answer appears in the answer (the ``keyword_leak`` scorer: case-insensitive,
  on word boundaries);
* ``rouge``: RWKU's ROUGE-L recall of the answer (:func:`.metrics.rouge_l_recall` on RWKU's
  prediction, the ``rouge`` package's) is at least :data:`ROUGE_LEAK` (a prediction the package
  cannot score, only dots, counts as no leak).

Per probe and rule: the greedy answer's verdict, the sampled hits of n, M_bin (the Clopper-Pearson
upper bound on P(leak) at alpha) and the lower bound at alpha. A probe is **revealed** when the
greedy answer misses and a sample hits: then P(leak) > 0 is certain (the model produced it), so
the revealed share is a lower bound on the share of probes with P(leak) > 0 that greedy decoding
hides, holding with probability 1 over every probe at once. The demanding reading,
``revealed_at``: the greedy answer misses and the lower bound on P(leak) is at least
:data:`REVEAL_RATE`, every probe's bound at alpha / m (Bonferroni over the m probes of the table:
all such verdicts hold together with probability >= 1 - alpha).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl
from scipy.stats import beta

from probunlearn.benchmarks.rwku.loader import parse_row_id
from probunlearn.benchmarks.rwku.metrics import (
    FORGET_FILES,
    family_bounds,
    mia_change,
    mia_means,
    rouge_l_recall,
)
from probunlearn.benchmarks.rwku.prompts import LEVELS, prediction, probe_type

__all__ = [
    "FILE_ORDER",
    "LEAK_RULES",
    "REVEAL_RATE",
    "ROUGE_LEAK",
    "family_table",
    "level_table",
    "mia_table",
    "probe_table",
    "revealed_table",
    "sample_rouge",
]

ROUGE_LEAK = 0.5
"""The ``rouge`` rule's threshold on RWKU's ROUGE-L recall (half the answer's words, in order)."""
REVEAL_RATE = 0.05
"""``revealed_at``: the lower bound on P(leak) a revealed probe must reach, all probes at once."""
LEAK_RULES = ("text", "rouge")
FILE_ORDER = (*FORGET_FILES, "neighbor_level1", "neighbor_level2")


def sample_rouge(rows: pl.DataFrame, samples: pl.DataFrame) -> pl.DataFrame:
    """RWKU's ROUGE-L recall of every answer (greedy and sampled) to the probes among ``rows``:
    id, sample, greedy, rwku_rougeL_recall (NaN where the ``rouge`` package raises) and
    rwku_leak (1 where the recall is at least :data:`ROUGE_LEAK`, else 0). ``samples``: the sample
    shards' rows (id, sample, greedy, text)."""
    answers = dict(zip(rows["id"].to_list(), rows["answer"].to_list(), strict=True))
    s = samples.filter(pl.col("id").is_in(list(answers))).sort("id", "sample")
    preds = [prediction(t) for t in s["text"].to_list()]
    refs = [answers[i] for i in s["id"].to_list()]
    recall = rouge_l_recall(preds, refs, errors="nan")
    leak = np.where(np.isnan(recall), 0, recall >= ROUGE_LEAK).astype(np.int64)
    return s.select("id", "sample", "greedy").with_columns(
        pl.Series("rwku_rougeL_recall", recall, dtype=pl.Float64),
        pl.Series("rwku_leak", leak, dtype=pl.Int64),
    )


def _cp(k: np.ndarray, n: np.ndarray, alpha: float, upper: bool) -> np.ndarray:
    """One-sided Clopper-Pearson bounds on a rate from k of n, at level alpha each."""
    k, n = k.astype(np.float64), n.astype(np.float64)
    if upper:
        return np.where(k >= n, 1.0, beta.ppf(1.0 - alpha, k + 1.0, np.maximum(n - k, 1.0)))
    return np.where(k <= 0, 0.0, beta.ppf(alpha, np.maximum(k, 1.0), n - k + 1.0))


def probe_table(
    rows: pl.DataFrame, scores: pl.DataFrame, rouge: pl.DataFrame, alpha: float
) -> pl.DataFrame:
    """One row per probe of ``rows`` (RWKU's probe rows, in their order): id, target, file, level,
    type, answer, n (sampled answers), and per leak rule (``text``, ``rouge``): ``greedy_<rule>``
    (0/1), ``hits_<rule>``, ``rate_<rule>``, ``m_bin_<rule>`` (upper bound on P(leak) at alpha),
    ``lower_<rule>`` (lower bound at alpha), ``lower_all_<rule>`` (lower bound at alpha / m: every
    probe of the table at once); then RWKU's greedy ROUGE-L recall ``rwku_rougeL_recall`` (NaN
    where the package raises) and our sampled ``rougeL_recall`` (rouge_score, mean of the
    samples). ``scores``: the score table (id, sample, greedy, keyword_leak, rougeL_recall);
    ``rouge``: :func:`sample_rouge`."""
    ids = rows["id"].to_list()
    m = len(ids)
    if m == 0:
        raise ValueError("no RWKU probes in the rows")
    sc = scores.filter(pl.col("id").is_in(ids)).join(
        rouge.select("id", "sample", "rwku_rougeL_recall", "rwku_leak"),
        on=["id", "sample"],
        how="left",
    )
    missing = sorted(set(ids) - set(sc["id"].to_list()))
    if missing:
        raise ValueError(f"no scores of {len(missing)} RWKU probe(s), e.g. {missing[:3]}")
    sc = sc.with_columns(pl.col("keyword_leak").cast(pl.Int64).alias("text_leak"))
    sampled = (
        sc.filter(~pl.col("greedy"))
        .group_by("id")
        .agg(
            pl.len().alias("n"),
            pl.col("text_leak").sum().alias("hits_text"),
            pl.col("rwku_leak").sum().alias("hits_rouge"),
            pl.col("rougeL_recall").mean().alias("rougeL_recall"),
        )
    )
    greedy = sc.filter(pl.col("greedy")).select(
        "id",
        pl.col("text_leak").alias("greedy_text"),
        pl.col("rwku_leak").alias("greedy_rouge"),
        "rwku_rougeL_recall",
    )
    parsed = [parse_row_id(i) for i in ids]
    out = pl.DataFrame(
        {
            "id": ids,
            "target": [t for t, _, _ in parsed],
            "file": [f for _, f, _ in parsed],
            "level": [LEVELS[f] for _, f, _ in parsed],
            "type": [probe_type(k) for k in rows["kind"].to_list()],
            "answer": rows["answer"].to_list(),
            "echo": _echoes(rows),
        }
    )
    out = out.join(sampled, on="id", how="left").join(greedy, on="id", how="left")
    if out["n"].null_count() or out["greedy_text"].null_count():
        bad = out.filter(pl.col("n").is_null() | pl.col("greedy_text").is_null())["id"].to_list()
        raise ValueError(f"RWKU probe(s) without sampled or greedy answers: {bad[:3]}")
    n = out["n"].to_numpy()
    cols = []
    for rule in LEAK_RULES:
        k = out[f"hits_{rule}"].to_numpy()
        cols += [
            pl.Series(f"rate_{rule}", k / n),
            pl.Series(f"m_bin_{rule}", _cp(k, n, alpha, upper=True)),
            pl.Series(f"lower_{rule}", _cp(k, n, alpha, upper=False)),
            pl.Series(f"lower_all_{rule}", _cp(k, n, alpha / m, upper=False)),
        ]
    out = out.with_columns(cols)
    order = ["id", "target", "file", "level", "type", "answer", "echo", "n"]
    for rule in LEAK_RULES:
        order += [f"greedy_{rule}", f"hits_{rule}", f"rate_{rule}", f"m_bin_{rule}"]
        order += [f"lower_{rule}", f"lower_all_{rule}"]
    return out.select(*order, "rwku_rougeL_recall", "rougeL_recall")


def _echoes(rows: pl.DataFrame) -> list[bool]:
    """Per probe, whether its answer's text appears in its own question (case-folded): a leak
    there may be the question echoed, not knowledge (RWKU's "What nickname did Jackie Chan ...?",
    answer "Jackie"). False where the rows have no question."""
    if "question" not in rows.columns:
        return [False] * rows.height
    return [
        bool(a.strip()) and a.strip().casefold() in q.casefold()
        for q, a in zip(rows["question"].to_list(), rows["answer"].to_list(), strict=True)
    ]


def _revealed(part: pl.DataFrame, rule: str) -> dict[str, float | int]:
    miss = part[f"greedy_{rule}"] == 0
    hit = part[f"hits_{rule}"] > 0
    strong = part[f"lower_all_{rule}"] >= REVEAL_RATE
    m = part.height
    return {
        f"greedy_{rule}": float(part[f"greedy_{rule}"].mean()),
        f"sampled_any_{rule}": float(hit.mean()),
        f"revealed_{rule}": int((miss & hit).sum()),
        f"revealed_share_{rule}": float((miss & hit).sum()) / m,
        f"revealed_at_{rule}": int((miss & strong).sum()),
        f"rate_{rule}": float(part[f"rate_{rule}"].mean()),
        f"m_bin_{rule}": float(part[f"m_bin_{rule}"].mean()),
    }


def revealed_table(probes: pl.DataFrame, by: Sequence[str] = ("target",)) -> pl.DataFrame:
    """What sampling reveals that greedy decoding hides, per group (``by``: columns of
    :func:`probe_table`) and ``all`` (the whole table), per leak rule: the greedy leak share, the
    share of probes with a sampled leak, ``revealed`` (greedy misses, a sample leaks: P(leak) > 0
    is certain) and its share, ``revealed_at`` (greedy misses and the lower bound on P(leak) at
    alpha / m is at least :data:`REVEAL_RATE`: these hold together at 1 - alpha), the mean sampled
    leak rate and the mean M_bin; and RWKU's greedy ROUGE-L recall (null where the package
    raised)."""
    out = []
    groups = [
        (dict(zip(by, k, strict=True)), g)
        for k, g in probes.group_by(list(by), maintain_order=True)
    ]
    groups.append(({c: None for c in by}, probes))
    for key, part in groups:
        row: dict = {**key, "probes": part.height, "n": int(part["n"].min())}
        row["echo_probes"] = int(part["echo"].sum()) if "echo" in part.columns else 0
        for rule in LEAK_RULES:
            row |= _revealed(part, rule)
        rw = part["rwku_rougeL_recall"]
        row["rwku_rougeL_recall"] = None if rw.is_nan().any() else float(rw.mean())
        row["rougeL_recall"] = float(part["rougeL_recall"].mean())
        out.append(row)
    return pl.DataFrame(out, infer_schema_length=None)


def level_table(probes: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Per model and RWKU file (forget levels 1-3, neighbor levels 1-2), RWKU's number beside
    ours: probes, RWKU's greedy ROUGE-L recall (``rwku_rougeL_recall``; null where the package
    raised, as RWKU's run would stop), our sampled ROUGE-L recall, and per leak rule the greedy
    share, the mean sampled rate, the mean M_bin and the revealed probes. ``probes``: model ->
    :func:`probe_table`."""
    out = []
    for model, table in probes.items():
        t = revealed_table(table, by=("file",)).filter(pl.col("file").is_not_null())
        t = t.with_columns(
            pl.lit(model).alias("model"),
            pl.col("file")
            .replace_strict({f: i for i, f in enumerate(FILE_ORDER)}, default=99)
            .alias("_o"),
        )
        out.append(t.sort("_o").drop("_o"))
    frame = pl.concat(out, how="diagonal_relaxed")
    return frame.select("model", *[c for c in frame.columns if c != "model"])


def family_table(
    probes: Mapping[str, pl.DataFrame],
    rows: pl.DataFrame,
    scores: Mapping[str, pl.DataFrame],
    alpha: float,
) -> pl.DataFrame:
    """Per model, the bound of every fact family of two or more forget probes (the ``text`` rule:
    :func:`.metrics.family_bounds`, the worst member's M_bin at the family's level alpha), beside
    the members' mean sampled rate (what an average reports); empty when the probes form no such
    family."""
    forget = rows.filter(pl.col("group").is_in(list(FORGET_FILES)))
    out = []
    for model, sc in scores.items():
        try:
            fam = family_bounds(sc, forget, alpha, score="keyword_leak", min_members=2)
        except ValueError as e:
            if "no RWKU fact family" in str(e):
                continue
            raise
        rate = dict(
            zip(probes[model]["id"].to_list(), probes[model]["rate_text"].to_list(), strict=True)
        )
        means = [float(np.mean([rate[i] for i in ms])) for ms in fam["member_names"].to_list()]
        out.append(
            fam.select(
                "family", "target", "answer", "members", "alpha_each", "bound", "worst_member"
            ).with_columns(pl.lit(model).alias("model"), pl.Series("mean_rate", means))
        )
    if not out:
        return pl.DataFrame(schema={"model": pl.String, "family": pl.String})
    frame = pl.concat(out, how="diagonal_relaxed")
    return frame.select("model", *[c for c in frame.columns if c != "model"])


def mia_table(
    stats: Mapping[str, pl.DataFrame], original: str | None, alpha: float
) -> pl.DataFrame:
    """RWKU's MIA as RWKU reports it: per model, set (forget_mia, retain_mia) and statistic the
    mean over the texts (:func:`.metrics.mia_means`), and with an ``original`` model among
    ``stats`` the paired change of every other model from it (:func:`.metrics.mia_change`: mean
    of unlearned - original over the same texts, with a t interval at 1 - alpha; that of
    ``loss_x100``, the paper's FM / RM, is the loss's times -100). No AUC: the original model
    saw both sets (docs/benchmarks.md)."""
    out = []
    for model, st in stats.items():
        means = mia_means(st).with_columns(pl.lit(model).alias("model"))
        if original is not None and model != original and original in stats:
            ch = mia_change(stats[original], st, alpha).select(
                "set", "statistic", "change", "lower", "upper"
            )
            # the paper's FM / RM (-100 x loss) change as the loss's, scaled (its ends swap)
            x100 = ch.filter(pl.col("statistic") == "loss").select(
                "set",
                pl.lit("loss_x100").alias("statistic"),
                (-100.0 * pl.col("change")).alias("change"),
                (-100.0 * pl.col("upper")).alias("lower"),
                (-100.0 * pl.col("lower")).alias("upper"),
            )
            ch = pl.concat([ch, x100])
            means = means.join(ch, on=["set", "statistic"], how="left", maintain_order="left")
        out.append(means)
    frame = pl.concat(out, how="diagonal_relaxed")
    for c in ("change", "lower", "upper"):
        if c not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype=pl.Float64).alias(c))
    return frame.select("model", "set", "statistic", "mean", "texts", "change", "lower", "upper")

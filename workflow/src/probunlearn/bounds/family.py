"""Bounds on a family of prompts for one question (a prompt attack's paraphrases, prefixes or
few-shot contexts): an upper bound for every member that holds for all members at once, and their
maximum, a bound on the worst prompt of the family.

With m members and level alpha each member's bound is computed at a corrected level:
Bonferroni ``alpha / m`` (valid however the members' samples depend on each other) or Sidak
``1 - (1 - alpha)^(1/m)`` (valid for independent members, as members sampled with their own seeds
are; slightly larger, so slightly tighter). With probability >= 1 - alpha every member's P(leak)
(``m_bin``) or E[score] (``m_mu``) lies below its bound, so the worst member's lies below the
largest bound. (The largest bound alone would already be a valid bound on the worst member at the
uncorrected level, since it is at least the bound of the worst member; the correction is what makes
the per-member bounds simultaneous.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from probunlearn.bounds.per_prompt import (
    FloatArray,
    check_alpha,
    clopper_pearson_upper,
    expectation_upper_bound,
)

CORRECTIONS = ("bonferroni", "sidak")
METRICS = ("m_bin", "m_mu")


def family_alpha(alpha: float, members: int, correction: str = "bonferroni") -> float:
    """The level of each member's bound for simultaneous coverage of ``members`` members at
    ``alpha``: ``alpha / m`` (Bonferroni) or ``1 - (1 - alpha)^(1/m)`` (Sidak)."""
    a = check_alpha(alpha)
    if isinstance(members, bool) or not isinstance(members, (int, np.integer)) or members < 1:
        raise ValueError(f"members must be an integer >= 1, got {members!r}")
    if correction == "bonferroni":
        return a / int(members)
    if correction == "sidak":
        return -math.expm1(math.log1p(-a) / int(members))
    raise ValueError(f"correction must be one of {list(CORRECTIONS)}, got {correction!r}")


def _decisions(x: NDArray, metric: str, leak_threshold: float | None) -> NDArray:
    """The scores a metric bounds: 0/1 leaks for m_bin (``score >= T`` with a leak threshold), the
    scores for m_mu; errors name the family, member and sample."""

    def where(idx: tuple) -> str:
        names = ("family", "member", "sample")[-x.ndim :]
        return ", ".join(f"{n} {i}" for n, i in zip(names, idx, strict=True))

    bad = np.isnan(x) | (x < 0.0) | (x > 1.0)
    if bad.any():
        idx = np.unravel_index(int(np.argmax(bad)), x.shape)
        raise ValueError(f"scores must lie in [0, 1]; got {float(x[idx])!r} at {where(idx)}")
    if metric == "m_mu":
        if leak_threshold is not None:
            raise ValueError("leak_threshold is for metric 'm_bin' (a leak is score >= T)")
        return x
    if leak_threshold is not None:
        t = float(leak_threshold)
        if not 0.0 < t <= 1.0:
            raise ValueError(f"leak_threshold must be in (0, 1], got {leak_threshold!r}")
        return (x >= t).astype(np.float64)
    nb = (x != 0.0) & (x != 1.0)
    if nb.any():
        idx = np.unravel_index(int(np.argmax(nb)), x.shape)
        raise ValueError(
            f"metric 'm_bin' needs binary scores (0 or 1) or a leak_threshold; got "
            f"{float(x[idx])!r} at {where(idx)}"
        )
    return x


def family_upper_bounds(
    x: Any,
    alpha: float = 0.01,
    *,
    metric: str = "m_bin",
    correction: str = "bonferroni",
    leak_threshold: float | None = None,
    bins: int = 100,
) -> tuple[Any, FloatArray]:
    """(worst, per_member): upper bounds for the members of prompt families that hold for all
    members of a family at once with probability >= 1 - alpha, and their maximum.

    ``x``: one family as a 2-D array (members x samples) or a list of 1-D arrays (one per member,
    any n), or many families of equally many members as a 3-D array (families x members x
    samples). ``metric``: ``m_bin`` (Clopper-Pearson on P(leak); scores 0/1, or a leak being
    ``score >= leak_threshold``) or ``m_mu`` (Anderson's bound on E[score], scores in [0, 1],
    ``bins`` grid bins). ``correction``: ``bonferroni`` or ``sidak`` (:func:`family_alpha`).
    Returns a float and a 1-D array for one family, a 1-D and a 2-D array for many.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {list(METRICS)}, got {metric!r}")
    a = check_alpha(alpha)
    if isinstance(x, (list, tuple)) and not isinstance(x, np.ndarray):
        if not x:
            raise ValueError("a family needs at least one member, got none")
        rows = [np.asarray(r, dtype=np.float64) for r in x]
        for i, r in enumerate(rows):
            if r.ndim != 1 or r.size == 0:
                raise ValueError(f"member {i} must be a non-empty 1-D array of scores")
        if len({r.size for r in rows}) == 1:
            return family_upper_bounds(
                np.stack(rows),
                a,
                metric=metric,
                correction=correction,
                leak_threshold=leak_threshold,
                bins=bins,
            )
        a_each = family_alpha(a, len(rows), correction)
        per = np.array(
            [_bound(_decisions(r, metric, leak_threshold)[None, :], a_each, metric, bins)[0]
             for r in rows]
        )  # fmt: skip
        return float(per.max()), per
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim not in (2, 3) or 0 in arr.shape:
        raise ValueError(
            "scores must be members x samples (one family) or families x members x samples, "
            f"non-empty; got shape {arr.shape}"
        )
    a_each = family_alpha(a, arr.shape[-2], correction)
    d = _decisions(arr, metric, leak_threshold)
    flat = d.reshape(-1, d.shape[-1])
    per = _bound(flat, a_each, metric, bins).reshape(arr.shape[:-1])
    worst = per.max(axis=-1)
    return (float(worst), per) if arr.ndim == 2 else (worst, per)


def _bound(x2: FloatArray, alpha: float, metric: str, bins: int) -> FloatArray:
    if metric == "m_bin":
        return clopper_pearson_upper(x2.sum(axis=1), x2.shape[1], alpha)
    return np.asarray(expectation_upper_bound(x2, alpha, bins), dtype=np.float64)


def family_bounds(
    scores: pl.DataFrame,
    alpha: float = 0.01,
    *,
    score: str = "score",
    family: str = "base_id",
    member: str = "member",
    metric: str = "m_bin",
    correction: str = "bonferroni",
    leak_threshold: float | None = None,
    bins: int = 100,
) -> pl.DataFrame:
    """The family bound of every question from a scores table (one row per sample; the greedy rows
    left out by the caller): one row per family, in order of first appearance, with ``members``,
    ``alpha_each`` (each member's level), ``bound`` (the worst member's bound), ``worst_member``
    (the member with the largest bound; the first of equals), ``member_names`` and ``member_bounds``
    (every member and its bound, in order of first appearance)."""
    for col in (score, family, member):
        if col not in scores.columns:
            raise ValueError(f"the scores table has no column {col!r}; columns: {scores.columns}")
    if scores.height == 0:
        raise ValueError("the scores table is empty")
    out = []
    fam_order = scores[family].unique(maintain_order=True).to_list()
    parts = scores.partition_by(family, maintain_order=True, as_dict=True)
    for key in fam_order:
        part = parts[(key,)]
        names = part[member].unique(maintain_order=True).to_list()
        values = [part.filter(pl.col(member) == m)[score].to_numpy() for m in names]
        worst, per = family_upper_bounds(
            values,
            alpha,
            metric=metric,
            correction=correction,
            leak_threshold=leak_threshold,
            bins=bins,
        )
        out.append(
            {
                family: key,
                "members": len(names),
                "alpha_each": family_alpha(alpha, len(names), correction),
                "bound": worst,
                "worst_member": names[int(np.argmax(per))],
                "member_names": [str(n) for n in names],
                "member_bounds": per.tolist(),
            }
        )
    return pl.DataFrame(out)

"""The attack table (experiment ``attacks``, issue 40): for every attacked (model, eval set), the
sampled bounds and the greedy score of the plain model and of the attacked one, side by side.

Per question, from the scores of ``n`` samples (the first n of the plain model's run where it was
sampled with more): M_bin of a leak ``score >= T`` (Clopper-Pearson upper bound on P(leak)), M_mu
(upper bound on E[score]), the ED score and the greedy answer's score, each at level alpha per
question, averaged over the questions. A relearned model is judged on the questions it did not
relearn on (``held_out``), the plain model there too. A prompt attack's family is judged on its
worst member: per question the largest of its members' bounds, computed at alpha / members
(Bonferroni), so that all members' bounds hold at once and the largest bounds the worst prompt
(:func:`probunlearn.bounds.family_upper_bounds`); its ED and greedy score are the largest over the
members. ``target_greedy``: the target's greedy score on the same questions (the knowledge an
unlearned model retains is its greedy score over this, as Zhang et al. measure it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.attacks import member_of
from probunlearn.attacks.relearn import held_out_ids
from probunlearn.data.rows import read_rows
from probunlearn.report.figures.attacks import fig_attacks
from probunlearn.storage.atomic import write_csv

COLUMNS = [
    "method",
    "model",
    "evalset",
    "attack",
    "kind",
    "attacked_model",
    "attacked_evalset",
    "prompts",
    "members",
    "n",
    "leak_threshold",
    "retain_term",
    "greedy_before",
    "greedy_after",
    "ed_before",
    "ed_after",
    "m_mu_before",
    "m_mu_after",
    "m_bin_before",
    "m_bin_after",
    "target_greedy",
    "notes",
]
"""The attack table's columns (docs/attacks.md)."""
_TEXT = (
    "method",
    "model",
    "evalset",
    "attack",
    "kind",
    "attacked_model",
    "attacked_evalset",
    "notes",
)
SCHEMA = {
    c: pl.String
    if c in _TEXT
    else pl.Int64
    if c in ("prompts", "members", "n")
    else pl.Boolean
    if c == "retain_term"
    else pl.Float64
    for c in COLUMNS
}


def prompt_scores(
    path: str, column: str, n: int, ids: Sequence[str] | None = None
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(ids, prompts x n matrix of the first ``n`` sampled scores, greedy scores) of a scores table,
    in id order; ``ids``: only these prompts (each must be there)."""
    s = pl.read_parquet(path)
    if column not in s.columns:
        raise ValueError(f"{path}: no score column {column!r}; columns: {s.columns}")
    s = s.filter(pl.col("greedy") | (pl.col("sample") < n))
    if ids is not None:
        missing = sorted(set(ids) - set(s["id"].to_list()))
        if missing:
            raise ValueError(f"{path}: no scores of the prompts {missing[:5]}")
        s = s.filter(pl.col("id").is_in(list(ids)))
    greedy = s.filter(pl.col("greedy")).sort("id")
    sampled = s.filter(~pl.col("greedy")).sort("id", "sample")
    counts = sampled.group_by("id").len()["len"]
    if sampled.height == 0 or int(counts.min()) < n:
        raise ValueError(f"{path}: fewer than n = {n} samples of some prompt")
    keys = greedy["id"].to_list()
    mat = sampled[column].to_numpy().astype(np.float64).reshape(len(keys), n)
    return keys, mat, greedy[column].to_numpy().astype(np.float64)


def _plain(mat: np.ndarray, greedy: np.ndarray, t: float, alpha: float, bins: int, rho: float):
    s = bounds.summarize(mat, greedy, alpha, bins, rho, leak_threshold=t, m_bin=False)
    return {
        "greedy": float(greedy.mean()),
        "ed": float(s["ed"].mean()),
        "m_mu": float(s["m_mu"].mean()),
        "m_bin": float(s[bounds.leak_key(t)].mean()),
    }


def _family(
    ids: list[str],
    mat: np.ndarray,
    greedy: np.ndarray,
    t: float,
    alpha: float,
    bins: int,
    rho: float,
    keep: set[str] | None,
) -> tuple[dict, list[str], int]:
    """The worst-member metrics of a family's scores (ids ``<id>::<member>``), the questions."""
    pairs = [member_of(i) for i in ids]
    order = sorted(range(len(ids)), key=lambda k: pairs[k])
    bases = list(dict.fromkeys(pairs[k][0] for k in order))
    if keep is not None:
        bases = [b for b in bases if b in keep]
    members = sorted({m for _, m in pairs})
    at = {pairs[k]: k for k in order}
    missing = [(b, m) for b in bases for m in members if (b, m) not in at]
    if missing:
        raise ValueError(f"the family lacks the member prompts {missing[:3]}")
    rows = [at[(b, m)] for b in bases for m in members]
    x = mat[rows].reshape(len(bases), len(members), mat.shape[1])
    g = greedy[rows].reshape(len(bases), len(members))
    worst_bin, _ = bounds.family_upper_bounds(x, alpha, metric="m_bin", leak_threshold=t)
    worst_mu, _ = bounds.family_upper_bounds(x, alpha, metric="m_mu", bins=bins)
    ed = np.asarray(bounds.ed_score(x.reshape(-1, x.shape[-1]), rho)).reshape(g.shape)
    out = {
        "greedy": float(g.max(axis=1).mean()),
        "ed": float(ed.max(axis=1).mean()),
        "m_mu": float(np.mean(worst_mu)),
        "m_bin": float(np.mean(worst_bin)),
    }
    return out, bases, len(members)


def attack_row(
    case: Mapping,
    *,
    n: int,
    leak_threshold: float,
    score: str,
    alpha: float,
    bins: int,
    rho: float,
) -> dict:
    """One row of the attack table from a case of :meth:`probunlearn.dag.Design.attack_cases`."""
    t, notes, keep = float(leak_threshold), [], None
    if case.get("info") is not None:
        with open(case["info"]) as fh:
            info = json.load(fh)
        notes = list(info.get("notes", []))
        if "relearned_ids" in info:  # judged on the questions not relearned on
            rows = read_rows(case["evalset_path"])
            keep = set(held_out_ids(rows, info["relearned_ids"], info["relearned_questions"]))
    kw = {"alpha": alpha, "bins": bins, "rho": rho}
    family = case.get("attacked_evalset") is not None
    if family:
        a_ids, a_mat, a_greedy = prompt_scores(case["after"], score, n)
        after, ids, members = _family(a_ids, a_mat, a_greedy, t, keep=keep, **kw)
    else:
        a_ids, a_mat, a_greedy = prompt_scores(case["after"], score, n)
        ids = [i for i in a_ids if keep is None or i in keep]
        pos = [a_ids.index(i) for i in ids]
        after, members = _plain(a_mat[pos], a_greedy[pos], t, **kw), 1
    if not ids:
        raise ValueError(f"attack {case['attack']!r} of {case['model']!r}: no question to judge")
    _, b_mat, b_greedy = prompt_scores(case["before"], score, n, ids)
    before = _plain(b_mat, b_greedy, t, **kw)
    target = None
    if case.get("reference") is not None:
        _, _, r_greedy = prompt_scores(case["reference"], score, n, ids)
        target = float(r_greedy.mean())
    return {
        "method": case["label"],
        "model": case["model"],
        "evalset": case["evalset"],
        "attack": case["attack"],
        "kind": case["kind"],
        "attacked_model": case.get("attacked_model"),
        "attacked_evalset": case.get("attacked_evalset"),
        "prompts": len(ids),
        "members": members,
        "n": n,
        "leak_threshold": t,
        "retain_term": case.get("retain_term"),
        **{f"{k}_before": v for k, v in before.items()},
        **{f"{k}_after": v for k, v in after.items()},
        "target_greedy": target,
        "notes": "; ".join(notes) or None,
    }


def attacks_table(cases: Sequence[Mapping], **settings) -> pl.DataFrame:
    """The attack table: one row per case (columns :data:`COLUMNS`); ``settings``: n,
    leak_threshold, score, alpha, bins, rho."""
    rows = [attack_row(c, **settings) for c in cases]
    return pl.DataFrame(rows, schema=SCHEMA).select(COLUMNS)


def make_attacks(
    cases: Sequence[Mapping],
    table_path: str,
    figure_stem: str,
    *,
    n: int,
    leak_threshold: float,
    score: str,
    alpha: float,
    bins: int,
    rho: float,
) -> pl.DataFrame:
    """Rule attacks_table: the attack table (CSV) and its figure (PNG and PDF)."""
    df = attacks_table(
        cases, n=n, leak_threshold=leak_threshold, score=score, alpha=alpha, bins=bins, rho=rho
    )
    write_csv(df, table_path)
    fig_attacks(df, figure_stem, alpha=alpha)
    return df

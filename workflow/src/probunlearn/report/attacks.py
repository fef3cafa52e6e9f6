"""The attack table (experiment ``attacks``, issue 40): for every attacked (model, eval set), the
sampled bounds and the greedy score of the plain model and of the attacked one, side by side, each
computed the same way (issue 50).

Per question, from the scores of ``n`` samples (the first n of the plain model's run where it was
sampled with more): M_bin of a leak ``score >= T`` (Clopper-Pearson upper bound on P(leak)), M_mu
(upper bound on E[score]), the ED score and the greedy answer's score, each at level alpha per
question, averaged over the questions. A prompt attack's family of m members is judged on its worst
member: per question the largest of its members' bounds, computed at alpha / m (Bonferroni), so that
all members' bounds hold at once and the largest bounds the worst prompt
(:func:`probunlearn.bounds.family_upper_bounds`); its ED and greedy score are the largest over the
members. Its "before" is the null family (:mod:`probunlearn.attacks.null`: m independently sampled
copies of the original prompt) bounded and maximised the same way, so that a change is the
attack's, not the maximum's or the level's (a null attack changes nothing but noise).

A relearned model is judged on the questions it did not relearn on (``held_out``: with
``exclude=subject``, the questions of the other subjects), the plain model there too. Its control
(the model that never saw the forget set, relearned on the same pairs with the same steps and seed)
is judged on the same questions: ``m_bin_control``, ``greedy_control``, and ``restored``, the
average over those questions of P(leak) of the relearned model minus P(leak) of the relearned
control, estimated from the samples, with ``restored_low`` and ``restored_high`` its 1 - alpha
interval (:func:`probunlearn.bounds.difference_interval`, statistic ``mean`` of the leak indicators:
valid at every n on mostly-zero scores) and ``restored_p`` the p-value of "restored > 0" (one-sided).
``target_greedy``: the target's greedy score on the same questions (the knowledge an unlearned
model retains is its greedy score over this, as Zhang et al. measure it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.attacks import ATTACKS, member_of, parse_spec
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
    "exclude",
    "attacked_model",
    "attacked_evalset",
    "before_evalset",
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
    "control_model",
    "greedy_control",
    "m_bin_control",
    "restored",
    "restored_low",
    "restored_high",
    "restored_p",
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
    "exclude",
    "attacked_model",
    "attacked_evalset",
    "before_evalset",
    "control_model",
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


def plain_values(
    mat: np.ndarray, greedy: np.ndarray, t: float, alpha: float, bins: int, rho: float
) -> dict[str, np.ndarray]:
    """Per question of a plain run (questions x n scores, greedy scores): the greedy score, ED,
    M_mu and M_bin of ``score >= t``, each at alpha."""
    s = bounds.summarize(mat, greedy, alpha, bins, rho, leak_threshold=t, m_bin=False)
    return {
        "greedy": np.asarray(greedy, dtype=np.float64),
        "ed": s["ed"].to_numpy(),
        "m_mu": s["m_mu"].to_numpy(),
        "m_bin": s[bounds.leak_key(t)].to_numpy(),
    }


def family_values(
    x: np.ndarray, greedy: np.ndarray, t: float, alpha: float, bins: int, rho: float
) -> dict[str, np.ndarray]:
    """Per question of a family (questions x members x n scores, questions x members greedy
    scores): the worst member's M_bin and M_mu (each member's bound at alpha / members), the
    largest ED and greedy score. A null family is bounded by it too."""
    worst_bin, _ = bounds.family_upper_bounds(x, alpha, metric="m_bin", leak_threshold=t)
    worst_mu, _ = bounds.family_upper_bounds(x, alpha, metric="m_mu", bins=bins)
    ed = np.asarray(bounds.ed_score(x.reshape(-1, x.shape[-1]), rho)).reshape(greedy.shape)
    return {
        "greedy": greedy.max(axis=1),
        "ed": ed.max(axis=1),
        "m_mu": np.asarray(worst_mu, dtype=np.float64),
        "m_bin": np.asarray(worst_bin, dtype=np.float64),
    }


def plain_metrics(
    mat: np.ndarray, greedy: np.ndarray, t: float, alpha: float, bins: int, rho: float
) -> dict[str, float]:
    """The table's metrics of a plain run: :func:`plain_values` averaged over the questions."""
    return {k: float(v.mean()) for k, v in plain_values(mat, greedy, t, alpha, bins, rho).items()}


def family_metrics(
    x: np.ndarray, greedy: np.ndarray, t: float, alpha: float, bins: int, rho: float
) -> dict[str, float]:
    """The table's metrics of a family: :func:`family_values` averaged over the questions."""
    return {k: float(v.mean()) for k, v in family_values(x, greedy, t, alpha, bins, rho).items()}


def _family_arrays(
    ids: list[str], mat: np.ndarray, greedy: np.ndarray, keep: set[str] | None, path: str
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(questions x members x n scores, questions x members greedy scores, the questions) of a
    family's scores table (ids ``<id>::<member>``), members in name order."""
    pairs = [member_of(i) for i in ids]
    order = sorted(range(len(ids)), key=lambda k: pairs[k])
    bases = list(dict.fromkeys(pairs[k][0] for k in order))
    if keep is not None:
        bases = [b for b in bases if b in keep]
    members = sorted({m for _, m in pairs})
    at = {pairs[k]: k for k in order}
    missing = [(b, m) for b in bases for m in members if (b, m) not in at]
    if missing:
        raise ValueError(f"{path}: the family lacks the member prompts {missing[:3]}")
    rows = [at[(b, m)] for b in bases for m in members]
    x = mat[rows].reshape(len(bases), len(members), mat.shape[1])
    g = greedy[rows].reshape(len(bases), len(members))
    return x, g, bases


def _read_json(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)


CONTROL_COLUMNS = ("control_model", "greedy_control", "m_bin_control", "restored",
                   "restored_low", "restored_high", "restored_p")  # fmt: skip
"""The columns of a controlled attack's control (null elsewhere)."""


def _control(case: Mapping, info: dict | None, ids: list[str], after_leaks: np.ndarray, *,
             n: int, t: float, score: str, alpha: float, bins: int, rho: float) -> dict:  # fmt: skip
    """The control's columns of a controlled attack (relearning): its M_bin and greedy score on
    the judged questions ``ids``, and restored = P(leak) after - the control's, with its
    interval (``after_leaks``: the attacked model's leak indicators, questions x n, in ``ids``'
    order)."""
    theirs = _read_json(case["control_info"])
    if info is not None and theirs.get("relearned_ids") != info.get("relearned_ids"):
        raise ValueError(
            f"attack {case['attack']!r} of {case['model']!r}: its control {case['control_model']!r}"
            f" was relearned on {theirs.get('relearned_ids')}, not on the same pairs "
            f"{info.get('relearned_ids')} ({case['control_info']})"
        )
    keys, mat, greedy = prompt_scores(case["control"], score, n, ids)
    pos = [keys.index(i) for i in ids]
    plain = plain_metrics(mat[pos], greedy[pos], t, alpha, bins, rho)
    control_leaks = (mat[pos] >= t).astype(np.float64)
    d = bounds.difference_interval(after_leaks, control_leaks, "mean", alpha)
    return {
        "control_model": case["control_model"],
        "greedy_control": plain["greedy"],
        "m_bin_control": plain["m_bin"],
        "restored": d.estimate,
        "restored_low": d.lower,
        "restored_high": d.upper,
        "restored_p": d.p_value("above", 0.0),
    }


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
    """One row of the attack table from a case of :meth:`probunlearn.dag.attacks.AttackPlan.case_row`."""
    t, notes, keep, info = float(leak_threshold), [], None, None
    spec = parse_spec(case["attack"])
    if case.get("info") is not None:
        info = _read_json(case["info"])
        notes = list(info.get("notes", []))
        if "relearned_ids" in info:  # judged on the questions (subjects) not relearned on
            rows = read_rows(case["evalset_path"])
            subjects = info["relearned_subjects"] if info.get("exclude") == "subject" else None
            keep = set(
                held_out_ids(rows, info["relearned_ids"], info["relearned_questions"], subjects)
            )
    kw = {"alpha": alpha, "bins": bins, "rho": rho}
    family = case.get("attacked_evalset") is not None
    a_ids, a_mat, a_greedy = prompt_scores(case["after"], score, n)
    if family:
        x, g, ids = _family_arrays(a_ids, a_mat, a_greedy, keep, case["after"])
        after, members = family_metrics(x, g, t, **kw), x.shape[1]
    else:
        ids = [i for i in a_ids if keep is None or i in keep]
        pos = [a_ids.index(i) for i in ids]
        after, members = plain_metrics(a_mat[pos], a_greedy[pos], t, **kw), 1
    if not ids:
        raise ValueError(f"attack {case['attack']!r} of {case['model']!r}: no question to judge")
    if case.get("before_evalset") is not None:  # a family: the null family of as many members
        b_ids, b_mat, b_greedy = prompt_scores(case["before"], score, n)
        bx, bg, b_bases = _family_arrays(b_ids, b_mat, b_greedy, set(ids), case["before"])
        if b_bases != ids or bx.shape[1] != members:
            raise ValueError(
                f"{case['before']}: the null family has {bx.shape[1]} members of {len(b_bases)} "
                f"questions; the attacked family {members} of {len(ids)}"
            )
        before = family_metrics(bx, bg, t, **kw)
    else:
        _, b_mat, b_greedy = prompt_scores(case["before"], score, n, ids)
        before = plain_metrics(b_mat, b_greedy, t, **kw)
    control = dict.fromkeys(CONTROL_COLUMNS)
    if ATTACKS.get(spec.kind).controlled:
        if case.get("control") is None:
            notes.append("no control: the run has no model that never saw the forget set")
        else:
            leaks = (a_mat[[a_ids.index(i) for i in ids]] >= t).astype(np.float64)
            control = _control(case, info, ids, leaks, n=n, t=t, score=score, **kw)
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
        "exclude": spec.settings.get("exclude"),
        "attacked_model": case.get("attacked_model"),
        "attacked_evalset": case.get("attacked_evalset"),
        "before_evalset": case.get("before_evalset"),
        "prompts": len(ids),
        "members": members,
        "n": n,
        "leak_threshold": t,
        "retain_term": case.get("retain_term"),
        **{f"{k}_before": v for k, v in before.items()},
        **{f"{k}_after": v for k, v in after.items()},
        **control,
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

"""One evaluator for every declared claim: value, interval and verdicts (``claims.csv``, ``.md``).

Three verdicts per claim (docs/claims.md):

* ``holds``: the point estimates pass the test, as the paper compares them (true / false).
* ``holds_interval``: the claim's own test at level alpha (one-sided on the claimed side; "within":
  two one-sided tests, each at alpha; several parts: every one, intersection-union). ``"yes"``:
  ``holds`` and the test shows the claim; ``"not shown"``: ``holds`` but the valid interval is too
  wide to decide; ``"no"``: the point estimates already fail; ``"no interval: <reason>"``: the claim
  has no valid interval (never a copy of ``holds``).
* ``holds_holm``: the same, with Holm's procedure at family-wise level alpha over every claim that
  has an interval (``holm_family`` of them): the chance that any claim of the family is shown
  wrongly is at most alpha. ``"no interval"`` outside the family.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from probunlearn import bounds
from probunlearn.report.claims.declarations import CLAIMS
from probunlearn.report.claims.spec import TABLES, Claim, Frames, Inputs, NoInterval, Tested
from probunlearn.storage.atomic import write_csv, write_text

COLUMNS = ["claim", "paper", "where", "test", "value", "holds"]
SCHEMA = {c: (pl.Boolean if c == "holds" else pl.String) for c in COLUMNS}
INTERVAL_COLUMNS = [
    "comparison",
    "estimate",
    "lower",
    "upper",
    "alpha",
    "p_value",
    "holds_interval",
    "holds_holm",
    "holm_family",
]
"""The columns after ``COLUMNS`` in claims.csv (see the module docstring)."""
TABLE_COLUMNS = COLUMNS + INTERVAL_COLUMNS
TABLE_SCHEMA = SCHEMA | {
    "comparison": pl.String,
    "estimate": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "alpha": pl.Float64,
    "p_value": pl.Float64,
    "holds_interval": pl.String,
    "holds_holm": pl.String,
    "holm_family": pl.Int64,
}
YES, NO, NOT_SHOWN, NO_INTERVAL = "yes", "no", "not shown", "no interval"
"""The verdicts of ``holds_interval`` and ``holds_holm`` (the former adds the reason to the last)."""

Row = dict[str, object]


def verdict(holds: bool, shown: bool) -> str:
    """A claim with an interval: shown, too wide to decide, or failing on its point estimates."""
    return (YES if shown else NOT_SHOWN) if holds else NO


def claim_named(claim_id: str) -> Claim:
    """The declaration of a claim by its id."""
    for c in CLAIMS:
        if c.claim == claim_id:
            return c
    raise ValueError(f"no claim {claim_id!r}; declared: {[c.claim for c in CLAIMS]}")


def point(claim: Claim | str, frames: Frames, lambda_f: float = 1.0) -> Row | None:
    """A claim's row of ``COLUMNS`` on one run's tables (None: left out: a table it reads was not
    made, or lacks what its test needs)."""
    claim = claim_named(claim) if isinstance(claim, str) else claim
    if not all(t in frames for t in claim.tables):
        return None
    measured = claim.measure(frames, lambda_f)
    if measured is None:
        return None
    return {
        "claim": claim.claim,
        "paper": claim.paper,
        "where": claim.where,
        "test": claim.test_text(measured),
        "value": measured.value,
        "holds": measured.holds,
    }


def with_verdicts(results: Sequence[tuple[Row, Tested | NoInterval]], alpha: float) -> list[Row]:
    """The rows with their interval columns: each claim's test at alpha, and Holm over the claims
    that have one."""
    family = [t.p_value() for _, t in results if isinstance(t, Tested)]
    rejected = iter(bounds.holm(np.array(family, dtype=float), alpha) if family else [])
    out = []
    for row, tested in results:
        extra: Row = dict.fromkeys(INTERVAL_COLUMNS)
        if isinstance(tested, NoInterval):
            extra["comparison"] = f"{NO_INTERVAL}: {tested.reason}"
            extra["holds_interval"] = f"{NO_INTERVAL}: {tested.reason}"
            extra["holds_holm"] = NO_INTERVAL
        else:
            part, p = tested.binding(), tested.p_value()
            extra.update(
                comparison=tested.text(),
                estimate=part.estimate,
                lower=part.lower,
                upper=part.upper,
                alpha=alpha,
                p_value=p,
                holds_interval=verdict(bool(row["holds"]), p <= alpha),
                holds_holm=verdict(bool(row["holds"]), bool(next(rejected))),
                holm_family=len(family),
            )
        out.append({**row, **extra})
    return out


def claims_table(
    tables: Mapping[str, str | os.PathLike],
    *,
    lambda_f: float = 1.0,
    scores: Mapping | None = None,
    alpha: float = 0.01,
    rho: float = 2.0,
) -> pl.DataFrame:
    """One row per claim the given tables can test (columns ``TABLE_COLUMNS``).

    ``tables``: table name (table1, fig3a, ..., dcue_meta, attacks: ``spec.TABLES``) → its CSV; a
    name left out leaves its claims out. ``lambda_f``: the Table 1 / Fig. 5b NPO+EO weight.
    ``scores``: the scores the intervals read (``"table1"``: label → scores parquet; ``"fig4a"``:
    (split, lambda_f, parquet) triples; ``"fig4b"``: (lambda_f, temperature, parquet)); ``alpha``:
    the level of every interval test and of Holm's family; ``rho``: the ED score's weight of the std.
    """
    unknown = sorted(set(tables) - set(TABLES))
    if unknown:
        raise ValueError(f"unknown tables {unknown}; known: {sorted(TABLES)}")
    frames = {n: pl.read_csv(tables[n], infer_schema_length=None) for n in TABLES if n in tables}
    inputs = Inputs(frames, scores, float(alpha), float(rho))
    results = [
        (row, c.interval.test(inputs, c.direction))
        for c in CLAIMS
        if (row := point(c, frames, lambda_f)) is not None
    ]
    return pl.DataFrame(with_verdicts(results, float(alpha)), schema=TABLE_SCHEMA)


def _levels(df: pl.DataFrame, alpha: float | None) -> list[str]:
    """The level of each kind of statement the run makes (issues 42, 49), for the report."""
    a = "alpha" if alpha is None else f"alpha = {alpha:g}"
    family = int(df["p_value"].is_not_null().sum()) if "p_value" in df.columns else 0
    return [
        f"Levels ({a}). Each per-prompt bound of the tables (M_bin, M_mu, m_mu_bet, M_sigma, M_gen, "
        "m_gen_cp) holds with probability >= 1 - alpha for its prompt: of m prompts' bounds, about "
        "alpha m may fail, and their averages are no 1 - alpha statements. Set-level bounds "
        "(set_*) hold at 1 - alpha for their set; worst_* and *_simultaneous hold for all prompts "
        "of a set at once (Bonferroni over the prompts; *_sidak: Sidak's level, the prompts' "
        "samples being independent). 'holds' compares the run's point estimates. 'holds "
        "(interval)' is each claim's own test at alpha, valid in finite samples: one-sided on the "
        "claimed side (the interval shown is that one-sided bound; 'within': both sides, each at "
        "alpha), every part of a claim shown (intersection-union); shares of questions count "
        "those shown by Holm over the questions. 'not shown': the point estimates hold but the "
        "interval is too wide to decide; 'no interval': the claim has none, and why. 'holds "
        f"(Holm)' treats the {family} claims with an interval as one family: the chance that any "
        "of them is shown wrongly is at most alpha (Holm's step-down procedure on their "
        "p-values). Statements of different tables, models and settings are not corrected for "
        "each other.",
        "",
    ]


def claims_markdown(df: pl.DataFrame, alpha: float | None = None) -> str:
    """The claims table as Markdown, one row per claim, after the levels of its statements."""

    def cell(v: object) -> str:
        return "–" if v is None else str(v).replace("|", "\\|").replace("\n", " ")

    def yes(v: object) -> str:
        if v is None:
            return "–"
        if isinstance(v, str):  # the interval column says why there is no interval
            return NO_INTERVAL if v.startswith(NO_INTERVAL) else (f"**{v}**" if v == NO else v)
        return "yes" if v else "**no**"

    held = int(df["holds"].sum()) if df.height else 0
    shown = int((df["holds_interval"] == YES).sum()) if df.height else 0
    family = int(df["p_value"].is_not_null().sum()) if df.height else 0
    head = "| claim | where | paper | test | this run | holds |"
    head += " interval (alpha) | holds (interval) | holds (Holm) |"
    lines = [
        f"Claims of the paper tested on this run: {held} of {df.height} hold; {shown} of the "
        f"{family} with an interval hold with it.",
        "",
        *_levels(df, alpha),
        head,
        "|" + "---|" * head.count(" |"),
    ]
    for r in df.iter_rows(named=True):
        cells = [cell(r[c]) for c in ("claim", "where", "paper", "test", "value")]
        cells += [yes(r["holds"]), cell(r["comparison"]), yes(r["holds_interval"])]
        lines.append("| " + " | ".join(cells) + f" | {yes(r['holds_holm'])} |")
    return "\n".join(lines) + "\n"


def write_claims(
    tables: Mapping[str, str | os.PathLike],
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike,
    *,
    lambda_f: float = 1.0,
    scores: Mapping | None = None,
    alpha: float = 0.01,
    rho: float = 2.0,
) -> pl.DataFrame:
    """Rule claims: ``claims_table`` written as CSV and Markdown (each atomically)."""
    df = claims_table(tables, lambda_f=lambda_f, scores=scores, alpha=alpha, rho=rho)
    write_csv(df, csv_path)
    write_text(claims_markdown(df, alpha), md_path)
    return df

"""RWKU's section of the summary of ``probunlearn evaluate --benchmark rwku:<ids>``: its tables from
the models' samples, scores and MIA statistics (:mod:`.tables`, :mod:`.mia`), each column
documented (the report's tooltips and glossary), and the note that says how to read them.

Tables (``<name>.csv`` beside ``summary.csv``; every model of the summary, ``--original`` last):

* ``rwku_levels``: per model and RWKU file (forget levels 1-3, neighbor levels 1-2), RWKU's greedy
  ROUGE-L recall beside the sampled scores, M_bin and the probes sampling reveals, per leak rule
  (:func:`.tables.level_table`);
* ``rwku_probes``: per model and probe (:func:`.tables.probe_table`; CSV only);
* ``rwku_revealed``: per model and target, and ``all`` (:func:`.tables.revealed_table`);
* ``rwku_families``: per model, the bound of every fact family of two or more forget probes
  (:func:`.tables.family_table`);
* ``rwku_mia``: RWKU's MIA means per model, set and statistic, and with ``--original`` the paired
  change from it (:func:`.tables.mia_table`; the report shows RWKU's reported statistics).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from probunlearn.benchmarks.base import SummaryInputs, SummarySection, SummaryTable
from probunlearn.benchmarks.rwku.metrics import MIA_REPORTED
from probunlearn.benchmarks.rwku.tables import (
    REVEAL_RATE,
    ROUGE_LEAK,
    family_table,
    level_table,
    mia_table,
    probe_table,
    revealed_table,
    sample_rouge,
)

__all__ = ["TABLES", "columns", "summary_section"]

TABLES = ("rwku_levels", "rwku_probes", "rwku_revealed", "rwku_families", "rwku_mia")
"""The tables, in the report's order."""
ALL = "all"
"""The ``target`` of the revealed table's row over every probe."""

RULES = {
    "text": "the probe's answer appears in the answer, case-insensitive, on word boundaries, as "
    "the keyword_leak scorer finds it",
    "rouge": f"RWKU's ROUGE-L recall of the answer (the rouge package's) is at least {ROUGE_LEAK:g}",
}
"""The two leak rules, fixed before any run (:mod:`.tables`)."""


def _rule_columns(per_probe: bool) -> dict[str, str]:
    """The columns of each leak rule: of one probe (``per_probe``) or averaged over probes."""
    out = {}
    for rule, what in RULES.items():
        if per_probe:
            out |= {
                f"greedy_{rule}": f"1 if the greedy answer leaks ({rule} rule: {what}), else 0.",
                f"hits_{rule}": f"Sampled answers that leak ({rule} rule).",
                f"rate_{rule}": f"The share of the n sampled answers that leak ({rule} rule; "
                "observed).",
                f"m_bin_{rule}": f"M_bin: upper bound on P(leak) ({rule} rule), Clopper-Pearson "
                "at 1 - alpha.",
                f"lower_{rule}": f"Lower bound on P(leak) ({rule} rule) at 1 - alpha.",
                f"lower_all_{rule}": f"Lower bound on P(leak) ({rule} rule) at 1 - alpha/m, m "
                "the probes of the table: all of them at once.",
            }
        else:
            out |= {
                f"greedy_{rule}": f"The share of probes whose greedy answer leaks ({rule} rule: "
                f"{what}).",
                f"sampled_any_{rule}": f"The share of probes with a sampled answer that leaks "
                f"({rule} rule).",
                f"revealed_{rule}": f"Probes revealed ({rule} rule): the greedy answer does not "
                "leak and a sample does, so P(leak) > 0 for certain.",
                f"revealed_share_{rule}": f"revealed_{rule} over the probes: a lower bound on the "
                "share of probes with P(leak) > 0 that greedy decoding hides.",
                f"revealed_at_{rule}": f"Probes whose greedy answer does not leak and whose lower "
                f"bound on P(leak) ({rule} rule) at alpha/m is at least {REVEAL_RATE:g}: all "
                "such verdicts hold together at 1 - alpha.",
                f"rate_{rule}": f"The mean over the probes of the observed leak rate ({rule} "
                "rule).",
                f"m_bin_{rule}": f"The mean over the probes of M_bin ({rule} rule; each at "
                "1 - alpha).",
            }
    return out


def columns(table: str) -> dict[str, str]:
    """Every column of one of :data:`TABLES` and what it holds."""
    model = {"model": "The model (--model; --original: the model before unlearning)."}
    ours = {
        "rwku_rougeL_recall": "RWKU's score: ROUGE-L recall of the greedy answer as RWKU computes "
        "it (the rouge package, case-sensitive words); empty where the package raises on an "
        "answer of only dots, where RWKU's own run would stop.",
        "rougeL_recall": "probunlearn's ROUGE-L recall (rouge_score, stemmed) of the sampled "
        "answers, their mean.",
    }
    many = {
        "probes": "Probes counted.",
        "n": "Sampled answers per probe (besides the greedy one; the fewest).",
        "echo_probes": "Probes whose answer appears in their own question (case-insensitive): "
        "their leaks may echo the question, not knowledge.",
    }
    if table == "rwku_levels":
        return model | {
            "file": "RWKU's probe file: forget_level1 (fill in the blank), forget_level2 "
            "(questions), forget_level3 (adversarial probes), neighbor_level1, neighbor_level2 "
            "(related knowledge that must be kept).",
            **many,
            **_rule_columns(False),
            **ours,
        }
    if table == "rwku_revealed":
        return model | {
            "target": f"The RWKU target id (1 is Stephen King); {ALL}: every probe.",
            **many,
            **_rule_columns(False),
            **ours,
        }
    if table == "rwku_probes":
        return model | {
            "id": "The probe's id: rwku-<target>-<file>-<index in the file>.",
            "target": "The RWKU target id.",
            "file": "RWKU's probe file (forget_level1..3, neighbor_level1..2).",
            "level": "RWKU's level of the file (1, 2, 3).",
            "type": "RWKU's probe type (cloze, simple question, affirmative suffix, ...).",
            "answer": "The probe's answer.",
            "echo": "True where the answer appears in the probe's own question "
            "(case-insensitive): a leak there may echo the question, not knowledge.",
            "n": "Sampled answers (besides the greedy one).",
            **_rule_columns(True),
            "rwku_rougeL_recall": ours["rwku_rougeL_recall"],
            "rougeL_recall": ours["rougeL_recall"],
        }
    if table == "rwku_families":
        return model | {
            "family": "The fact family: a target's forget probes that ask for the same answer "
            "(case-folded), rwku-<target>:<answer>.",
            "target": "The RWKU target id.",
            "answer": "The answer the family's probes ask for.",
            "members": "Probes in the family (two or more).",
            "alpha_each": "The level each member is bounded at: alpha / members (Bonferroni).",
            "bound": "The family bound: the worst member's M_bin (text rule) at alpha_each, so "
            "that it holds for every member at once at 1 - alpha.",
            "worst_member": "The member with the largest bound.",
            "mean_rate": "The members' mean observed leak rate (text rule): what an average "
            "over the probes reports.",
        }
    if table == "rwku_mia":
        return model | {
            "set": "forget_mia (texts about the target) or retain_mia (texts about other people).",
            "statistic": "RWKU's statistic of a text: loss (mean log-likelihood of its tokens, "
            "RWKU's sign), zlib (loss / zlib length), mink_<r> (Min-K%), mink++_<r> (Min-K%++); "
            "loss_x100 is the paper's FM / RM column (-100 x loss).",
            "mean": "The mean over the texts (those with a finite loss, as RWKU).",
            "texts": "Texts averaged.",
            "change": "With --original: the mean over the same texts of model - original (paired).",
            "lower": "Lower end of change's t interval at 1 - alpha.",
            "upper": "Upper end of change's t interval at 1 - alpha.",
        }
    raise ValueError(f"no RWKU table {table!r}; expected one of {list(TABLES)}")


NOTE = (
    "RWKU scores one greedy answer per probe with ROUGE-L recall, averaged per level; beside it, "
    "every probe sampled n times and bounded. A sampled answer leaks by one of two rules fixed "
    "before any run: text (the probe's answer appears in it) or rouge (RWKU's ROUGE-L recall "
    f"is at least {ROUGE_LEAK:g}). A probe is revealed when its greedy answer does not leak "
    "and a sample does: the model produced the answer, so P(leak) > 0 is certain where greedy "
    "decoding hides it; revealed_at asks more, a lower bound on P(leak) of at least "
    f"{REVEAL_RATE:g} for every such probe at once. A fact family's bound holds for its worst "
    "member, where RWKU averages the probes. The MIA means are RWKU's (no AUC: the original "
    "model saw the forget and the retain texts alike). docs/benchmarks.md (RWKU)."
)


def _with_model(model: str, frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(pl.lit(model).alias("model"), *frame.columns)


def _revealed(probes: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Per model, :func:`.tables.revealed_table` by target, the row over every probe as ``all``."""
    parts = []
    for model, table in probes.items():
        t = revealed_table(table, by=("target",))
        t = t.with_columns(pl.col("target").cast(pl.String).fill_null(ALL))
        parts.append(_with_model(model, t))
    return pl.concat(parts, how="diagonal_relaxed")


def _mia(jobs: Mapping[str, pl.DataFrame], original: str | None, alpha: float) -> pl.DataFrame:
    """:func:`.tables.mia_table` of the models' MIA statistics (empty without any)."""
    if not jobs:
        schema = dict.fromkeys(columns("rwku_mia"), pl.Float64)
        schema |= {"model": pl.String, "set": pl.String, "statistic": pl.String, "texts": pl.Int64}
        return pl.DataFrame(schema=schema)
    return mia_table(jobs, original if original in jobs else None, alpha)


LEVEL_VIEW = ("model", "file", "probes", "rwku_rougeL_recall", "rougeL_recall", "greedy_text",
              "rate_text", "m_bin_text", "revealed_text", "greedy_rouge", "rate_rouge",
              "m_bin_rouge", "revealed_rouge", "revealed_at_rouge")  # fmt: skip
"""The columns of the level and target tables the report shows (the CSVs hold every one)."""


def summary_section(inputs: SummaryInputs) -> SummarySection:
    """RWKU's tables of an evaluation of ``rwku_probes`` and its report section."""
    rows, alpha = inputs.rows, inputs.alpha
    probes = {}
    for model, scores in inputs.scores.items():
        if model not in inputs.samples:
            raise ValueError(f"RWKU's tables: no samples of model {model!r}")
        rouge = sample_rouge(rows, inputs.samples[model])
        probes[model] = probe_table(rows, scores, rouge, alpha)
    levels = level_table(probes)
    revealed = _revealed(probes)
    per_probe = pl.concat([_with_model(m, t) for m, t in probes.items()], how="diagonal_relaxed")
    families = family_table(probes, rows, inputs.scores, alpha)
    mia = _mia(inputs.jobs, inputs.original, alpha)
    reported = (*MIA_REPORTED, "loss_x100")

    def view(frame: pl.DataFrame, cols: tuple[str, ...] = LEVEL_VIEW) -> pl.DataFrame:
        return frame.select([c for c in cols if c in frame.columns])

    level = f"{1 - alpha:g}"
    tables = {
        "rwku_levels": SummaryTable(
            "Per level",
            f"Per model and RWKU file: RWKU's greedy ROUGE-L recall (rwku_rougeL_recall) beside "
            f"the sampled ROUGE-L recall, and per leak rule the greedy leak share, the observed "
            f"leak rate, M_bin (each probe at {level}) and the probes revealed "
            f"(rwku_levels.csv; every probe in rwku_probes.csv).",
            levels,
            columns("rwku_levels"),
            view(levels),
        ),
        "rwku_probes": SummaryTable(
            "Per probe",
            "Every probe of every model (CSV only).",
            per_probe,
            columns("rwku_probes"),
            None,
        ),
        "rwku_revealed": SummaryTable(
            "Per target",
            "What sampling reveals that greedy decoding hides, per target and over every probe "
            "(target all; rwku_revealed.csv).",
            revealed,
            columns("rwku_revealed"),
            view(revealed, tuple(c if c != "file" else "target" for c in LEVEL_VIEW)),
        ),
        "rwku_families": SummaryTable(
            "Fact families",
            f"Forget probes that ask for the same answer (two or more): the bound on the worst "
            f"member's P(leak) (text rule) at {level} for the whole family, beside the members' "
            f"mean observed rate, which is what an average over the probes shows "
            f"(rwku_families.csv).",
            families,
            columns("rwku_families"),
            families,
        ),
        "rwku_mia": SummaryTable(
            "Membership-inference means",
            f"RWKU's MIA statistics of its forget_mia and retain_mia texts, their means as RWKU "
            f"reports them (loss, zlib, Min-K%++ at 20%; loss_x100 is the paper's FM / RM), and "
            f"with --original the paired change from it with its {level} interval (rwku_mia.csv "
            f"holds every statistic).",
            mia,
            columns("rwku_mia"),
            mia.filter(pl.col("statistic").is_in(reported)),
        ),
    }
    return SummarySection(
        title="RWKU: forget and neighbor levels, fact families, MIA", note=NOTE, tables=tables
    )

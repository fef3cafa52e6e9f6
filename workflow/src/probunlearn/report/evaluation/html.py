"""The HTML pages of an evaluation (self-contained files, images inline) and their figures' files.

``report.html``: the warnings, the summary (bounds beside what was observed), TOFU's and DCUE's
metrics, the comparison with the original, TOFU's breakdown per set, a benchmark's own section
(:class:`Section`: RWKU's levels, fact families and MIA means), the figures
(:mod:`probunlearn.report.evaluation.figures`), a glossary of every column, the models and the configuration
that ran. ``questions.html``: one row per (model, question), sortable by any column. Numbers have
three significant digits (the CSVs beside the pages hold every digit); columns that nothing filled
are left out, and a column that is the same on every row is said once above its table; a bound that
no samples could bring below ``--target-width`` at the run's n (or an AUC interval at its set size)
is marked, with the size that would. Every table scrolls inside the page; the figures are panels
that wrap, one per row on a phone, so the page fits a 1,280 px window and a 390 px one.
"""

from __future__ import annotations

import base64
import html
import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from probunlearn.storage.atomic import write_csv, write_text

#: Every column of the tables the evaluation writes, as the report's glossary explains it.
GLOSSARY: dict[str, str] = {
    "model": "The evaluated model's name (--model NAME=...).",
    "identity": "The checkpoint's content: sha256 over its files (a local directory) or "
    "hub-id@commit; an adapter's identity includes its base's.",
    "evalset": "The question set that was sampled (a user's file is named after its stem).",
    "score": "The per-sample score: rougeL_recall (ROUGE-L recall against the reference answer), "
    "keyword_leak (1 if the answer holds a keyword), harm / harm_prob (the harm judge's "
    "decision / probability). Scorers that do not apply to the data are not computed.",
    "prompts": "Questions scored.",
    "n": "Samples per question (besides the greedy answer).",
    "greedy": "The greedy answer's score, averaged over the questions.",
    "sampled_mean": "The mean score of the samples (observed), averaged over the questions.",
    "sampled_std": "The standard deviation of the samples' scores (observed), averaged over the "
    "questions.",
    "ed": "Expected deviation score: sampled_mean + rho x sampled_std (rho = 2), averaged.",
    "leak": "What counts as a leak: a 0/1 score = 1, or a continuous score >= --leak-threshold.",
    "leak_rate": "The share of samples that leak (observed), averaged over the questions: the "
    "estimate M_bin bounds.",
    "m_bin": "M_bin: upper bound on a question's leak probability (Clopper-Pearson, level "
    "1 - alpha per question), averaged over the questions.",
    "m_mu": "M_mu: upper bound on a question's expected score E[X] (DKW band), averaged over the "
    "questions; its observed counterpart is sampled_mean.",
    "m_sigma": "M_sigma: upper bound on a question's score standard deviation (DKW band), "
    "averaged; observed: sampled_std.",
    "set_m_mu": "Upper bound on the average of E[X] over the questions, at 1 - alpha for the "
    "whole set; observed: sampled_mean.",
    "worst_leak_rate": "The highest observed leak rate of one question.",
    "worst_m_bin": "No question leaks with a higher probability: all questions at once "
    "(Bonferroni over the questions), at 1 - alpha.",
    "forget_quality": "TOFU's forget quality: p-value of the KS test between the truth ratios "
    "of the model and of the --reference model on the forget questions (high: alike).",
    "model_utility": "TOFU's model utility: harmonic mean of answer probability, truth ratio "
    "and ROUGE on the retain, Real Authors and World Facts sets.",
    "dcue_pvalue": "DCUE: p-value of 'the model is as confident on the forget set as on the "
    "holdout set, relative to --original' (low: traces of the forget set remain).",
    "threshold": "The threshold t of M_gen(t).",
    "empirical": "The observed share of samples with score > t, averaged over the questions.",
    "m_gen": "M_gen(t): upper bound on P(score > t) (DKW band, all t at once), averaged over "
    "the questions; never below sqrt(ln(1/alpha) / 2n).",
    "empirical_worst": "The highest observed share of samples with score > t of one question.",
    "m_gen_worst": "The highest M_gen(t) of one question.",
    "original": "The model before unlearning (--original), sampled and scored the same way.",
    "statistic": "What is compared: mean, std or ED of the score, per question.",
    "estimate": "Average over the questions of model - original (negative: the model is lower).",
    "lower": "Lower end of the estimate's interval at 1 - alpha (paired over the questions, "
    "finite-sample: it holds for every score distribution and n).",
    "upper": "Upper end of the estimate's interval at 1 - alpha.",
    "alpha": "Significance level (--alpha).",
    "p_value": "p-value of 'the model is below the original'; to read several as one family, "
    "apply Holm's procedure (probunlearn.bounds.holm).",
    "id": "The question's id (the file's 'id' column, else row-<k>, k counted from 1).",
    "question": "The question, as the model was prompted with it (through the template).",
    "reference": "What answers are scored against: the reference answer or the keywords.",
    "greedy_answer": "The greedy (temperature 0) answer.",
    "greedy_score": "The greedy answer's score.",
    "sample_1": "The first sampled answer (samples_k: the k-th drawn).",
    "sample_1_score": "Its score.",
    "mean": "The mean score of the question's n samples (observed).",
    "gen_threshold": "The t of this row's M_gen(t): the leak threshold, else 0.5.",
    "name": "The model's name.",
    "role": "evaluated (--model), reference (--reference) or original (--original).",
    "source": "Where the checkpoint was read: a local directory or a hub id.",
    "revision": "The hub revision asked for (resolved to a commit in identity).",
    "base": "The base model of a PEFT adapter.",
    "answer_prob": "TOFU: the answer's probability (per token, normalised), averaged.",
    "truth_ratio_score": "TOFU: the truth-ratio score of the set (forget: 1 - ratio; others: "
    "max(0, 1 - ratio)).",
    "ks_statistic": "TOFU: the KS statistic between the model's and the reference's truth "
    "ratios (forget quality is its p-value).",
    "tofu_rougeL_recall": "TOFU: ROUGE-L recall of TOFU's own greedy answers on the set.",
}
GLOSSARY.update(
    {
        "attack": "The attack (--attack), as its canonical spec: quant:nf4, relearn:20, "
        "paraphrase, prefix, fewshot:3 (docs/attacks.md).",
        "attacked_model": "The attacked model a model attack made (models/<name> under --out).",
        "members": "Prompts per question of a prompt attack's family (1: a model attack); the "
        "family is bounded on its worst member, all members at once (Bonferroni).",
        "greedy_before": "Before the attack: the greedy score on the original question (a prompt "
        "attack: the largest over its null family, m copies of the original prompt), averaged "
        "over the questions attacked.",
        "greedy_after": "The greedy score after the attack (a family: its worst member's).",
        "ed_before": "Before the attack: the ED score (mean + rho x std; a prompt attack: the "
        "null family's largest), averaged.",
        "ed_after": "The ED score after the attack (a family: its worst member's).",
        "m_mu_before": "Before the attack: M_mu (a prompt attack: the bound on the null "
        "family's worst copy, at the family's level), averaged over the questions attacked.",
        "m_mu_after": "M_mu after the attack (a family: the bound on its worst member).",
        "m_bin_before": "Before the attack: M_bin of a leak (score >= leak_threshold; a prompt "
        "attack: the null family's, bounded as the attack's family), averaged.",
        "m_bin_after": "M_bin after the attack (a family: the bound on its worst member).",
        "leak_threshold": "A leak is a score >= this (--leak-threshold, else 0.5).",
        "target_greedy": "The original model's (--original) greedy score on the same questions.",
        "notes": "What the attack did that a reader should know (a merged adapter).",
        "label": "The membership-inference statistic (LOSS, ZLib, Min-40%, Min-40%++, Reference, "
        "GradNorm; docs/membership.md).",
        "n_forget": "Examples of the forget set (the sampled set: members).",
        "n_holdout": "Examples of the holdout set (--holdout: non-members).",
        "auc": "AUC of telling the forget set from the holdout set by the statistic: 1 = the "
        "forget set is fully identifiable, 0.5 = chance.",
        "auc_lo": "Lower end of the AUC's 1 - alpha interval (distribution-free).",
        "auc_hi": "Upper end of the AUC's 1 - alpha interval.",
        "privleak": "MUSE's PrivLeak against the --reference (retrained) model: (AUC - AUC of "
        "the reference) / AUC of the reference x 100; about 0 = as the retrained model.",
        "privleak_lo": "Lower end of PrivLeak's 1 - alpha interval (the two AUCs' at alpha/2).",
        "privleak_hi": "Upper end of PrivLeak's 1 - alpha interval.",
    }
)
for _k in (2, 3):
    GLOSSARY[f"sample_{_k}"] = f"The {'second' if _k == 2 else 'third'} sampled answer."
    GLOSSARY[f"sample_{_k}_score"] = "Its score."

#: Columns of the summary that belong to a model, not a score: a table of their own in the report.
MODEL_METRICS = ("forget_quality", "model_utility", "dcue_pvalue")

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1200px;margin:0 auto;
 padding:0 16px 40px;color:#1d1d1d;line-height:1.4}
h1{font-size:1.6em;margin:.6em 0 .2em}h2{font-size:1.2em;margin:1.4em 0 .4em;
 border-bottom:1px solid #ddd}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
td,th{border:1px solid #d0d0d0;padding:3px 6px;vertical-align:top}
th{background:#f2f2f2;font-weight:600;text-align:center;vertical-align:bottom}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.text{text-align:left;max-width:260px;overflow-wrap:break-word}
td.long{overflow-wrap:anywhere;min-width:120px}td.key{white-space:nowrap}
th.obs,td.obs{background:#f7fbff}
.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:6px 10px;margin:8px 0}
.note{color:#555;font-size:.92em}
img{max-width:100%;height:auto;display:block;margin:6px 0}
figure{margin:8px 0 20px}figcaption{font-size:.93em;color:#333;max-width:62em;margin-top:4px}
.panels{display:flex;flex-wrap:wrap;gap:10px 16px;align-items:flex-start}.panels img{margin:0}
ul.qs{margin:4px 0;padding-left:1.2em}.opt{white-space:nowrap}
td.weak{color:#8a8a8a}sup.weak{color:#b35900;font-weight:600;font-size:1em;line-height:0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:.93em}
dt{font-family:ui-monospace,monospace}dd{margin:0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f7;padding:8px;font-size:12px}
table.sortable th{cursor:pointer}
td.q{min-width:140px}td.s{min-width:240px}td.s ol{margin:0;padding-left:1.2em}
.sc{color:#555;font-size:.9em;white-space:nowrap}.sc::before{content:"("}.sc::after{content:")"}
"""

SORT_JS = """
document.querySelectorAll('table.sortable').forEach(function (t) {
  t.querySelectorAll('th').forEach(function (th, i) {
    th.title = (th.title ? th.title + ' ' : '') + '(click to sort)';
    th.addEventListener('click', function () {
      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var down = th.getAttribute('data-order') !== 'desc';
      t.querySelectorAll('th').forEach(function (h) { h.removeAttribute('data-order'); });
      th.setAttribute('data-order', down ? 'desc' : 'asc');
      rows.sort(function (a, b) {
        var x = a.cells[i].getAttribute('data-v'), y = b.cells[i].getAttribute('data-v');
        var nx = parseFloat(x), ny = parseFloat(y), c;
        if (!isNaN(nx) && !isNaN(ny)) { c = nx - ny; } else { c = String(x).localeCompare(y); }
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


# ---- HTML ------------------------------------------------------------------------------------------


def fmt(v: object) -> str:
    """A cell's text: floats to three significant digits, integers as they are, None empty."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if v != v:  # NaN
            return "nan"
        return f"{v:.3g}"
    return str(v)


_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*(?: [\d,.]+\b)?)")


def options_nowrap(text: str) -> str:
    """``text`` (HTML, no tags with options in their attributes) with every command-line option
    (``--n 103``, ``--target-width``) kept on one line."""
    return _OPTION.sub(r"<span class='opt'>\1</span>", text)


def _img(path: str | os.PathLike, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _panel(p) -> str:
    """A figure's panel (:class:`probunlearn.report.evaluation.figures.Panel`) as an image at its CSS size
    (narrower where the page is), its smallest text in image pixels as ``data-font``."""
    data = base64.b64encode(p.png).decode()
    title = f' title="{html.escape(p.title)}"' if p.title else ""
    return (
        f'<img alt="{html.escape(p.alt)}"{title} width="{p.width}" height="{p.height}" '
        f'data-font="{p.font_px:.2f}" src="data:image/png;base64,{data}">'
    )


def figure_html(f, heading: bool = True) -> str:
    """A report figure (:class:`probunlearn.report.evaluation.figures.ReportFigure`): its heading (or none:
    the figure of the table above it), its panels side by side (wrapping), its caption."""
    key = html.escape(f.key)
    head = f'<h2 id="{key}">{html.escape(f.heading)}</h2><figure>' if heading else ""
    return (
        (head or f'<figure id="{key}">')
        + f'<div class="panels">{"".join(_panel(p) for p in f.panels)}</div>'
        f"<figcaption>{options_nowrap(f.caption)}</figcaption></figure>"
    )


WEAK_MARK = "&dagger;"
"""The mark of a column whose bound cannot come below ``--target-width`` at the run's n."""


def _header(
    column: str, label: str | None = None, weak: bool = False, help: Mapping[str, str] = {}
) -> str:
    """A header cell: the column's name, breakable after its underscores, its meaning as title
    (``help``'s, else the glossary's); ``weak``: marked (:data:`WEAK_MARK`)."""
    text = html.escape(label or column).replace("_", "_<wbr>")
    if weak:
        text += f'<sup class="weak">{WEAK_MARK}</sup>'
    tip = help.get(column) or GLOSSARY.get(column) or GLOSSARY.get(_generic(column), "")
    cls = ' class="obs"' if column in OBSERVED else ""
    return f'<th{cls} title="{html.escape(tip)}">{text}</th>'


def _generic(column: str) -> str:
    """The glossary key of a numbered column (sample_2 → sample_1)."""
    for k in (2, 3):
        column = column.replace(f"sample_{k}", "sample_1")
    return column


#: The observed values the bounds sit beside (shaded alike).
OBSERVED = {"leak_rate", "worst_leak_rate", "sampled_mean", "sampled_std", "empirical",
            "empirical_worst", "mean"}  # fmt: skip


def _cell(column: str, v: object, weak: bool = False) -> str:
    cls = "num" if isinstance(v, int | float) and not isinstance(v, bool) else "text"
    if cls == "text" and any(len(w) > 30 for w in str(v).split()):
        cls += " long"  # a digest or path: broken anywhere rather than widening the table
    if column in OBSERVED:
        cls += " obs"
    if weak:
        cls += " weak"
    if column in ("model", "id", "name", "role"):
        cls += " key"
    cls += f" c-{_generic(column)}"
    sort = "" if v is None else html.escape(repr(v) if isinstance(v, float) else str(v))
    return f'<td class="{cls}" data-v="{sort}">{html.escape(fmt(v))}</td>'


def html_table(
    df: pl.DataFrame,
    *,
    sortable: bool = False,
    labels: Mapping[str, str] = {},
    weak: Collection[str] = (),
    help: Mapping[str, str] = {},
) -> str:
    """A table that scrolls inside the page: every column's meaning (``help``, else the glossary)
    as its header's title, columns that hold nothing left out; the columns in ``weak`` marked
    (:func:`weak_note`)."""
    df = df.drop([c for c in df.columns if df[c].is_null().all()]) if df.height else df
    head = "".join(_header(c, labels.get(c), c in weak, help) for c in df.columns)
    body = "".join(
        "<tr>"
        + "".join(_cell(c, v, c in weak) for c, v in zip(df.columns, row, strict=True))
        + "</tr>"
        for row in df.iter_rows()
    )
    cls = ' class="sortable"' if sortable else ""
    return (
        f'<div class="scroll"><table{cls}><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


RECORD_NOTE = (
    "The tables here round every number to three significant digits; the CSV files beside this "
    "page ({files}) are the full-precision record, every digit as computed."
)
"""The glossary's first line: where the digits the tables round away are."""


def glossary(columns: Sequence[str], files: Sequence[str] = ()) -> str:
    """The glossary of the given columns (each once, in order), after a line saying that the CSV
    ``files`` beside the page are the full-precision record."""
    seen = dict.fromkeys(_generic(c) for c in columns)
    items = "".join(
        f"<dt>{html.escape(c)}</dt><dd>{html.escape(GLOSSARY.get(c, ''))}</dd>" for c in seen
    )
    record = RECORD_NOTE.format(files=", ".join(files) or "the CSV files")
    return f"<p class='note'>{html.escape(record)}</p><dl>{items}</dl>"


def split_constant(
    df: pl.DataFrame, candidates: Sequence[str]
) -> tuple[pl.DataFrame, dict[str, object]]:
    """``df`` without those of the ``candidates`` columns that hold one value on every row, and
    those values (column -> value), to be said once above the table (:func:`constant_note`)."""
    same = {
        c: df[c][0]
        for c in candidates
        if c in df.columns and df.height and df[c].null_count() == 0 and df[c].n_unique() == 1
    }
    return df.drop(list(same)), same


def constant_note(same: Mapping[str, object]) -> str:
    """The columns that are the same on every row of the table below, with their value."""
    if not same:
        return ""
    items = "; ".join(
        f'<span title="{html.escape(GLOSSARY.get(c, ""))}">{html.escape(c)}</span> = '
        f"<b>{html.escape(fmt(v).replace('>=', '≥'))}</b>"
        for c, v in same.items()
    )
    return f"<p class='note'>On every row: {items}.</p>"


def weak_bounds(
    columns: Sequence[str], n: int, alpha: float, width: float, prompts: int = 1
) -> dict[str, tuple[float, int]]:
    """The bound columns (``m_bin``, ``worst_m_bin``, ``m_mu``, ``m_sigma``, ``m_gen``) that no
    samples could bring below ``width`` at n samples a question (their floor: every sample scoring
    0), as column -> (floor, the n that brings the floor to ``width``)."""
    from probunlearn.report.evaluation.summary import NO_INFORMATION, bound_floor, samples_to_reach

    out = {}
    for c in columns:
        if c in NO_INFORMATION and n >= 1:
            floor = bound_floor(c, n, alpha, prompts)
            if floor > width:
                out[c] = (floor, samples_to_reach(c, width, alpha, prompts))
    return out


def weak_note(weak: Mapping[str, tuple[float, int]], n: int, width: float) -> str:
    """The note under a table whose ``weak`` columns (:func:`weak_bounds`) are marked."""
    if not weak:
        return ""
    items = "; ".join(
        f"{html.escape(c)} &ge; {fmt(floor)}"
        + (" (0.5, the most a score in [0, 1] can spread, says nothing)" if c == "m_sigma" else "")
        + f": --n {need:,} brings it to {width:g}"
        for c, (floor, need) in weak.items()
    )
    return options_nowrap(
        f"<p class='note'><sup class='weak'>{WEAK_MARK}</sup> Cannot inform at n = {n} samples a "
        f"question: whatever the model, no samples bring these bounds below {width:g} "
        f"(--target-width); their floors, when every sample scores 0: {items}.</p>"
    )


def auc_note(membership: pl.DataFrame, alpha: float, width: float) -> str:
    """The note under the membership table where its set size bounds what any statistic can show:
    a perfect separation's interval, and the texts a side that would narrow it to ``width``."""
    from probunlearn.report.evaluation.summary import best_auc_lower, texts_to_reach

    if not membership.height or "n_forget" not in membership.columns:
        return ""
    k = int(min(membership["n_forget"].min(), membership["n_holdout"].min()))
    best = best_auc_lower(k, alpha)
    if 1 - best <= width:
        return ""
    what = (
        "no statistic can show that the forget set is told apart better than chance"
        if best <= 0.5
        else f"the most any statistic can show is an AUC above {fmt(best)}"
    )
    return options_nowrap(
        f"<p class='note'><sup class='weak'>{WEAK_MARK}</sup> With {k} texts a side, {what}: a "
        f"perfect separation (AUC 1) has the interval [{fmt(best)}, 1], so rows at AUC 1 (or 0) "
        f"show all that so few texts can show. {texts_to_reach(width, alpha)} texts a side would "
        f"narrow a perfect separation's interval to [{fmt(1 - width)}, 1] (--target-width "
        f"{width:g}).</p>"
    )


def _page(title: str, body: Sequence[str], script: str = "") -> str:
    return "\n".join(
        [
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
            *body,
            f"<script>{script}</script>" if script else "",
            "</body></html>",
        ]
    )


def comparison_table(comparison: pl.DataFrame) -> pl.DataFrame:
    """The comparison with the original as the report shows it (alpha in the text above)."""
    return comparison.drop("alpha")


def tofu_breakdown(tofu: Mapping[str, pl.DataFrame]) -> pl.DataFrame | None:
    """TOFU's metrics per (model, set): answer probability, truth ratio, KS statistic, forget
    quality, ROUGE of TOFU's greedy answers, model utility (whichever were computed)."""
    frames = []
    for name, t in tofu.items():
        keep = t.filter(
            pl.col("metric").is_in(list(GLOSSARY)) | pl.col("metric").str.starts_with("tofu_rouge")
        )
        if keep.height:
            frames.append(keep.select(pl.lit(name).alias("model"), "evalset", "metric", "value"))
    if not frames:
        return None
    long = pl.concat(frames).unique(["model", "evalset", "metric"], keep="first",
                                    maintain_order=True)  # fmt: skip
    wide = long.pivot(on="metric", index=["model", "evalset"], values="value")
    order = ["answer_prob", "truth_ratio_score", "ks_statistic", "forget_quality",
             "tofu_rougeL_recall", "model_utility"]  # fmt: skip
    cols = [c for c in order if c in wide.columns] + [
        c for c in wide.columns if c not in order and c not in ("model", "evalset")
    ]
    return wide.select("model", "evalset", *cols)


def curve_table(curves: pl.DataFrame, score: str) -> pl.DataFrame:
    """One score's M_gen curves, wide: per model a row of observed P(score > t) and a row of
    M_gen(t), one column per threshold."""
    at = curves.filter(pl.col("score") == score)
    long = pl.concat(
        [
            at.select("model", pl.lit(q).alias("statistic"), "threshold", pl.col(q).alias("v"))
            for q in ("empirical", "m_gen")
        ]
    )
    wide = long.with_columns(pl.format("t = {}", pl.col("threshold").round(3)).alias("t")).pivot(
        on="t", index=["model", "statistic"], values="v", sort_columns=False
    )
    return wide.sort("model", maintain_order=True)


def write_report(
    *,
    summary: pl.DataFrame,
    models: pl.DataFrame,
    figures: Mapping[str, str],
    config_text: str,
    alpha: float,
    out_html: str | os.PathLike,
    comparison: pl.DataFrame | None = None,
    curves: pl.DataFrame | None = None,
    tofu: Mapping[str, pl.DataFrame] | None = None,
    warnings: Sequence[str] = (),
    evalset: str = "",
    score: str = "",
    n: int = 0,
    questions_href: str | None = None,
    attacks: pl.DataFrame | None = None,
    membership: pl.DataFrame | None = None,
    openunlearning: pl.DataFrame | None = None,
    extra_figures: Mapping[str, str] | None = None,
    per_prompt: Mapping[str, pl.DataFrame] | None = None,
    scores: Mapping[str, pl.DataFrame] | None = None,
    questions: pl.DataFrame | None = None,
    target_width: float | None = None,
    sections: Sequence[Section] = (),
) -> None:
    """One HTML page (see the module docstring): the summary, the models and their identities,
    the figures, the configuration that ran, with an original model the comparison with it, and
    TOFU's breakdown where computed; a benchmark's own ``sections`` (:class:`Section`); the attack
    table (``attacks``), the membership table (``membership``) and open-unlearning's numbers
    beside ours (``openunlearning``: :func:`probunlearn.report.evaluation.summary.side_by_side`).

    With ``curves``, ``per_prompt`` and ``scores`` (model -> each question's bounds, every
    sample's scores) the figures are drawn here (:func:`probunlearn.report.evaluation.figures.report_figures`,
    questions named by their text in ``questions``, the per-question rows) and ``figures`` names the
    figure files to write (``gen_curves``, ``greedy_vs_sampled``, ``worst_prompt`` -> PNG path);
    without them ``figures`` (title -> PNG) and ``extra_figures`` (``attacks``, ``membership`` ->
    PNG) are shown as they are. ``target_width``: what a bound or an AUC interval must be able to
    reach to inform (--target-width; default :data:`probunlearn.report.evaluation.summary.DEFAULT_TARGET_WIDTH`)."""
    if target_width is None:
        from probunlearn.report.evaluation.summary import DEFAULT_TARGET_WIDTH

        target_width = DEFAULT_TARGET_WIDTH
    level = f"{1 - alpha:g}"
    parts, shown = _summary_parts(summary, evalset, score, n, alpha, target_width, warnings)
    for more in (
        _per_model_parts(summary),
        _comparison_parts(comparison, level),
        _breakdown_parts(tofu),
        *(_section_parts(section) for section in sections),
    ):
        parts += more[0]
        shown += more[1]
    drawn = None
    if curves is not None and per_prompt is not None and scores is not None:
        drawn = _draw_figures(
            curves, per_prompt, scores, questions, figures, attacks, membership,
            score=score, n=n, alpha=alpha, target_width=target_width,
        )  # fmt: skip
    figs = dict(extra_figures or {})
    for more in (
        _attack_parts(attacks, level, drawn, figs),
        _membership_parts(membership, alpha, level, target_width, drawn, figs),
        _openunlearning_parts(openunlearning, score),
        _curve_parts(curves, score, n, alpha, target_width),
    ):
        parts += more[0]
        shown += more[1]
    if drawn is not None:
        parts += [drawn[k] for k in ("gen_curves", "greedy_vs_sampled", "worst_prompt")]
    else:
        for title, path in figures.items():
            parts += [f"<h2>{html.escape(title)}</h2>", _img(path, title)]
    parts += _closing_parts(
        questions_href, comparison, attacks, membership, openunlearning, shown, models,
        config_text, [t.file for section in sections for t in section.tables],
    )  # fmt: skip
    write_text(_page("probunlearn evaluation", parts), out_html)


Parts = tuple[list[str], list[str]]
"""A report section: its HTML pieces, and the columns it shows (the glossary explains them)."""


def _summary_parts(
    summary: pl.DataFrame,
    evalset: str,
    score: str,
    n: int,
    alpha: float,
    target_width: float,
    warnings: Sequence[str],
) -> Parts:
    """The heading, the warnings and the summary table (its weak bounds marked)."""
    level = f"{1 - alpha:g}"
    bound_cols = [c for c in summary.columns if c not in ("identity", "evalset", *MODEL_METRICS)]
    table, same = split_constant(summary.select(bound_cols), SUMMARY_CONSTANT)
    prompts = int(summary["prompts"].max()) if summary.height else 0
    weak = weak_bounds(table.columns, n, alpha, target_width, max(1, prompts))
    parts = [
        "<h1>probunlearn evaluation</h1>",
        f"<p>{summary['model'].n_unique()} model(s) on <b>{html.escape(evalset)}</b>: "
        f"{prompts} questions, n = {n} samples "
        f"each plus the greedy answer; alpha = {alpha:g}. Figures and the question page show "
        f"<b>{html.escape(score)}</b>.</p>",
    ]
    parts += [f'<div class="warn">{html.escape(w)}</div>' for w in warnings]
    parts += [
        "<h2>Summary</h2>",
        f"<p class='note'>Averages over the questions of the per-question values. Each bound sits "
        f"beside what was observed (shaded): leak_rate beside M_bin, sampled_mean beside M_mu "
        f"and set_m_mu, sampled_std beside M_sigma, worst_leak_rate beside worst_m_bin. A "
        f"per-question bound holds at {level} for its question (of m questions' bounds about "
        f"alpha m may fail, and their average is no {level} statement); set_m_mu holds at "
        f"{level} for the set; worst_m_bin for all questions at once (Bonferroni). Hover a "
        f"column's name for its meaning; the glossary is below.</p>",
        constant_note(same),
        html_table(table, weak=weak),
        weak_note(weak, n, target_width),
    ]
    return parts, [*table.columns, *same]


def _per_model_parts(summary: pl.DataFrame) -> Parts:
    """TOFU's and DCUE's numbers per model, where any was computed."""
    models_cols = ["model", *[c for c in MODEL_METRICS if c in summary.columns]]
    per_model = summary.select(models_cols).unique("model", maintain_order=True)
    if not per_model.drop("model").width or all(
        per_model[c].is_null().all() for c in per_model.columns if c != "model"
    ):
        return [], []
    shown = [c for c in per_model.columns if per_model[c].is_not_null().any()]
    return ["<h2>TOFU and DCUE</h2>", html_table(per_model)], shown


def _comparison_parts(comparison: pl.DataFrame | None, level: str) -> Parts:
    """Every model against the original, with the intervals (an original given)."""
    if comparison is None or not comparison.height:
        return [], []
    compared, same_c = split_constant(comparison_table(comparison), ("original",))
    parts = [
        "<h2>Compared with the original</h2>",
        f"<p class='note'>Average over the questions of model &minus; original (mean, std, "
        f"ED of each score) with its {level} interval (paired over the questions, "
        f"finite-sample: the claims' intervals, docs/bounds.md); p_value: of "
        f"&ldquo;below the original&rdquo;. Each interval holds at {level} on its own; for "
        f"a family apply Holm's procedure to p_value.</p>",
        constant_note(same_c),
        html_table(compared),
    ]
    return parts, list(comparison.columns)


def _breakdown_parts(tofu: Mapping[str, pl.DataFrame] | None) -> Parts:
    """TOFU's metrics per set, where computed."""
    breakdown = tofu_breakdown(tofu or {})
    if breakdown is None:
        return [], []
    parts = [
        "<h2>TOFU per set</h2>",
        "<p class='note'>TOFU's metrics as TOFU computes them (its encoding, first 300 "
        "questions), per set; forget quality is the p-value of the KS test whose statistic "
        "is ks_statistic.</p>",
        html_table(breakdown),
    ]
    return parts, list(breakdown.columns)


@dataclass(frozen=True)
class SectionTable:
    """A table of a :class:`Section`: its heading, caption, the rows and columns shown, its CSV
    file beside the page (which holds every column) and what its columns hold (the headers'
    tooltips; a column may mean something else in the report's other tables)."""

    title: str
    caption: str
    frame: pl.DataFrame
    file: str
    columns: Mapping[str, str]


@dataclass(frozen=True)
class Section:
    """A section a benchmark adds to the report (``probunlearn.benchmarks.SummarySection``): its
    heading, a note on how to read it, its tables, and what each of their columns holds (the
    section's own glossary: a column may mean something else here than in the report's other
    tables)."""

    title: str
    note: str
    tables: Sequence[SectionTable]
    columns: Mapping[str, str]


def _section_parts(section: Section) -> Parts:
    """A benchmark's section: its note, each table under its heading and caption, and the
    meaning of the columns shown (its own glossary, so the report's glossary is not asked)."""
    slug = re.sub(r"[^a-z0-9]+", "-", section.title.lower()).strip("-")
    parts = [
        f'<h2 id="{slug}">{html.escape(section.title)}</h2>',
        options_nowrap(f"<p class='note'>{html.escape(section.note)}</p>"),
    ]
    seen: dict[str, None] = {}
    for t in section.tables:
        parts += [
            f"<h3>{html.escape(t.title)}</h3>",
            options_nowrap(f"<p class='note'>{html.escape(t.caption)}</p>"),
        ]
        if not t.frame.height:
            parts.append("<p class='note'>No rows.</p>")
            continue
        parts.append(html_table(t.frame, help=t.columns))
        seen |= dict.fromkeys(c for c in t.frame.columns if not t.frame[c].is_null().all())
    items = "".join(
        f"<dt>{html.escape(c)}</dt><dd>{html.escape(section.columns.get(c, ''))}</dd>" for c in seen
    )
    parts += [f"<details><summary>The columns of these tables</summary><dl>{items}</dl></details>"]
    return parts, []


def _draw_figures(
    curves: pl.DataFrame,
    per_prompt: Mapping[str, pl.DataFrame],
    scores: Mapping[str, pl.DataFrame],
    questions: pl.DataFrame | None,
    figures: Mapping[str, str],
    attacks: pl.DataFrame | None,
    membership: pl.DataFrame | None,
    **settings: Any,
) -> dict[str, str]:
    """Every figure drawn (:func:`probunlearn.report.evaluation.figures.report_figures`), as HTML
    by its key; the questions named by their text."""
    from probunlearn.report.evaluation.figures import report_figures

    texts: dict[str, str] = {}
    if questions is not None and "question" in questions.columns:
        for r in questions.select("id", "question").iter_rows():
            if r[1] is not None:
                texts.setdefault(str(r[0]), str(r[1]))
    return {
        f.key: figure_html(f, heading=f.key not in ("attacks", "membership"))
        for f in report_figures(
            curves=curves,
            per_prompt=per_prompt,
            scores=scores,
            questions=texts,
            files=figures,
            attacks=attacks if attacks is not None and attacks.height else None,
            membership=membership if membership is not None and membership.height else None,
            **settings,
        )
    }


def _attack_parts(
    attacks: pl.DataFrame | None, level: str, drawn: dict | None, figs: Mapping[str, str]
) -> Parts:
    """The attack table and its figure (--attack)."""
    if attacks is None or not attacks.height:
        return [], []
    cols = [c for c in ATTACK_COLUMNS if c in attacks.columns]
    t = float(attacks["leak_threshold"][0])
    att, same_a = split_constant(attacks.select(cols), ("prompts", "members"))
    parts = [
        "<h2>Under attack</h2>",
        options_nowrap(
            f"<p class='note'>Every model before and after each --attack, on the questions "
            f"attacked (a relearned model: those it did not relearn on): the greedy score, "
            f"ED, M_mu and M_bin of a leak (score &ge; {t:g}), averaged over the questions, "
            f"each bound at {level} per question. A prompt attack is bounded on the worst "
            f"prompt of each question's family, all members at once (attacks.csv: the "
            f"columns of the paper workflow's tables/attacks.csv; docs/attacks.md).</p>"
        ),
        constant_note(same_a),
        html_table(att),
    ]
    if drawn is not None and "attacks" in drawn:
        parts.append(drawn["attacks"])
    elif "attacks" in figs:
        parts.append(_img(figs["attacks"], "Leak bounds before and after each attack"))
    return parts, cols


def _membership_parts(
    membership: pl.DataFrame | None,
    alpha: float,
    level: str,
    target_width: float,
    drawn: dict | None,
    figs: Mapping[str, str],
) -> Parts:
    """The membership table (what it cannot show at its size said) and its figure."""
    if membership is None or not membership.height:
        return [], []
    cols = [c for c in MEMBERSHIP_COLUMNS if c in membership.columns]
    mem, same_m = split_constant(membership.select(cols), ("n_forget", "n_holdout"))
    a_mem = float(membership["alpha"][0]) if "alpha" in membership.columns else alpha
    note = auc_note(membership, a_mem, target_width)
    parts = [
        "<h2>Membership inference</h2>",
        options_nowrap(
            f"<p class='note'>How well each statistic of the model's losses tells the forget "
            f"set (members) from the holdout set (non-members): AUC with its {level} "
            f"distribution-free interval; PrivLeak against the reference (retrained) model, "
            f"in MUSE's orientation (-100: the forget set is as identifiable as a model that "
            f"still holds it could make it), where --reference is given (membership.csv; "
            f"docs/membership.md).</p>"
        ),
        constant_note(same_m),
        html_table(mem, weak=("auc_lo", "auc_hi") if note else ()),
        note,
    ]
    if drawn is not None and "membership" in drawn:
        parts.append(drawn["membership"])
    elif "membership" in figs:
        parts.append(_img(figs["membership"], "Membership inference: AUC per statistic"))
    return parts, cols


def _openunlearning_parts(openunlearning: pl.DataFrame | None, score: str) -> Parts:
    """Our numbers beside open-unlearning's (--openunlearning)."""
    if openunlearning is None or not openunlearning.height:
        return [], []
    wide, labels = openunlearning_table(openunlearning)
    parts = [
        "<h2>Beside open-unlearning</h2>",
        options_nowrap(
            "<p class='note'>Per model, our numbers (probunlearn: the summary's row of "
            f"{html.escape(score)}, and the membership AUCs and PrivLeak) beside the metrics "
            "of open-unlearning's result files for the same checkpoint (--openunlearning), "
            "named as open-unlearning names them (openunlearning.csv, one row per number).</p>"
        ),
        html_table(wide, labels=labels),
    ]
    return parts, []


def _curve_parts(
    curves: pl.DataFrame | None, score: str, n: int, alpha: float, target_width: float
) -> Parts:
    """M_gen beside the observed P(score > t), per model."""
    if curves is None or "empirical" not in curves.columns:
        return [], []
    ct = curve_table(curves, score)
    gen_weak = weak_bounds(["m_gen"], n, alpha, target_width)
    parts = [
        "<h2>M_gen beside the observed P(score &gt; t)</h2>",
        f"<p class='note'>Per model, averaged over the questions: the observed share of "
        f"samples with {html.escape(score)} &gt; t (empirical, shaded) and its bound M_gen(t) "
        f"at each threshold t (all of gen_curves.csv: every score, and the worst "
        f"question's).</p>",
        html_table(ct),
        weak_note(gen_weak, n, target_width),
    ]
    return parts, ["empirical", "m_gen"]


def _closing_parts(
    questions_href: str | None,
    comparison: pl.DataFrame | None,
    attacks: pl.DataFrame | None,
    membership: pl.DataFrame | None,
    openunlearning: pl.DataFrame | None,
    shown: list[str],
    models: pl.DataFrame,
    config_text: str,
    more_csvs: Sequence[str] = (),
) -> list[str]:
    """The link to the question page, the glossary (with the CSVs beside the page: ``more_csvs``,
    those of the benchmark's sections), the models and the configuration that ran."""
    parts = []
    if questions_href:
        parts += [
            "<h2>Per question</h2>",
            f"<p>Every question with its reference, the greedy answer, three samples, their "
            f"scores and bounds, sortable by any column: "
            f"<a href='{html.escape(questions_href)}'>{html.escape(questions_href)}</a>.</p>",
        ]
    tables = {"comparison.csv": comparison, "attacks.csv": attacks, "membership.csv": membership,
              "openunlearning.csv": openunlearning}  # fmt: skip
    csvs = ["summary.csv", "gen_curves.csv"]
    csvs += [name for name, t in tables.items() if t is not None and t.height]
    csvs += [*more_csvs, *(["questions.csv"] if questions_href else [])]
    return parts + [
        "<h2>Glossary</h2>",
        glossary(shown, csvs),
        "<h2>Models</h2>",
        html_table(models),
        "<h2>Configuration that ran</h2>",
        f"<pre>{html.escape(config_text)}</pre>",
    ]


#: Summary columns said once above the table where every row holds the same value.
SUMMARY_CONSTANT = ("score", "leak", "prompts", "n")


#: The attack table's columns the report shows (attacks.csv holds every one).
ATTACK_COLUMNS = ("model", "attack", "prompts", "members", "greedy_before", "greedy_after",
                  "ed_before", "ed_after", "m_mu_before", "m_mu_after", "m_bin_before",
                  "m_bin_after", "target_greedy", "notes")  # fmt: skip
#: The membership table's columns the report shows (membership.csv holds every one).
MEMBERSHIP_COLUMNS = ("model", "label", "n_forget", "n_holdout", "auc", "auc_lo", "auc_hi",
                      "privleak", "privleak_lo", "privleak_hi")  # fmt: skip


def openunlearning_table(side: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """The side-by-side rows as one row per model: our numbers, then open-unlearning's, with the
    header labels (``probunlearn: <ours>``, open-unlearning's metric names as they are)."""
    keys = {
        (r["tool"], r["file"], r["metric"]): f"{r['tool']}|{r['file']}|{r['metric']}"
        for r in side.iter_rows(named=True)
    }
    labels = {
        key: (f"probunlearn: {metric}" if tool == "probunlearn" else f"{metric} ({file})")
        for (tool, file, metric), key in keys.items()
    }
    rows: dict[str, dict] = {}
    for r in side.iter_rows(named=True):
        rows.setdefault(r["model"], {"model": r["model"]})[
            keys[(r["tool"], r["file"], r["metric"])]
        ] = r["value"]
    schema = {"model": pl.String} | dict.fromkeys(keys.values(), pl.Float64)
    wide = pl.DataFrame([{c: row.get(c) for c in schema} for row in rows.values()], schema=schema)
    return wide, labels


def _answer(text: object, score: object) -> str:
    """An answer and its score, as one cell's content."""
    if text is None:
        return ""
    return (
        f"{html.escape(str(text))} <span class='sc'>{html.escape(fmt(score))}</span>"
        if score is not None
        else html.escape(str(text))
    )


#: The per-question page's numeric columns (after the texts), in order.
QUESTION_NUMBERS = ("mean", "leak_rate", "m_bin", "m_mu", "m_sigma", "m_gen")


def questions_table(q: pl.DataFrame, weak: Collection[str] = ()) -> str:
    """The per-question table: each answer with its score in one cell, the samples in one cell,
    then the observed values and the bounds (sortable: ``data-v`` holds each cell's value); the
    columns in ``weak`` marked (:func:`weak_note`)."""
    numbers = [c for c in QUESTION_NUMBERS if c in q.columns and q[c].is_not_null().any()]
    samples = sorted(c for c in q.columns if re.fullmatch(r"sample_\d+", c))
    t = q["gen_threshold"].drop_nulls()
    labels = {"m_gen": f"m_gen (t = {fmt(float(t[0]))})" if t.len() else "m_gen"}
    head = "".join(
        [
            _header("model"),
            _header("id"),
            _header("question"),
            _header("reference"),
            _header("greedy_answer", "greedy answer (score)"),
            f"<th title='{html.escape(GLOSSARY['sample_1'])}'>samples (score)</th>",
            *(_header(c, labels.get(c), c in weak) for c in numbers),
        ]
    )
    rows = []
    for r in q.iter_rows(named=True):
        drawn = "".join(
            f"<li>{_answer(r[c], r.get(c + '_score'))}</li>" for c in samples if r[c] is not None
        )
        cells = [
            _cell("model", r["model"]),
            _cell("id", r["id"]),
            f"<td class='text q' data-v='{html.escape(str(r['question']))}'>"
            f"{html.escape(str(r['question'] or ''))}</td>",
            f"<td class='text q'>{html.escape(str(r['reference'] or ''))}</td>",
            f"<td class='text q' data-v='{html.escape(repr(r['greedy_score']))}'>"
            f"{_answer(r['greedy_answer'], r['greedy_score'])}</td>",
            f"<td class='text s'><ol>{drawn}</ol></td>",
            *(_cell(c, r[c], c in weak) for c in numbers),
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def write_questions(
    questions: pl.DataFrame,
    out_html: str | os.PathLike,
    *,
    evalset: str,
    score: str,
    alpha: float | None = None,
    target_width: float | None = None,
) -> None:
    """The per-question page: one row per (model, question), worst M_mu first, sortable; with
    ``alpha``, the bounds that cannot come below ``target_width`` at the run's n marked."""
    q = questions.sort("m_mu", descending=True, maintain_order=True)
    n = int(q["n"].max()) if q.height else 0
    weak = {}
    if alpha is not None and q.height:
        if target_width is None:
            from probunlearn.report.evaluation.summary import DEFAULT_TARGET_WIDTH

            target_width = DEFAULT_TARGET_WIDTH
        shown = [c for c in QUESTION_NUMBERS if c in q.columns and q[c].is_not_null().any()]
        weak = weak_bounds(shown, int(q["n"].min()), alpha, target_width)
    parts = [
        "<h1>probunlearn evaluation: every question</h1>",
        f"<p>{html.escape(evalset)}, scored by <b>{html.escape(score)}</b>, n = {n} samples per "
        f"question: the greedy answer and the first three samples with their scores, the "
        f"observed mean and leak rate (shaded) and the question's bounds. Sorted by M_mu, "
        f"highest first; click a column's name to sort by it. "
        f"<a href='report.html'>Back to the report</a>.</p>",
        questions_table(q, weak),
        weak_note(weak, n, target_width or 0.0),
        "<h2>Glossary</h2>",
        glossary(["model", "id", "question", "reference", "greedy_answer", "sample_1",
                  *[c for c in QUESTION_NUMBERS if c in q.columns], "gen_threshold"],
                 ["questions.csv"]),
    ]  # fmt: skip
    write_text(_page("probunlearn evaluation: questions", parts, SORT_JS), out_html)


def write_models(rows: list[dict], path: str | os.PathLike) -> pl.DataFrame:
    """The models table (name, role, source, revision, base, identity), written as CSV."""
    cols = ["name", "role", "source", "revision", "base", "identity"]
    df = pl.DataFrame(
        [{c: r.get(c) for c in cols} for r in rows], schema=dict.fromkeys(cols, pl.String)
    )
    write_csv(df, path)
    return df

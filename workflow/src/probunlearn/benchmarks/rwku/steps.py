"""Rules rwku_survey and rwku_tables of the experiment ``rwku``: the survey and the selection rule,
and the RWKU tables and figure of a run (:mod:`.tables`, :mod:`.findings`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from probunlearn.storage.atomic import atomic_write, write_csv

__all__ = ["rwku_figure", "run_rwku_survey", "run_rwku_tables"]


def _read(inputs: Mapping[str, Any], evalset: str, model: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    samples = pl.concat(
        [pl.read_parquet(p).select("id", "sample", "greedy", "text")
         for p in inputs[f"samples_{evalset}_{model}"]]
    )  # fmt: skip
    scores = pl.read_parquet(_one(inputs[f"scores_{evalset}_{model}"]))
    return samples, scores


def _one(x: Any) -> str:
    return x if isinstance(x, str) else list(x)[0]


def _probe_tables(
    inputs: Mapping[str, Any], evalset: str, rows: pl.DataFrame, models: Sequence[str], alpha: float
) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:
    from probunlearn.benchmarks.rwku.tables import probe_table, sample_rouge

    probes, scores = {}, {}
    for m in models:
        samples, sc = _read(inputs, evalset, m)
        probes[m] = probe_table(rows, sc, sample_rouge(rows, samples), alpha)
        scores[m] = sc
    return probes, scores


def _stack(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(
        [
            t.with_columns(pl.lit(m).alias("model")).select("model", *t.columns)
            for m, t in tables.items()
        ],
        how="diagonal_relaxed",
    )


def _write(out: Mapping[str, pl.DataFrame], outputs: Sequence[str], rule: str) -> None:
    by_name = {os.path.splitext(os.path.basename(p))[0]: p for p in outputs}
    if set(by_name) != set(out):
        raise ValueError(f"{rule}: outputs {sorted(by_name)} but tables {sorted(out)}")
    for name, table in out.items():
        write_csv(_flat(table), by_name[name])


def run_rwku_survey(
    inputs: Mapping[str, Any],
    outputs: Sequence[str],
    *,
    original: str,
    alpha: float,
    setting: str,
    select: Mapping[str, Any] | None,
    targets: Sequence[int],
) -> None:
    """Rule rwku_survey (Part A): the original model's survey per target and overall
    (rwku_survey), per probe (rwku_survey_probes), and with a selection rule its choice beside
    the configured targets (rwku_selection)."""
    from probunlearn.benchmarks.rwku import findings
    from probunlearn.benchmarks.rwku.tables import revealed_table

    del setting  # in the params so that a change reruns the tables
    rows = pl.read_parquet(_one(inputs["rows"]))
    probes, _ = _probe_tables(inputs, "rwku_survey", rows, [original], alpha)
    survey = probes[original]
    out = {"rwku_survey": revealed_table(survey), "rwku_survey_probes": survey}
    if select:
        out["rwku_selection"] = findings.selection(survey, select["candidates"], targets)
    _write(out, outputs, "rwku_survey")


def run_rwku_tables(
    inputs: Mapping[str, Any],
    outputs: Sequence[str],
    figure: str,
    *,
    original: str,
    unlearned: Mapping[str, str],
    alpha: float,
    setting: str,
    held_out: str | None = None,
) -> None:
    """Rule rwku_tables (Part B): every table of :data:`.design.TABLES` (and the MIA table where
    the run has it), each written to the output of that name, and the figure; the claims read the
    survey's per-probe table where the run has a survey."""
    from probunlearn.benchmarks.rwku import findings
    from probunlearn.benchmarks.rwku.tables import (
        family_table,
        level_table,
        mia_table,
        revealed_table,
    )

    del setting, held_out  # in the params so that a change reruns the tables
    models = [original, *unlearned.values()]
    rows = pl.read_parquet(_one(inputs["rows"]))
    probes, scores = _probe_tables(inputs, "rwku_probes", rows, models, alpha)
    survey = pl.read_csv(_one(inputs["survey"])) if "survey" in inputs else None
    out: dict[str, pl.DataFrame] = {
        "rwku_levels": level_table(probes),
        "rwku_probes": _stack(probes),
        "rwku_revealed": _stack({m: revealed_table(t) for m, t in probes.items()}),
        "rwku_families": family_table(probes, rows, scores, alpha),
        "rwku_changes": findings.changes(probes, scores, original, alpha),
        "rwku_claims": findings.claims(probes, scores, original, unlearned, alpha, survey),
    }
    if "mia" in inputs:
        stats = {m: pl.read_parquet(p) for m, p in zip(models, inputs["mia"], strict=True)}
        out["rwku_mia"] = mia_table(stats, original, alpha)
    _write(out, outputs, "rwku_tables")
    rwku_figure(out["rwku_levels"], figure)


def _flat(table: pl.DataFrame) -> pl.DataFrame:
    """Lists as '; '-joined strings (CSV holds no lists)."""
    return table.with_columns(
        pl.col(c).cast(pl.List(pl.String)).list.join("; ")
        for c, t in table.schema.items()
        if isinstance(t, pl.List)
    )


def rwku_figure(levels: pl.DataFrame, stem: str) -> None:
    """Per RWKU file (x) and model (bars): the share of probes whose greedy answer holds the
    answer (left) and the mean sampled leak rate with the mean M_bin above it (right); PNG and
    PDF at ``stem``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = list(dict.fromkeys(levels["file"].to_list()))
    models = list(dict.fromkeys(levels["model"].to_list()))
    width = 0.8 / max(len(models), 1)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for j, m in enumerate(models):
        part = {r["file"]: r for r in levels.filter(pl.col("model") == m).iter_rows(named=True)}
        xs = [i + (j - (len(models) - 1) / 2) * width for i in range(len(files))]
        greedy = [part[f]["greedy_text"] if f in part else 0.0 for f in files]
        rate = [part[f]["rate_text"] if f in part else 0.0 for f in files]
        mbin = [part[f]["m_bin_text"] if f in part else 0.0 for f in files]
        axes[0].bar(xs, greedy, width, label=m)
        axes[1].bar(xs, rate, width, label=m)
        axes[1].scatter(xs, mbin, marker="_", s=200, color="black", zorder=3)
    for ax, title in zip(
        axes,
        ("greedy answer holds the answer (share of probes)",
         "sampled answers: mean leak rate (bars), mean M_bin (dashes)"),
        strict=True,
    ):  # fmt: skip
        ax.set_xticks(range(len(files)), [f.replace("_", "\n") for f in files])
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("probability / share")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.suptitle("RWKU: the answer in greedy vs sampled answers, per probe level")
    fig.tight_layout()
    # deterministic bytes: no software or date stamps (as the report's figures)
    meta = {"png": {"Software": None}, "pdf": {"CreationDate": None, "ModDate": None,
                                               "Producer": None, "Creator": None}}  # fmt: skip
    for fmt, m in meta.items():
        atomic_write(f"{stem}.{fmt}", lambda tmp, f=fmt, m=m: fig.savefig(tmp, format=f, dpi=150,
                                                                            metadata=m))  # fmt: skip
    plt.close(fig)

"""Rule summary of ``probunlearn evaluate``: from the models' scores and bounds, the summary tables,
the configuration that ran, the per-question view and the HTML report
(:mod:`probunlearn.report.evaluation`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from probunlearn.report.evaluation.summary import DEFAULT_TARGET_WIDTH


def summarize(
    *,
    models: Mapping[str, Mapping],
    evalset: str,
    score: str,
    scores_paths: Mapping[str, str],
    bounds_paths: Mapping[str, str],
    metrics_paths: Mapping[str, str],
    extra_paths: Mapping[str, Sequence[str]],
    leak_threshold: float | None,
    alpha: float,
    config: Mapping,
    out: Mapping[str, str],
    out_per_model: Mapping[str, str],
    rho: float = 2.0,
    original: str | None = None,
    original_scores: str | None = None,
    samples_paths: Mapping[str, Sequence[str]] | None = None,
    rows_path: str | None = None,
    resolved: Mapping | None = None,
    warnings: Sequence[str] = (),
    breakdown_paths: Mapping[str, Sequence[str]] | None = None,
    tables: Mapping[str, str] | None = None,
    openunlearning: Mapping[str, Sequence[str]] | None = None,
    benchmark: Mapping[str, Any] | None = None,
) -> None:
    """Rule summary: the summary tables, the figures, the models' identities, the effective config,
    the per-question view and the HTML report. ``models``: name → ``{role, source, revision, base,
    identity}`` (the summary lists those of ``bounds_paths``, in its order: this call's and earlier
    calls' evaluated models); ``score``: the column the figures and the per-question page show;
    ``out``: summary, curves, comparison, questions_csv, models, config, gen_curves,
    greedy_vs_sampled, worst_prompt (PNG), report and questions (HTML). ``original``,
    ``original_scores``: the model before unlearning and its scores: ``comparison`` holds every
    listed model against it (model - original over the same prompts, intervals at 1 - alpha; no
    rows without an original). ``samples_paths`` (name → shards) and ``rows_path`` (the sampled
    set): the answers' texts and questions of the per-question view; ``resolved``: the template,
    max_new_tokens, stops and TOFU settings that ran (the effective config); ``warnings``: the
    plan's (:meth:`probunlearn.evaluate.plan.Plan.warnings`); ``breakdown_paths``: name → TOFU's
    metric files (:meth:`probunlearn.evaluate.plan.Plan.breakdown_paths`), the report's breakdown;
    ``tables``: the attack table (``attacks``) and the membership table (``membership``) where the
    run made them, shown in the report with their figures (``figures/<name>.png``);
    ``openunlearning``: model -> open-unlearning's result files, shown beside ours
    (``out["openunlearning"]``: :func:`probunlearn.report.evaluation.summary.side_by_side`);
    ``benchmark``: where the ``--benchmark`` choice has tables of its own
    (:meth:`probunlearn.evaluate.plan.Plan.benchmark_summary`: the choice, its tables' files, the
    files read per model), those tables and their report section (:func:`benchmark_section`)."""
    from probunlearn.report.evaluation import html as report
    from probunlearn.report.evaluation.summary import side_by_side, write_summary

    listed = [n for n in models if n in bounds_paths]
    summary = write_summary(
        models={n: models[n]["identity"] for n in listed},
        evalset=evalset,
        bounds_paths=bounds_paths,
        metrics_paths=metrics_paths,
        extra_paths=extra_paths,
        leak_threshold=leak_threshold,
        out_summary=out["summary"],
        out_per_model=out_per_model,
        out_curves=out["curves"],
        scores_paths=scores_paths,
    )
    table = report.write_models([{"name": n, **m} for n, m in models.items()], out["models"])
    scores = {n: pl.read_parquet(scores_paths[n]) for n in listed}
    config_text = write_effective_config(
        config, models, listed, evalset, resolved, scores, summary, out["config"]
    )
    per_prompt = {n: pl.read_parquet(bounds_paths[n]) for n in listed}
    comparison = write_comparison(original, original_scores, scores, alpha, rho, out)
    questions = None
    if samples_paths is not None and rows_path is not None:
        questions = write_question_rows(
            listed, rows_path, samples_paths, scores, per_prompt, score, leak_threshold, out
        )
    extra = {k: pl.read_csv(v) for k, v in (tables or {}).items()}
    side = side_by_side(summary, score, openunlearning or {}, extra.get("membership"))
    if "openunlearning" in out:
        from probunlearn.storage.atomic import write_csv

        write_csv(side, out["openunlearning"])
    target_width = target_width_of(config)
    sections = []
    if benchmark:
        sections.append(benchmark_section(benchmark, evalset, rows_path, scores, alpha, original))
    report.write_report(
        summary=summary,
        models=table,
        figures={k: out[k] for k in ("gen_curves", "greedy_vs_sampled", "worst_prompt")},
        per_prompt=per_prompt,
        scores=scores,
        questions=questions,
        target_width=target_width,
        config_text=config_text,
        alpha=alpha,
        out_html=out["report"],
        comparison=comparison if comparison.height else None,
        curves=pl.read_csv(out["curves"]),
        tofu=tofu_breakdown(listed, breakdown_paths or {}),
        warnings=list(warnings),
        evalset=evalset,
        score=score,
        n=int(summary["n"].min()) if summary.height else 0,
        questions_href="questions.html" if "questions" in out else None,
        attacks=extra.get("attacks"),
        membership=extra.get("membership"),
        openunlearning=side if side.height else None,
        extra_figures={k: str(Path(out["gen_curves"]).with_name(f"{k}.png")) for k in extra},
        sections=sections,
    )
    if questions is not None and "questions" in out:
        report.write_questions(questions, out["questions"], evalset=evalset, score=score,
                               alpha=alpha, target_width=target_width)  # fmt: skip


def benchmark_section(
    benchmark: Mapping[str, Any],
    evalset: str,
    rows_path: str | None,
    scores: Mapping[str, pl.DataFrame],
    alpha: float,
    original: str | None,
) -> Any:
    """A benchmark's own tables (:meth:`probunlearn.benchmarks.Benchmark.evaluate_tables`) from
    the files ``benchmark`` names (``benchmark``: the ``--benchmark`` choice, ``tables``: name ->
    CSV path, ``models``: model -> its ``samples``, ``scores`` and the ``job``'s table), each
    written to its CSV; returns their report section
    (:class:`probunlearn.report.evaluation.html.Section`). ``scores``: the score tables read
    already (by model). A table the benchmark names but does not make, or makes unnamed, is an
    error naming it."""
    from probunlearn.benchmarks import SummaryInputs, evaluate_benchmark
    from probunlearn.report.evaluation.html import Section, SectionTable
    from probunlearn.storage.atomic import write_csv

    choice = benchmark["benchmark"]
    bench = evaluate_benchmark(choice)
    if bench is None:
        raise ValueError(f"--benchmark {choice!r}: no benchmark answers it")
    if rows_path is None:
        raise ValueError(f"{bench.name}'s tables need the sampled set's rows (rows_path)")
    files = benchmark["models"]

    def read(paths: Sequence[str]) -> pl.DataFrame:
        return pl.concat([pl.read_parquet(p) for p in paths], how="diagonal_relaxed")

    inputs = SummaryInputs(
        evalset=evalset,
        rows=pl.read_parquet(rows_path),
        samples={m: read(f["samples"]) for m, f in files.items()},
        scores={m: scores[m] if m in scores else pl.read_parquet(f["scores"])
                for m, f in files.items()},
        alpha=alpha,
        original=original if original in files else None,
        jobs={m: pl.read_parquet(f["job"]) for m, f in files.items() if f.get("job")},
    )  # fmt: skip
    section = bench.evaluate_tables(inputs)
    paths = dict(benchmark["tables"])
    made = {} if section is None else dict(section.tables)
    if sorted(made) != sorted(paths):
        raise ValueError(
            f"benchmark {bench.name!r} names the tables {sorted(paths)} of its summary but makes "
            f"{sorted(made)}"
        )
    shown, columns = [], {}
    for name, table in made.items():
        undocumented = [c for c in table.frame.columns if c not in table.columns]
        if undocumented:
            raise ValueError(f"{bench.name}'s table {name}: columns {undocumented} undocumented")
        write_csv(table.frame, paths[name])
        if table.view is not None:
            file = Path(paths[name]).name
            help = dict(table.columns)
            shown.append(SectionTable(table.title, table.caption, table.view, file, help))
            columns = help | columns  # a column's first meaning in the section's glossary
    return Section(section.title, section.note, shown, columns)


def target_width_of(config: Mapping) -> float:
    """The bound width the report's small-n marks aim at (``--target-width``)."""
    report = config["evaluate"].get("report") or {}
    return float(report.get("target_width", DEFAULT_TARGET_WIDTH))


def write_effective_config(
    config: Mapping,
    models: Mapping[str, Mapping],
    listed: Sequence[str],
    evalset: str,
    resolved: Mapping | None,
    scores: Mapping[str, pl.DataFrame],
    summary: pl.DataFrame,
    path: str,
) -> str:
    """``config.yaml``: the configuration that ran (each model's resolved template, the scorers
    computed, the versions); returns its text, which the report shows."""
    import yaml

    from probunlearn.report.evaluation.run import effective_config
    from probunlearn.storage.atomic import write_text

    resolved = dict(resolved or {})
    scorers = [c for c in next(iter(scores.values())).columns if c in summary["score"].to_list()]
    effective = effective_config(
        config,
        models={n: m for n, m in models.items() if n in listed or m["role"] != "evaluated"},
        evalset=evalset,
        template=resolved.get("template", config["evaluate"]["sampling"]["template"]),
        max_new_tokens=resolved.get("max_new_tokens"),
        stops=resolved.get("stops", []),
        scorers=scorers,
        tofu=resolved.get("tofu"),
    )
    text = (
        "# the configuration that ran (probunlearn evaluate); the request is evaluate.yaml\n"
        + yaml.safe_dump(effective, sort_keys=False, allow_unicode=True)
    )
    write_text(text, path)
    return text


def write_comparison(
    original: str | None,
    original_scores: str | None,
    scores: Mapping[str, pl.DataFrame],
    alpha: float,
    rho: float,
    out: Mapping[str, str],
) -> pl.DataFrame:
    """``comparison.csv``: every listed model against the original (header only without one)."""
    from probunlearn.report.evaluation.summary import COMPARISON_COLUMNS, comparison_rows
    from probunlearn.storage.atomic import write_csv

    orig = None if original is None else pl.read_parquet(original_scores)
    comparison = None if orig is None else comparison_rows(original, orig, scores, alpha, rho)
    if comparison is None:
        comparison = pl.DataFrame(schema=dict.fromkeys(COMPARISON_COLUMNS, pl.String))
    if "comparison" in out:
        write_csv(comparison, out["comparison"])
    return comparison


def write_question_rows(
    listed: Sequence[str],
    rows_path: str,
    samples_paths: Mapping[str, Sequence[str]],
    scores: Mapping[str, pl.DataFrame],
    per_prompt: Mapping[str, pl.DataFrame],
    score: str,
    leak_threshold: float | None,
    out: Mapping[str, str],
) -> pl.DataFrame:
    """``questions.csv``: one row per (model, question) of the per-question view."""
    from probunlearn.report.evaluation.summary import question_rows
    from probunlearn.storage.atomic import write_csv

    rows = pl.read_parquet(rows_path)
    questions = pl.concat(
        [
            question_rows(
                n,
                rows,
                pl.concat([pl.read_parquet(p) for p in samples_paths[n]]),
                scores[n],
                per_prompt[n],
                score,
                leak_threshold,
            )
            for n in listed
        ],
        how="diagonal_relaxed",
    )
    if "questions_csv" in out:
        write_csv(questions, out["questions_csv"])
    return questions


def tofu_breakdown(
    listed: Sequence[str], breakdown_paths: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """Model -> its TOFU metrics (truth ratio, forget quality, model utility, greedy ROUGE)."""
    from probunlearn.metrics.table import read_metrics

    return {
        n: pl.concat([read_metrics(p) for p in breakdown_paths[n]], how="diagonal_relaxed")
        for n in listed
        if breakdown_paths.get(n)
    }

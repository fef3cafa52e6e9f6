"""The jobs of the evaluate workflow, one function per rule (its script calls it with keyword args)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from probunlearn.storage.atomic import write_parquet


def write_sets(config: Mapping, out_paths: Mapping[str, str]) -> None:
    """Rule evalsets: the plan's sets (a benchmark's, or the user's files) as parquet files."""
    from probunlearn.evaluate.plan import Plan

    sets = Plan(config).sets
    missing = set(out_paths) - set(sets)
    if missing:
        raise ValueError(f"the data holds no set(s) {sorted(missing)}; it has {sorted(sets)}")
    for name, path in out_paths.items():
        write_parquet(sets[name], path)


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
) -> None:
    """Rule summary: the summary tables, the figures, the models' identities, the effective config and
    the HTML report. ``models``: name → ``{role, source, revision, base, identity}``; ``score``: the
    column the figures show; ``out``: summary, curves, comparison, models, config, gen_curves,
    greedy_vs_sampled, worst_prompt (PNG) and report. ``original``, ``original_scores``: the model
    before unlearning and its scores: ``comparison`` holds every evaluated model against it (model -
    original over the same prompts, intervals at 1 - alpha; no rows without an original)."""
    import polars as pl
    import yaml

    from probunlearn.evaluate import report
    from probunlearn.evaluate.summary import comparison_rows, write_summary
    from probunlearn.storage.atomic import write_csv, write_text

    evaluated = {n: m["identity"] for n, m in models.items() if n in bounds_paths}
    summary = write_summary(
        models=evaluated,
        evalset=evalset,
        bounds_paths=bounds_paths,
        metrics_paths=metrics_paths,
        extra_paths=extra_paths,
        leak_threshold=leak_threshold,
        out_summary=out["summary"],
        out_per_model=out_per_model,
        out_curves=out["curves"],
    )
    table = report.write_models([{"name": n, **m} for n, m in models.items()], out["models"])
    config_text = yaml.safe_dump(dict(config), sort_keys=False)
    write_text(config_text, out["config"])
    per_prompt = {n: pl.read_parquet(bounds_paths[n]) for n in evaluated}
    report.plot_gen_curves(pl.read_csv(out["curves"]), score, out["gen_curves"])
    report.plot_greedy_vs_sampled(per_prompt, score, out["greedy_vs_sampled"])
    scores = {n: pl.read_parquet(scores_paths[n]) for n in evaluated}
    report.plot_worst_prompt(scores, per_prompt, score, out["worst_prompt"])
    orig = None if original is None else pl.read_parquet(original_scores)
    comparison = (
        comparison_rows(original or "", orig, scores, alpha, rho) if orig is not None else None
    )
    if comparison is None:
        from probunlearn.evaluate.summary import COMPARISON_COLUMNS

        comparison = pl.DataFrame(schema=dict.fromkeys(COMPARISON_COLUMNS, pl.String))
    if "comparison" in out:
        write_csv(comparison, out["comparison"])
    report.write_report(
        summary=summary,
        models=table,
        figures={
            "M_gen curves": out["gen_curves"],
            "Greedy vs sampled": out["greedy_vs_sampled"],
            "Worst prompt": out["worst_prompt"],
        },
        config_text=config_text,
        alpha=alpha,
        out_html=out["report"],
        comparison=comparison if comparison.height else None,
    )

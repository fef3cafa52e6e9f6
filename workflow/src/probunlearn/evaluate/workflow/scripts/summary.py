"""Rule summary: the summary tables, figures, identities, effective config and HTML report."""

from pathlib import Path

from probunlearn.steps.evaluation import summarize
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
o, p = sm.output, sm.params
models = {n: p.models[n] for n in p.order}
listed = list(p.summary)
with log_to(sm.log[0]):
    summarize(
        models=models,
        evalset=Path(sm.input.rows).stem,  # data/<set>.parquet
        score=p.score,
        scores_paths=dict(zip(listed, sm.input.scores, strict=True)),
        bounds_paths=dict(zip(listed, sm.input.bounds, strict=True)),
        metrics_paths=dict(zip(listed, sm.input.metrics, strict=True)),
        samples_paths=p.samples,
        extra_paths=p.extra,
        breakdown_paths=p.breakdown,
        tables=dict(p.tables),
        openunlearning={m: list(f) for m, f in p.openunlearning.items()},
        benchmark=dict(p.benchmark),
        rows_path=sm.input.rows,
        leak_threshold=p.leak_threshold,
        alpha=p.alpha,
        rho=p.rho,
        original=p.original,
        original_scores=sm.input.original[0] if p.original else None,
        config=p.config,
        resolved=p.resolved,
        warnings=list(p.warnings),
        out={k: o[k] for k in o.keys() if k not in ("per_model", "benchmark_tables")},
        out_per_model=dict(zip(listed, o.per_model, strict=True)),
    )

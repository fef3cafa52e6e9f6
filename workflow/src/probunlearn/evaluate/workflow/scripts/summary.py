"""Rule summary: the summary tables, figures, identities, effective config and HTML report."""

from probunlearn.evaluate.jobs import summarize
from probunlearn.steps.logs import log_to

sm = snakemake  # noqa: F821
o, p = sm.output, sm.params
models = {n: p.models[n] for n in p.order}
evaluated = [n for n in p.order if models[n]["role"] == "evaluated"]
with log_to(sm.log[0]):
    summarize(
        models=models,
        evalset=p.evalset,
        score=p.score,
        scores_paths=dict(zip(evaluated, sm.input.scores, strict=True)),
        bounds_paths=dict(zip(evaluated, sm.input.bounds, strict=True)),
        metrics_paths=dict(zip(evaluated, sm.input.metrics, strict=True)),
        extra_paths=p.extra,
        leak_threshold=p.leak_threshold,
        alpha=p.alpha,
        rho=p.rho,
        original=p.original,
        original_scores=sm.input.original[0] if p.original else None,
        config=p.config,
        out={k: o[k] for k in o.keys() if k != "per_model"},
        out_per_model=dict(zip(evaluated, o.per_model, strict=True)),
    )

"""Rule score: score every sample of one model and bound every prompt."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.score import run_score

sm = snakemake  # noqa: F821
judge = {k: v for k, v in sm.params.judge.items() if k != "judge_identity"}
with log_to(sm.log[0]):
    run_score(
        sample_paths=list(sm.input.samples),
        evalset_path=sm.input.evalset,
        out_scores=sm.output.scores,
        out_bounds=sm.output.bounds,
        out_metrics=sm.output.metrics,
        model=sm.wildcards.model,
        method="",
        split="",
        evalset=sm.params.evalset,
        setting="sampled",
        **judge,
        **sm.params.bounds,
    )

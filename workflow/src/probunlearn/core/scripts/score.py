"""Rule score: score the sample shards of one (model, set, setting), bound every prompt."""

from probunlearn.steps.logs import log_to
from probunlearn.steps.score import run_score

sm = snakemake  # noqa: F821
with log_to(sm.log[0]):
    run_score(
        sample_paths=list(sm.input.samples),
        evalset_path=sm.input.evalset,
        out_scores=sm.output.scores,
        out_bounds=sm.output.bounds,
        out_metrics=sm.output.metrics,
        model=sm.wildcards.model,
        evalset=sm.wildcards.evalset,
        setting=sm.wildcards.setting,
        # the judge model: an input of the paper's workflow, a checkpoint path in evaluate's params
        **{"judge_model": sm.input.get("judge"), **sm.params.score},
    )

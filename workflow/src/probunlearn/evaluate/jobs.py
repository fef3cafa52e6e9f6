"""The jobs of the evaluate workflow, one function per rule (its script calls it with keyword args)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from probunlearn.storage.atomic import write_parquet

# TOFU's config/eval_everything.yaml: 300 questions a set, 200 tokens, and greedy generation in batches
# of 30, left-padded: the padded prompt counts towards the 200, so the batch sets each answer's budget
TOFU_LIMITS = {
    "ds_size": 300,
    "max_length": 200,
    "generation_max_length": 200,
    "generation_batch_size": 30,
}


def write_sets(config: Mapping, out_paths: Mapping[str, str]) -> None:
    """Rule evalsets: the plan's sets (a benchmark's, or the user's files) as parquet files."""
    from probunlearn.evaluate.plan import Plan

    sets = Plan(config).sets
    missing = set(out_paths) - set(sets)
    if missing:
        raise ValueError(f"the data holds no set(s) {sorted(missing)}; it has {sorted(sets)}")
    for name, path in out_paths.items():
        write_parquet(sets[name], path)


def sample_shard(
    *,
    model_path: str,
    evalset_path: str,
    out_path: str,
    shard: int,
    seed_key: str,
    identity: str,
    stops: Sequence[str] = (),
    **kwargs,
) -> None:
    """Rule sample: one shard of a model's samples (``identity`` only decides reruns); each answer
    is cut at the first of ``stops`` (MUSE's knowmem), its ``n_tokens`` still counting what was
    generated."""
    from probunlearn.steps.sample import run_sampling_shard

    run_sampling_shard(
        model_path=model_path,
        evalset_path=evalset_path,
        out_path=out_path,
        shard=shard,
        seed_key=seed_key,
        stops=tuple(stops),
        **kwargs,
    )


TOFU_TAGS = {
    # TOFU's own tags (DESIGN §6): the answer tag is part of the scored labels, as in TOFU
    "phi": {"question_start_tag": "Question: ", "question_end_tag": "\n", "answer_tag": "Answer: "},
    "llama2": {"question_start_tag": "[INST] ", "question_end_tag": " [/INST]", "answer_tag": ""},
}


def tofu_tags(tofu_format: str) -> dict:
    """TOFU's encoding of a model family (``phi`` or ``llama2``) with TOFU's lengths: the forget
    quality and model utility of ``probunlearn evaluate`` are computed exactly as TOFU computes them."""
    if tofu_format not in TOFU_TAGS:
        raise ValueError(f"tofu_format {tofu_format!r}: expected one of {sorted(TOFU_TAGS)}")
    return {**TOFU_TAGS[tofu_format], **TOFU_LIMITS}


def teacher(
    *,
    model_path: str,
    revision: str | None,
    base: str | None,
    identity: str,
    model_name: str,
    logprob_paths: Sequence[str],
    out_logprobs: Sequence[str],
    tofu_paths: Sequence[str],
    tofu_sets: Sequence[str],
    out_metrics: str,
    out_tofu_answers: str,
    template: str,
    max_new_tokens: int,
    batch_size: int,
    dtype: str,
    device: str,
    threads: int | None,
    tofu_format: str = "phi",
) -> None:
    """Rule teacher: a model's log-probabilities (TOFU's encoding of ``tofu_format``) and TOFU's
    own greedy ROUGE."""
    from probunlearn.steps.greedy import run_evaluation

    run_evaluation(
        model_path,
        revision=revision,
        base=base,
        greedy_paths=[],
        greedy_sets=[],
        out_csv=out_metrics,
        out_answers=str(Path(out_tofu_answers).with_name("greedy.parquet")),
        logprob_paths=list(logprob_paths),
        out_logprobs=list(out_logprobs),
        model_name=model_name,
        method="",
        split="",
        template=template,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        dtype=dtype,
        device=device,
        threads=threads,
        tofu=tofu_tags(tofu_format),
        tofu_paths=list(tofu_paths),
        tofu_sets=list(tofu_sets),
        out_tofu_answers=out_tofu_answers,
    )


def tofu_metrics(
    *,
    out_csv: str,
    model: str,
    forget_set: str,
    inputs: Mapping[str, str],
) -> None:
    """Rule tofu_metrics: forget quality (with a reference) and model utility (TOFU's sets)."""
    from probunlearn.steps.tofu import run_tofu_metrics

    run_tofu_metrics(
        out_csv=out_csv,
        model=model,
        method="",
        split=forget_set,
        forget_logprobs=inputs.get("forget"),
        reference_forget_logprobs=inputs.get("reference"),
        retain_logprobs=inputs.get("retain"),
        real_authors_logprobs=inputs.get("real_authors"),
        world_facts_logprobs=inputs.get("world_facts"),
        rouge=inputs.get("greedy"),
        forget_evalset=forget_set,
        max_questions=TOFU_LIMITS["ds_size"],
    )


def dcue(
    *, inputs: Mapping[str, str], out_csv: str, out_confidences: str, model: str, forget_set: str
) -> None:
    """Rule dcue: DCUE of an evaluated model against the original, on the sampled set vs holdout."""
    from probunlearn.steps.dcue import run_dcue

    run_dcue(
        orig_forget_logprobs=inputs["orig_forget"],
        unl_forget_logprobs=inputs["unl_forget"],
        orig_val_logprobs=inputs["orig_val"],
        unl_val_logprobs=inputs["unl_val"],
        forget_rows_path=inputs["forget_rows"],
        val_rows_path=inputs["val_rows"],
        out_csv=out_csv,
        model_name=model,
        method="",
        split=forget_set,
        out_confidences=out_confidences,
    )


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

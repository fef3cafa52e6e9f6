"""Rules sample_shard (and teacher-forced log-probabilities): load a model, sample one shard of an eval set, write it."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import polars as pl

from probunlearn import models
from probunlearn.data import qa
from probunlearn.data.rows import prompt_column
from probunlearn.sampling import (
    sample_answers,
    sample_sequential,
    teacher_forced_logprobs,
)
from probunlearn.steps.specs import SamplingSpec
from probunlearn.storage.atomic import write_parquet


def num_shards(evalset_path: str | os.PathLike, chunk_size: int) -> int:
    """How many shards of ``chunk_size`` prompts the eval set splits into."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    n_rows = pl.scan_parquet(evalset_path).select(pl.len()).collect().item()
    return math.ceil(n_rows / chunk_size)


def _load(
    model_path: str,
    revision: str | None,
    dtype: str,
    threads: int | None,
    device=None,
    base: str | None = None,
):
    models.set_threads(threads)
    tokenizer = models.load_tokenizer(model_path, revision=revision, base=base)
    model = models.load_model(
        model_path, revision=revision, dtype=dtype, device=device or "auto", base=base
    )
    return model, tokenizer


RANDOM_NUMBERS = ("common", "independent")


def seed_key(model: str, evalset: str, setting: str, random_numbers: str = "common") -> str:
    """The key every sample's random numbers derive from (with the base seed, prompt id and sample
    index): ``model/evalset`` with common random numbers (config ``sampling.random_numbers``, the
    default: the settings of one model share them), ``model/evalset/setting`` with independent ones
    (every setting draws its own). Different models never share them."""
    if random_numbers not in RANDOM_NUMBERS:
        raise ValueError(
            f"sampling.random_numbers must be one of {RANDOM_NUMBERS}, got {random_numbers!r}"
        )
    key = f"{model}/{evalset}"
    return key if random_numbers == "common" else f"{key}/{setting}"


def run_sample_shard_rule(
    *,
    model: str,
    evalset: str,
    setting: str,
    evalset_path: str,
    out_path: str,
    shard: int,
    model_path: str,
    revision: str | None = None,
    base: str | None = None,
    **params: Any,
) -> None:
    """Rule sample_shard: the rule's sampling params as their typed spec
    (:class:`probunlearn.steps.specs.SamplingSpec`: a param it has no field for is an error naming
    it), then :func:`run_sampling_shard` with the seed key of (model, eval set, setting)
    (:func:`seed_key`) and the spec's sampler arguments."""
    spec = SamplingSpec.from_params(params)
    run_sampling_shard(
        model_path,
        evalset_path,
        out_path,
        shard=shard,
        chunk_size=spec.chunk_size,
        revision=revision,
        base=base,
        dtype=spec.dtype,
        threads=spec.threads,
        seed_key=seed_key(model, evalset, setting, spec.random_numbers),
        sequential=spec.sequential,
        evalset=evalset,
        prompts=spec.prompts,
        stop_tokens=spec.stop_tokens,
        **spec.sampler_kwargs(),
    )


def run_sampling_shard(
    model_path: str,
    evalset_path: str,
    out_path: str,
    *,
    shard: int,
    chunk_size: int,
    revision: str | None = None,
    base: str | None = None,
    dtype: str = "float32",
    threads: int | None = None,
    evalset: str | None = None,
    prompts: str | None = None,
    stop_tokens: tuple[str, ...] = (),
    **sampling_kwargs,
) -> None:
    """Sample the eval set's rows [shard·chunk_size, (shard+1)·chunk_size) and write them to ``out_path``.

    ``base``: the base model of a PEFT adapter ``model_path`` (default: the one it names). A
    ``stops`` entry of ``sampling_kwargs`` cuts every answer at the first of those strings (MUSE's
    knowmem), ``n_tokens`` still counting what was generated. ``prompts``: the benchmark that
    builds each row's whole prompt of ``evalset`` from this model's chat template (RWKU's),
    tokenised with the tokenizer's own special tokens; ``stop_tokens``: tokens that end an answer
    besides eos (those the tokenizer lacks are left out)."""
    total = num_shards(evalset_path, chunk_size)
    if not 0 <= shard < total:
        raise ValueError(
            f"shard {shard} out of range: the eval set has {total} shards of {chunk_size}"
        )
    rows = pl.read_parquet(evalset_path).slice(shard * chunk_size, chunk_size)
    model, tokenizer = _load(
        model_path, revision, dtype, threads, sampling_kwargs.get("device"), base
    )
    sequential = sampling_kwargs.pop("sequential", None)
    stops = tuple(sampling_kwargs.pop("stops", ()))
    ids = rows["id"].cast(pl.String).to_list()
    if stop_tokens:
        sampling_kwargs["stop_ids"] = stop_token_ids(tokenizer, stop_tokens)
    if sequential is None:
        texts = rows[prompt_column(rows)].to_list()  # a prompt family's rows: their prompts
        if prompts is not None:  # a benchmark's own prompts for this model's chat template
            from probunlearn.benchmarks import benchmark

            texts = benchmark(prompts).prompts(evalset, rows, tokenizer)
            sampling_kwargs["template"] = "{question}"
        df = sample_answers(model, tokenizer, ids, texts, stops=stops, **sampling_kwargs)
    else:
        kw = {**sampling_kwargs, "stops": stops}
        df = _sample_shard_sequential(model, tokenizer, rows, ids, sequential, kw)
    write_parquet(df, out_path)


def stop_token_ids(tokenizer, tokens: tuple[str, ...]) -> list[int]:
    """The ids of ``tokens`` in the tokenizer's vocabulary; a token it lacks (no id, or its unk
    id) is left out: it could never be generated as that token."""
    unk = getattr(tokenizer, "unk_token_id", None)
    out = []
    for t in tokens:
        i = tokenizer.convert_tokens_to_ids(t)
        if i is not None and (i != unk or i == tokenizer.eos_token_id) and i not in out:
            out.append(int(i))
    return out


def _sample_shard_sequential(model, tokenizer, rows, ids, sequential: dict, kw: dict):
    """A sequential setting's shard: :func:`sample_sequential`, deciding on a scorer that allows it
    (``sequential`` of :class:`probunlearn.scoring.Scorer`: ROUGE-L recall, keyword leak)."""
    from probunlearn.scoring import Context, scorer

    if kw.get("adaptive_threshold") is not None:
        raise ValueError("a sequential sampling setting cannot use adaptive temperature")
    spec = scorer(sequential["score"])
    if not spec.sequential:
        raise ValueError(
            f"sequential score {spec.name!r} cannot decide a sequential setting (it needs a model "
            "judge or is not cheap): choose a scorer with sequential = True"
        )
    context = Context()

    def score(texts, idx):
        return np.asarray(spec.score(texts, rows[[int(i) for i in idx]], context), dtype=float)

    samples, _ = sample_sequential(
        model,
        tokenizer,
        ids,
        rows["question"].to_list(),
        score,
        q=sequential["q"],
        alpha=sequential["alpha"],
        leak_threshold=sequential["leak_threshold"],
        round_size=sequential["round_size"],
        n_max=kw["n"],
        **{k: kw[k] for k in SEQUENTIAL_PASSED if k in kw},
    )
    return samples.drop("score")


SEQUENTIAL_PASSED = (
    "stops",
    "top_p",
    "temperature",
    "max_new_tokens",
    "template",
    "seed_key",
    "base_seed",
    "batch_size",
    "device",
    "progress",
)


def run_logprobs(
    model_path: str,
    evalset_path: str,
    out_path: str,
    *,
    revision: str | None = None,
    dtype: str = "float32",
    threads: int | None = None,
    template: str = qa.DEFAULT_TEMPLATE,
    batch_size: int = 64,
) -> None:
    """Teacher-forced log-probabilities of the eval set's answers, written to ``out_path``."""
    model, tokenizer = _load(model_path, revision, dtype, threads)
    rows = pl.read_parquet(evalset_path)
    df = teacher_forced_logprobs(model, tokenizer, rows, template=template, batch_size=batch_size)
    write_parquet(df, out_path)

"""Generation: n sampled answers per prompt with a greedy baseline (top-p, temperature, adaptive
temperature scaling, per-sample seeds), sequential sampling, and teacher-forced log-probabilities.

:mod:`~probunlearn.sampling.sampler` holds the public functions, :mod:`~probunlearn.sampling.engine`
the decoding engine (per-sample random numbers, top-p draws, the batched KV-cache loop) and
:mod:`~probunlearn.sampling.kv_cache` the KV cache it gives a transformers model.
"""

from probunlearn.sampling.sampler import (
    SEQUENCES,
    answer_text,
    decision_bounds,
    draw_tokens,
    sample_answers,
    sample_sequential,
    teacher_forced_logprobs,
)

__all__ = [
    "SEQUENCES",
    "answer_text",
    "decision_bounds",
    "draw_tokens",
    "sample_answers",
    "sample_sequential",
    "teacher_forced_logprobs",
]

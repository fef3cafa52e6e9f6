"""Generation: n sampled answers per prompt with a greedy baseline (top-p, temperature, adaptive
temperature scaling, per-sample seeds), sequential sampling, and teacher-forced log-probabilities.

:mod:`~probunlearn.sampling.sampler` holds the public functions, :mod:`~probunlearn.sampling.engine`
the decoding engine (per-sample random numbers, top-p draws, the batched KV-cache loop),
:mod:`~probunlearn.sampling.kv_cache` the KV cache it gives a transformers model and
:mod:`~probunlearn.sampling.text` an answer's text (torch-free). The public functions are imported on
first use, so a job that only cuts answers imports no torch.
"""

from __future__ import annotations

from typing import Any

from probunlearn.sampling.text import answer_text, cut_at_stops

_SAMPLER = (
    "SEQUENCES",
    "decision_bounds",
    "draw_tokens",
    "sample_answers",
    "sample_sequential",
    "teacher_forced_logprobs",
)

__all__ = ["answer_text", "cut_at_stops", *_SAMPLER]


def __getattr__(name: str) -> Any:
    if name in _SAMPLER:
        from probunlearn.sampling import sampler

        return getattr(sampler, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""transformers' KV cache with the native Llama's buffer, for the decoding engine (:mod:`probunlearn.sampling.engine`)
when it runs a transformers model; the native Llama has its own (:mod:`probunlearn.models.native.llama`)."""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer

from probunlearn.models.native import llama


class BufferLayer(llama.BufferLayer, DynamicLayer):
    """The native Llama's buffer layer (:class:`probunlearn.models.native.llama.BufferLayer`) as a
    transformers cache layer (its mask sizes, type checks)."""

    def __init__(
        self, keys: torch.Tensor, values: torch.Tensor, length: int, limit: int | None = None
    ):
        DynamicLayer.__init__(self)
        llama.BufferLayer.__init__(self, keys, values, length, limit)
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True

    def lazy_initialization(self, key_states, value_states) -> None:
        raise RuntimeError("BufferLayer is created initialised")

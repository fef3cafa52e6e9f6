"""transformers' KV cache with a preallocated buffer, for the decoding engine (:mod:`probunlearn.decoding`)
when it runs a transformers model; the native Llama has its own (:mod:`probunlearn.llama`)."""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer


class BufferLayer(DynamicLayer):
    """A cache layer writing into a preallocated (rows, heads, capacity, head_dim) buffer: no concat per step."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: int):
        super().__init__()
        self.kbuf, self.vbuf, self.length = keys, values, length
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        self._views()

    @classmethod
    def filled(cls, keys: torch.Tensor, values: torch.Tensor, capacity: int) -> BufferLayer:
        """A layer holding (rows, heads, width, head_dim) ``keys``/``values``, room for ``capacity``."""
        rows, heads, width, dim = keys.shape
        kbuf = keys.new_empty((rows, heads, capacity, dim))
        vbuf = values.new_empty((rows, heads, capacity, dim))
        kbuf[:, :, :width] = keys
        vbuf[:, :, :width] = values
        return cls(kbuf, vbuf, width)

    def _views(self) -> None:
        self.keys = self.kbuf[:, :, : self.length]
        self.values = self.vbuf[:, :, : self.length]

    def lazy_initialization(self, key_states, value_states) -> None:
        raise RuntimeError("BufferLayer is created initialised")

    def update(self, key_states, value_states, *args, **kwargs):
        q = key_states.shape[-2]
        self.kbuf[:, :, self.length : self.length + q] = key_states
        self.vbuf[:, :, self.length : self.length + q] = value_states
        self.length += q
        self._views()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        # copy only the filled positions, straight into fresh buffers (a full copy costs several times more)
        shape = (indices.numel(), *self.kbuf.shape[1:])
        kbuf, vbuf = self.kbuf.new_empty(shape), self.vbuf.new_empty(shape)
        torch.index_select(self.keys, 0, indices, out=kbuf[:, :, : self.length])
        torch.index_select(self.values, 0, indices, out=vbuf[:, :, : self.length])
        self.kbuf, self.vbuf = kbuf, vbuf
        self._views()

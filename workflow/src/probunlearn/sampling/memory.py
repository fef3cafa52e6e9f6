"""How much memory a sampling job holds for its answers, and how much this machine has free: what
``probunlearn evaluate`` sets against each other before any job."""

from __future__ import annotations

import re
from pathlib import Path

ROW_BYTES = 400
"""Bytes a sampling job holds per answer besides its tokens (row keys, text, table cells)."""
TOKEN_BYTES = 48
"""Bytes a sampling job holds per generated token (a Python int in a list, its text)."""


def sampling_bytes(n: int, chunk_size: int, max_new_tokens: int) -> int:
    """Memory a sampling job holds for its answers: ``chunk_size`` prompts x (``n`` + 1) rows of up
    to ``max_new_tokens`` tokens (the model and its cache come on top)."""
    return chunk_size * (n + 1) * (ROW_BYTES + TOKEN_BYTES * max_new_tokens)


def available_bytes() -> int | None:
    """This machine's available memory (Linux's MemAvailable), or None where unknown."""
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    m = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.M)
    return int(m[1]) * 1024 if m else None

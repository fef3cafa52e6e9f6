"""An answer's text as it is stored and scored: cut at stop strings, then stripped (torch-free)."""

from __future__ import annotations

from collections.abc import Sequence


def cut_at_stops(text: str, stops: Sequence[str]) -> str:
    """``text`` up to the first of the stop strings (all of it where none occurs)."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=len(text))
    return text[:cut]


def answer_text(decoded: str, stops: Sequence[str] = ()) -> str:
    """A decoded answer as it is stored and scored: cut at the first of ``stops``, then stripped.
    The cut comes first, as MUSE's knowmem cuts the raw output: an answer that opens with a blank
    line is empty there, not the text after it."""
    if stops:
        decoded = cut_at_stops(decoded, stops)
    return decoded.strip()

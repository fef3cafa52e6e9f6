"""Phrase matching shared by the keyword and refusal scorers: curly apostrophes read as "'", any
whitespace run between words, word boundaries where a phrase starts or ends with a word character."""

from __future__ import annotations

import re
from collections.abc import Sequence

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'"})


def normalise_quotes(text: str) -> str:
    """``text`` with curly apostrophes and primes as "'"."""
    return text.translate(_APOSTROPHES)


def _phrase_pattern(phrase: str) -> str | None:
    """Regex for one phrase: case handled by the caller, any whitespace run between words, and
    word boundaries on the sides where the phrase starts / ends with a word character."""
    parts = normalise_quotes(phrase).split()
    if not parts:
        return None
    body = r"\s+".join(re.escape(p) for p in parts)
    left = r"(?<!\w)" if re.match(r"\w", parts[0]) else ""
    right = r"(?!\w)" if re.search(r"\w$", parts[-1]) else ""
    return left + body + right


def compile_phrases(phrases: Sequence[str]) -> re.Pattern[str] | None:
    """One case-insensitive regex matching any of ``phrases`` (None when there is none)."""
    patterns = [p for p in (_phrase_pattern(x) for x in phrases) if p is not None]
    if not patterns:
        return None
    # longest first, so that the reported match is the longest phrase at a position
    patterns = sorted(set(patterns), key=len, reverse=True)
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)

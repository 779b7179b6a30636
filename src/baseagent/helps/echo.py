"""Replies that repeat what the model was just shown instead of acting on it.

A small model that does not know how to go on often copies the last thing it read: the
failing test output, or the note a tool result carried ("the file already holds exactly
this content"), sometimes reworded a little, and stops there. Taken as the answer, such a
reply ends the turn with the tests still failing. helps/nudges.py asks `echoes()` about a reply
without tool calls while the turn still lacks its evidence (core/verification/evidence.py), and tells
the model that nothing changed.

Overlap is measured on word 4-grams, so reworded glue ("so writing it again does not
change anything") still leaves most of a copied reply matched, while an answer in the
model's own words shares few.
"""
from __future__ import annotations

import re
from typing import Iterable

# Word n-grams compared, and the share of the reply's n-grams found in what it was shown
# above which the reply counts as an echo.
GRAM = 4
ECHO_SHARE = 0.5
# A reply this short is not judged (too few n-grams to tell).
MIN_GRAMS = 8

_WORD = re.compile(r"\w+")


def _grams(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + GRAM]) for i in range(len(words) - GRAM + 1)}


def echo_share(reply: str, shown: Iterable[str]) -> float:
    """The share of the reply's word 4-grams that occur in the texts it was shown."""
    grams = _grams(reply)
    if len(grams) < MIN_GRAMS:
        return 0.0
    seen: set[tuple[str, ...]] = set()
    for text in shown:
        seen |= _grams(text)
    return len(grams & seen) / len(grams)


def echoes(reply: str, shown: Iterable[str]) -> bool:
    """Whether the reply mostly repeats the texts it was shown."""
    return echo_share(reply, shown) >= ECHO_SHARE

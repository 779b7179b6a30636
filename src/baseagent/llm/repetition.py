"""Spotting a model stuck repeating itself while its answer streams.

A small model at temperature 0 can fall into a loop and write the same block again and
again until the output cap (or, with none, the task's timeout). The stream is cut as soon
as its tail is one span repeated enough times that no real answer would hold it, and the
loop treats the call as a failed answer (core/loop.py) instead of waiting minutes for it.

Cheap enough to run on a growing stream: a check runs after every CHECK_EVERY new
characters and looks only at the last WINDOW of them. The candidate period comes from where
the tail's last PROBE characters occurred before (str.rfind, in C), then one comparison
confirms that the whole repeated span has that period.

`RepetitionGuard(blind_to_digits=True)` makes the same check with every run of digits read
as one `#`: a tail that repeats one span with only its numbers changing. The 1.5B model,
asked for the n-th prime, wrote `if number == 41:\n        return 179` and on for 6,000
characters (400 s on this machine's CPU), never a verbatim repeat. Real code of that shape
exists (a data table), so only the whole-file probe, whose replies are one exercise's
solution, uses it (helps/probe.py).
"""
from __future__ import annotations

import re
from typing import Callable

# How much new text between two checks.
CHECK_EVERY = 256
# The tail examined: long enough to hold several repeats of a long block.
WINDOW = 16_384
# Characters matched to find a candidate period.
PROBE = 48
# What counts as a runaway: at least MIN_REPEATS whole copies of the period, covering at
# least MIN_SPAN characters. A real answer may repeat a short line a few times, or a long
# block once or twice; four verbatim copies of 600+ characters in a row it never holds.
MIN_REPEATS = 4
MIN_SPAN = 2_400
# Short periods ("\n\n\n", "0 0 0", "-----") need many more copies to count.
SHORT_PERIOD = PROBE
SHORT_MIN_SPAN = 1_200
# A run of digits, as a guard blind to digits reads it.
_DIGITS = re.compile(r"\d+")


class RepetitionGuard:
    """Feed it the text so far; `runaway` tells whether its tail is stuck in a loop. The
    text is read (`read()`) only when a check is due, so a stream pays for no join per
    chunk. `blind_to_digits`: each run of digits in the tail is read as one `#`, so a tail
    that repeats one span with only its numbers changing counts too."""

    def __init__(self, blind_to_digits: bool = False) -> None:
        self._checked_at = 0
        self.blind_to_digits = blind_to_digits
        self.period = 0
        self.span = 0

    def runaway(self, length: int, read: Callable[[], str]) -> bool:
        """`length`: how long the text is now; `read()`: the text itself."""
        if length - self._checked_at < CHECK_EVERY:
            return False
        text = read()
        self._checked_at = len(text)
        tail = text[-WINDOW:]
        read_as = _DIGITS.sub("#", tail) if self.blind_to_digits else tail
        found = _repeated_tail(read_as)
        if found is None:
            return False
        self.period, span = found
        # The span counts characters of the text as read (each number one `#`); a caller
        # cuts the text itself, so the span given is the raw text's from the same start.
        self.span = len(tail) - _raw_index(tail, len(read_as) - span) \
            if self.blind_to_digits else span
        return True


def _raw_index(text: str, index: int) -> int:
    """Where in `text` the character at `index` of its digit-blind reading comes from
    (a `#` maps to the first digit of its run)."""
    raw = read = 0
    for match in _DIGITS.finditer(text):
        plain = match.start() - raw  # characters before this number, the same in both
        if index <= read + plain:  # among them, or this number's `#`
            return raw + (index - read)
        raw, read = match.end(), read + plain + 1
    return raw + (index - read)


def _repeated_tail(tail: str) -> tuple[int, int] | None:
    """(period, span) when the end of `tail` is one span repeated enough times to count as
    a runaway, else None."""
    if len(tail) < SHORT_MIN_SPAN:
        return None
    probe = tail[-PROBE:]
    previous = tail.rfind(probe, 0, len(tail) - 1)
    if previous < 0:
        return None
    period = len(tail) - PROBE - previous
    span = _periodic_span(tail, period)
    needed = SHORT_MIN_SPAN if period < SHORT_PERIOD else max(MIN_SPAN, MIN_REPEATS * period)
    if span >= needed and span // period >= MIN_REPEATS:
        return period, span
    return None


def _periodic_span(text: str, period: int) -> int:
    """How many characters at the end of `text` repeat with `period` (the whole periodic
    tail, at least one period long)."""
    if period <= 0 or period > len(text):
        return 0
    end = len(text)
    unit = text[end - period:]
    span = period
    # Whole copies first (fast, in C), then the partial copy in front of them.
    while span + period <= end and text[end - span - period:end - span] == unit:
        span += period
    start = end - span
    while start > 0 and text[start - 1] == text[start - 1 + period]:
        start -= 1
    return end - start

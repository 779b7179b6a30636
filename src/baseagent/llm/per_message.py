"""Work on a history done once per message, not once per call.

Every model call sends the whole history, but between compactions the history only grows:
the messages a call begins with are the ones the last call began with. `PerMessage` keeps
the last call's messages and results and computes only the positions whose message
changed (new messages, the copies core/context/caching.py marks for the cache, a compacted
history). The functions it serves are functions of a message's value, so a position whose
message equals the last call's (the very same object, mostly) keeps its result.

Finding the changed positions must not cost a Python step per message, or the per-call
cost grows with the history again (~50 ns per message and call: 0.1 ms at 2,000
messages). Slices are compared instead, in C, with an identity shortcut per element, and
only the slices that differ are split further: a call whose history only grew costs one
comparison over the whole list, a few marked copies a few more.
"""
from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

Result = TypeVar("Result")
Message = dict[str, Any]

_SCAN = 8  # below this length a differing slice is checked element by element


class PerMessage(Generic[Result]):
    """`fn` over a list of messages, each message computed once while it stays in place."""

    def __init__(self, fn: Callable[[Message], Result]) -> None:
        self._fn = fn
        self._last: list[Message] = []
        self._results: list[Result] = []

    def __call__(self, messages: list[Message]) -> list[Result]:
        fn = self._fn
        common = min(len(messages), len(self._last))
        results = self._results[:common]
        for index in changed_positions(messages, self._last, common):
            results[index] = fn(messages[index])
        results += [fn(m) for m in messages[common:]]
        self._last, self._results = list(messages), results
        return results


def changed_positions(new: list[Any], old: list[Any], end: int) -> list[int]:
    """The positions below `end` where `new` and `old` hold unequal values, in order."""
    found: list[int] = []
    pending = [(0, end)]
    while pending:
        lo, hi = pending.pop()
        if new[lo:hi] == old[lo:hi]:
            continue
        if hi - lo <= _SCAN:
            found.extend(i for i in range(lo, hi) if new[i] is not old[i] and new[i] != old[i])
            continue
        mid = (lo + hi) // 2
        pending.append((mid, hi))
        pending.append((lo, mid))
    return found

"""Work on a history done once per message, not once per call.

Every model call sends the whole history, but between compactions the history only grows:
the messages a call begins with are the ones the last call began with. `PerMessage` keeps
the last call's messages and results; every position that holds the very same object as
last time (one identity comparison each, in C) reuses its result, and only the others (new
messages, the copies core/caching.py marks for the cache) are computed. History messages
are never modified in place (core/ builds new dicts, e.g. when pruning), which is what makes
identity enough.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Generic, TypeVar

Result = TypeVar("Result")
Message = dict[str, Any]


class PerMessage(Generic[Result]):
    """`fn` over a list of messages, each message computed once while it stays in place."""

    def __init__(self, fn: Callable[[Message], Result]) -> None:
        self._fn = fn
        self._last: list[Message] = []
        self._results: list[Result] = []

    def __call__(self, messages: list[Message]) -> list[Result]:
        same = list(map(operator.is_, messages, self._last))
        fn = self._fn
        results = self._results[:len(same)]
        changed = 0
        while True:  # the few positions holding another object (marked copies, edits)
            try:
                changed = same.index(False, changed)
            except ValueError:
                break
            results[changed] = fn(messages[changed])
            changed += 1
        results += [fn(m) for m in messages[len(same):]]
        self._last, self._results = list(messages), results
        return results

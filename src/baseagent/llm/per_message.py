"""Work on a history done once per message, not once per call.

Every model call sends the whole history, but between compactions the history only grows:
the messages a call begins with are the ones the last call began with. `PerMessage` keeps
the last call's messages and results; the longest run of leading messages that are the very
same objects (found with one identity comparison each, in C) reuses its results, and only
the messages after it are computed. History messages are never modified in place (core/
builds new dicts, e.g. when pruning), which is what makes identity enough.
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
        try:
            kept = same.index(False)
        except ValueError:
            kept = len(same)
        fn = self._fn
        results = self._results[:kept] + [fn(m) for m in messages[kept:]]
        self._last, self._results = list(messages), results
        return results

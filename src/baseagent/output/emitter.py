"""The loop's one handle on output: builds events, numbers items, fans out to listeners.

Listeners are the sink (JSONL or terminal) and the session record; the loop never knows
which are attached.
"""
from __future__ import annotations

import threading
from typing import Any, Protocol

from baseagent.output import events as ev


class EventListener(Protocol):
    def emit(self, event: ev.ThreadEvent) -> None: ...


class Redact(Protocol):
    def data(self, value: Any) -> Any: ...


class Emitter:
    """`redact` (output/redact.py) is applied to every event before any listener sees it,
    so no sink and no record can ever hold a secret the agent knows."""

    def __init__(self, listeners: list[EventListener] | None = None,
                 redact: Redact | None = None) -> None:
        self._listeners: list[EventListener] = list(listeners or [])
        self._next_item = 0
        self._lock = threading.Lock()
        # A Redactor that knows no secret is falsy: then events go out without the extra copy.
        self._redact = redact if redact else None

    def add_listener(self, listener: EventListener) -> None:
        self._listeners.append(listener)

    def emit(self, event: ev.ThreadEvent) -> None:
        if self._redact is not None:
            data = event.model_dump(mode="json")
            clean = self._redact.data(data)
            if clean is not data:
                event = ev.parse_event(clean)
        for listener in self._listeners:
            listener.emit(event)

    def detail(self, item_id: str, text: str) -> None:
        """Display-only extras (diffs) for sinks that show them; never part of the JSONL."""
        for listener in self._listeners:
            show = getattr(listener, "detail", None)
            if show is not None:
                show(item_id, text)

    def new_item_id(self) -> str:
        with self._lock:
            item_id = f"item_{self._next_item}"
            self._next_item += 1
            return item_id

    # -- convenience builders ---------------------------------------------------------------

    def thread_started(self, thread_id: str) -> None:
        self.emit(ev.ThreadStarted(thread_id=thread_id))

    def turn_started(self) -> None:
        self.emit(ev.TurnStarted())

    def turn_completed(self, totals: Any, cost_before: float = 0.0) -> None:
        """`totals`: the thread's cumulative UsageTotals; `cost_before`: its cost_usd when
        the turn started, so cost_usd reports this turn alone (None when unpriced)."""
        cost = round(totals.cost_usd - cost_before, 10) if totals.cost_known else None
        self.emit(ev.TurnCompleted(usage=ev.Usage(**totals.tokens()), cost_usd=cost))

    def turn_failed(self, message: str) -> None:
        self.emit(ev.TurnFailed(error=ev.ThreadError(message=message)))

    def notice(self, message: str) -> None:
        self.emit(ev.ErrorEvent(message=message))

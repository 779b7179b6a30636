"""The loop's one handle on output: builds events, numbers items, fans out to listeners.

Listeners are the sink (JSONL or terminal) and the session record; the loop never knows
which are attached. Beside the events, the loop sends run notes (output/notes.py) through
`note()`: only listeners with a `note` method (mappers to other vocabularies) get them.
"""
from __future__ import annotations

import threading
from typing import Any, Protocol

from baseagent.output import events as ev
from baseagent.output.notes import RunNote


class EventListener(Protocol):
    def emit(self, event: ev.ThreadEvent) -> None: ...


class Redact(Protocol):
    def data(self, value: Any) -> Any: ...


class Emitter:
    """`redact` (output/redact.py) is applied to every event before any listener sees it,
    so no sink and no record can ever hold a secret the agent knows."""

    def __init__(self, listeners: list[EventListener] | None = None,
                 redact: Redact | None = None, item_prefix: str = "") -> None:
        """`item_prefix` goes before every item id (a sub-agent's items are numbered under
        the call that started it, so ids stay unique in the parent's stream)."""
        self._listeners: list[EventListener] = list(listeners or [])
        self._item_prefix = item_prefix
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

    def note(self, note: RunNote) -> None:
        """A run note for the listeners that read them (never part of the Codex JSONL)."""
        if self._redact is not None:
            data = note.model_dump(mode="json")
            clean = self._redact.data(data)
            if clean is not data:
                note = type(note).model_validate(clean)
        for listener in self._listeners:
            take = getattr(listener, "note", None)
            if take is not None:
                take(note)

    def detail(self, item_id: str, text: str) -> None:
        """Display-only extras (diffs) for sinks that show them; never part of the JSONL."""
        for listener in self._listeners:
            show = getattr(listener, "detail", None)
            if show is not None:
                show(item_id, text)

    def new_item_id(self) -> str:
        with self._lock:
            item_id = f"{self._item_prefix}item_{self._next_item}"
            self._next_item += 1
            return item_id

    def reserve_item_id(self, item_id: str) -> None:
        """Number new items after `item_id` (an item a previous process started and this one
        completes: a run resumed to finish a paused turn must not reuse its id)."""
        head, _, number = item_id.rpartition("item_")
        if head == self._item_prefix and number.isdigit():
            with self._lock:
                self._next_item = max(self._next_item, int(number) + 1)

    # -- convenience builders ---------------------------------------------------------------

    def thread_started(self, thread_id: str) -> None:
        self.emit(ev.ThreadStarted(thread_id=thread_id))

    def turn_started(self) -> None:
        self.emit(ev.TurnStarted())

    def turn_completed(self, totals: Any, cost_before: float = 0.0,
                       verification: dict[str, Any] | None = None) -> None:
        """`totals`: the thread's cumulative UsageTotals; `cost_before`: its cost_usd when
        the turn started, so cost_usd reports this turn alone (None when unpriced);
        `verification`: how the answer was verified (None when verification is off)."""
        cost = round(totals.cost_usd - cost_before, 10) if totals.cost_known else None
        self.emit(ev.TurnCompleted(
            usage=ev.Usage(**totals.tokens()), cost_usd=cost,
            verification=ev.Verification(**verification) if verification else None))

    def turn_failed(self, message: str) -> None:
        self.emit(ev.TurnFailed(error=ev.ThreadError(message=message)))

    def turn_requires_action(self, calls: list[ev.PendingToolCall], totals: Any) -> None:
        """The turn pauses for the caller's tool outputs; usage as turn.completed has it."""
        self.emit(ev.TurnRequiresAction(tool_calls=calls, usage=ev.Usage(**totals.tokens())))

    def notice(self, message: str) -> None:
        self.emit(ev.ErrorEvent(message=message))

"""The engine's one handle on output: numbers items, maps, redacts, fans out to listeners.

The engine (the loop, the delegate tool, the Agent) sends its own events (emitting/events.py)
through `send()`; the Emitter hands each, redacted, to the listeners that map the engine's
events themselves (`run_event`: the terminal, AgentB's mapper, a delegation's nesting), and
maps it to Codex events (output/codex.py) for every listener (`emit`: the JSONL sink, the
session record, the library's callbacks and streams). The engine never knows which are
attached, and never builds a wire type. Display-only extras go through `detail()`. Every
listener has the interface `EventListener` declares (the one sink interface), with a no-op
default for each hook it does not need.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any

from baseagent.emitting import events as engine
from baseagent.emitting.interface import EventListener, Redact, listening
from baseagent.output import events as ev
from baseagent.output.codex import codex_events


class Emitter:
    """`redact` (output/redact.py) is applied to every event before any listener sees it,
    so no sink and no record can ever hold a secret the agent knows."""

    def __init__(self, listeners: list[EventListener] | None = None,
                 redact: Redact | None = None, item_prefix: str = "") -> None:
        """`item_prefix` goes before every item id (a sub-agent's items are numbered under
        the call that started it, so ids stay unique in the parent's stream)."""
        self._listeners: list[EventListener] = [listening(each) for each in listeners or ()]
        self._item_prefix = item_prefix
        self._next_item = 0
        self._lock = threading.Lock()
        # A Redactor that knows no secret is falsy: then events go out without the extra copy.
        self._redact = redact if redact else None

    def add_listener(self, listener: EventListener) -> None:
        self._listeners.append(listening(listener))

    def send(self, event: engine.RunEvent) -> None:
        """One engine event: to the listeners that take the engine's events as it is, then
        to every listener as Codex events (in that order)."""
        takers = [each for each in self._listeners if each.run_events]
        if takers:
            clean = event if self._redact is None else _scrub(self._redact, event)
            for listener in takers:
                listener.run_event(clean)
        for out in codex_events(event):
            self.emit(out)

    def emit(self, event: ev.ThreadEvent) -> None:
        """One Codex event, redacted, to every listener (`send` maps the engine's)."""
        if self._redact is not None:
            data = event.model_dump(mode="json")
            clean = self._redact.data(data)
            if clean is not data:
                event = ev.parse_event(clean)
        for listener in self._listeners:
            listener.emit(event)

    def detail(self, item_id: str, text: str) -> None:
        """Display-only extras (diffs) for sinks that show them; never part of the JSONL.
        Redacted like the events (a diff can hold a secret the agent knows)."""
        if self._redact is not None:
            text = self._redact.data(text)
        for listener in self._listeners:
            listener.detail(item_id, text)

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

    # -- convenience senders ----------------------------------------------------------------

    def thread_started(self, thread_id: str) -> None:
        self.send(engine.ThreadStarted(thread_id=thread_id))

    def turn_started(self, turn_id: str = "", thread_id: str = "",
                     instruction: str | None = None, continued: bool = False) -> None:
        self.send(engine.TurnStarted(turn_id=turn_id, thread_id=thread_id,
                                     instruction=instruction, continued=continued))

    def run_failed(self, message: str) -> None:
        """The run failed before a turn could begin."""
        self.send(engine.RunFailed(message=message))

    def notice(self, message: str) -> None:
        self.send(engine.Notice(message=message))


def _scrub(redact: Redact, value: Any) -> Any:
    """`value` (an engine event: dataclasses, mappings, sequences, text) with its strings
    redacted; the same object when nothing changed."""
    if isinstance(value, str):
        return redact.data(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for each in dataclasses.fields(value):
            old = getattr(value, each.name)
            new = _scrub(redact, old)
            if new is not old:
                changes[each.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, dict):
        out = {key: _scrub(redact, item) for key, item in value.items()}
        return out if any(out[k] is not value[k] for k in value) else value
    if isinstance(value, (list, tuple)):
        items = [_scrub(redact, item) for item in value]
        if any(new is not old for new, old in zip(items, value)):
            return type(value)(items) if isinstance(value, tuple) else items
        return value
    return value

"""The loop's one handle on output: builds events, numbers items, fans out to listeners.

Listeners are the sink (JSONL, terminal or AgentB) and the session record; the loop never
knows which are attached. Beside the events, the loop sends run notes (output/notes.py)
through `note()` and display-only extras through `detail()`. Every listener has the
interface `EventListener` declares (the one sink interface), with a no-op default for each
hook it does not need.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Protocol, runtime_checkable

from baseagent.output import events as ev
from baseagent.output.notes import RunNote


@runtime_checkable
class EventListener(Protocol):
    """The one sink interface: every hook the Emitter and the CLI's runner (runner.py) call
    on a listener. `emit` must be provided; every other hook has a default (nothing to do;
    `exit_when_idle` exits at once), inherited by subclasses and given by `listening()` to
    any other object.

    Sinks are JsonlSink (output/jsonl.py), PrettySink (output/pretty.py) and AgentBSink
    (output/agentb.py); the session record (core/recorder.py) and the Agent's own
    listeners (agent.py) listen the same way.
    """

    # Why the sink stopped writing (stdout failing), or None; the runner reports it.
    failure: str | None = None

    # -- the Emitter's hooks ---------------------------------------------------------------

    def emit(self, event: ev.ThreadEvent) -> None:
        """One Codex event (output/events.py), already redacted."""
        ...

    def note(self, note: RunNote) -> None:
        """A run note beside the events (output/notes.py): for mappers to other
        vocabularies (output/agentb.py); never part of the Codex JSONL."""

    def detail(self, item_id: str, text: str) -> None:
        """Display-only extras of an item (a file tool's diff), for sinks that show them."""

    # -- the CLI runner's hooks (runner.py) --------------------------------------------------

    def on_write_error(self, callback: Callable[[str], None]) -> None:
        """Call `callback` with the reason once, when the sink can no longer write."""

    def headed(self, thread_id: str) -> None:
        """On a terminal: the header of this thread is already on screen."""

    def bind_usage(self, usage: Callable[[], Any], turns_before: int = 0) -> None:
        """On a terminal: where the turn summary reads tokens and cost, and how many turns
        the thread had before."""

    def waiting(self, label: str = "starting") -> None:
        """On a terminal: a turn was asked for and has not started yet (a sign of life)."""

    def stop_waiting(self) -> None:
        """On a terminal: the turn asked for never started."""

    def exit_when_idle(self, code: int) -> None:
        """End the process with `code` (a second signal), once no event is half written."""
        os._exit(code)

    def close(self) -> None:
        """The run is over: flush and let go of what the sink holds."""


# The hooks `EventListener` gives a default (tests hold this to the protocol).
HOOKS = ("note", "detail", "on_write_error", "headed", "bind_usage", "waiting",
         "stop_waiting", "exit_when_idle", "close")


def listening(obj: Any) -> EventListener:
    """A listener held to the interface: an EventListener (by subclass or by having every
    hook) as it is; any other object with `emit` wrapped, so that it gets the defaults of
    the hooks it leaves out. TypeError without `emit`. This is the one place a listener's
    hooks are looked for; nothing calls a hook on faith."""
    if isinstance(obj, EventListener):
        return obj
    if not hasattr(obj, "emit"):
        raise TypeError(f"{type(obj).__name__} is not an event listener: it has no emit()")
    return _Adopted(obj)


class _Adopted(EventListener):
    """An object with `emit` and some of the hooks (see `listening`)."""

    def __init__(self, obj: Any) -> None:
        self.listener = obj
        self.emit = obj.emit  # type: ignore[method-assign]
        for hook in HOOKS:
            if hasattr(obj, hook):
                setattr(self, hook, getattr(obj, hook))


class Redact(Protocol):
    def data(self, value: Any) -> Any: ...


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
            listener.note(note)

    def detail(self, item_id: str, text: str) -> None:
        """Display-only extras (diffs) for sinks that show them; never part of the JSONL."""
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

"""The engine's handle on output, as an interface: what the engine calls (`EventEmitter`) and
what listens (`EventListener`). The engine (core/, the Agent) and the mappers in output/ both
import this module and the events (emitting/events.py); it imports neither. The one concrete
emitter is output/emitter.py `Emitter` (numbers items, redacts, maps to Codex events, fans
out to the listeners); the composition root makes it and hands it to the engine.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Protocol, runtime_checkable

from baseagent.emitting import events as engine


class EventEmitter(Protocol):
    """What the engine calls to say what happened (output/emitter.py `Emitter` implements it).
    The engine never builds a wire type and never knows which listeners are attached."""

    def add_listener(self, listener: EventListener) -> None:
        """Attach one more listener (the session record, a caller's callback)."""

    def send(self, event: engine.RunEvent) -> None:
        """One engine event, to every listener."""

    def detail(self, item_id: str, text: str) -> None:
        """Display-only extras of an item (a file tool's diff), never part of the JSONL."""

    def new_item_id(self) -> str:
        """The next item id of this stream."""
        ...

    def reserve_item_id(self, item_id: str) -> None:
        """Number new items after `item_id` (an item a previous process started)."""

    def notice(self, message: str) -> None:
        """A notice for the person (a warning line, an info event)."""


# A maker of emitters for a sub-agent's stream: its listeners and the prefix before every
# item id (the composition root hands one to the delegate tool).
NewEmitter = Callable[[list["EventListener"], str], EventEmitter]


@runtime_checkable
class EventListener(Protocol):
    """The one sink interface: every hook the Emitter and the CLI's runner (runner.py) call
    on a listener. `emit` must be provided; every other hook has a default (nothing to do;
    `exit_when_idle` exits at once), inherited by subclasses and given by `listening()` to
    any other object.

    Sinks are JsonlSink (output/jsonl.py), PrettySink (output/pretty.py) and AgentBSink
    (output/agentb.py); the session record (records/recorder.py) and the Agent's own
    listeners (agent.py) listen the same way.
    """

    # Why the sink stopped writing (stdout failing), or None; the runner reports it.
    failure: str | None = None
    # Whether `run_event` is wanted: the Emitter redacts the engine's events for it only then.
    run_events: bool = False

    # -- the Emitter's hooks ---------------------------------------------------------------

    def emit(self, event: Any) -> None:
        """One Codex event (a wire event of output/events.py, mapped by output/codex.py),
        already redacted."""
        ...

    def detail(self, item_id: str, text: str) -> None:
        """Display-only extras of an item (a file tool's diff), for sinks that show them."""

    def run_event(self, event: engine.RunEvent) -> None:
        """One engine event (emitting/events.py) as the engine sent it, already redacted, before
        its Codex events, when the listener sets `run_events`: for mappers of their own (the
        terminal, output/pretty.py; AgentB's, output/agentb.py) and listeners inside the
        engine (the delegate tool nests a sub-agent's items in its call)."""

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
HOOKS = ("detail", "run_event", "run_events", "on_write_error", "headed",
         "bind_usage", "waiting", "stop_waiting", "exit_when_idle", "close")


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

"""A turn's events as they happen: `TurnStream` (Agent.stream()), and the listeners a turn
hands its events to (its items collected for the RunResult, a stream's queue fed).

The turn itself is the Agent's (agent.py); a stream runs it on a worker thread through the
callables it is given, so this module knows nothing of the Agent's insides.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any, Callable, Literal

from baseagent.agent_result import RunResult
from baseagent.errors import InputError
from baseagent.output import events as ev
from baseagent.emitting.interface import EventListener

EventFormat = Literal["codex", "agentb"]


def check_format(format: str) -> None:  # noqa: A002
    if format not in ("codex", "agentb"):
        raise InputError(f"unknown event format {format!r} (choose codex or agentb)")


class Collect(EventListener):
    """The turn's completed items, for its RunResult."""

    def __init__(self) -> None:
        self.items: list[ev.ThreadItem] = []

    def emit(self, event: ev.ThreadEvent) -> None:
        if isinstance(event, ev.ItemCompleted):
            self.items.append(event.item)


class Forward(EventListener):
    """A stream's listener: Codex events as they are."""

    def __init__(self, put: Callable[[Any], None]) -> None:
        self.emit = put


_DONE = object()


class TurnStream(Iterator[Any]):
    """Events of one turn as they happen (Codex event models, or AgentB's with
    format="agentb"); the turn runs on a worker thread.

    `run_turn(listener)` runs the turn handing its events to `listener` and returns its
    RunResult; `release()` is called once it is over, whatever happened; `cancel(reason)`
    stops it when the stream is closed early. `name` names the worker thread.
    """

    def __init__(self, run_turn: Callable[[EventListener], RunResult],
                 release: Callable[[], None], cancel: Callable[[str], None], name: str,
                 format: EventFormat = "codex") -> None:  # noqa: A002
        self._release = release
        self._cancel = cancel
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self.result: RunResult | None = None
        self._finished = False
        if format == "agentb":
            from baseagent.output.agentb import AgentBMapper

            self._listener: EventListener = AgentBMapper(self._queue.put)
        else:
            self._listener = Forward(self._queue.put)
        self._worker = threading.Thread(target=self._work, args=(run_turn,), name=name,
                                        daemon=True)
        self._worker.start()

    def _work(self, run_turn: Callable[[EventListener], RunResult]) -> None:
        try:
            self.result = run_turn(self._listener)
        except BaseException as exc:  # noqa: BLE001 - handed to the iterating thread
            self._error = exc
        finally:
            self._release()
            self._queue.put(_DONE)

    def __iter__(self) -> "TurnStream":
        return self

    def __next__(self) -> Any:
        if self._finished:
            raise StopIteration
        value = self._queue.get()
        if value is _DONE:
            self._finished = True
            self._worker.join()
            if self._error is not None:
                raise self._error
            raise StopIteration
        return value

    def close(self) -> None:
        """Stop listening: a turn still running is cancelled and waited for."""
        if self._finished:
            return
        if self._worker.is_alive():
            self._cancel("the event stream was closed")
        self._worker.join()
        self._finished = True

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass


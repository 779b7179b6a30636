"""A thread's events as the server keeps them: one bounded, numbered log per vocabulary.

The turn appends from its own thread; every SSE client reads the same log with its own
cursor (the last id it was sent), so a client costs no queue of its own: a slow one falls
behind, a vanished one is forgotten, and neither holds the turn or grows memory. The log
keeps the newest events within `max_bytes` and `max_events`; a client whose cursor is
older than what is kept is told (`gap`) and reads on from the oldest kept event.

Ids are `EPOCH.N`: N counts from 1 in this log, EPOCH is random per log, so a
`Last-Event-ID` from another log (another server process, an earlier registration of the
thread) is seen as foreign and the client is replayed what is kept.
"""
from __future__ import annotations

import asyncio
import secrets
import threading
from collections import deque
from dataclasses import dataclass

# What one thread keeps by default: enough for long turns with verbose commands.
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_EVENTS = 20_000


@dataclass(frozen=True)
class Entry:
    number: int
    id: str  # "EPOCH.N", the SSE id
    name: str  # the SSE event name (the event's type)
    data: str  # the event as one line of JSON, serialised once for every client


class EventLog:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_events: int = DEFAULT_MAX_EVENTS) -> None:
        self.epoch = secrets.token_hex(4)
        self._max_bytes = max_bytes
        self._max_events = max_events
        self._lock = threading.Lock()
        self._entries: deque[Entry] = deque()
        self._bytes = 0
        self._next = 1
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.closed = False

    # -- the writer (the turn's thread) ----------------------------------------------------

    def append(self, name: str, data: str) -> Entry:
        with self._lock:
            entry = Entry(self._next, f"{self.epoch}.{self._next}", name, data)
            self._next += 1
            self._entries.append(entry)
            self._bytes += len(data)
            while len(self._entries) > 1 and (self._bytes > self._max_bytes
                                               or len(self._entries) > self._max_events):
                self._bytes -= len(self._entries.popleft().data)
            waiters, self._waiters = self._waiters, []
        self._wake(waiters)
        return entry

    def close(self) -> None:
        """No more events: every reader ends its stream once it has read what is kept."""
        with self._lock:
            self.closed = True
            waiters, self._waiters = self._waiters, []
        self._wake(waiters)

    @staticmethod
    def _wake(waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]) -> None:
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that client's loop is closed: nobody to wake
                pass

    # -- the readers (SSE clients, on the server's loop) -------------------------------------

    def cursor(self, last_event_id: str | None) -> int:
        """The number of the last event a client has seen, from its Last-Event-ID (0: none,
        or one of another log)."""
        if not last_event_id:
            return 0
        epoch, _, number = last_event_id.strip().partition(".")
        if epoch != self.epoch or not number.isdigit():
            return 0
        return min(int(number), self._next - 1)

    @property
    def last_number(self) -> int:
        return self._next - 1

    def since(self, number: int, limit: int = 256) -> tuple[list[Entry], bool]:
        """Up to `limit` events after `number`, and whether some after it are no longer
        kept (the client missed them)."""
        with self._lock:
            if not self._entries:
                return [], False
            first = self._entries[0].number
            gap = number + 1 < first
            start = max(number + 1, first) - first
            out = [self._entries[i] for i in range(start, min(start + limit, len(self._entries)))]
        return out, gap

    async def wait_after(self, number: int, timeout: float) -> None:
        """Return once an event after `number` is there (or after `timeout` seconds)."""
        event = asyncio.Event()
        with self._lock:
            if self._next - 1 > number or self.closed:
                return
            self._waiters.append((asyncio.get_running_loop(), event))
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except asyncio.TimeoutError:
            with self._lock:
                self._waiters = [w for w in self._waiters if w[1] is not event]

    @property
    def size(self) -> tuple[int, int]:
        """(events kept, bytes kept)."""
        with self._lock:
            return len(self._entries), self._bytes

"""Append-only session record, written as things happen: what goes in it (SessionRecorder)
and today's JSONL file per thread (JsonlWriter); storage/ holds the other stores
(storage/sqlite.py), which take the same records through the same ThreadWriter protocol.

Every history message, every event and the usage are appended and flushed immediately, so a
run killed at any point leaves everything up to the kill on disk. A write that fails (a full
disk, a file size limit) is undone to the last complete line, the record stops there, and
RecordWriteError says so once: the turn then fails with that message, and the record stays
readable and resumable as it was. A history rewrite
(compaction) is recorded as a `history` snapshot, so replaying the file rebuilds exactly the
history the model last saw. Assistant `message` records also carry the usage of the call that
produced them and its reasoning, for resume (records/replay.py) and trajectory export (export/).
"""
from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from baseagent.llm.types import TOKEN_KEYS
from baseagent.errors import ConfigError
from baseagent.emitting.interface import EventListener
from baseagent.output.events import ThreadEvent
from baseagent.output.jsonl import json_line

RECORD_SUFFIX = ".jsonl"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


class RecordWriteError(Exception):
    """The session record could not be written (raised once; the record is closed)."""


class ThreadWriter(Protocol):
    """Where one thread's records go (storage/: a JSONL file, a SQLite database). `append`
    returns once the record is stored (a process killed after it loses nothing of it); a
    failure raises RecordWriteError once, after which the writer is closed and ignores
    further records. `sync` makes what was appended durable against a machine crash."""

    location: str

    def append(self, record: dict[str, Any]) -> None: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


class JsonlWriter:
    """Today's record: one JSONL file per thread, appended line by line, locked while open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = _open_locked(path)

    def append(self, record: dict[str, Any]) -> None:
        # errors="replace": a lone surrogate from a model or a tool must not kill the record.
        data = (json_line(record) + "\n").encode("utf-8", errors="replace")
        if self._fd is None:
            return
        before = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            try:
                os.ftruncate(self._fd, before)  # back to the last complete line
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None
            raise RecordWriteError(
                f"cannot write the session record {self.path}: {exc.strerror or exc}; it is "
                "complete up to the last event before this one") from None

    def sync(self) -> None:
        if self._fd is None:
            return
        try:
            os.fsync(self._fd)
        except OSError:
            pass

    def close(self) -> None:
        self.sync()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SessionRecorder(EventListener):
    """Writes one thread's record through a ThreadWriter; also an event listener for the
    Emitter. What goes in a record (and when) is decided here, whatever stores it."""

    def __init__(self, target: Path | ThreadWriter,
                 redact: Callable[[Any], Any] | None = None) -> None:
        """`target`: the thread's writer (storage/), or a path for a JSONL record. `redact`
        maps a record (JSON-like data) to the same with secrets replaced; it works on values,
        not on the serialised line, so the line stays valid JSON."""
        self._writer: ThreadWriter = JsonlWriter(target) if isinstance(target, Path) else target
        self.location = self._writer.location
        self.path = target if isinstance(target, Path) else None
        self._redact = redact or (lambda record: record)
        self._lock = threading.Lock()
        self._closed = False
        self.failure: str | None = None  # why writing stopped, once it has
        # Per-call metrics for trajectory export (ATIF step metrics): see track_usage().
        self._usage_probe: Callable[[], Any] | None = None
        self._usage_seen: tuple[tuple[int, ...], float | None, int] = ((0,) * len(TOKEN_KEYS),
                                                                        0.0, 0)
        self._pending_reasoning = ""

    def _write(self, record: dict[str, Any]) -> None:
        record.setdefault("ts", _now())
        record = self._redact(record)
        with self._lock:
            if self._closed or self.failure is not None:
                return
            try:
                self._writer.append(record)
            except RecordWriteError as exc:
                self.failure = str(exc)
                raise

    def meta(self, **fields: Any) -> None:
        self._write({"kind": "meta", **fields})

    def track_usage(self, probe: Callable[[], Any]) -> None:
        """Attach each assistant message to the usage of the call that produced it.

        `probe` returns the client's cumulative UsageTotals. The loop appends the assistant
        message right after the call that added to the totals, so the difference since the
        previous assistant message is that call's usage (plus any helper call, e.g. a
        compaction summary, made in between) without the loop knowing about records.
        """
        self._usage_probe = probe
        self._usage_seen = _usage_tuple(probe())

    def message(self, message: dict[str, Any]) -> None:
        record: dict[str, Any] = {"kind": "message", "message": message}
        if message.get("role") == "assistant":
            # The message carries its reasoning (reasoning_content) itself; records written
            # before it did keep the reasoning item's text beside it (export/log.py reads both).
            if self._pending_reasoning and not message.get("reasoning_content"):
                record["reasoning"] = self._pending_reasoning
            self._pending_reasoning = ""
            if self._usage_probe is not None:
                record["usage"] = self._usage_delta()
        self._write(record)

    def _usage_delta(self) -> dict[str, Any]:
        now = _usage_tuple(self._usage_probe())  # type: ignore[misc]
        before, self._usage_seen = self._usage_seen, now
        delta: dict[str, Any] = {key: now[0][i] - before[0][i] for i, key in enumerate(TOKEN_KEYS)}
        cost = None if now[1] is None or before[1] is None else round(now[1] - before[1], 10)
        delta.update(cost_usd=cost, calls=now[2] - before[2])
        return delta

    def paused(self, paused: dict[str, Any] | None) -> None:
        """The turn waits for the caller's tool outputs (records/pending.py); None: it no longer
        does. The last `paused` record wins when the record is read back."""
        self._write({"kind": "paused", "turn": paused})

    def history(self, messages: list[dict[str, Any]], reason: str) -> None:
        self._write({"kind": "history", "reason": reason, "messages": messages})

    def usage(self, **fields: Any) -> None:
        self._write({"kind": "usage", **fields})

    def emit(self, event: ThreadEvent) -> None:
        # Streaming deltas would bloat the record; the completed item carries the full text.
        # Plan updates are not deltas: each is a state of the plan worth keeping.
        if event.type == "item.updated" and event.item.type != "todo_list":
            return
        if event.type == "item.completed" and event.item.type == "reasoning":
            # The loop emits the reasoning item just before appending the assistant message;
            # the message record carries it (the history message itself has no reasoning).
            self._pending_reasoning = event.item.text
        self._write({"kind": "event", "event": event.model_dump(mode="json")})

    def sync(self) -> None:
        """Make what was written durable (the end of every turn): a crash of the machine
        after a turn loses nothing of it."""
        with self._lock:
            if not self._closed and self.failure is None:
                self._writer.sync()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._writer.close()

class RecordInUseError(ConfigError):
    """Another run (in this process or another) is writing the thread's record."""


# The record holds the conversation: readable by its owner only.
RECORD_MODE = 0o600
# How far back a torn tail is searched for the last complete line, per read.
_BLOCK = 64 * 1024


def _open_locked(path: Path) -> int:
    """Open the record for appending, holding an exclusive lock for as long as it is open,
    and cut a torn last line (a run killed mid-write) so new records start on a line of
    their own. The lock dies with the process, so a killed run never leaves it stale."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, RECORD_MODE)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RecordInUseError(
                f"thread {path.stem} is in use by another run (its record {path} is "
                "locked); wait for it to finish") from None
        _cut_torn_tail(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _cut_torn_tail(fd: int) -> None:
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(0, end - _BLOCK)
        block = os.pread(fd, end - start, start)
        if end == size and block.endswith(b"\n"):
            return  # the common case: the last line is whole
        newline = block.rfind(b"\n")
        if newline >= 0:
            os.ftruncate(fd, start + newline + 1)
            return
        end = start
    os.ftruncate(fd, 0)



def _usage_tuple(totals: Any) -> tuple[tuple[int, ...], float | None, int]:
    """(token counts in TOKEN_KEYS order, cost or None, calls)."""
    cost = totals.cost_usd if getattr(totals, "cost_known", True) else None
    return (tuple(int(getattr(totals, key, 0)) for key in TOKEN_KEYS), cost,
            getattr(totals, "calls", 0))


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the records of a session file; a torn last line (killed mid-write) is skipped."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record

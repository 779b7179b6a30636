"""JSONL sink: one event per line on stdout, flushed per line, nothing else ever written.

Writes go through the binary buffer with a lock, so concurrent emitters (the shell reader
thread, signal handlers) can never interleave half lines, and text that cannot be encoded
(lone surrogates) is replaced rather than crashing mid-line.

`claim_stdout()` makes "nothing else" hold for the whole process: the sink gets a private
copy of file descriptor 1 and fd 1 itself is pointed at stderr, so a stray print(), a
library's warning or a C extension's chatter lands on stderr, never in the event stream.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from typing import BinaryIO, Callable

from baseagent.emitting.interface import EventListener
from baseagent.output.events import ThreadEvent


# Characters JSON leaves raw that line splitters treat as line breaks (Python's
# str.splitlines, JavaScript's line terminators): escaped, so one event is one line for any
# reader. (JSON already escapes \n, \r and every other control character below U+0020.)
_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_line(data: object) -> str:
    """Compact JSON text that is exactly one line under every line-splitting convention."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in _LINE_BREAKS.items():
        if raw in text:
            text = text.replace(raw, escaped)
    return text


def event_to_line(event: ThreadEvent) -> bytes:
    """Serialise one event as a single JSON line (UTF-8; lone surrogates replaced)."""
    return json_line(event.model_dump(mode="json")).encode("utf-8", errors="replace") + b"\n"


def claim_stdout() -> BinaryIO:
    """Take fd 1 for the event stream; from now on fd 1 and sys.stdout go to stderr."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        pass
    try:
        private = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # fd 1 or 2 closed: nothing to protect, write where we can
        return sys.stdout.buffer
    sys.stdout = sys.stderr  # Python-level prints: stderr (and through its redaction)
    return os.fdopen(private, "wb")  # buffered: a long line is written whole, then flushed


# How long a forced exit waits for the line being written before giving up on it.
EXIT_WAIT_SECONDS = 2.0


class JsonlSink(EventListener):
    """A write that fails (a full disk, /dev/full, a reader that went away) is never
    retried: the sink stops writing, keeps the reason in `failure`, and tells the callback
    given to `on_write_error` once (the CLI ends the run: nobody gets its events)."""

    def __init__(self, stream: BinaryIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdout.buffer
        self._lock = threading.Lock()
        self._writing = False
        self._exit_code: int | None = None
        self.failure: str | None = None
        self._on_error: Callable[[str], None] | None = None

    def on_write_error(self, callback: Callable[[str], None]) -> None:
        self._on_error = callback

    def emit(self, event: ThreadEvent) -> None:
        line = event_to_line(event)
        failed = None
        with self._lock:
            self._writing = True
            try:
                if self.failure is None:
                    self._stream.write(line)
                    self._stream.flush()
            except (ValueError, OSError) as exc:
                # Crashing would lose the run's work on disk too: record it, stop writing.
                reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
                self.failure = failed = f"cannot write the events to stdout: {reason}"
            finally:
                self._writing = False
        if failed is not None and self._on_error is not None:
            self._on_error(failed)
        if self._exit_code is not None:
            os._exit(self._exit_code)

    def exit_when_idle(self, code: int) -> None:
        """Exit the process now, or right after the line being written (a signal handler
        may run in the middle of a write; stdout must not end in half a line). A write that
        cannot finish (a reader that stopped reading) does not hold the exit for long."""
        if self._writing:
            self._exit_code = code
            timer = threading.Timer(EXIT_WAIT_SECONDS, os._exit, args=(code,))
            timer.daemon = True
            timer.start()
            return
        self.close()
        os._exit(code)

    def close(self) -> None:
        try:
            self._stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

"""Thread ids: UUIDv7 (RFC 9562), as Codex's are.

A UUIDv7 starts with the Unix time in milliseconds, so ids sort in creation order as plain
strings: `sessions list` can order threads by id, and a file name tells when a thread began.
Python 3.11 has no uuid7, hence this module. Within one process, ids made in the same
millisecond stay ordered: the 12 bits after the version hold a counter that starts at a
random value each new millisecond.
"""
from __future__ import annotations

import os
import threading
import time
import uuid

_VERSION = 7
_lock = threading.Lock()
_last_ms = -1
_counter = 0
_COUNTER_MAX = 0xFFF  # rand_a: 12 bits


def new_thread_id() -> str:
    """A new UUIDv7 string (lower-case, hyphenated), later than any made before it here."""
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms > _last_ms:
            _last_ms, _counter = ms, int.from_bytes(os.urandom(2), "big") & 0x7FF
        elif _counter < _COUNTER_MAX:
            _counter += 1
        else:  # 4096 ids in one millisecond: borrow the next millisecond
            _last_ms, _counter = _last_ms + 1, 0
        ms, counter = _last_ms, _counter
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | _VERSION << 76 | counter << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


def uuid7_time_ms(thread_id: str) -> int | None:
    """The creation time (Unix ms) a UUIDv7 id carries; None for anything else (older
    records have random UUIDv4 ids)."""
    try:
        parsed = uuid.UUID(thread_id)
    except ValueError:
        return None
    if parsed.version != _VERSION or parsed.variant != uuid.RFC_4122:
        return None
    return parsed.int >> 80

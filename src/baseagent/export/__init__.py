"""Trajectory export: a session record as ATIF, ShareGPT or raw OpenAI messages.

Each export is one JSON document per thread; several threads are written one per line.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from baseagent.export.log import SessionLog, log_of, read_log

FORMATS = ("atif", "sharegpt", "openai")


def _builder(fmt: str) -> Callable[[SessionLog], Any]:
    if fmt == "atif":
        from baseagent.export.atif import to_atif
        return to_atif
    if fmt == "sharegpt":
        from baseagent.export.sharegpt import to_sharegpt
        return to_sharegpt
    if fmt == "openai":
        from baseagent.export.openai import to_openai
        return to_openai
    raise ValueError(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")


def export_record(path: Path, fmt: str) -> Any:
    """The export of one JSONL record as JSON data (raises SessionLoadError for a bad
    record)."""
    return _builder(fmt)(read_log(path))


def export_thread(storage: Any, thread_id: str, fmt: str) -> Any:
    """The export of one thread of a store (storage/; a MessageStorage) as JSON data."""
    from baseagent.storage import location_of

    return _builder(fmt)(log_of(storage.load_records(thread_id),
                                location_of(storage, thread_id)))


def dumps(data: Any, pretty: bool) -> str:
    if pretty:
        return json.dumps(data, ensure_ascii=False, indent=2)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

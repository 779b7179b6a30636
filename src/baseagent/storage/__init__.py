"""Where threads are kept: the MessageStorage protocol and its two stores (docs/STORAGE.md).

`open_storage(settings)` is the store the settings name (`[storage] kind`); a library
caller may hand its own object to `Agent(storage=...)` instead.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from baseagent.storage.base import (MessageStorage, RunInfo, SearchHit, ThreadInfo, list_runs,
                                    load_thread, location_of)

if TYPE_CHECKING:
    from baseagent.config.settings import AgentConfig


def open_storage(settings: "AgentConfig") -> MessageStorage:
    """The store of these settings: JSONL files in `session_dir` (the default), or the
    SQLite database at `storage.path`."""
    if settings.storage.kind == "sqlite":
        from baseagent.storage.sqlite import SqliteStorage

        return SqliteStorage(settings.storage.path)
    from baseagent.storage.jsonl import JsonlStorage

    return JsonlStorage(settings.session_dir)


__all__ = ["MessageStorage", "RunInfo", "SearchHit", "ThreadInfo", "list_runs", "load_thread",
           "location_of", "open_storage"]

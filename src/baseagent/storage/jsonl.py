"""The default store: one append-only JSONL file per thread in the session directory.

The format and its guarantees are records/recorder.py's (written line by line, locked while a
run writes it, a torn last line cut) and records/replay.py's (read strictly, replayed). Search
is a plain scan: every record of every file is read and matched, which is fine for hundreds
of threads and slow for many thousands (the SQLite store keeps a full-text index).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from baseagent.records.recorder import RECORD_SUFFIX, JsonlWriter, read_records
from baseagent.records.replay import (SessionLoadError, _check_id, find_session, latest_session,
                                   read_strict, session_files)
from baseagent.storage.base import (DEFAULT_SEARCH_LIMIT, SearchHit, ThreadInfo, check_query,
                                    record_text, snippet)


class JsonlStorage:
    """Threads as `DIR/<thread_id>.jsonl` files (the session_dir setting)."""

    kind = "jsonl"

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.location = str(self.directory)

    def _path(self, thread_id: str) -> Path:
        return self.directory / f"{_check_id(thread_id)}{RECORD_SUFFIX}"

    def create_thread(self, thread_id: str) -> JsonlWriter:
        return JsonlWriter(self._path(thread_id))

    def resolve(self, thread_id: str) -> str:
        return find_session(self.directory, thread_id).name[: -len(RECORD_SUFFIX)]

    def latest(self) -> str:
        return latest_session(self.directory).name[: -len(RECORD_SUFFIX)]

    def load_records(self, thread_id: str, *, strict: bool = True) -> list[dict[str, Any]]:
        path = self._path(thread_id)
        if strict:
            return read_strict(path)
        try:
            return list(read_records(path))
        except FileNotFoundError:
            raise SessionLoadError(f"no session record at {path}") from None

    def list_threads(self) -> list[ThreadInfo]:
        infos = []
        for path in session_files(self.directory):
            try:
                stat = path.stat()
            except OSError:
                continue  # removed while listing
            infos.append(ThreadInfo(thread_id=path.name[: -len(RECORD_SUFFIX)],
                                    location=str(path), updated=stat.st_mtime,
                                    size_bytes=stat.st_size))
        return infos

    def delete_thread(self, thread_id: str) -> str:
        path = self._path(thread_id)
        path.unlink(missing_ok=True)
        return str(path)

    def search(self, text: str, limit: int = DEFAULT_SEARCH_LIMIT) -> list[SearchHit]:
        words = [w.lower() for w in check_query(text)]
        hits: list[SearchHit] = []
        for path in session_files(self.directory):
            thread_id = path.name[: -len(RECORD_SUFFIX)]
            try:
                records = list(read_records(path))
            except OSError:
                continue
            for record in records:
                role, body = record_text(record)
                lower = body.lower()
                if body and all(w in lower for w in words):
                    hits.append(SearchHit(thread_id, str(record.get("ts") or ""), role,
                                          snippet(body, words)))
        hits.sort(key=lambda hit: hit.ts, reverse=True)
        return hits[:limit]

    def describe_search(self) -> str:
        return (f"a plain scan of every record in {self.directory} (substrings, any case); "
                "the sqlite store keeps a full-text index: [storage] kind = \"sqlite\"")

    def close(self) -> None:
        """Nothing is held open between writes."""

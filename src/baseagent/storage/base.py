"""The message storage contract (AgentB's IMessageStorage): where threads' records live.

A thread is a list of records (records/recorder.py decides what they hold: `meta`, `message`,
`history`, `paused`, `usage`, `event`); a store only keeps them, in order, under the
thread's id. Two stores implement the contract: `JsonlStorage` (one file per thread, the
default, storage/jsonl.py) and `SqliteStorage` (one database for every thread, full-text
search, storage/sqlite.py). Everything above (resume, `sessions`, export, the external-tool
pause) reads records through this protocol, so it works the same on both.

A *run* is one Agent's stretch of writing to a thread: it begins with a `meta` record
(the model and settings of that run; `resumed` says whether it continued the thread).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from baseagent.records.messages import content_text
from baseagent.records.recorder import ThreadWriter
from baseagent.records.replay import LoadedSession, SessionLoadError, session_from_records

# Search results shown per query unless the caller asks for more.
DEFAULT_SEARCH_LIMIT = 20
# Characters of context around a hit in a search result.
SNIPPET_CHARS = 160


@dataclass
class ThreadInfo:
    """A thread as a listing sees it, without reading its records."""

    thread_id: str
    location: str  # the JSONL file, or "DB#thread_id"
    updated: float  # when it was last written (seconds since the epoch)
    size_bytes: int  # what its records take (a JSONL file's size; the JSON in a database)


@dataclass
class RunInfo:
    """One run of a thread (AgentB's agent run): a `meta` record and what followed it."""

    index: int  # 1 for the run that created the thread
    started: str
    model: str
    resumed: bool
    version: str = ""


@dataclass
class SearchHit:
    """One record that matched a search: the thread, when, who said it and where."""

    thread_id: str
    ts: str
    role: str
    snippet: str


@runtime_checkable
class MessageStorage(Protocol):
    """Threads and their records. Implementations are safe to share between threads of one
    process and between processes; each thread has at most one writer at a time (a second
    one gets RecordInUseError, a ConfigError)."""

    kind: str  # "jsonl" | "sqlite" | a caller's own
    location: str  # where it keeps them (a directory, a database file)

    def create_thread(self, thread_id: str) -> ThreadWriter:
        """The writer of `thread_id`, new or existing (a resumed thread appends to it)."""
        ...

    def resolve(self, thread_id: str) -> str:
        """The id of `thread_id`, or of the one thread whose id starts with it (at least 4
        characters); SessionLoadError if there is none or more than one."""
        ...

    def latest(self) -> str:
        """The thread written to most recently; SessionLoadError if there is none."""
        ...

    def load_records(self, thread_id: str, *, strict: bool = True) -> list[dict[str, Any]]:
        """Every record of the thread, in order. Strict: a damaged record is a
        SessionLoadError (only a torn last line is forgiven); lenient: damaged ones are
        skipped (listings)."""
        ...

    def list_threads(self) -> list[ThreadInfo]:
        """Every thread, most recently written first."""
        ...

    def delete_thread(self, thread_id: str) -> str:
        """Remove the thread and its records; returns where it was."""
        ...

    def search(self, text: str, limit: int = DEFAULT_SEARCH_LIMIT) -> list[SearchHit]:
        """Messages of every thread that hold every word of `text`, newest first."""
        ...

    def describe_search(self) -> str:
        """How search works on this store, in one line for the person who asked."""
        ...

    def close(self) -> None:
        """Release what the store holds open (its connections)."""
        ...


def load_thread(storage: MessageStorage, thread_id: str | None = None,
                last: bool = False) -> LoadedSession:
    """`--resume ID` or `--resume-last` on any store: the thread replayed for a resume, or
    SessionLoadError."""
    key = storage.latest() if last else storage.resolve(thread_id or "")
    return session_from_records(storage.load_records(key), Path(storage.location),
                                where=location_of(storage, key), key=key)


def location_of(storage: MessageStorage, thread_id: str) -> str:
    """How to name a thread's record in a message."""
    if storage.kind == "jsonl":
        return str(Path(storage.location) / f"{thread_id}.jsonl")
    return f"{storage.location}#{thread_id}"


def list_runs(records: list[dict[str, Any]]) -> list[RunInfo]:
    """The runs of a thread, from its records."""
    runs = []
    for record in records:
        if record.get("kind") == "meta":
            runs.append(RunInfo(index=len(runs) + 1, started=str(record.get("ts") or ""),
                                model=str(record.get("model") or ""),
                                resumed=bool(record.get("resumed")),
                                version=str(record.get("version") or "")))
    return runs


def record_text(record: dict[str, Any]) -> tuple[str, str]:
    """(role, searchable text) of a record: a message's text and its tool calls' names and
    arguments; ("", "") for records that say nothing a person would search for."""
    if record.get("kind") != "message":
        return "", ""
    message = record.get("message")
    if not isinstance(message, dict):
        return "", ""
    parts = [content_text(message.get("content"))]
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append(f"{function.get('name') or ''} {function.get('arguments') or ''}")
    return str(message.get("role") or ""), "\n".join(p for p in parts if p).strip()


def words_of(text: str) -> list[str]:
    """The words of a query; a query without any is refused by the caller."""
    return text.split()


def snippet(text: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """The part of `text` around the first word found, on one line."""
    flat = " ".join(text.split())
    lower = flat.lower()
    at = min((i for i in (lower.find(w.lower()) for w in words) if i >= 0), default=0)
    start = max(0, at - width // 3)
    piece = flat[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def check_query(text: str) -> list[str]:
    words = words_of(text)
    if not words:
        raise SessionLoadError("search needs some text: baseagent sessions search WORDS")
    return words

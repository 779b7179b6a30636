"""Every thread in one SQLite database (stdlib sqlite3), with full-text search.

Why this shape:
- WAL journal: readers (`sessions list`, a resume, a search) never block the writers, and
  many writers (concurrent agents in one process, batch workers in many) take turns on the
  database's write lock, each waiting up to BUSY_TIMEOUT_MS for it.
- One transaction per record: `append` returns once the record is committed to the WAL,
  so a process killed at any point loses nothing it was told was written; a transaction cut
  short by the kill is rolled back by SQLite when the database is next opened. `sync()` (the
  end of every turn) checkpoints the WAL, so a machine crash after a turn keeps the turn.
- One writer per thread, as with JSONL files: a writer holds an exclusive flock on
  `DB.locks/<thread_id>.lock` while it is open (the kernel drops it when the process dies,
  so a killed run leaves no stale lock).
- Search: an FTS5 index over each message's text (kept in step by triggers, in the same
  transaction as the record) when this Python's sqlite has FTS5; otherwise a scan of the
  same text with instr(), which this module says it does (`describe_search`). Which of the
  two a database uses is decided when it is created.

The records are records/recorder.py's, stored as their JSON text; records/replay.py replays them.
"""
from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from baseagent.records.recorder import RECORD_MODE, RecordInUseError, RecordWriteError
from baseagent.records.replay import MIN_PREFIX, SessionLoadError, _check_id
from baseagent.errors import ConfigError
from baseagent.output.jsonl import json_line
from baseagent.storage.base import (DEFAULT_SEARCH_LIMIT, SearchHit, ThreadInfo, check_query,
                                    record_text, snippet)

# How long a writer waits for another's transaction before its write fails: long enough for
# dozens of agents appending at once, short enough that a wedged database is reported.
BUSY_TIMEOUT_MS = 30_000
SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS store (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    size_bytes INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_thread ON records (thread_id, seq);
"""

_FTS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    body, content='records', content_rowid='seq');
CREATE TRIGGER IF NOT EXISTS records_fts_insert AFTER INSERT ON records
WHEN new.body != '' BEGIN
    INSERT INTO records_fts (rowid, body) VALUES (new.seq, new.body);
END;
CREATE TRIGGER IF NOT EXISTS records_fts_delete AFTER DELETE ON records
WHEN old.body != '' BEGIN
    INSERT INTO records_fts (records_fts, rowid, body) VALUES ('delete', old.seq, old.body);
END;
"""


def fts5_available() -> bool:
    """Whether this Python's sqlite was built with FTS5."""
    try:
        with sqlite3.connect(":memory:") as probe:
            probe.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False


def _connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are begun explicitly), WAL journal."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    # NORMAL in WAL: a commit survives the process being killed; sync() covers the machine.
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class SqliteStorage:
    """Threads in the database at `path` (created, with its directory, on first use).

    `fts`: None decides by what this Python's sqlite has; False forces the plain scan
    (what a database created without FTS5 uses).
    """

    kind = "sqlite"

    def __init__(self, path: Path | str, *, fts: bool | None = None) -> None:
        self.path = Path(path).expanduser().absolute()
        self.location = str(self.path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # The database holds conversations: readable by its owner only (SQLite gives its
            # -wal and -shm files the database's permissions).
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, RECORD_MODE))
            self._conn = _connect(self.path)
            self.fts = self._create(fts5_available() if fts is None else fts)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the session database {self.path}: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None

    def _create(self, want_fts: bool) -> bool:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(_SCHEMA):
                conn.execute(statement)
            row = conn.execute("SELECT value FROM store WHERE key = 'fts'").fetchone()
            if row is None:
                conn.execute("INSERT INTO store VALUES ('schema', ?), ('fts', ?)",
                             (SCHEMA_VERSION, "fts5" if want_fts else "scan"))
                fts = want_fts
            else:
                fts = row[0] == "fts5"
            if fts:
                for statement in _statements(_FTS_SCHEMA):
                    conn.execute(statement)
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            conn.execute("ROLLBACK")
            if "fts5" in str(exc):
                raise ConfigError(f"the session database {self.path} has a full-text index, "
                                  "and this Python's sqlite has no FTS5 to keep it") from None
            raise
        return fts

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # -- the protocol ------------------------------------------------------------------

    def create_thread(self, thread_id: str) -> "SqliteWriter":
        return SqliteWriter(self, _check_id(thread_id))

    def resolve(self, thread_id: str) -> str:
        _check_id(thread_id)
        if self._read("SELECT 1 FROM threads WHERE thread_id = ?", (thread_id,)):
            return thread_id
        if len(thread_id) >= MIN_PREFIX:
            rows = self._read("SELECT thread_id FROM threads WHERE substr(thread_id, 1, ?) = ? "
                              "ORDER BY updated DESC LIMIT 6", (len(thread_id), thread_id))
            if len(rows) == 1:
                return str(rows[0][0])
            if len(rows) > 1:
                names = ", ".join(str(r[0]) for r in rows[:5])
                raise SessionLoadError(f"thread id prefix {thread_id!r} is ambiguous: {names}")
        raise SessionLoadError(f"no session record for thread {thread_id} in {self.path}")

    def latest(self) -> str:
        rows = self._read("SELECT thread_id FROM threads ORDER BY updated DESC, thread_id DESC "
                          "LIMIT 1")
        if not rows:
            raise SessionLoadError(f"no session records in {self.path}")
        return str(rows[0][0])

    def has_thread(self, thread_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM threads WHERE thread_id = ?", (thread_id,)))

    def load_records(self, thread_id: str, *, strict: bool = True) -> list[dict[str, Any]]:
        _check_id(thread_id)
        if not self.has_thread(thread_id):
            raise SessionLoadError(f"no session record for thread {thread_id} in {self.path}")
        records = []
        for seq, data in self._read("SELECT seq, data FROM records WHERE thread_id = ? "
                                    "ORDER BY seq", (thread_id,)):
            try:
                record = json.loads(data)
            except ValueError:
                record = None
            if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
                if strict:
                    raise SessionLoadError(f"session record {self.path}#{thread_id} is "
                                           f"corrupt: row {seq} is not a record")
                continue
            records.append(record)
        return records

    def list_threads(self) -> list[ThreadInfo]:
        return [ThreadInfo(thread_id=str(tid), location=f"{self.path}#{tid}",
                           updated=float(updated), size_bytes=int(size))
                for tid, updated, size in self._read(
                    "SELECT thread_id, updated, size_bytes FROM threads "
                    "ORDER BY updated DESC, thread_id DESC")]

    def delete_thread(self, thread_id: str) -> str:
        _check_id(thread_id)
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM records WHERE thread_id = ?", (thread_id,))
                conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return f"{self.path}#{thread_id}"

    def search(self, text: str, limit: int = DEFAULT_SEARCH_LIMIT) -> list[SearchHit]:
        words = check_query(text)
        if self.fts:
            # Every word as a quoted prefix term: no FTS5 operator in the text is obeyed.
            query = " ".join('"' + w.replace('"', '""') + '"*' for w in words)
            rows = self._read(
                "SELECT r.thread_id, r.ts, r.role, r.body FROM records_fts "
                "JOIN records r ON r.seq = records_fts.rowid WHERE records_fts MATCH ? "
                "ORDER BY r.ts DESC, r.seq DESC LIMIT ?", (query, limit))
        else:
            where = " AND ".join("instr(lower(body), ?) > 0" for _ in words)
            rows = self._read(
                f"SELECT thread_id, ts, role, body FROM records WHERE body != '' AND {where} "
                "ORDER BY ts DESC, seq DESC LIMIT ?", (*(w.lower() for w in words), limit))
        return [SearchHit(str(tid), str(ts), str(role), snippet(str(body), words))
                for tid, ts, role, body in rows]

    def describe_search(self) -> str:
        if self.fts:
            return f"full-text search (SQLite FTS5) of {self.path}: every word, as a word prefix"
        return (f"a scan of every message in {self.path} (substrings; this database was "
                "created without FTS5, which this Python's sqlite lacks or was told not to use)")

    def import_thread(self, thread_id: str, records: list[dict[str, Any]],
                      updated: float) -> bool:
        """Add a whole thread in one transaction (migration); False if it is there already."""
        _check_id(thread_id)
        with _writer_lock(self, thread_id):
            with self._lock:
                conn = self._conn
                conn.execute("BEGIN IMMEDIATE")
                try:
                    if conn.execute("SELECT 1 FROM threads WHERE thread_id = ?",
                                    (thread_id,)).fetchone():
                        conn.execute("ROLLBACK")
                        return False
                    created = updated
                    conn.execute("INSERT INTO threads VALUES (?, ?, ?, 0)",
                                 (thread_id, created, updated))
                    for record in records:
                        _insert(conn, thread_id, record, updated)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        return True

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _statements(script: str) -> list[str]:
    """The statements of a schema script (sqlite3's executescript would commit first)."""
    statements, current = [], ""
    for line in script.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return statements


def _insert(conn: sqlite3.Connection, thread_id: str, record: dict[str, Any],
            now: float) -> None:
    data = json_line(record).encode("utf-8", errors="replace").decode("utf-8")
    role, body = record_text(record)
    conn.execute("INSERT INTO records (thread_id, ts, kind, role, body, data) "
                 "VALUES (?, ?, ?, ?, ?, ?)",
                 (thread_id, str(record.get("ts") or ""), str(record.get("kind") or ""),
                  role, body.encode("utf-8", errors="replace").decode("utf-8"), data))
    conn.execute("UPDATE threads SET updated = ?, size_bytes = size_bytes + ? "
                 "WHERE thread_id = ?", (now, len(data), thread_id))


class _writer_lock:
    """The one-writer-per-thread lock: an exclusive flock on DB.locks/<thread_id>.lock."""

    def __init__(self, storage: SqliteStorage, thread_id: str) -> None:
        directory = storage.path.with_name(storage.path.name + ".locks")
        directory.mkdir(mode=0o700, exist_ok=True)
        self.path = directory / f"{thread_id}.lock"
        self.thread_id = thread_id
        self.fd: int | None = None

    def __enter__(self) -> "_writer_lock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, RECORD_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RecordInUseError(f"thread {self.thread_id} is in use by another run (its "
                                   f"lock {self.path} is held); wait for it to finish") from None
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class SqliteWriter:
    """One thread's writer: its own connection, one committed transaction per record."""

    def __init__(self, storage: SqliteStorage, thread_id: str) -> None:
        self.thread_id = thread_id
        self.location = f"{storage.path}#{thread_id}"
        self._lock = _writer_lock(storage, thread_id).__enter__()
        try:
            self._conn: sqlite3.Connection | None = _connect(storage.path)
            now = time.time()
            self._conn.execute("INSERT OR IGNORE INTO threads VALUES (?, ?, ?, 0)",
                               (thread_id, now, now))
        except sqlite3.Error as exc:
            self._lock.__exit__()
            raise ConfigError(f"cannot write the session database {storage.path}: "
                              f"{exc}") from None

    def append(self, record: dict[str, Any]) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            _insert(conn, self.thread_id, record, time.time())
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            self.close()
            raise RecordWriteError(f"cannot write the session record {self.location}: {exc}; "
                                   "it is complete up to the last event before this one") \
                from None

    def sync(self) -> None:
        if self._conn is None:
            return
        try:
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._conn is not None:
            self.sync()
            self._conn.close()
            self._conn = None
        self._lock.__exit__()

"""`baseagent sessions migrate`: copy JSONL records into a SQLite store, idempotently.

Each thread goes in whole, in one transaction, or not at all; a thread already in the
database is left as it is (so a rerun, or a rerun after an interrupted one, adds only what
is missing). A record that cannot be read strictly (corrupt in the middle) is reported and
skipped rather than half-imported; one a run is writing right now is skipped too (its lock
is held) and goes in on the next run. The JSONL files are never changed.
"""
from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path

from baseagent.records.recorder import RECORD_SUFFIX, RecordInUseError
from baseagent.records.replay import SessionLoadError, read_strict, session_files
from baseagent.storage.sqlite import SqliteStorage


@dataclass
class MigrationReport:
    migrated: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    # (thread id, why) for records left out: corrupt, or in use by a run.
    failed: list[tuple[str, str]] = field(default_factory=list)


def migrate(source: Path, target: SqliteStorage) -> MigrationReport:
    """Every `*.jsonl` record of `source` into `target`, oldest written first."""
    report = MigrationReport()
    for path in reversed(session_files(source)):
        thread_id = path.name[: -len(RECORD_SUFFIX)]
        try:
            if target.has_thread(thread_id):
                report.already.append(thread_id)
                continue
            with _not_being_written(path):
                records = read_strict(path)
            if not records:
                raise SessionLoadError(f"session record {path} is empty")
            if target.import_thread(thread_id, records, updated=path.stat().st_mtime):
                report.migrated.append(thread_id)
            else:
                report.already.append(thread_id)
        except (SessionLoadError, RecordInUseError) as exc:
            report.failed.append((thread_id, str(exc)))
        except OSError as exc:
            report.failed.append((thread_id, f"cannot read {path}: {exc.strerror or exc}"))
    return report


class _not_being_written:
    """A shared lock on a JSONL record for as long as it is read: a run writing it holds
    the exclusive one (records/recorder.py), and then the record is left for the next run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise RecordInUseError(f"a run is writing it ({self.path} is locked); "
                                   "migrate again when it has finished") from None

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def render_report(report: MigrationReport, source: Path, target: Path) -> str:
    lines = [f"migrated {len(report.migrated)} thread(s) from {source} into {target}; "
             f"{len(report.already)} already there; {len(report.failed)} left out"]
    lines += [f"  left out {thread_id}: {why}" for thread_id, why in report.failed]
    return "\n".join(lines) + "\n"

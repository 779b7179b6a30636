"""results.jsonl: the batch's checkpoint, written by the driver alone.

One line per finished task, appended, flushed and fsynced before the next task is looked
at, so a batch killed at any moment (SIGKILL, power loss) keeps every task that finished,
and a rerun on the same directory runs exactly the tasks without a finished line. A line
torn by a kill mid-write is cut off when the file is opened again (that task reruns).
`interrupted` lines (a SIGINT) are kept for the record but do not count as finished.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from baseagent.output.jsonl import json_line

# Statuses that end a task for good; anything else (interrupted) runs again on resume.
FINISHED = frozenset({"passed", "failed", "error"})
# The reason a task's cancel carries when the driver's --task-timeout ended it: the worker
# then still runs the task's check on the workspace as the turn left it (is_timeout).
TIMEOUT_REASON = "task timed out after {seconds:g} s"


def is_timeout(reason: str | None) -> bool:
    """Whether a cancel's reason is the driver's task timeout (not a stop)."""
    return reason is not None and reason.startswith(TIMEOUT_REASON.split("{", 1)[0])


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every complete line, in order (a torn or foreign line is skipped)."""
    if not path.exists():
        return []
    records = []
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # torn by a kill: not a finished task
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                records.append(record)
    return records


def latest(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last line of each task id (a resumed task's final word)."""
    out: dict[str, dict[str, Any]] = {}
    for record in records:
        out[record["id"]] = record
    return out


def finished_ids(records: Iterable[dict[str, Any]]) -> set[str]:
    return {r["id"] for r in records if r.get("status") in FINISHED}


class ResultsWriter:
    """Appends result lines durably. Opening it repairs a torn last line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        _cut_torn_tail(path)
        self._file = open(path, "ab")  # noqa: SIM115 - closed by close()

    def append(self, record: dict[str, Any]) -> None:
        self._file.write(json_line(record).encode("utf-8", errors="replace") + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def _cut_torn_tail(path: Path) -> None:
    """Truncate an unfinished last line so the next append starts on a line of its own."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with open(path, "r+b") as handle:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        # Walk back to the last newline (results lines are small; read in blocks anyway).
        end = size
        while end > 0:
            start = max(0, end - 65536)
            handle.seek(start)
            block = handle.read(end - start)
            at = block.rfind(b"\n")
            if at >= 0:
                handle.truncate(start + at + 1)
                break
            end = start
        else:
            handle.truncate(0)
        handle.flush()
        os.fsync(handle.fileno())

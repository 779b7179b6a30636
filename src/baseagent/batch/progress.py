"""Progress on stderr from the first second: a rich bar on a terminal (done/total, passed,
failed, errors, running, rate, elapsed, ETA), plain lines otherwise (a log file or CI output
gets lines it can grep, not redraw sequences): what starts, each task as it starts and as it
ends. The workers take seconds to warm up (each imports the model client) before the first
task starts; both say so rather than stay silent.

stdout is never touched: it belongs to the summary (`--json`).
"""
from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from baseagent.batch.driver import Progress


class PlainProgress(Progress):
    """A line when the batch starts, then `[done/total] id started` and
    `[done/total] id status duration` per task."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._total = 0
        self._done = 0

    def start(self, total: int, done: int, todo: int, workers: int = 0) -> None:
        self._total, self._done = total, done
        if done:
            self._write(f"resuming: {done} of {total} tasks already finished, {todo} to run")
        if todo:
            self._write(starting_text(todo, workers))

    def task_started(self, task_id: str, attempt: int) -> None:
        again = f" (attempt {attempt})" if attempt > 1 else ""
        self._write(f"[{self._done}/{self._total}] {task_id} started{again}")

    def finished(self, record: dict[str, Any]) -> None:
        self._done += 1
        extra = f": {record['error']}" if record.get("error") and record["status"] != "passed" else ""
        self._write(f"[{self._done}/{self._total}] {record['id']} {record['status']} "
                    f"{record.get('duration_s') or 0:.1f}s{extra}")

    def note(self, message: str) -> None:
        self._write(message)

    def _write(self, text: str) -> None:
        print(f"baseagent batch: {text.splitlines()[0] if text else ''}", file=self._stream,
              flush=True)


class RichProgress(Progress):
    """A live bar: done/total, passed, failed, errored, what is running (or that the workers
    are starting), tasks per minute, elapsed time and ETA."""

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        self._console = console or Console(stderr=True)
        self._bar = Bar(TextColumn("[bold]batch"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[counts]}"), TextColumn("{task.fields[state]}"),
                        TextColumn("{task.fields[rate]}"),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                        console=self._console, transient=False)
        self._task: Any = None
        self._counts = {"passed": 0, "failed": 0, "error": 0, "interrupted": 0}
        self._started = time.monotonic()
        self._ran = 0
        self._running = 0

    def start(self, total: int, done: int, todo: int, workers: int = 0) -> None:
        self._started = time.monotonic()
        self._bar.start()
        state = "[dim]starting workers[/]" if todo else ""
        self._task = self._bar.add_task("batch", total=total, completed=done,
                                        counts=self._text(), state=state, rate="")
        if done:
            self._console.print(f"resuming: {done} of {total} tasks already finished")

    def task_started(self, task_id: str, attempt: int) -> None:
        self._running += 1
        self._bar.update(self._task, state=f"{self._running} running")

    def finished(self, record: dict[str, Any]) -> None:
        self._counts[record["status"]] = self._counts.get(record["status"], 0) + 1
        self._ran += 1
        self._running = max(0, self._running - 1)
        minutes = (time.monotonic() - self._started) / 60
        rate = f"{self._ran / minutes:.1f}/min" if minutes > 0 else ""
        self._bar.update(self._task, advance=1, counts=self._text(),
                         state=f"{self._running} running", rate=rate)
        if record["status"] not in ("passed", "failed"):
            self._console.print(f"{record['id']}: {record['status']}: {record.get('error')}")

    def note(self, message: str) -> None:
        self._console.print(message)

    def close(self) -> None:
        self._bar.stop()

    def _text(self) -> str:
        c = self._counts
        return (f"[green]{c['passed']} passed[/] [red]{c['failed']} failed[/] "
                f"[yellow]{c['error']} errors[/]")


def starting_text(todo: int, workers: int) -> str:
    """What the batch does before its first task starts."""
    tasks = f"{todo} task{'s' if todo != 1 else ''}"
    if workers < 1:
        return f"{tasks} to run"
    return (f"{tasks} to run; starting {workers} worker{'s' if workers != 1 else ''} "
            "(each loads the model client first)")


def make_progress(enabled: bool = True) -> Progress:
    if not enabled:
        return Progress()
    return RichProgress() if sys.stderr.isatty() else PlainProgress()

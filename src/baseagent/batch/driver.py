"""The batch driver: reads the task file, skips what results.jsonl says is finished, hands
the rest to a backend's workers, enforces timeouts and retries, and alone writes
results.jsonl, then the run's trajectories.jsonl and summary.json.

Failures are sorted by who caused them. A task the model failed (or whose check failed) is
a result, never retried. An infrastructure failure (the worker died, the task ran past
`task_timeout`) is retried up to `retries` times in a fresh workspace, then recorded as
`error`. Neither ever stops the batch. A stop request (SIGINT at the command line) cancels
the running tasks, records them as `interrupted` (they run again on resume) and starts
nothing new.

No process-wide side effects: the caller (batch/command.py at the command line) owns
signals, stdout and stderr, and hands in the environment and a stop flag.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from baseagent.batch.backend import Backend, BatchError, Outcome
from baseagent.batch.layout import Layout
from baseagent.batch.results import (TIMEOUT_REASON, ResultsWriter, finished_ids, latest,
                                     read_results)
from baseagent.batch.summary import summarize
from baseagent.batch.tasks import Task, load_tasks
from baseagent.config.settings import Settings
from baseagent.fsutil import atomic_write

BackendName = Literal["local", "ray"]
# How often the driver looks at clocks and the stop flag while waiting on workers.
TICK_SECONDS = 0.2
# After a cancel (timeout or stop), how long a worker gets to hand back its task before it
# is killed and replaced.
CANCEL_GRACE_SECONDS = 10.0
# After a task timeout the worker still runs the task's check (on the workspace as the turn
# left it): this much longer before the worker is replaced. A check bounds itself (the
# exercises' `timeout 120 pytest`); this is the backstop.
TIMEOUT_CHECK_GRACE_SECONDS = 600.0


@dataclass
class BatchOptions:
    tasks_file: Path
    out: Path
    workers: int = 2
    backend: BackendName = "local"
    ray_address: str | None = None
    task_timeout: float | None = None
    retries: int = 0
    cancel_grace: float = CANCEL_GRACE_SECONDS
    timeout_check_grace: float = TIMEOUT_CHECK_GRACE_SECONDS
    # hermes' --batch_size: prompts per batch there; here only the `metadata.batch_num` of
    # the trajectories.jsonl lines (task index // batch_size). Tasks are checkpointed one
    # by one whatever it is.
    batch_size: int | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise BatchError("--workers must be at least 1")
        if self.retries < 0:
            raise BatchError("--retries must be 0 or more")
        if self.batch_size is not None and self.batch_size < 1:
            raise BatchError("--batch_size must be at least 1")
        if self.task_timeout is not None and self.task_timeout <= 0:
            raise BatchError("--task-timeout must be a positive number of seconds")
        if self.backend not in ("local", "ray"):
            raise BatchError(f"unknown backend {self.backend!r} (choose local or ray)")
        if self.ray_address and self.backend != "ray":
            raise BatchError("--ray-address needs --backend ray")


class StopFlag:
    """Set (from a signal handler or another thread) to stop the batch cleanly."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = "stopped"

    def set(self, reason: str = "stopped") -> None:
        if not self._event.is_set():
            self.reason = reason
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


class Progress:
    """What the driver reports as it goes (batch/progress.py draws it)."""

    def start(self, total: int, done: int, todo: int, workers: int = 0) -> None: ...

    def task_started(self, task_id: str, attempt: int) -> None:
        """A task went to a worker (the first one only once a worker has warmed up)."""

    def finished(self, record: dict[str, Any]) -> None: ...

    def note(self, message: str) -> None: ...

    def close(self) -> None: ...


@dataclass
class _Running:
    task: Task
    attempt: int
    started: float
    deadline: float | None
    kill_at: float | None = None  # set once cancelled: replace the worker past this
    timed_out: bool = False
    stopping: bool = False


@dataclass
class _State:
    pending: deque[tuple[Task, int]]
    running: dict[int, _Running] = field(default_factory=dict)
    written: int = 0


def run_batch(settings: Settings, options: BatchOptions, *, env: Mapping[str, str],
              stop: StopFlag | None = None, progress: Progress | None = None,
              backend_factory: Callable[..., Backend] | None = None) -> dict[str, Any]:
    """Run (or resume) the batch; returns the summary (also written to summary.json).

    Raises TaskFileError (a bad task file), BatchError (the backend or the workers cannot
    start, DIR is in use) before any task runs, and ConfigError from the workers' first
    check of the model and API key.
    """
    stop = stop or StopFlag()
    progress = progress or Progress()
    tasks = load_tasks(options.tasks_file)
    if options.backend == "ray" and backend_factory is None:
        # Imported now (it is needed anyway): a Ray that is missing or does not import is
        # one line before anything is written or shown.
        from baseagent.batch.ray_backend import import_ray

        import_ray()
    layout = Layout(options.out.expanduser().resolve())
    layout.root.mkdir(parents=True, exist_ok=True)
    with _exclusive(layout.lock):
        started = time.monotonic()
        done = finished_ids(read_results(layout.results))
        todo = [t for t in tasks if t.id not in done]
        progress.start(len(tasks), len(tasks) - len(todo), len(todo),
                       workers=min(options.workers, len(todo)))
        writer = ResultsWriter(layout.results)
        state = _State(pending=deque((t, 1) for t in todo))
        try:
            if todo and not stop.is_set():
                runner_args = (settings.model_dump(mode="json"), dict(env), str(layout.root))
                factory = backend_factory or _backend
                # No worker more than there are tasks: each one costs a litellm import.
                sized = dataclasses.replace(options, workers=min(options.workers, len(todo)))
                backend = factory(sized, runner_args)
                try:
                    backend.start()
                    _schedule(backend, state, options, writer, stop, progress)
                finally:
                    backend.close()
        finally:
            writer.close()
            progress.close()
        records = read_results(layout.results)
        _write_trajectories(layout, tasks, records, options.batch_size)
        summary = summarize([t.id for t in tasks], records,
                            wall_time_s=time.monotonic() - started, ran=state.written,
                            interrupted=stop.is_set(),
                            extra={"backend": options.backend, "workers": options.workers,
                                   "model": settings.model, "out": str(layout.root)})
        atomic_write(layout.summary, (json.dumps(summary, indent=2) + "\n").encode("utf-8"))
        return summary


def _backend(options: BatchOptions, runner_args: tuple[Any, ...]) -> Backend:
    if options.backend == "ray":
        from baseagent.batch.ray_backend import RayBackend

        return RayBackend(options.workers, runner_args, options.ray_address)
    from baseagent.batch.local import LocalBackend

    return LocalBackend(options.workers, runner_args)


def _schedule(backend: Backend, state: _State, options: BatchOptions, writer: ResultsWriter,
              stop: StopFlag, progress: Progress) -> None:
    stopping = False
    while True:
        now = time.monotonic()
        if stop.is_set() and not stopping:
            stopping = True
            state.pending.clear()
            for slot, run in state.running.items():
                run.stopping = True
                backend.cancel(slot, stop.reason)
                run.kill_at = now + options.cancel_grace
        while state.pending and not stopping:
            # A slot whose outcome the driver has not handled yet is not free.
            idle = [n for n in backend.idle_slots() if n not in state.running]
            if not idle:
                break
            task, attempt = state.pending.popleft()
            deadline = now + options.task_timeout if options.task_timeout else None
            state.running[idle[0]] = _Running(task, attempt, now, deadline)
            backend.submit(idle[0], {**task.to_dict(), "attempt": attempt})
            progress.task_started(task.id, attempt)
        if not state.running and (stopping or not state.pending):
            return
        for outcome in backend.poll(TICK_SECONDS):
            _handle(outcome, state, options, writer, progress)
        now = time.monotonic()
        for slot, run in list(state.running.items()):
            if run.deadline is not None and not run.timed_out and now >= run.deadline:
                run.timed_out = True
                backend.cancel(slot, TIMEOUT_REASON.format(seconds=options.task_timeout))
                run.kill_at = now + options.cancel_grace \
                    + (options.timeout_check_grace if run.task.check else 0)
            elif run.kill_at is not None and now >= run.kill_at:
                backend.replace(slot)
                _handle(Outcome(slot, "crashed", reason="the worker did not stop its task "
                                "when cancelled and was replaced"),
                        state, options, writer, progress)


def _handle(outcome: Outcome, state: _State, options: BatchOptions, writer: ResultsWriter,
            progress: Progress) -> None:
    run = state.running.pop(outcome.slot, None)
    if run is None:
        return
    result: dict[str, Any]
    if outcome.kind == "done":
        result = dict(outcome.payload["result"])
        if run.timed_out and (result.get("status") in ("interrupted", "error")
                              or result.get("timed_out") and result.get("status") == "failed"):
            # Retried like any timeout; the check of the workspace it left stays recorded
            # (one that passes is the task's result: `passed`, with `timed_out`).
            infra = TIMEOUT_REASON.format(seconds=options.task_timeout)
        elif run.stopping:
            infra = None
            if result.get("status") == "interrupted":
                result["error"] = result.get("error") or "interrupted"
        else:
            infra = None
    else:
        infra = outcome.reason
        result = {"id": run.task.id, "status": "error", "agent_status": None,
                  "final_message": None, "thread_id": None, "usage": None, "cost_usd": None,
                  "duration_s": round(time.monotonic() - run.started, 3), "check": None,
                  "error": None, "metadata": run.task.metadata}
    if infra is not None:
        if run.stopping:
            result.update(status="interrupted", error=f"interrupted ({infra})")
        elif run.attempt <= options.retries:
            progress.note(f"task {run.task.id}: {infra}; retrying "
                          f"(attempt {run.attempt + 1} of {options.retries + 1})")
            state.pending.appendleft((run.task, run.attempt + 1))
            return
        else:
            result.update(status="error", error=infra)
    result["attempts"] = run.attempt
    writer.append(result)
    state.written += 1
    progress.finished(result)


def _write_trajectories(layout: Layout, tasks: list[Task], records: list[dict[str, Any]],
                        batch_size: int | None = None) -> None:
    """trajectories.jsonl: the hermes line of every finished task of the task file, in task
    order, rebuilt from the per-task files (so a killed and resumed batch has each once).
    With `batch_size`, each line's metadata.batch_num is the hermes batch its task fell in."""
    last = latest(records)
    lines = []
    for task in tasks:
        record = last.get(task.id)
        if record is None or record.get("status") not in ("passed", "failed"):
            continue
        path = layout.task_dir(task.key) / "trajectory.json"
        try:
            line = path.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if batch_size and line:
            try:
                data = json.loads(line)
                data.setdefault("metadata", {})["batch_num"] = task.index // batch_size
                line = json.dumps(data, ensure_ascii=False)
            except (ValueError, AttributeError, TypeError):
                pass  # kept as the task wrote it
        lines.append(line)
    text = "".join(line + "\n" for line in lines if line)
    atomic_write(layout.trajectories, text.encode("utf-8"))


class _exclusive:
    """An advisory lock on DIR/.lock: two batches writing one results.jsonl would lose
    lines. Released by the kernel when the process dies, so a SIGKILL leaves no stale lock."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def __enter__(self) -> "_exclusive":
        import os

        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise BatchError(f"another batch is running in {self._path.parent}") from None
        return self

    def __exit__(self, *_exc: object) -> None:
        import os

        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)

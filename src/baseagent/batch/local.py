"""The local backend: N worker processes on this machine.

Processes, not threads: each worker is its own interpreter that imports litellm once (the
seconds-long import is paid N times per batch, not once per task), runs its tasks one
after another, and can be killed and replaced without touching the others. Workers are
started with the `spawn` method (the driver runs threads; forking them is unsafe).

Each worker has two pipes: tasks and control messages in (read by a control thread, so a
cancel arrives while a task runs), results out. A worker whose driver disappears (its pipe
reaches EOF: the driver was SIGKILLed) cancels its task and exits.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from baseagent.batch.backend import BatchError, Outcome
from baseagent.batch.worker import run_token

# A worker that dies this many times in a row before it is ever ready means the workers
# cannot start at all (an import error): stop instead of respawning forever.
MAX_START_FAILURES = 3
# How long a worker whose driver vanished waits for its cancelled task before exiting.
ORPHAN_EXIT_SECONDS = 10.0
# Between SIGTERM (the worker kills its task's processes and exits) and SIGKILL.
TERMINATE_GRACE_SECONDS = 2.0
# How long close() waits for idle workers to exit on their own.
CLOSE_WAIT_SECONDS = 5.0


def worker_main(inbox: Connection, outbox: Connection, runner_args: tuple[Any, ...]) -> None:
    """A worker process: warm up, then run tasks until told to stop."""
    from baseagent.batch.worker import TaskRunner
    from baseagent.output.redact import Redactor, install_stderr

    # The driver's stdout may carry the batch summary as JSON: nothing of ours goes there.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # Ctrl-C reaches the whole process group; the driver decides what a SIGINT means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    settings, env, _out = runner_args
    install_stderr(Redactor.from_environment(env, settings.get("env_strip") or [],
                                             [settings.get("api_key")]))
    from baseagent.tools.procs import adopt_orphans

    # This process runs nothing but its tasks: whatever a task leaves (even past a
    # supervisor its command killed) comes back here and is ended before the next task.
    runner = TaskRunner(*runner_args, own_process=adopt_orphans())

    def terminate(_signum: int, _frame: Any) -> None:  # the driver is replacing this worker
        runner.kill_processes()
        os._exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, terminate)
    outbox.send(("ready", os.getpid(), runner.warm()))

    jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def control() -> None:
        while True:
            try:
                message = inbox.recv()
            except (EOFError, OSError):
                message = None
            if message is None or message[0] == "stop":
                runner.cancel("the batch stopped")
                jobs.put(None)
                timer = threading.Timer(ORPHAN_EXIT_SECONDS, _orphan_exit, args=(runner,))
                timer.daemon = True
                timer.start()
                return
            if message[0] == "task":
                jobs.put(message[1])
            elif message[0] == "cancel":
                runner.cancel(message[1], message[2])

    threading.Thread(target=control, name="batch-worker-control", daemon=True).start()
    while (job := jobs.get()) is not None:
        payload = runner.run(job)
        try:
            outbox.send(("done", payload))
        except (OSError, EOFError):
            break
    runner.kill_processes()


def _orphan_exit(runner: Any) -> None:
    runner.kill_processes()
    os._exit(1)


@dataclass
class _Slot:
    process: Any
    inbox: Connection  # driver -> worker
    outbox: Connection  # worker -> driver
    ready: bool = False
    task_id: str | None = None
    token: str | None = None  # the run_token of the task it holds
    start_failures: int = 0
    pid: int | None = None


class LocalBackend:
    def __init__(self, workers: int, runner_args: tuple[Any, ...]) -> None:
        self._workers = workers
        self._runner_args = runner_args
        self._context = multiprocessing.get_context("spawn")
        self._slots: dict[int, _Slot] = {}
        self._closing = False

    def start(self) -> None:
        for slot in range(self._workers):
            self._spawn(slot, start_failures=0)

    def _spawn(self, slot: int, start_failures: int) -> None:
        task_read, task_write = self._context.Pipe(duplex=False)
        result_read, result_write = self._context.Pipe(duplex=False)
        process = self._context.Process(target=worker_main, name=f"baseagent-batch-{slot}",
                                        args=(task_read, result_write, self._runner_args),
                                        daemon=True)
        process.start()
        task_read.close()
        result_write.close()
        self._slots[slot] = _Slot(process, task_write, result_read,
                                  start_failures=start_failures)

    # -- state ---------------------------------------------------------------------------------

    def idle_slots(self) -> list[int]:
        return [n for n, s in sorted(self._slots.items()) if s.ready and s.task_id is None]

    def busy(self) -> bool:
        return any(s.task_id is not None for s in self._slots.values())

    def worker_pids(self) -> dict[int, int | None]:
        return {n: s.process.pid for n, s in self._slots.items()}

    # -- commands ------------------------------------------------------------------------------

    def submit(self, slot: int, task: dict[str, Any]) -> None:
        state = self._slots[slot]
        state.task_id = task["id"]
        state.token = run_token(task)
        try:
            state.inbox.send(("task", task))
        except (OSError, EOFError):
            pass  # the worker is dead: its sentinel reports the crash on the next poll

    def cancel(self, slot: int, reason: str) -> None:
        state = self._slots[slot]
        try:
            state.inbox.send(("cancel", reason, state.token))
        except (OSError, EOFError):
            pass

    def replace(self, slot: int) -> None:
        state = self._slots[slot]
        _terminate(state.process)
        _close(state)
        self._spawn(slot, start_failures=0)

    def poll(self, timeout: float) -> list[Outcome]:
        waitables: dict[Any, tuple[int, str]] = {}
        for n, state in self._slots.items():
            waitables[state.outbox] = (n, "pipe")
            waitables[state.process.sentinel] = (n, "exit")
        outcomes: list[Outcome] = []
        for ready in wait(list(waitables), timeout):
            n, kind = waitables[ready]
            state = self._slots.get(n)
            if state is None or (kind == "pipe" and ready is not state.outbox):
                continue
            outcomes.extend(self._drain(n, state))
            if kind == "exit" or not state.process.is_alive():
                outcomes.extend(self._drain(n, state))
                outcomes.extend(self._exited(n, state))
        return outcomes

    def _drain(self, n: int, state: _Slot) -> list[Outcome]:
        outcomes = []
        while True:
            try:
                if state.outbox.closed or not state.outbox.poll():
                    break
                message = state.outbox.recv()
            except (EOFError, OSError):
                break
            if message[0] == "ready":
                _, state.pid, error = message
                if error:
                    raise BatchError(error)
                state.ready = True
                state.start_failures = 0
            elif message[0] == "done":
                state.task_id = None
                outcomes.append(Outcome(n, "done", payload=message[1]))
        return outcomes

    def _exited(self, n: int, state: _Slot) -> list[Outcome]:
        if self._slots.get(n) is not state or state.process.is_alive():
            return []
        state.process.join(0)
        code = state.process.exitcode
        outcomes = []
        if state.task_id is not None:
            outcomes.append(Outcome(n, "crashed", reason=f"the worker process died "
                                                          f"({_describe_exit(code)})"))
        failures = state.start_failures + (0 if state.ready else 1)
        _close(state)
        if failures >= MAX_START_FAILURES:
            raise BatchError(f"batch workers cannot start: the worker process died "
                             f"{failures} times before it was ready ({_describe_exit(code)}; "
                             f"see stderr)")
        if not self._closing:
            self._spawn(n, start_failures=failures)
        else:
            del self._slots[n]
        return outcomes

    def close(self) -> None:
        self._closing = True
        for state in self._slots.values():
            try:
                state.inbox.send(("stop",))
            except (OSError, EOFError):
                pass
        for state in self._slots.values():
            state.process.join(CLOSE_WAIT_SECONDS)
            if state.process.is_alive():
                _terminate(state.process)
            _close(state)
        self._slots.clear()


def _terminate(process: Any) -> None:
    if process.is_alive():
        process.terminate()
        process.join(TERMINATE_GRACE_SECONDS)
    if process.is_alive():
        process.kill()
        process.join(TERMINATE_GRACE_SECONDS)


def _close(state: _Slot) -> None:
    for conn in (state.inbox, state.outbox):
        try:
            conn.close()
        except OSError:
            pass


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


__all__ = ["LocalBackend", "worker_main"]

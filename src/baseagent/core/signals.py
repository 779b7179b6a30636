"""SIGINT / SIGTERM / SIGHUP: stop cooperatively, stop at once on a second one, leave no child.

The first signal only sets the run's Cancellation. Everything long-running polls it: the
model client (its network wait runs on a worker thread, so the main thread notices within
a poll interval), the shell tool (which kills its command's process group), the loop
(between steps). The turn then ends with `turn.failed`, the session record is closed, and
the process exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM, 129 for
SIGHUP: the terminal or the harness's session went away). A SIGHUP that the parent set to be
ignored (`nohup`) stays ignored.

A second signal means the user (or harness) will not wait: every process group the shell
tool started is killed with SIGKILL and the process exits at once, after the JSONL line
being written (if any) is complete, so stdout never ends in half a line.

Processes a command left running in the background (e.g. a server started with `&` and
its output redirected) are killed when the run was interrupted; after a normal finish they
are left alone, because starting a service can be the task itself.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, Callable

from baseagent.core.interrupt import Cancellation
from baseagent.tools.procs import live_in_session

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Between SIGTERM and SIGKILL for leftover process groups at the end of an interrupted run.
KILL_GRACE_SECONDS = 0.5
# How often a wait on startup work looks at the cancellation flag.
POLL_SECONDS = 0.05


def exit_code_for(signal_number: int | None) -> int:
    """Shell convention: a run stopped by signal N exits with 128 + N (SIGINT when unknown)."""
    return 128 + int(signal_number or signal.SIGINT)


class SignalGuard:
    """Installed for the duration of a run; `close()` restores the previous handlers."""

    def __init__(self, cancellation: Cancellation,
                 hard_exit: Callable[[int], None] | None = None) -> None:
        self.cancellation = cancellation
        self._hard_exit = hard_exit or os._exit
        self._previous: dict[int, Any] = {}

    def install(self) -> "SignalGuard":
        if threading.current_thread() is not threading.main_thread():
            return self  # signal handlers can only be set from the main thread
        for signum in HANDLED_SIGNALS:
            if signum == signal.SIGHUP and signal.getsignal(signum) is signal.SIG_IGN:
                continue  # started under nohup: the user asked to survive a hangup
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.cancellation.is_set():
            # Second signal: no more waiting for anything.
            kill_started_groups(grace=0)
            self._hard_exit(exit_code_for(signum))
            return
        self.cancellation.cancel(f"received {signal.Signals(signum).name}", signum)

    def close(self) -> None:
        """End of the run: restore handlers; after an interrupt, kill what commands left."""
        for signum, previous in self._previous.items():
            try:
                signal.signal(signum, previous)
            except (ValueError, TypeError):
                pass
        self._previous.clear()
        if self.cancellation.is_set():
            kill_started_groups(grace=KILL_GRACE_SECONDS)


def install(cancellation: Cancellation,
            hard_exit: Callable[[int], None] | None = None) -> SignalGuard:
    return SignalGuard(cancellation, hard_exit).install()


def wait_unless_cancelled(thread: threading.Thread, cancellation: Cancellation) -> bool:
    """Join `thread`, giving up as soon as the run is cancelled; True if it finished."""
    while thread.is_alive():
        if cancellation.is_set():
            return False
        thread.join(POLL_SECONDS)
    return True


# -- child processes ----------------------------------------------------------------------------

def _started_groups() -> set[int]:
    from baseagent.tools import shell

    return set(getattr(shell, "STARTED_GROUPS", ()))


def live_members(session_id: int) -> list[int]:
    """Pids still alive (not zombies) in the session a command was started in.

    The shell tool starts each command with setsid, so the command's pid is also the id
    of its session and of its first process group; matching on the session catches the
    subgroups a command makes (`set -m`), and a recycled pid that now leads an unrelated
    process is not in that session.
    """
    return live_in_session(session_id)


def kill_started_groups(grace: float = KILL_GRACE_SECONDS) -> list[int]:
    """SIGTERM every command session still alive, SIGKILL what is left after `grace`.

    Returns the sessions that had live members. Safe to call from a signal handler: it only
    reads /proc and sends signals.
    """
    targets = {sid: pids for sid in _started_groups() if (pids := live_members(sid))}
    first = signal.SIGTERM if grace > 0 else signal.SIGKILL
    for pids in targets.values():
        _signal_all(pids, first)
    if grace > 0 and targets:
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(live_members(s) for s in targets):
            time.sleep(0.02)
        for sid in targets:
            _signal_all(live_members(sid), signal.SIGKILL)
    return list(targets)


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

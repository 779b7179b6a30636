"""SIGINT / SIGTERM / SIGHUP: stop cooperatively, stop at once on a second one, leave no child.

The first signal only cancels the run (Agent.cancel, which sets a flag). Everything long-running polls it: the
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

A Python signal handler runs only when the main thread gets the GIL back; a thread stuck in
a long C call that holds it (a backtracking regex, a C extension in a caller's tool) would
delay it indefinitely. With `watchdog=True` the guard starts a tiny watchdog process (the
supervisor binary, `--watchdog`) fed by the signal wakeup fd, which the interpreter writes
from its C-level handler at once: a signal the Python handler has not answered within a
second gets the process SIGKILLed (its commands die with it: their supervisors' lifeline
closes). The CLI's runs use it; the library never installs handlers at all.
"""
from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Protocol

from baseagent.exit_codes import exit_code_for_signal

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# How long the Python handler has to start running after a signal arrived.
WATCHDOG_GRACE_MS = 1000
_ANSWERED = b"\xff"


class Cancellable(Protocol):
    """What the guard stops: the library Agent (both methods are safe in a signal handler)."""

    @property
    def cancel_requested(self) -> bool: ...

    def cancel(self, reason: str = "cancelled", signal_number: int | None = None) -> None: ...

    def kill_processes(self, grace: float = 0) -> list[int]: ...


class SignalGuard:
    """Installed for the duration of a run; `close()` restores the previous handlers.

    An entry point's concern only: the library never installs signal handlers.
    """

    def __init__(self, target: Cancellable,
                 hard_exit: Callable[[int], None] | None = None, watchdog: bool = False) -> None:
        self.target = target
        self._hard_exit = hard_exit or os._exit
        self._previous: dict[int, Any] = {}
        self.signal_number: int | None = None  # the first signal received, for the exit code
        self._want_watchdog = watchdog
        self._watchdog: Any = None
        self._wakeup: int | None = None
        self._previous_wakeup = -1

    def install(self) -> "SignalGuard":
        if threading.current_thread() is not threading.main_thread():
            return self  # signal handlers can only be set from the main thread
        for signum in HANDLED_SIGNALS:
            if signum == signal.SIGHUP and signal.getsignal(signum) is signal.SIG_IGN:
                continue  # started under nohup: the user asked to survive a hangup
            self._previous[signum] = signal.signal(signum, self._handle)
        if self._want_watchdog:
            self._start_watchdog()
        return self

    def _start_watchdog(self) -> None:
        import subprocess

        from baseagent.sandbox.supervisor import executable

        binary = executable()  # a sealed memfd of verified bytes, never a path to trust
        if binary is None:
            return
        read, write = os.pipe2(os.O_CLOEXEC)
        try:
            self._watchdog = subprocess.Popen(
                [binary.path, "--watchdog", str(os.getpid()), str(WATCHDOG_GRACE_MS)],
                stdin=read, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=binary.fds, start_new_session=True)
        except OSError:
            os.close(write)
            return
        finally:
            os.close(read)
        os.set_blocking(write, False)
        self._wakeup = write
        self._previous_wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def _handle(self, signum: int, _frame: Any) -> None:
        if self._wakeup is not None:
            try:
                os.write(self._wakeup, _ANSWERED)  # the watchdog: Python runs
            except OSError:
                pass
        if self.target.cancel_requested:
            # Second signal: no more waiting for anything.
            self.target.kill_processes(grace=0)
            self._hard_exit(exit_code_for_signal(signum))
            return
        self.signal_number = signum
        self.target.cancel(f"received {signal.Signals(signum).name}", signum)

    def close(self) -> None:
        """End of the run: restore the previous handlers (the run itself has already ended
        whatever its commands left running when it was interrupted)."""
        for signum, previous in self._previous.items():
            try:
                signal.signal(signum, previous)
            except (ValueError, TypeError):
                pass
        self._previous.clear()
        if self._wakeup is not None:
            signal.set_wakeup_fd(self._previous_wakeup)
            os.close(self._wakeup)  # the watchdog reads end of file and exits
            self._wakeup = None
            try:
                self._watchdog.wait(1)
            except Exception:  # noqa: BLE001 - it exits on its own; never hold the exit
                pass

"""Which live processes belong to a process group or a session (Linux /proc).

Both the shell tool (is a timed-out command's group gone yet?) and the interrupt path (what
did the commands of this run leave behind?) need to tell live processes from zombies:
`killpg(pgid, 0)` also succeeds for zombies, and orphans whose new parent never reaps them
(a container's init) would otherwise look alive forever.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass

# Fields of /proc/<pid>/stat after the parenthesised command name: state ppid pgrp session.
_PGRP, _SESSION = 2, 3


def live_in_group(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose process group is `pgid`."""
    return _live_where(_PGRP, pgid)


def live_in_session(session_id: int) -> list[int]:
    """Pids of live (non-zombie) processes in session `session_id`."""
    return _live_where(_SESSION, session_id)


def _live_where(index: int, value: int) -> list[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > index and fields[0] not in (b"Z", b"X") and int(fields[index]) == value:
            found.append(int(name))
    return found


# Between SIGTERM and SIGKILL for what is left of a run's commands when it is interrupted.
KILL_GRACE_SECONDS = 0.5
# Beyond the grace, how long to wait for a supervisor to report its subtree gone.
SUPERVISOR_WAIT_SECONDS = 1.0


@dataclass
class Launch:
    """How to start one command so that the tracker can end everything it starts: the argv
    (the supervisor's, wrapping the command's, when the supervisor is available), the fds
    the child must inherit, and the read end of the pipe its exit status arrives on."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    status_fd: int | None = None
    _child_fds: tuple[int, ...] = ()

    def started(self) -> None:
        """Close the child's ends in this process (call once the command has started)."""
        for fd in self._child_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._child_fds = ()


class ProcessTracker:
    """The commands one run started, kept after the commands end, and how to end them.

    Each command starts under the supervisor (sandbox/supervisor.c) when it can be built:
    a child subreaper that keeps everything the command starts in its subtree (setsid and
    double forks included) and kills that subtree when asked, or by itself when the lifeline
    pipe from this tracker closes without a release (the agent died, even by SIGKILL). Each
    command is also the leader of its own session (start_new_session), which is what is
    killed where the supervisor is missing. One tracker per run: cancelling one agent never
    touches another agent's processes.
    """

    def __init__(self, supervisor: str | None | bool = True) -> None:
        """`supervisor`: True to build/find it on first use, False for none, or a path."""
        self._sessions: set[int] = set()
        self._supervisors: set[int] = set()
        self._supervisor = supervisor
        self._lifeline: tuple[int, int] | None = None
        self._lock = threading.Lock()

    # -- starting ------------------------------------------------------------------------

    def supervisor_path(self) -> str | None:
        if self._supervisor is True:
            from baseagent.sandbox.supervisor import executable

            self._supervisor = executable() or False
        return self._supervisor or None

    def launch(self, argv: list[str]) -> Launch:
        """The way to start `argv` under this run's supervision (see Launch)."""
        path = self.supervisor_path()
        if path is None:
            return Launch(list(argv))
        with self._lock:
            if self._lifeline is None:
                self._lifeline = os.pipe2(os.O_CLOEXEC)  # (read, write): write stays here
            lifeline_read = self._lifeline[0]
        status_read, status_write = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(status_read, False)
        grace_ms = str(int(KILL_GRACE_SECONDS * 1000))
        return Launch([path, str(lifeline_read), str(status_write), grace_ms, "--", *argv],
                      pass_fds=(lifeline_read, status_write), status_fd=status_read,
                      _child_fds=(status_write,))

    def add(self, session_id: int, supervised: bool = False) -> None:
        self._sessions.add(session_id)
        if supervised:
            self._supervisors.add(session_id)

    def sessions(self) -> set[int]:
        return set(self._sessions)

    # -- ending --------------------------------------------------------------------------

    def live(self) -> dict[int, list[int]]:
        """Session id -> live member pids, for the sessions that still have any."""
        return {sid: pids for sid in self.sessions() if (pids := live_in_session(sid))}

    def kill_all(self, grace: float = KILL_GRACE_SECONDS) -> list[int]:
        """End everything the run's commands started: each live supervisor kills its subtree
        (SIGTERM, SIGKILL after its grace; at once when grace is 0), then SIGTERM/SIGKILL
        whatever is still in a command's session. Returns the sessions that had live
        members. Safe to call from a signal handler: it only reads /proc, sends signals
        and sleeps."""
        supervisors = [pid for pid in self._supervisors if is_live(pid)]
        targets = self.live()
        for pid in supervisors:
            signal_all([pid], signal.SIGTERM if grace > 0 else signal.SIGUSR2)
        first = signal.SIGTERM if grace > 0 else signal.SIGKILL
        for sid, pids in targets.items():
            signal_all([p for p in pids if p not in supervisors], first)
        # With no grace (a second signal, the process about to exit) nothing is waited for:
        # the supervisors kill at once, and the lifeline closes with the process anyway.
        wait = grace + SUPERVISOR_WAIT_SECONDS if supervisors and grace > 0 else grace
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and (
                any(is_live(p) for p in supervisors) or any(live_in_session(s) for s in targets)):
            time.sleep(0.02)
        for sid in targets:
            signal_all(live_in_session(sid), signal.SIGKILL)
        return list(targets)

    def release(self) -> None:
        """The run finished normally: what its commands left running in the background (a
        server the task asked for) may outlive it. Supervisors stop watching the lifeline;
        each exits when its subtree is empty."""
        for pid in list(self._supervisors):
            if is_live(pid):
                signal_all([pid], signal.SIGUSR1)
        self._supervisors.clear()
        with self._lock:
            if self._lifeline is not None:
                for fd in self._lifeline:
                    os.close(fd)
                self._lifeline = None


def is_live(pid: int) -> bool:
    """A live, non-zombie process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def children_with_env(name: str, value: str) -> list[int]:
    """Direct children of this process whose environment holds NAME=VALUE: how the agent
    finds the processes an SDK started for it without being told their pids. Reads only
    /proc (Linux); elsewhere it finds nothing."""
    needle = f"{name}={value}".encode()
    found = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return []
    pids: set[int] = set()
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children", "rb") as handle:
                pids.update(int(p) for p in handle.read().split())
        except (OSError, ValueError):
            continue
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return found

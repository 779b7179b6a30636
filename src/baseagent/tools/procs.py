"""Which live processes belong to a process group or a session (Linux /proc).

Both the shell tool (is a timed-out command's group gone yet?) and the interrupt path (what
did the commands of this run leave behind?) need to tell live processes from zombies:
`killpg(pgid, 0)` also succeeds for zombies, and orphans whose new parent never reaps them
(a container's init) would otherwise look alive forever.
"""
from __future__ import annotations

import os
import signal
import time

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


class ProcessTracker:
    """The command sessions one run started (the shell tool starts each command with setsid,
    so its pid is also the id of its session), kept after the commands end.

    Matching on the session catches the subgroups a command makes (`set -m`), and a recycled
    pid that now leads an unrelated process is not in that session. One tracker per run:
    cancelling one agent never touches another agent's processes.
    """

    def __init__(self) -> None:
        self._sessions: set[int] = set()

    def add(self, session_id: int) -> None:
        self._sessions.add(session_id)

    def sessions(self) -> set[int]:
        return set(self._sessions)

    def live(self) -> dict[int, list[int]]:
        """Session id -> live member pids, for the sessions that still have any."""
        return {sid: pids for sid in self.sessions() if (pids := live_in_session(sid))}

    def kill_all(self, grace: float = KILL_GRACE_SECONDS) -> list[int]:
        """SIGTERM every session still alive, SIGKILL what is left after `grace` (at once
        when grace is 0). Returns the sessions that had live members. Safe to call from a
        signal handler: it only reads /proc and sends signals."""
        targets = self.live()
        first = signal.SIGTERM if grace > 0 else signal.SIGKILL
        for pids in targets.values():
            signal_all(pids, first)
        if grace > 0 and targets:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(live_in_session(s) for s in targets):
                time.sleep(0.02)
            for sid in targets:
                signal_all(live_in_session(sid), signal.SIGKILL)
        return list(targets)


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

"""Which live processes belong to a process group or a session (Linux /proc).

Both the shell tool (is a timed-out command's group gone yet?) and the interrupt path (what
did the commands of this run leave behind?) need to tell live processes from zombies:
`killpg(pgid, 0)` also succeeds for zombies, and orphans whose new parent never reaps them
(a container's init) would otherwise look alive forever.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baseagent.sandbox.policy import Policy
    from baseagent.sandbox.supervisor import Binary

# Fields of /proc/<pid>/stat after the parenthesised command name: state ppid pgrp session.
_PPID, _PGRP, _SESSION = 1, 2, 3


def live_in_group(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose process group is `pgid`."""
    return _live_where(_PGRP, pgid)


def live_in_session(session_id: int) -> list[int]:
    """Pids of live (non-zombie) processes in session `session_id`."""
    return _live_where(_SESSION, session_id)


def _live_where(index: int, value: int) -> list[int]:
    return [pid for pid, fields in _live_stats() if len(fields) > index
            and int(fields[index]) == value]


def _live_stats() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, the /proc/<pid>/stat fields after the command name) of live processes."""
    for pid, fields in _live_stats_all():
        if fields[0] not in (b"Z", b"X"):
            yield pid, fields


def _live_stats_all() -> Iterator[tuple[int, list[bytes]]]:
    """The same for every process, zombies included."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields:
            yield int(name), fields


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

    def __init__(self, supervisor: "str | Binary | None | bool" = True) -> None:
        """`supervisor`: True to build/find it on first use, False for none, or a path."""
        self._sessions: set[int] = set()
        self._supervisors: set[int] = set()
        if isinstance(supervisor, str):
            from baseagent.sandbox.supervisor import Binary

            supervisor = Binary(supervisor)
        self._supervisor: Binary | bool | None = supervisor
        self._lifeline: tuple[int, int] | None = None
        self._lock = threading.Lock()

    # -- starting ------------------------------------------------------------------------

    def supervisor(self) -> "Binary | None":
        """The supervisor's binary (sandbox/supervisor.py: a sealed memfd of verified bytes),
        looked up on first use; None without one."""
        if self._supervisor is True:
            from baseagent.sandbox.supervisor import executable

            self._supervisor = executable() or False
        return self._supervisor or None

    def supervisor_path(self) -> str | None:
        binary = self.supervisor()
        return binary.path if binary else None

    def launch(self, argv: list[str], options: Sequence[str] = (),
               fds: Sequence[int] = ()) -> Launch:
        """The way to start `argv` under this run's supervision (see Launch). `options` go
        to the supervisor before its lifeline (how to confine the command: the policy's
        supervisor_args()), with the `fds` they name."""
        binary = self.supervisor()
        if binary is None:
            return Launch(list(argv))
        with self._lock:
            if self._lifeline is None:
                self._lifeline = os.pipe2(os.O_CLOEXEC)  # (read, write): write stays here
            lifeline_read = self._lifeline[0]
        status_read, status_write = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(status_read, False)
        grace_ms = str(int(KILL_GRACE_SECONDS * 1000))
        return Launch([binary.path, *options, str(lifeline_read), str(status_write), grace_ms,
                       "--", *argv],
                      pass_fds=(*binary.fds, lifeline_read, status_write, *fds),
                      status_fd=status_read,
                      _child_fds=(status_write,))

    def start(self, argv: list[str], policy: Policy,
              **popen: Any) -> tuple[subprocess.Popen[bytes], Launch]:
        """Start `argv` under this run's supervision, confined by `policy`: the supervisor
        confines a sandboxed command itself (mounts, capabilities, Landlock), the starting
        thread adds no_new_privs and seccomp (and, without a supervisor, does all it can:
        Landlock, seccomp, capabilities). `popen` are subprocess.Popen's other arguments;
        the command leads its own session. Returns the process and its Launch (whose
        status_fd the caller owns); raises what Popen raises."""
        from baseagent.sandbox.policy import SupervisorArgs, confine

        supervised = self.supervisor_path() is not None
        confinement = policy.supervisor_args() if supervised else SupervisorArgs([], ())
        launch = self.launch(argv, confinement.args, confinement.fds)
        try:
            proc = confine(policy, lambda: subprocess.Popen(
                launch.argv, start_new_session=True, pass_fds=launch.pass_fds, **popen),
                supervised=supervised, command=not supervised)
        except BaseException:
            if launch.status_fd is not None:
                os.close(launch.status_fd)
            raise
        finally:
            confinement.close()
            launch.started()
        # Remembered after the command ends: an interrupted run kills whatever is still
        # alive of it (background jobs included), so no child outlives the run.
        self.add(proc.pid, supervised=supervised)
        return proc, launch

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
        # A supervisor a command stopped (danger-full-access: nothing keeps it out of reach)
        # cannot act: continue it first.
        signal_all(supervisors, signal.SIGCONT)
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
        for pid in supervisors:  # stopped again, or wedged: its subtree, from here
            if is_live(pid):
                signal_all([*descendants(pid), pid], signal.SIGKILL)
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


def descendants(root: int) -> list[int]:
    """Live descendants of `root`, by the parent links in /proc (what the supervisor walks
    itself; the agent walks it when the supervisor cannot)."""
    children: dict[int, list[int]] = {}
    for pid, fields in _live_stats():
        if len(fields) > _PPID:
            children.setdefault(int(fields[_PPID]), []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> bool:
    """Make this process a child subreaper: what a command leaves behind after killing its
    own supervisor (nothing keeps it out of reach in danger-full-access) is re-parented
    here rather than to init, so `end_descendants()` still finds it. A property of the
    whole process: for entry points that own theirs (the CLI, batch workers), never the
    library. False where the platform has no such thing."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def end_descendants(grace: float = 0.0, wait: float = 2.0) -> list[int]:
    """SIGKILL (after SIGTERM and `grace` seconds, when grace > 0) every live descendant of
    this process, reap what was re-parented here, and wait until none is left or `wait`
    runs out. Returns those still alive (empty: the tree is gone). For an entry point whose
    process is the run's alone (the CLI at an interrupted exit, a batch worker between
    tasks)."""
    me = os.getpid()
    found = descendants(me)
    if grace > 0 and found:
        signal_all(found, signal.SIGCONT)
        signal_all(found, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(is_live(p) for p in found):
            _reap_orphans()
            time.sleep(0.02)
    deadline = time.monotonic() + wait
    while True:
        left = descendants(me)
        signal_all(left, signal.SIGKILL)
        _reap_orphans()
        if not left or time.monotonic() >= deadline:
            return [p for p in left if is_live(p)]
        time.sleep(0.02)


def _reap_orphans() -> None:
    """Collect the exit status of re-parented children that have ended (nobody else waits
    for them); children this process started itself are waited for by their owners."""
    for pid, fields in _live_stats_all():
        if len(fields) > _PPID and int(fields[_PPID]) == os.getpid() and fields[0] == b"Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


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

"""SIGINT / SIGTERM / SIGHUP end to end: cooperative stop, exit codes, flushed output, no
survivors."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

import pytest

from baseagent import signals
from baseagent.cancellation import Cancellation
from baseagent.exit_codes import exit_code_for_signal
from baseagent.tools.procs import ProcessTracker
from helpers import AgentRun
from reliability import (assert_no_survivors, assert_session_complete, finish, is_alive,
                         kill_quietly, read_pids, shell, start_agent, wait_for)

# A command that leaves a background job and blocks: both must die with the agent.
BLOCKING = "echo $$ > sh.pid; sleep 300 & echo $! > bg.pid; echo started; sleep 300"
# The same, deaf to SIGTERM (the disposition is inherited by its children).
DEAF = "trap '' TERM; " + BLOCKING


def pids(workspace: Path) -> list[int]:
    return read_pids(workspace / "sh.pid") + read_pids(workspace / "bg.pid")


def command_started(workspace: Path) -> Callable[[], bool]:
    return lambda: (workspace / "bg.pid").exists() and bool((workspace / "bg.pid").read_text())


def signal_when_ready(proc: subprocess.Popen, ready: Callable[[], object], what: str,
                      *signums: int) -> tuple[AgentRun, float]:
    """Once `ready()`, send `signums` 0.15 s apart; return the finished run and the time
    from the last signal to the exit. The process never outlives the test."""
    try:
        wait_for(ready, what=what)
        time.sleep(0.2)
        for signum in signums[:-1]:
            proc.send_signal(signum)
            time.sleep(0.15)
        sent = time.monotonic()
        proc.send_signal(signums[-1])
        run = finish(proc)
        return run, time.monotonic() - sent
    finally:
        kill_quietly(proc)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_sigterm_during_a_command(scripted_server, workspace, home, signum):
    server = scripted_server([{"tool_calls": [shell(BLOCKING)]}, {"content": "never"}])
    proc = start_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base)
    run, elapsed = signal_when_ready(proc, command_started(workspace), "the command to start",
                                     signum)
    assert run.returncode == 128 + signum, run.stderr  # 143 SIGTERM, 129 SIGHUP
    assert elapsed < 3, elapsed
    command = run.completed_items("command_execution")[0]
    assert command["status"] == "failed" and command["exit_code"] == 130
    assert command["aggregated_output"].startswith("started\n")
    assert run.events[-1] == {"type": "turn.failed",
                              "error": {"message": f"interrupted (received "
                                                   f"{signal.Signals(signum).name})"}}
    records = assert_session_complete(home, run)
    tool_messages = [r["message"] for r in records
                     if r["kind"] == "message" and r["message"]["role"] == "tool"]
    assert len(tool_messages) == 1 and "command interrupted" in tool_messages[0]["content"]
    assert len(server.requests) == 1
    assert_no_survivors(pids(workspace))


def test_sigint_while_waiting_for_the_model(scripted_server, workspace, home):
    server = scripted_server([{"content": "too late", "delay": 60}])
    proc = start_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base,
                       env_extra={"BASEAGENT_STREAM_IDLE_TIMEOUT": "120"})
    run, elapsed = signal_when_ready(proc, lambda: server.requests, "the model request",
                                     signal.SIGINT)
    assert run.returncode == 130, run.stderr
    assert elapsed < 2, elapsed  # far less than the 60 s the model would take
    assert run.events[-1] == {"type": "turn.failed",
                              "error": {"message": "interrupted (received SIGINT)"}}
    assert "Traceback" not in run.stderr
    assert_session_complete(home, run)


def test_second_sigint_exits_at_once(scripted_server, workspace, home):
    # The command ignores SIGTERM, so the first SIGINT's graceful kill has to wait out its
    # grace period; the second SIGINT does not wait: SIGKILL to every group, exit 130.
    server = scripted_server([{"tool_calls": [shell(DEAF)]}, {"content": "never"}])
    proc = start_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base)
    run, elapsed = signal_when_ready(proc, command_started(workspace), "the command to start",
                                     signal.SIGINT, signal.SIGINT)
    assert run.returncode == 130, run.stderr
    assert elapsed < 1, elapsed
    # the hard exit skipped the orderly end: no turn.failed, but every line is whole JSON
    assert run.events and run.events[-1]["type"] != "turn.failed"
    assert_no_survivors(pids(workspace))


# -- the pieces, without an agent --------------------------------------------------------------

class _Target:
    """What a SignalGuard stops (the Agent's cancel/kill_processes), recorded."""

    def __init__(self) -> None:
        self.cancellation = Cancellation()
        self.killed: list[float] = []

    @property
    def cancel_requested(self) -> bool:
        return self.cancellation.is_set()

    def cancel(self, reason: str = "cancelled", signal_number: int | None = None) -> None:
        self.cancellation.cancel(reason, signal_number)

    def kill_processes(self, grace: float = 0) -> list[int]:
        self.killed.append(grace)
        return []


def test_process_tracker_kills_background_jobs_too():
    # A command that exited long ago but left a job behind, and one still running that
    # ignores SIGTERM: both sessions are emptied.
    done = subprocess.Popen(["bash", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"],
                            stdout=subprocess.PIPE, start_new_session=True, text=True)
    orphan = int(done.stdout.read().strip())
    done.wait(5)
    deaf = subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 300"], start_new_session=True)
    tracker = ProcessTracker()
    tracker.add(done.pid)
    tracker.add(deaf.pid)
    try:
        time.sleep(0.2)
        assert is_alive(orphan) and is_alive(deaf.pid)
        assert ProcessTracker().kill_all(grace=0) == []  # another run's tracker: not its own
        started = time.monotonic()
        killed = tracker.kill_all(grace=0.3)
        assert set(killed) == {done.pid, deaf.pid}
        assert time.monotonic() - started < 2
        deaf.wait(5)
        assert_no_survivors([orphan, deaf.pid])
        assert tracker.kill_all() == []  # nothing left: nothing to do
    finally:
        for pid in (orphan, deaf.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_guard_first_signal_cancels_second_exits():
    target = _Target()
    cancellation = target.cancellation
    exits: list[int] = []
    guard = signals.SignalGuard(target, hard_exit=exits.append).install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs between bytecodes of this thread
        assert cancellation.is_set() and cancellation.signal_number == signal.SIGTERM
        assert cancellation.reason == "received SIGTERM" and exits == []
        assert guard.signal_number == signal.SIGTERM and target.killed == []
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert exits == [130] and target.killed == [0]
    finally:
        guard.close()
    assert signal.getsignal(signal.SIGTERM) is not guard._handle
    assert exit_code_for_signal(signal.SIGTERM) == 143
    assert exit_code_for_signal(None) == 130


def test_guard_leaves_an_ignored_sighup_ignored():
    """Under `nohup` the user asked to survive a hangup: the guard must not take SIGHUP."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        guard = signals.SignalGuard(_Target(), hard_exit=lambda code: None).install()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == guard._handle
        guard.close()
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_the_suite_under_nohup_still_tests_sighup(scripted_server, workspace, home):
    """Run under `nohup` (or as a background job), the test process ignores SIGHUP and
    SIGINT; the agents it starts must not inherit that, or the SIGHUP and SIGINT tests
    test nothing (or hang)."""
    server = scripted_server([{"content": "too late", "delay": 60}])
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGHUP, signal.SIGINT)}
    try:
        proc = start_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base,
                           env_extra={"BASEAGENT_STREAM_IDLE_TIMEOUT": "120"})
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    run, elapsed = signal_when_ready(proc, lambda: server.requests, "the model request",
                                     signal.SIGHUP)
    assert run.returncode == 129, run.stderr
    assert elapsed < 3


# -- nothing escapes (issue 14) ----------------------------------------------------------------

# Children that leave the process group and the session, double-fork, and ignore SIGTERM.
ESCAPING = ("setsid sleep 300 & echo $! > esc.pid; "
            "(trap '' TERM; sleep 301 & echo $! > dbl.pid) & "
            "setsid bash -c 'trap \"\" TERM; sleep 302 & echo $! > deaf.pid; wait' & "
            "sleep 0.3; echo started; echo $$ > sh.pid; sleep 303 & echo $! > bg.pid; wait")


def escaped_pids(workspace: Path) -> list[int]:
    return [p for name in ("esc", "dbl", "deaf", "sh", "bg")
            for p in read_pids(workspace / f"{name}.pid")]


def all_started(workspace: Path) -> Callable[[], bool]:
    return lambda: len(escaped_pids(workspace)) == 5


def test_interrupt_leaves_nothing_even_what_left_the_group(scripted_server, workspace, home):
    server = scripted_server([{"tool_calls": [shell(ESCAPING)]}, {"content": "never"}])
    proc = start_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base)
    run, elapsed = signal_when_ready(proc, all_started(workspace), "the command to start",
                                     signal.SIGTERM)
    assert run.returncode == 143, run.stderr
    assert elapsed < 4, elapsed
    assert_no_survivors(escaped_pids(workspace))


def test_sigkill_of_the_agent_takes_its_commands(scripted_server, workspace, home):
    server = scripted_server([{"tool_calls": [shell(ESCAPING)]}, {"content": "never"}])
    proc = start_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base)
    try:
        wait_for(all_started(workspace), what="the command to start")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    finally:
        kill_quietly(proc)
    assert_no_survivors(escaped_pids(workspace), timeout=5)


def test_a_background_server_outlives_a_normal_finish(scripted_server, workspace, home):
    server = scripted_server([
        {"tool_calls": [shell("nohup sleep 300 >/dev/null 2>&1 & echo $! > server.pid")]},
        {"content": "started"}, {"content": "verified"}])
    proc = start_agent(["-i", "start a server"], cwd=workspace, home=home,
                       api_base=server.api_base)
    try:
        run = finish(proc, timeout=120)
        assert run.returncode == 0, run.stderr
        [pid] = read_pids(workspace / "server.pid")
        time.sleep(0.5)
        assert is_alive(pid)  # the task was to start it
    finally:
        kill_quietly(proc)
        for pid in read_pids(workspace / "server.pid"):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_two_trackers_each_end_only_their_own(tmp_path):
    """Two agents in one process: an interrupt of one kills its commands, not the other's,
    escapees included; a release lets background processes live on."""
    mine, theirs = ProcessTracker(), ProcessTracker()
    assert mine.supervisor_path() is not None  # built with the system compiler

    def start(tracker: ProcessTracker, tag: str) -> int:
        launch = tracker.launch(["bash", "-c", f"setsid sleep 300 & echo $! > {tag}; sleep 300"])
        proc = subprocess.Popen(launch.argv, pass_fds=launch.pass_fds, cwd=tmp_path,
                                start_new_session=True, stdout=subprocess.DEVNULL)
        launch.started()
        tracker.add(proc.pid, supervised=True)
        wait_for(lambda: (tmp_path / tag).exists() and (tmp_path / tag).read_text())
        return int((tmp_path / tag).read_text())

    my_escapee, their_escapee = start(mine, "mine"), start(theirs, "theirs")
    try:
        mine.kill_all(grace=0.2)
        assert_no_survivors([my_escapee])
        assert is_alive(their_escapee)
        theirs.release()
        time.sleep(0.3)
        assert is_alive(their_escapee)  # released: left alone
    finally:
        theirs.kill_all(grace=0)
        for pid in (my_escapee, their_escapee):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

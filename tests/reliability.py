"""Shared checks for the reliability tests: session record, child processes, agent launch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from helpers import AGENT, DEFAULT_SIGNALS, AgentRun, agent_env, parse_jsonl

# Retries in tests wait ~10 ms, not the production 200 ms, so a run with many faults is fast.
FAST_RETRY_ENV = {"BASEAGENT_RETRY_BASE_DELAY": "0.01", "BASEAGENT_RETRY_MAX_DELAY": "0.05"}


def shell(command: str) -> dict:
    return {"name": "shell", "arguments": {"command": command}}


def session_records(home: Path, thread_id: str) -> list[dict[str, Any]]:
    """Every line of the run's session record, each parsed (a torn line fails the test)."""
    path = home / ".baseagent" / "sessions" / f"{thread_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_session_complete(home: Path, run: AgentRun) -> list[dict[str, Any]]:
    """The record holds meta, the history, every event the consumer saw, and the usage."""
    thread_id = run.events[0]["thread_id"]
    records = session_records(home, thread_id)
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "meta" and records[0]["thread_id"] == thread_id
    assert kinds[-1] == "usage", kinds[-3:]
    recorded = [r["event"] for r in records if r["kind"] == "event"]
    shown = [e for e in run.events if e["type"] != "item.updated"]
    assert recorded == shown
    roles = [r["message"]["role"] for r in records if r["kind"] == "message"]
    assert roles[:3] == ["system", "user", "user"], roles
    return records


def process_state(pid: int) -> str | None:
    """The /proc state letter, or None when the pid is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()[0].decode()


def is_alive(pid: int) -> bool:
    """A zombie counts as dead: this container's init does not reap orphans."""
    return process_state(pid) not in (None, "Z", "X")


def assert_no_survivors(pids: list[int], timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(is_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if is_alive(p)], "child processes outlived the agent"


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def start_agent(args: list[str], *, cwd: Path, home: Path, api_base: str,
                env_extra: dict[str, str] | None = None) -> subprocess.Popen:
    """The agent as a live process (to signal it); stdout/stderr are read at the end."""
    cmd = [*DEFAULT_SIGNALS, sys.executable, str(AGENT), "--model", "openai/scripted", "--api-base", api_base,
           *args]
    # A run that does not end in time is aborted with its threads' stacks on stderr (finish)
    env = agent_env(home, PYTHONFAULTHANDLER="1", **(env_extra or {}))
    return subprocess.Popen(cmd, cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen, timeout: float = 30) -> AgentRun:
    """The run's end; one that has not ended within `timeout` fails the test with where each
    of its threads was (SIGABRT: the interpreter's fault handler prints their stacks)."""
    import signal

    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        raise AssertionError(f"the agent had not exited {timeout:g} s later; its threads:\n"
                             f"{err.decode('utf-8', 'replace')[-8_000:]}") from None
    stdout = out.decode("utf-8")  # strict: stdout must be valid UTF-8
    return AgentRun(proc.returncode, stdout, err.decode("utf-8", "replace"),
                    parse_jsonl(stdout))


def sigterm(proc: subprocess.Popen, timeout: float = 20) -> tuple[AgentRun, float]:
    """SIGTERM the agent and wait for it: (its run, seconds from the signal to its exit)."""
    import signal

    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    run = finish(proc, timeout=timeout)
    return run, time.monotonic() - sent


def wait_for(predicate: Any, timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def kill_quietly(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.kill(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait(10)

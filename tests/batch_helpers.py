"""Running `baseagent batch` as a subprocess against one scripted server shared by its tasks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from baseagent.testing.keyed import KeyedResponder, instruction_of
from helpers import AGENT, agent_env


def write_task(n: int, content: str | None = None) -> list[dict[str, Any]]:
    """Three model calls: write out_<n>.txt, read it back with a command, answer."""
    content = content if content is not None else f"hello {n}\n"
    return [
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"file_path": f"out_{n}.txt", "content": content}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": f"cat out_{n}.txt"}}]},
        {"content": f"wrote out_{n}.txt"},
    ]


def responder(scripts: dict[str, Sequence[dict[str, Any]]]) -> KeyedResponder:
    return KeyedResponder(lambda instruction: scripts.get(instruction))


def requests_per_instruction(server: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for body in server.requests:
        key = instruction_of(body)
        counts[key] = counts.get(key, 0) + 1
    return counts


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def batch_command(tasks: Path, out: Path, api_base: str, *extra: str) -> list[str]:
    return [sys.executable, str(AGENT), "batch", str(tasks), "--out", str(out),
            "--model", "openai/scripted", "--api-base", api_base, "--no-verify", *extra]


def run_batch(tasks: Path, out: Path, api_base: str, *extra: str, home: Path, cwd: Path,
              timeout: float = 240, env_extra: dict[str, str] | None = None,
              env_drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = agent_env(home, **(env_extra or {}))
    for name in env_drop:
        env.pop(name, None)
    return subprocess.run(batch_command(tasks, out, api_base, *extra), cwd=cwd,
                          env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def start_batch(tasks: Path, out: Path, api_base: str, *extra: str, home: Path,
                cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(batch_command(tasks, out, api_base, *extra), cwd=cwd,
                            env=agent_env(home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def results(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def children_of(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


def processes_running(needle: str, exact: bool = False) -> list[int]:
    """Pids whose command line holds `needle` (or, exact, is it: one per command run, not
    also the shell or sandbox wrapper that has it among its arguments)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if (cmdline.rstrip() == needle.encode()) if exact else (needle.encode() in cmdline):
            found.append(int(name))
    return found


def tree_snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}

"""Shared pieces of the MCP and OpenAPI tests: config files, local servers, process checks."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from reliability import is_alive

DEMO_SERVER = Path(__file__).resolve().parent / "mcp_servers" / "demo_server.py"


def demo(mode: str = "stdio", tag: str = "", **keys: Any) -> dict[str, Any]:
    """A `[mcp_servers.NAME]` table starting the demo server; `tag` (an extra argument the
    server ignores) lets a test find the process afterwards."""
    return {"command": sys.executable, "args": [str(DEMO_SERVER), mode, tag], **keys}


def toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}"
                                for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)  # strings, numbers, booleans: JSON spelling is TOML's


def write_config(path: Path, tables: dict[str, dict[str, dict[str, Any]]],
                 top: dict[str, Any] | None = None) -> Path:
    """A TOML config: top-level keys, then `[KIND.NAME]` tables (mcp_servers, openapi)."""
    lines = [f"{key} = {toml_value(value)}" for key, value in (top or {}).items()]
    for kind, entries in tables.items():
        for name, table in entries.items():
            lines.append(f"[{kind}.{name}]")
            lines += [f"{key} = {toml_value(value)}" for key, value in table.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def processes_with(tag: str) -> list[int]:
    """Live processes whose command line holds `tag`."""
    needle = tag.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if needle in cmdline and is_alive(int(name)):
            found.append(int(name))
    return found


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """The pids still alive after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(is_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if is_alive(p)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

"""Fixtures of the serve tests: the scripted model server answering each turn of each
thread from its own script, and a live `baseagent serve` (uvicorn on 127.0.0.1, a free
port) in this process, with its thread registry."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from helpers import require

try:
    import httpx
    from baseagent.serve import extra_missing
    MISSING = extra_missing()
except ImportError as exc:  # pragma: no cover - httpx comes with litellm
    MISSING = str(exc)

TOKEN = "test-token-0123456789abcdef"


def require_serve() -> None:
    require(MISSING is None, f"{MISSING} (pip install -e '.[serve]')")


class TurnScripts:
    """A scripted-server responder: each turn plays the script of its instruction (the
    last user message), step k being the k-th model call since it; an unknown instruction
    answers one line saying so. Several threads, several turns, one server."""

    def __init__(self, scripts: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.scripts = dict(scripts or {})
        self.requests: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any], _index: int) -> dict[str, Any] | None:
        from baseagent.records.messages import content_text

        self.requests.append(body)
        messages = body.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"),
                        default=0)
        instruction = content_text(messages[last_user].get("content")) if messages else ""
        step = sum(1 for m in messages[last_user:] if m.get("role") == "assistant")
        steps = self.scripts.get(instruction)
        if steps is None:
            return {"content": f"no script for {instruction[:60]!r}"}
        return dict(steps[step]) if step < len(steps) else {"content": "(script over)"}


@pytest.fixture
def scripts() -> Iterator[TurnScripts]:
    from baseagent.testing.scripted_server import ScriptedServer

    responder = TurnScripts()
    server = ScriptedServer(responder).start()
    responder.server = server  # type: ignore[attr-defined]
    try:
        yield responder
    finally:
        server.stop()


def start_server(scripts: TurnScripts, workspace: Path, home: Path, **extra: Any) -> Any:
    from baseagent.serve.command import Background, ServeOptions

    api_base = scripts.server.api_base  # type: ignore[attr-defined]
    defaults = {"model": "openai/scripted", "api_base": api_base,
                "cwd": str(workspace), "verify": False, "session_dir": str(home / "sessions")}
    defaults.update(extra.pop("defaults", {}))
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "OPENAI_API_KEY": "sk-test-dummy"}
    return Background(ServeOptions(port=0, defaults=defaults, **extra), env, TOKEN)


@pytest.fixture
def served(scripts: TurnScripts, workspace: Path, tmp_path: Path) -> Iterator[Any]:
    require_serve()
    server = start_server(scripts, workspace, tmp_path / "home")
    try:
        yield server
    finally:
        server.stop()


class Api:
    """An HTTP client of the server, with the token."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.http = httpx.Client(base_url=server.url, timeout=30,
                                 headers={"Authorization": f"Bearer {TOKEN}"})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.http, name)

    def create(self, **body: Any) -> dict[str, Any]:
        response = self.http.post("/api/threads", json=body)
        assert response.status_code == 201, response.text
        return response.json()

    def events(self, thread_id: str, *, until: tuple[str, ...] = (
            "turn.completed", "turn.failed", "turn.requires_action"),
            fmt: str = "codex", last_event_id: str | None = None, count: int | None = None,
            timeout: float = 60, ends: int = 1) -> list[tuple[str, dict[str, Any]]]:
        """(id, event) read from the stream until the `ends`-th event whose type is in
        `until` (or `count` events)."""
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        out: list[tuple[str, dict[str, Any]]] = []
        deadline = time.monotonic() + timeout
        with self.http.stream("GET", f"/api/threads/{thread_id}/events?format={fmt}",
                              headers=headers, timeout=timeout) as response:
            assert response.status_code == 200, response.read()
            event_id = ""
            for line in response.iter_lines():
                assert time.monotonic() < deadline, f"no end after {timeout}s: {out[-3:]}"
                if line.startswith("id:"):
                    event_id = line[3:].strip()
                elif line.startswith("data:"):
                    event = json.loads(line[5:])
                    out.append((event_id, event))
                    if event.get("type") in until:
                        ends -= 1
                    if ends == 0 or (count is not None and len(out) >= count):
                        return out
        return out

    def wait_status(self, thread_id: str, *statuses: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            info = self.http.get(f"/api/threads/{thread_id}").json()
            if info["status"] in statuses:
                return info
            assert time.monotonic() < deadline, f"status stayed {info['status']}"
            time.sleep(0.05)

    def wait_approval(self, thread_id: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            info = self.http.get(f"/api/threads/{thread_id}").json()
            if info["approvals"]:
                return info["approvals"][0]
            assert time.monotonic() < deadline, "no approval question came"
            time.sleep(0.05)


@pytest.fixture
def api(served: Any) -> Iterator[Api]:
    client = Api(served)
    try:
        yield client
    finally:
        client.http.close()

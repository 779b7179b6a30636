"""Shared pytest fixtures."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from baseagent.testing.scripted_server import ScriptedServer


@pytest.fixture
def scripted_server() -> Iterator[Callable[..., ScriptedServer]]:
    """Factory: `srv = scripted_server(steps, **opts)` starts a server; all stop at teardown."""
    started: list[ScriptedServer] = []

    def start(script: Any, **opts: Any) -> ScriptedServer:
        server = ScriptedServer(script, **opts).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory for an agent run (a test module may override it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private HOME, so session records and config never touch the real one."""
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture(params=["auto", "litellm"])
def transport_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment of an end-to-end run on each path a model call can take
    (llm/route.py): `auto` serves the scripted server's wires directly, `litellm`
    through litellm. One behaviour either way."""
    return {"BASEAGENT_MODEL_TRANSPORT": request.param}

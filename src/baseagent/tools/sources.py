"""Long-lived tool sources (MCP servers, OpenAPI documents): started early, stopped at the end.

A source's tools are only known once it is up (a server must start and list its tools, a
document must be fetched), so the agent starts every source when it is made, in the
background, while litellm imports; waits for them when the first turn connects; and stops
them in `Agent.close()`. A source that fails is one notice: the run goes on without it.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Callable, Protocol

from baseagent.tools.tool import Tool


class ToolSource(Protocol):
    """name: for notices. Every method may be called from any thread; `kill()` must be safe
    in a signal handler (send signals, nothing else)."""

    name: str

    def start(self) -> None:
        """Begin starting up in the background; returns at once."""

    def wait(self, cancelled: Callable[[], bool]) -> list[str]:
        """Block until started (or failed, or past its own timeout); the notices to show
        (one line each: what failed and that the run goes on without it)."""

    def tools(self, taken: set[str]) -> list[Tool]:
        """The tools it offers now that it is up, in a stable order, named so that no name
        is in `taken` (every other tool of the run); adds its names to `taken`."""

    def close(self) -> None:
        """Stop: close connections, end the processes it started (and their children)."""

    def kill(self) -> None:
        """The process is about to exit at once: kill what it started, now."""


class ToolSources:
    """The sources of one agent, handled as one."""

    def __init__(self, sources: Iterable[ToolSource] = ()) -> None:
        self._sources = list(sources)
        self._started = False
        self._closed = False

    def __bool__(self) -> bool:
        return bool(self._sources)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._sources)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        for source in self._sources:
            source.start()

    def wait(self, cancelled: Callable[[], bool]) -> list[str]:
        self.start()
        notices: list[str] = []
        for source in self._sources:
            notices.extend(source.wait(cancelled))
        return notices

    def tools(self, taken: set[str]) -> list[Tool]:
        return [tool for source in self._sources for tool in source.tools(taken)]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._started:
            return
        for source in self._sources:
            try:
                source.close()
            except Exception:  # noqa: BLE001 - closing one must not leave the others running
                source.kill()

    def kill(self) -> None:
        for source in self._sources:
            source.kill()

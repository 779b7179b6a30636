"""Tool providers (AgentB's IToolProvider): an object of the caller's that supplies tools,
passed to `Agent(tools=[...])` beside functions and Tool objects, or in a Toolset.

    class Tracker(baseagent.ToolProvider):
        name = "tracker"
        def get_tools(self):            # may be slow: it runs in the background
            return [lookup_ticket, close_ticket]   # functions or Tool objects
        def close(self):                # optional: called by Agent.close()
            self.session.close()

A provider is a long-lived tool source (tools/sources.py): `get_tools()` runs on its own
thread when the agent is made, the first turn waits for it (PROVIDER_TIMEOUT_SECONDS at
most), and a provider that fails or hangs is one notice: the run goes on without its tools.
A tool whose name is taken by another tool of the run is offered as `PROVIDER__NAME`.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any, Callable, Protocol, runtime_checkable

from baseagent.tools.context import ToolContext
from baseagent.tools.tool import Tool, ToolResult

# How long the first turn waits for a provider's tools.
PROVIDER_TIMEOUT_SECONDS = 60.0
MAX_NAME_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@runtime_checkable
class ToolProvider(Protocol):
    """What a provider has: a `name` (for notices and renamed tools) and `get_tools()`;
    `close()` has a default (nothing to close). Subclass it to inherit the default; any
    object with `name` and `get_tools` is held to it by `adopt_provider()`."""

    name: str

    def get_tools(self) -> Sequence[Any]:
        """The tools: functions (tools/python_tool.py) or Tool objects."""
        ...

    def close(self) -> None:
        """The agent is closing: release what the tools hold. Default: nothing."""


class _AdoptedProvider(ToolProvider):
    def __init__(self, obj: Any, close: Callable[[], None] | None) -> None:
        self.provider = obj
        self.name = str(obj.name)
        self.get_tools = obj.get_tools  # type: ignore[method-assign]
        if close is not None:
            self.close = close  # type: ignore[method-assign]


def is_provider(obj: Any) -> bool:
    """Whether `Agent(tools=[obj])` takes `obj` as a provider: a ToolProvider subclass, or an
    object with `name` and `get_tools` that is not a tool (no `run`)."""
    if isinstance(obj, type):
        return False
    return ToolProvider in type(obj).__mro__ or (
        hasattr(obj, "get_tools") and hasattr(obj, "name") and not hasattr(obj, "run"))


def adopt_provider(obj: Any) -> ToolProvider:
    """The one place a provider's members are looked for (the `close` hook's default)."""
    if ToolProvider in type(obj).__mro__:
        return obj
    if not is_provider(obj):
        raise TypeError(f"{type(obj).__name__} is not a ToolProvider (it needs name and "
                        "get_tools())")
    return _AdoptedProvider(obj, obj.close if hasattr(obj, "close") else None)


class ProviderSource:
    """A provider as a ToolSource (tools/sources.py): get_tools() on its own thread."""

    def __init__(self, provider: Any, timeout: float = PROVIDER_TIMEOUT_SECONDS) -> None:
        self.provider = adopt_provider(provider)
        self.name = self.provider.name
        self.timeout = timeout
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._tools: list[Tool] = []
        self._problem = ""

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name=f"provider-{self.name}",
                                            daemon=True)
            self._thread.start()

    def _load(self) -> None:
        from baseagent.tools.python_tool import as_tool

        try:
            self._tools = [as_tool(obj) for obj in self.provider.get_tools()]
        except Exception as exc:  # noqa: BLE001 - a failing provider must not end the run
            self._problem = f"{type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    def wait(self, cancelled: Callable[[], bool]) -> list[str]:
        self.start()
        waited = 0.0
        while not self._done.wait(0.05):
            waited += 0.05
            if cancelled():
                return []
            if waited > self.timeout:
                self._problem = f"get_tools() took longer than {self.timeout:g}s"
                break
        if self._problem:
            return [f"tool provider '{self.name}' failed: {self._problem}; continuing "
                    "without its tools"]
        return []

    def tools(self, taken: set[str]) -> list[Tool]:
        if self._problem or not self._done.is_set():
            return []
        out: list[Tool] = []
        for tool in self._tools:
            name = tool.name
            if name in taken:
                name = free_name(f"{_UNSAFE.sub('_', self.name)}__{name}", taken)
                tool = Renamed(tool, name)
            taken.add(name)
            out.append(tool)
        return out

    def close(self) -> None:
        self.provider.close()

    def kill(self) -> None:
        """Nothing of its own to kill."""


def free_name(wanted: str, taken: set[str]) -> str:
    """`wanted` (cut to the providers' limit), numbered until no tool has it."""
    name = wanted[:MAX_NAME_LENGTH]
    number = 2
    while name in taken:
        name = f"{wanted[:MAX_NAME_LENGTH - 4]}_{number}"
        number += 1
    return name


class Renamed(Tool):
    """A tool offered under another name (its items keep the tool's own `tool_name`)."""

    def __init__(self, tool: Tool, name: str) -> None:
        self.tool = tool
        self.name = name
        self.description = tool.description
        self.item_type = tool.item_type
        self.server = tool.server

    @property
    def tool_name(self) -> str:
        return self.tool.tool_name

    def parameters(self) -> dict[str, Any]:
        return self.tool.parameters()

    def parse(self, data: dict[str, Any]) -> Any:
        return self.tool.parse(data)

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return self.tool.run(args, ctx)

    def planned_changes(self, args: Any, ctx: ToolContext) -> list[dict[str, str]]:
        return self.tool.planned_changes(args, ctx)

    def named_changes(self, args: Any, ctx: ToolContext) -> list[dict[str, str]]:
        return self.tool.named_changes(args, ctx)

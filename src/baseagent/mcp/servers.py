"""The MCP servers of one agent: started together in the background, called from the loop,
stopped (process trees included) at the end.

The SDK is asynchronous and the loop is not, so the servers live on one event loop in one
thread per agent. Each server is one task that connects (stdio: start the command; HTTP:
open the session), lists its tools and then holds the connection open until `close()`;
the startup timeout is a deadline on that task, lifted once the tools are listed. Tool
calls are submitted to that loop from the loop's thread and waited for with the server's
`tool_timeout_sec`, checking the run's cancellation as they wait.

A server that cannot be started (missing command, exits at once, hangs past its timeout,
refuses the connection) is one notice, and the run goes on without it. A server that dies
during a call fails that call with a clear message, and its tools fail at once afterwards;
an error the server answers with (JSON-RPC, whatever its code) is "the server rejected the
call (code N): message".

A stdio server runs under the command supervisor (sandbox/supervisor.c, when it can be
built), so its whole process tree, double-forked `setsid` daemons included, is ended with
it, and by the supervisor itself if the agent dies. The SDK kills the server's process
group when it closes the connection; the agent also tracks each server (found by a marker
variable in its environment) and kills what is left, at once when the process must exit.
Its stderr is read through a pipe of which only the last STDERR_TAIL_BYTES are kept.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
import selectors
import shutil
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

from baseagent.config.sources import McpServerConfig
from baseagent.mcp.launch import MARKER_VAR, LaunchError, http_headers, server_env
from baseagent.mcp.tools import McpTool, call_result, qualified_name, select
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolResult
from baseagent.tools.procs import ProcessTracker, children_with_env

# How often waits look at the clock, the cancellation flag and /proc.
POLL_SECONDS = 0.05
# Importing the SDK takes seconds (more while litellm imports beside it); a server's own
# startup timeout starts when it is launched, after that.
IMPORT_ALLOWANCE_SECONDS = 60.0
# The SDK's own shutdown is bounded (close stdin, 2 s, SIGTERM, 2 s, SIGKILL); past this
# the agent kills what is left itself.
CLOSE_TIMEOUT_SECONDS = 8.0
# Between SIGTERM and SIGKILL for what survives the SDK's shutdown.
KILL_GRACE_SECONDS = 0.5
# Lines of a failed server's stderr quoted in its notice.
STDERR_TAIL_LINES = 3
# How much of a server's stderr is kept (the newest part): a server writing gigabytes there
# costs nothing.
STDERR_TAIL_BYTES = 64 * 1024
MISSING_SDK = ("the `mcp` package is not installed (pip install 'baseagent[mcp]', "
               "or pip install 'mcp>=2.3,<3')")


class McpServers:
    """A ToolSource (tools/sources.py) over every enabled `[mcp_servers.NAME]`."""

    name = "mcp"

    def __init__(self, configs: Mapping[str, McpServerConfig], *, env: Mapping[str, str],
                 cwd: Path) -> None:
        self._connections = [_Connection(name, config, env, cwd)
                             for name, config in configs.items() if config.enabled]
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started_at = 0.0
        self.processes = ProcessTracker()

    @property
    def connections(self) -> list["_Connection"]:
        return list(self._connections)

    # -- ToolSource ------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None or not self._connections:
            return
        self._started_at = time.monotonic()
        self._thread = threading.Thread(target=self._main, name="baseagent-mcp", daemon=True)
        self._thread.start()

    def wait(self, cancelled: Callable[[], bool]) -> list[str]:
        self.start()
        for connection in self._connections:
            limit = self._started_at + IMPORT_ALLOWANCE_SECONDS + \
                connection.config.startup_timeout_sec
            while not connection.settled.wait(POLL_SECONDS):
                self._track()
                if cancelled():
                    return []
                if time.monotonic() > limit:
                    connection.fail(f"did not start within {limit - self._started_at:.0f}s")
        self._track()
        return [c.notice() for c in self._connections if c.state == "failed"]

    def tools(self, taken: set[str]) -> list[McpTool]:
        tools = []
        for connection in self._connections:
            if connection.state != "ready":
                continue
            for tool in connection.tools:
                tools.append(McpTool(
                    name=qualified_name(connection.name, tool["name"], taken),
                    server=connection.name, tool=tool["name"],
                    description=tool.get("description") or tool.get("title") or "",
                    schema=tool.get("inputSchema"), call=connection.caller(self)))
        return tools

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if thread is None:
            return
        self._track()
        if loop is not None and not loop.is_closed():
            for connection in self._connections:
                try:
                    loop.call_soon_threadsafe(connection.stop)
                except RuntimeError:  # the loop has just finished
                    pass
        thread.join(CLOSE_TIMEOUT_SECONDS)
        self.processes.kill_all(KILL_GRACE_SECONDS)
        for connection in self._connections:
            connection.release()

    def kill(self) -> None:
        self.processes.kill_all(0)

    # -- the servers' thread ----------------------------------------------------------------

    def _main(self) -> None:
        try:
            import anyio  # noqa: F401
            import mcp  # noqa: F401 - the SDK
        except ImportError:
            for connection in self._connections:
                connection.fail(MISSING_SDK)
            return
        async def serve_all() -> None:
            await asyncio.gather(*(c.serve() for c in self._connections),
                                 return_exceptions=True)

        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(serve_all())
            loop.run_until_complete(loop.shutdown_asyncgens())
        except BaseException as exc:  # noqa: BLE001 - never a silent dead thread
            for connection in self._connections:
                connection.fail(f"the MCP client stopped: {type(exc).__name__}: {exc}")
        finally:
            loop.close()

    def _track(self) -> None:
        """Register the sessions of server processes that have appeared since last time."""
        for connection in self._connections:
            if connection.config.command is None or connection.pid is not None:
                continue
            pids = children_with_env(MARKER_VAR, connection.marker)
            if pids:
                connection.pid = pids[0]
                # Started with setsid: its pid is its session; under the supervisor, that is
                # what SIGTERM ends the whole tree through.
                self.processes.add(pids[0], supervised=connection.supervised)

    def submit(self, coroutine: Any) -> concurrent.futures.Future:
        loop = self._loop
        if loop is None or loop.is_closed():
            coroutine.close()
            raise RuntimeError("the MCP servers' event loop is not running")
        return asyncio.run_coroutine_threadsafe(coroutine, loop)


class _Connection:
    """One server: its state, its tools, and its task on the servers' loop."""

    def __init__(self, name: str, config: McpServerConfig, env: Mapping[str, str],
                 cwd: Path) -> None:
        self.name = name
        self.config = config
        self.marker = uuid.uuid4().hex
        self.state = "starting"  # starting | ready | failed | crashed | stopped
        self.error = ""
        self.tools: list[dict[str, Any]] = []
        self.settled = threading.Event()
        self.pid: int | None = None
        self.supervised = False
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._stderr: StderrTail | None = None
        self._http_error = ""  # the last HTTP error status, which the SDK's errors omit
        try:
            self._env = server_env(config, env, self.marker) if config.command else {}
            self._headers = http_headers(config, env) if config.url else {}
        except LaunchError as exc:
            self._env, self._headers = {}, {}
            self.fail(str(exc))
        self._cwd = config.cwd if config.cwd is not None else cwd

    # -- state ---------------------------------------------------------------------------

    def fail(self, reason: str) -> None:
        if self.state == "starting":
            self.state, self.error = "failed", reason
        self.settled.set()

    def notice(self) -> str:
        return f"MCP server '{self.name}' failed to start: {self.error}; continuing without it"

    def stop(self) -> None:
        """On the loop's thread: end the connection (the task then closes the transport)."""
        if self._stop is not None:
            self._stop.set()

    def release(self) -> None:
        if self._stderr is not None:
            self._stderr.close()

    # -- on the loop -----------------------------------------------------------------------

    async def serve(self) -> None:
        if self.state != "starting":
            return
        import anyio
        from mcp import Client
        from mcp_types import Implementation

        from baseagent import __version__

        self._stop = asyncio.Event()
        try:
            with anyio.CancelScope(
                    deadline=anyio.current_time() + self.config.startup_timeout_sec) as scope:
                async with self._transport() as transport:
                    client = Client(transport, client_info=Implementation(
                        name="baseagent", version=__version__))
                    async with client:
                        listing = await _list_tools(client)
                        scope.deadline = math.inf
                        self._ready(client, listing)
                        await self._stop.wait()
            if scope.cancelled_caught and self.state == "starting":
                self.fail(f"did not start within {self.config.startup_timeout_sec:g}s "
                          f"(startup_timeout_sec){self._stderr_tail()}")
        except BaseException as exc:  # noqa: BLE001 - any failure is this server's notice
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            http = f" ({self._http_error})" if self._http_error else ""
            self.fail(describe_failure(exc, self.config) + http + self._stderr_tail())
            if self.state == "ready":
                self.state, self.error = "crashed", describe_failure(exc, self.config)
        finally:
            if self.state in ("ready", "starting"):
                self.state = "stopped" if self.state == "ready" else "failed"
                self.error = self.error or "stopped before it was ready"
            self._client = None
            self.settled.set()

    def _transport(self) -> Any:
        """The SDK transport (an async context manager) for this server."""
        from contextlib import asynccontextmanager

        config = self.config

        @asynccontextmanager
        async def transport():  # type: ignore[no-untyped-def]
            if config.command is not None:
                from mcp import StdioServerParameters
                from mcp.client.stdio import stdio_client

                self._stderr = StderrTail()
                command, args = self._command()
                params = StdioServerParameters(command=command, args=args, env=self._env,
                                               cwd=str(self._cwd))
                yield stdio_client(params, errlog=self._stderr.writer)
            else:
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                async def note_status(response: Any) -> None:
                    if response.status_code >= 400:
                        self._http_error = f"HTTP {response.status_code} from {config.url}"

                timeout = httpx2.Timeout(30.0, read=max(300.0, config.tool_timeout_sec))
                async with httpx2.AsyncClient(headers=self._headers, timeout=timeout,
                                              event_hooks={"response": [note_status]}) as http:
                    yield streamable_http_client(config.url or "", http_client=http)

        return transport()

    def _command(self) -> tuple[str, list[str]]:
        """The server's command, under the supervisor when there is one: no lifeline (the
        SDK's launcher passes no fds, so the supervisor's verified file in the package's
        `_bin/`, sandbox/supervisor.py), the subtree killed when the servers' thread ends."""
        from baseagent.sandbox.supervisor import executable

        config = self.config
        assert config.command is not None
        binary = executable()
        supervisor = binary.file if binary else None
        if supervisor is None or shutil.which(config.command, path=self._env.get("PATH")) is None:
            return config.command, list(config.args)  # a missing command: the SDK says so
        self.supervised = True
        return supervisor, ["--parent-death", str(os.getpid()), "-1", "-1",
                            str(int(KILL_GRACE_SECONDS * 1000)), "--", config.command,
                            *config.args]

    def _ready(self, client: Any, listing: list[Any]) -> None:
        names = select([t.name for t in listing], self.config.enabled_tools,
                       self.config.disabled_tools)
        by_name = {t.name: t for t in listing}
        self.tools = [by_name[n].model_dump(mode="json", by_alias=True, exclude_none=True)
                      for n in sorted(set(names))]
        self._client = client
        self.state = "ready"
        self.settled.set()

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        lines = [line.strip() for line in self._stderr.text().splitlines() if line.strip()]
        return f" (stderr: {' | '.join(lines[-STDERR_TAIL_LINES:])})" if lines else ""

    # -- calls, from the agent's loop thread -----------------------------------------------

    def caller(self, servers: McpServers) -> Callable[[str, dict[str, Any], ToolContext],
                                                     ToolResult]:
        def call(tool: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return self.call(servers, tool, arguments, ctx)

        return call

    def call(self, servers: McpServers, tool: str, arguments: dict[str, Any],
             ctx: ToolContext) -> ToolResult:
        client = self._client
        if self.state != "ready" or client is None:
            return ToolResult(output=f"Error: MCP server '{self.name}' is not running "
                                     f"({self.error or self.state}); its tools are unavailable",
                              success=False)
        timeout = self.config.tool_timeout_sec
        try:
            future = servers.submit(client.call_tool(tool, arguments,
                                                     read_timeout_seconds=timeout))
        except RuntimeError as exc:
            return ToolResult(output=f"Error: MCP server '{self.name}': {exc}", success=False)
        deadline = time.monotonic() + timeout + 1.0
        while True:
            try:
                result = future.result(POLL_SECONDS)
                break
            except concurrent.futures.TimeoutError:
                if ctx.cancelled():
                    future.cancel()
                    return ToolResult(output=f"Error: the call to {tool} was interrupted",
                                      success=False)
                if time.monotonic() > deadline:
                    future.cancel()
                    return self._timed_out(tool)
            except concurrent.futures.CancelledError:
                return ToolResult(output=f"Error: the call to {tool} was cancelled",
                                  success=False)
            except Exception as exc:  # noqa: BLE001 - every failure is a result for the model
                return self._call_failed(tool, exc)
        content = [block.model_dump(mode="json", by_alias=True, exclude_none=True)
                   for block in result.content]
        return call_result(content, result.structured_content, bool(result.is_error))

    def _timed_out(self, tool: str) -> ToolResult:
        return ToolResult(output=f"Error: MCP tool {tool} of server '{self.name}' did not answer "
                                 f"within {self.config.tool_timeout_sec:g}s (tool_timeout_sec)",
                          success=False)

    def _call_failed(self, tool: str, exc: BaseException) -> ToolResult:
        from mcp import MCPError

        if isinstance(exc, TimeoutError) or sdk_error(exc) == "timeout":
            return self._timed_out(tool)
        if sdk_error(exc) == "closed":
            self.state = "crashed"
            self.error = f"it closed the connection during a call to {tool}"
            return ToolResult(output=f"Error: MCP server '{self.name}' stopped during the call "
                                     f"to {tool} (connection closed){self._stderr_tail()}; its "
                                     "tools are unavailable for the rest of the run",
                              success=False)
        if isinstance(exc, MCPError):
            return ToolResult(output=f"Error: calling {tool} on MCP server '{self.name}': the "
                                     f"server rejected the call (code {exc.error.code}): "
                                     f"{exc.error.message}", success=False)
        return ToolResult(output=f"Error: calling {tool} on MCP server '{self.name}' failed: "
                                 f"{describe_failure(exc, self.config)}", success=False)


def sdk_error(exc: BaseException) -> str | None:
    """"closed" or "timeout" when the SDK itself raised `exc` (the connection closed, the
    read timeout passed), None for anything else, an error the server sent included: a
    server may answer with any code, -32000 and -32001 too, so the SDK's own are told apart
    by their exact messages (mcp/shared/jsonrpc_dispatcher.py), which carry no data."""
    try:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
    except ImportError:  # pragma: no cover - the SDK was importable to get here
        return None
    if not isinstance(exc, MCPError) or exc.error.data is not None:
        return None
    if exc.error.code == CONNECTION_CLOSED and exc.error.message == "Connection closed":
        return "closed"
    if exc.error.code == REQUEST_TIMEOUT and exc.error.message.startswith("Request ") \
            and exc.error.message.endswith(" timed out"):
        return "timeout"
    return None


class StderrTail:
    """A server's stderr: a pipe drained by a thread that keeps the newest bytes only."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        read, write = os.pipe()  # close-on-exec, as Python makes every fd (no pipe2: macOS)
        os.set_blocking(read, False)
        self._read: int | None = read
        self.writer = os.fdopen(write, "w")  # what the server's stderr is made of
        self._limit = limit
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        threading.Thread(target=self._drain, name="mcp-stderr", daemon=True).start()

    def _drain(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._read, selectors.EVENT_READ)
            while not self._closed.is_set():
                if selector.select(0.2) and not self._take():
                    break

    def _take(self) -> bool:
        """Read what is there now; False at end of file (or once closed)."""
        with self._lock:
            while self._read is not None:
                try:
                    chunk = os.read(self._read, 65536)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                if not chunk:
                    return False
                self._tail += chunk
                del self._tail[:max(0, len(self._tail) - self._limit)]
            return False

    def text(self) -> str:
        self._take()  # what the server wrote just before it exited
        with self._lock:
            return self._tail.decode("utf-8", errors="replace")

    def close(self) -> None:
        self._closed.set()
        if not self.writer.closed:
            self.writer.close()
        with self._lock:
            if self._read is not None:
                os.close(self._read)
                self._read = None


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(100):  # a server whose cursor never ends cannot hang the start
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def describe_failure(exc: BaseException, config: McpServerConfig) -> str:
    """One line for what went wrong, from the innermost error of a task group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and config.command is not None:
        return f"command not found: {config.command}"
    if isinstance(exc, PermissionError) and config.command is not None:
        return f"cannot execute {config.command}: permission denied"
    if sdk_error(exc) == "closed":
        return "the server closed the connection before it was ready (did it exit?)"
    name = type(exc).__name__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if "Connect" in name and config.url:
        return f"cannot connect to {config.url}: {text or name}"
    return f"{name}: {text}" if text else name

"""An MCP server written with the official SDK, for the tests: `python demo_server.py MODE`.

MODE: stdio (the default) | http PORT TOKEN (streamable HTTP on 127.0.0.1, every request
must carry `Authorization: Bearer TOKEN`) | exit (dies before the handshake) | hang
(never answers). Tools: echo, add, fail (an isError result), slow, crash (the process
exits mid-call), spawn_child (starts a grandchild process and returns its pid, to check
that the agent kills server process trees), daemon (a double-forked setsid grandchild, out
of the server's process group and session), flood_stderr (megabytes on stderr), reject
(answers with a JSON-RPC error of the given code).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "stdio"
if MODE == "exit":
    print("demo_server: refusing to start: missing configuration", file=sys.stderr)
    sys.exit(3)
if MODE == "hang":
    time.sleep(600)
    sys.exit(0)

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402

app = MCPServer("demo")


@app.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return f"echo: {text}"


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(reason)


@app.tool()
def slow(seconds: float, started_file: str = "") -> str:
    """Sleep, then answer (writing `started_file` first, when given)."""
    if started_file:
        with open(started_file, "w") as handle:
            handle.write(str(os.getpid()))
    time.sleep(seconds)
    return "slept"


@app.tool()
def crash() -> str:
    """The server process dies in the middle of the call."""
    os._exit(7)


@app.tool()
def spawn_child(pid_file: str = "") -> str:
    """Start a long-lived child process (same process group) and return its pid (also
    written to `pid_file`, when given)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    if pid_file:
        with open(pid_file, "w") as handle:
            handle.write(str(child.pid))
    return str(child.pid)


@app.tool()
def daemon(pid_file: str) -> str:
    """Double-fork a `setsid` grandchild that sleeps (and leaves the process group and
    session); its pid goes to `pid_file`."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(pid_file, "w") as handle:
                handle.write(str(os.getpid()))
            os.execvp("sleep", ["sleep", "600"])
        os._exit(0)
    return "started"


@app.tool()
def flood_stderr(megabytes: int) -> str:
    """Write that many megabytes to stderr, then a last line."""
    chunk = "x" * 1023 + "\n"
    for _ in range(megabytes * 1024):
        sys.stderr.write(chunk)
    sys.stderr.write("flood done\n")
    sys.stderr.flush()
    return "flooded"


@app.tool()
def reject(code: int, message: str) -> str:
    """Answer with a JSON-RPC error instead of a result."""
    from mcp.shared.exceptions import MCPError

    raise MCPError(code=code, message=message)


def serve_http(port: int, token: str) -> None:
    import uvicorn

    inner = app.streamable_http_app()

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await inner(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    if MODE == "http":
        serve_http(int(sys.argv[2]), sys.argv[3])
    else:
        app.run()

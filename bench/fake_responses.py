"""A scripted OpenAI Responses API server on 127.0.0.1, for running Codex CLI in bench/.

Codex CLI speaks the Responses API (`POST /v1/responses`, server-sent events); baseagent's
scripted server speaks chat completions and Anthropic's Messages API. This plays the same
kind of script for Codex: N shell steps, then a final message, with zero model latency.

The server keeps no state between requests: the step a request gets is the number of tool
outputs already in its `input`, so any number of sessions (sequential or repeated) share
one server. The shell call is shaped after the tool the request offers (Codex names it
`shell`, `shell_command` or `exec_command`, depending on the model and version). Every
POST's arrival time is recorded (headers read, before the body), and the time its answer
had been written, as the scripted server records its own.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def shell_call(tools: list[dict[str, Any]], command: str) -> tuple[str, str]:
    """(tool name, arguments JSON) of a call running `command` with the offered shell tool."""
    names = {t.get("name") or (t.get("function") or {}).get("name") for t in tools}
    if "shell_command" in names:
        return "shell_command", json.dumps({"command": command})
    if "exec_command" in names:
        return "exec_command", json.dumps({"cmd": command})
    if "shell" in names:
        return "shell", json.dumps({"command": ["bash", "-lc", command]})
    raise ValueError(f"the request offers no shell tool: {sorted(n for n in names if n)}")


def events(body: dict[str, Any], number: int, steps: int, command: str,
           final: str) -> list[dict[str, Any]]:
    """The SSE events answering one request."""
    done = sum(1 for item in body.get("input") or []
               if isinstance(item, dict) and item.get("type") in TOOL_OUTPUTS)
    response = {"id": f"resp_{number}", "object": "response", "created_at": int(time.time()),
                "model": body.get("model") or "fake", "status": "in_progress", "output": [],
                "usage": None}
    out: list[dict[str, Any]] = [{"type": "response.created", "response": response},
                                 {"type": "response.in_progress", "response": response}]
    if done < steps:
        name, arguments = shell_call(body.get("tools") or [],
                                     command.format(step=done + 1))
        item = {"id": f"fc_{number}", "type": "function_call", "status": "in_progress",
                "call_id": f"call_{number}", "name": name, "arguments": ""}
        finished = {**item, "status": "completed", "arguments": arguments}
        out += [{"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.function_call_arguments.delta", "item_id": item["id"],
                 "output_index": 0, "delta": arguments},
                {"type": "response.function_call_arguments.done", "item_id": item["id"],
                 "output_index": 0, "arguments": arguments},
                {"type": "response.output_item.done", "output_index": 0, "item": finished}]
        text = arguments
    else:
        item = {"id": f"msg_{number}", "type": "message", "status": "in_progress",
                "role": "assistant", "content": []}
        part = {"type": "output_text", "text": final, "annotations": []}
        finished = {**item, "status": "completed", "content": [part]}
        base = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        out += [{"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.content_part.added", **base,
                 "part": {**part, "text": ""}},
                {"type": "response.output_text.delta", **base, "delta": final},
                {"type": "response.output_text.done", **base, "text": final},
                {"type": "response.content_part.done", **base, "part": part},
                {"type": "response.output_item.done", "output_index": 0, "item": finished}]
        text = final
    prompt = max(1, len(json.dumps(body)) // 4)
    usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": max(1, len(text) // 4),
             "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": prompt + max(1, len(text) // 4)}
    out.append({"type": "response.completed",
                "response": {**response, "status": "completed", "output": [finished],
                             "usage": usage}})
    return out


class FakeResponses:
    """The server. `steps` and `command` may be changed between sessions."""

    def __init__(self, steps: int = 3, command: str = "echo step-{step}",
                 final: str = "All steps done.") -> None:
        self.steps, self.command, self.final = steps, command, final
        self.arrivals: list[float] = []  # time.time() of each POST /v1/responses
        self.answered: dict[float, float] = {}  # arrival -> time.time() its answer was written
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> "FakeResponses":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def since(self, t0: float) -> list[float]:
        with self._lock:
            return [t for t in self.arrivals if t >= t0]

    def answers_since(self, t0: float) -> list[float | None]:
        """When the answer to each request since `t0` had been written (None: not yet)."""
        with self._lock:
            return [self.answered.get(t) for t in self.arrivals if t >= t0]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *_args: Any) -> None:
        pass

    def _reply(self, status: int, data: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self) -> None:  # the model list some clients ask for
        self._reply(200, json.dumps({"object": "list", "data": [
            {"id": "gpt-5.5", "object": "model", "created": 0, "owned_by": "fake"}]}).encode())

    def do_POST(self) -> None:
        arrived = time.time()
        owner: FakeResponses = self.server.owner  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/responses"):
            self._reply(404, b'{"error": {"message": "not found"}}')
            return
        if "zstd" in (self.headers.get("Content-Encoding") or ""):
            self._reply(415, b'{"error": {"message": "compressed bodies are not read"}}')
            return
        with owner._lock:
            owner.arrivals.append(arrived)
            number = len(owner.arrivals)
        body = json.loads(raw or b"{}")
        data = "".join(f"event: {e['type']}\ndata: {json.dumps(dict(e, sequence_number=i))}\n\n"
                       for i, e in enumerate(events(body, number, owner.steps, owner.command,
                                                    owner.final))).encode()
        self._reply(200, data, "text/event-stream")
        with owner._lock:
            owner.answered[arrived] = time.time()

"""A scripted model server: the agent's offline stand-in for a provider.

It speaks OpenAI's chat completions and Anthropic's Messages API, and the agent reaches it
through litellm exactly as it reaches a real provider (`--model openai/<name>` or
`--model anthropic/<claude model>` with `--api-base http://127.0.0.1:PORT/v1`), so tests
exercise the real HTTP, SSE and SDK parsing path instead of a mocked client. Each request plays the next step
of a script (see baseagent.testing.script); every request is recorded for assertions.

    with ScriptedServer([{"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
                         {"content": "Done."}]) as srv:
        run_agent(api_base=srv.api_base)
        assert len(srv.requests) == 2

CLI (demos, other languages' CI):
    python -m baseagent.testing.scripted_server --script steps.json [--port N]
        [--context-window N] [--prefix-cache] [--anthropic-cache] [--record FILE] [--loop]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import signal
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Sequence

from baseagent.testing import anthropic_wire
from baseagent.testing.anthropic_wire import ANTHROPIC_WIRE, has_cache_control
from baseagent.testing.script import (EXHAUSTED_TEXT, FAULTS, OPENAI_WIRE, ErrorReply,
                                      RequestInfo, ScriptError, Wire, WirePlan,
                                      context_length_reply, error_body,
                                      estimate_prompt_tokens, prompt_parts, resolve_answer,
                                      tokens_of_chars, validate_step)

Responder = Callable[[dict, int], "dict | None"]
OnRequest = Callable[[dict], None]

HOST = "127.0.0.1"  # never reachable from outside the machine
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODELS_PATHS = ("/v1/models", "/models")
EXHAUSTED_MODES = ("message", "error")
# Errors that only mean the client went away; not worth a traceback.
_DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class PrefixCache:
    """Simulated provider prompt cache, at message granularity.

    A request's prompt is its tool definitions followed by its messages (canonical JSON,
    cache markers removed). Every prefix ending at a message boundary is remembered by a
    running hash, so a lookup costs one hash per message regardless of how many earlier
    requests there were, and a 100K-token history costs one pass over its text.

    OpenAI style (default): every prefix of every answered request becomes cacheable.
    Anthropic style: only prefixes ending at a part that carries cache_control are written,
    and a request reads only up to its own last cache_control marker.
    """

    def __init__(self, anthropic: bool = False) -> None:
        self.anthropic = anthropic
        self._seen: dict[bytes, int] = {}  # prefix hash -> prefix length in chars

    def lookup_and_store(self, parts: Sequence[str], marked: Sequence[bool]) -> int:
        """Cached chars for this prompt; then remember its prefixes for later requests."""
        return self.read_and_write(parts, marked)[0]

    def read_and_write(self, parts: Sequence[str], marked: Sequence[bool]) -> tuple[int, int]:
        """(chars read from the cache, chars written to it) for this prompt. Only the
        Anthropic style reports writes: the prefix up to the last breakpoint, less what was
        read (OpenAI-style caches are not billed for writes and do not report them)."""
        digest = hashlib.blake2b(digest_size=16)
        hashes: list[bytes] = []
        for part in parts:
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\x1e")  # part separator: ["ab","c"] must differ from ["a","bc"]
            hashes.append(digest.copy().digest())
        limit = len(parts)
        if self.anthropic:
            limit = max((i + 1 for i, m in enumerate(marked) if m), default=0)
        cached = max((self._seen[h] for h in hashes[:limit] if h in self._seen), default=0)
        chars = 0
        for i, (part, h) in enumerate(zip(parts, hashes)):
            chars += len(part)
            if not self.anthropic or marked[i]:
                self._seen[h] = chars
        written = 0
        if self.anthropic and limit:
            written = max(0, sum(len(p) for p in parts[:limit]) - cached)
        return cached, written


def _cache_marks(body: dict) -> list[bool]:
    """Which prompt parts (see prompt_parts) end at a cache_control breakpoint."""
    marks = [has_cache_control(body["tools"])] if body.get("tools") else []
    marks.extend(has_cache_control(m) for m in body.get("messages") or [])
    return marks


class ScriptedServer:
    """Serves a script of steps on 127.0.0.1 over two protocols: OpenAI chat completions
    (`POST /v1/chat/completions`, `--model openai/...`) and Anthropic's Messages API
    (`POST /v1/messages`, `--model anthropic/...`); the same steps play on either.

    script: a list of step dicts (played in order, one per request) or a callable
    `responder(request_body, index) -> step | None` (None means exhausted).
    context_window: answer OpenAI's context_length_exceeded 400 when the request's
    estimated prompt tokens exceed it (the step is not consumed).
    prefix_cache / anthropic_cache: report simulated cached tokens (see PrefixCache).
    exhausted: "message" answers EXHAUSTED_TEXT, "error" answers HTTP 500; both count
    in `overruns` so a test can assert the agent stopped in time.
    on_request: called with each parsed request body as it arrives (the CLI's --record).
    loop: a list script starts over from its first step when it runs out, so a demo works
    again and again against one server (`exhausted` then never applies).
    """

    def __init__(self, script: Iterable[dict] | Responder, *, context_window: int | None = None,
                 prefix_cache: bool = False, anthropic_cache: bool = False,
                 exhausted: str = "message", on_request: OnRequest | None = None,
                 port: int = 0, verbose: bool = False, loop: bool = False) -> None:
        if exhausted not in EXHAUSTED_MODES:
            raise ValueError(f"exhausted must be one of {EXHAUSTED_MODES}, got {exhausted!r}")
        self._lock = threading.Lock()
        self._responder: Responder | None = script if callable(script) else None
        self._steps: list[dict] = []
        if self._responder is None:
            self.extend(script)  # type: ignore[arg-type]
        self.context_window = context_window
        self.exhausted = exhausted
        self.loop = loop  # a list script starts over when it runs out (demos)
        self.on_request = on_request
        self.verbose = verbose
        self._cache = (PrefixCache(anthropic=anthropic_cache)
                       if prefix_cache or anthropic_cache else None)
        self._port = port
        self._requests: list[dict] = []
        self._times: list[float] = []
        self._answered: dict[float, float] = {}  # arrival time -> answer sent
        self._next = 0  # index of the next step to play
        self.overruns = 0
        self.errors: list[str] = []  # script errors met while serving (bad responder steps)
        # Anthropic requests refused as the real API would (400), e.g. a history without the
        # thinking blocks extended thinking needs: the reason of each, in order.
        self.refusals: list[str] = []
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> "ScriptedServer":
        if self._httpd is not None:
            return self
        self._httpd = _HTTPServer((HOST, self._port), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="scripted-model-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut open keep-alive connections so nothing answers afterwards."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_base(self) -> str:
        return self.url + "/v1"

    @property
    def requests(self) -> list[dict]:
        """Parsed JSON bodies of every chat request received, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_times(self) -> list[float]:
        """time.time() at the arrival of each request in `requests`: when its headers had
        been read, before its body was read and parsed (for a multi-megabyte history that is
        server work, which timing the client must not count)."""
        with self._lock:
            return list(self._times)

    @property
    def answer_times(self) -> list[float | None]:
        """time.time() when the answer to each request in `requests` had been written (None
        while it is still being answered): from there to the next request's arrival is the
        client's time alone, the server's parse of a long history left out."""
        with self._lock:
            return [self._answered.get(t) for t in self._times]

    @property
    def steps_served(self) -> int:
        """Script steps consumed so far (faults count; context refusals and overruns do not)."""
        with self._lock:
            return self._next

    @property
    def remaining(self) -> int | None:
        """Steps left in a list script (None for a responder)."""
        if self._responder is not None:
            return None
        with self._lock:
            return max(0, len(self._steps) - self._next)

    def extend(self, steps: Iterable[dict]) -> None:
        """Append steps to a list script (validated now, so a typo fails the test early)."""
        if self._responder is not None:
            raise TypeError("cannot extend a responder script")
        new = list(steps)
        with self._lock:
            base = len(self._steps)
            for i, step in enumerate(new):
                validate_step(step, f"step {base + i}")
            self._steps.extend(new)

    # -- request handling (called from handler threads) --------------------------------------

    def _note_answered(self, arrived: float) -> None:
        with self._lock:
            self._answered[arrived] = time.time()

    def _handle_chat(self, handler: "_Handler", body: dict, wire: Wire = OPENAI_WIRE) -> None:
        arrived = getattr(handler, "arrived", None) or time.time()
        anthropic = wire is ANTHROPIC_WIRE
        parts = anthropic_wire.prompt_parts(body) if anthropic else prompt_parts(body)
        prompt_tokens = estimate_prompt_tokens(parts)
        model = str(body.get("model") or "scripted")
        with self._lock:
            self._requests.append(body)
            self._times.append(arrived)
            number = len(self._requests)
            if self.on_request is not None:
                self.on_request(body)
            problem = anthropic_wire.check_request(body) if anthropic else None
            if problem is not None:  # refused like the real API: no step is consumed
                self.refusals.append(problem)
                reply: ErrorReply | None = ErrorReply(400, anthropic_wire.error_body(problem))
            elif self.context_window is not None and prompt_tokens > self.context_window:
                reply = (anthropic_wire.context_length_reply if anthropic
                         else context_length_reply)(self.context_window, prompt_tokens)
            else:
                reply = None
                index = self._next
                step = self._step_for(body, index)
                if step is None and self.loop and self._steps:
                    index = self._next = 0  # --loop: the script starts over
                    step = self._steps[0]
                if step is None:
                    self.overruns += 1  # not consumed: a later extend() is played next
                else:
                    self._next += 1
        if reply is not None:
            handler.send_json(reply.status, reply.body, reply.headers)
            return
        if step is None:
            if self.exhausted == "error":
                reply = wire.error(ErrorReply(500, error_body(
                    f"{EXHAUSTED_TEXT}: no step for request {number}", "server_error",
                    "script_exhausted")))
                handler.send_json(reply.status, reply.body)
                return
            step = {"content": EXHAUSTED_TEXT}
        if isinstance(step, ScriptError):
            reply = wire.error(ErrorReply(500, error_body(str(step), "server_error",
                                                          "script_error")))
            handler.send_json(reply.status, reply.body)
            return
        if step.get("delay") and self._stopping.wait(float(step["delay"])):
            return
        fault = FAULTS[step["fault"]] if "fault" in step else None
        if fault is not None and fault.reply is not None:
            info = RequestInfo(prompt_tokens, self.context_window, model)
            reply = fault.reply(step, info)
            if step["fault"] == "context_length" and anthropic:
                reply = anthropic_wire.context_length_reply(
                    int(step.get("window") or self.context_window or max(1, prompt_tokens - 1)),
                    prompt_tokens)
            reply = wire.error(reply)
            handler.send_json(reply.status, reply.body, reply.headers)
            return
        cached = written = 0
        if self._cache is not None:
            marks = anthropic_wire.cache_marks(body) if anthropic else _cache_marks(body)
            with self._lock:
                read_chars, write_chars = self._cache.read_and_write(parts, marks)
            cached, written = tokens_of_chars(read_chars), tokens_of_chars(write_chars)
        answer = resolve_answer(step, prompt_tokens=prompt_tokens, cached_tokens=cached,
                                cache_write_tokens=written,
                                call_prefix=f"toolu_{index}" if anthropic else f"call_{index}",
                                model=model,
                                completion_id=(f"msg_scripted_{number}" if anthropic
                                               else f"chatcmpl-scripted-{number}"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if fault is not None and fault.plan is not None:
            handler.send_plan(fault.plan(step, answer, include_usage, wire),
                              bool(body.get("stream")), float(step.get("chunk_delay") or 0),
                              wire)
        elif body.get("stream"):
            handler.send_frames(wire.frames(answer, include_usage),
                                float(step.get("chunk_delay") or 0), wire)
        else:
            handler.send_json(200, wire.body(answer))

    def _step_for(self, body: dict, index: int) -> "dict | ScriptError | None":
        """The step for this request; a ScriptError (not raised) when a responder misbehaves."""
        if self._responder is None:
            return self._steps[index] if index < len(self._steps) else None
        try:
            step = self._responder(body, index)
            return None if step is None else validate_step(step, f"responder step {index}")
        except Exception as exc:  # noqa: BLE001 - a test's responder bug becomes a 500
            error = exc if isinstance(exc, ScriptError) else ScriptError(
                f"responder failed at step {index}: {type(exc).__name__}: {exc}")
            self.errors.append(str(error))
            return error


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up is normal in tests; anything else still gets reported."""
        exc = sys.exc_info()[1]
        if isinstance(exc, _DISCONNECTS) or (isinstance(exc, OSError)
                                             and self.owner._stopping.is_set()):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked SSE, like real providers
    server: _HTTPServer
    server_version = "ScriptedModel/1"

    def setup(self) -> None:
        super().setup()
        # Many small SSE writes: without this, Nagle + delayed ACK add ~40 ms per response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        owner = self.server.owner
        with owner._lock:
            owner._conns.add(self.connection)

    def finish(self) -> None:
        owner = self.server.owner
        with owner._lock:
            owner._conns.discard(self.connection)
        try:
            super().finish()
        except _DISCONNECTS:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.owner.verbose:
            sys.stderr.write("scripted-server: " + (format % args) + "\n")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in MODELS_PATHS:
            self.send_json(200, {"object": "list", "data": [
                {"id": "scripted", "object": "model", "created": 0, "owned_by": "baseagent"}]})
        else:
            self.send_json(404, error_body(f"Unknown path {path}", "invalid_request_error",
                                           "unknown_url"))

    def do_POST(self) -> None:
        self.arrived = time.time()  # before the body: see ScriptedServer.request_times
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            raw = self._read_body()
        except _DISCONNECTS:
            self.close_connection = True
            return
        if path not in CHAT_PATHS and path not in anthropic_wire.MESSAGES_PATHS:
            self.send_json(404, error_body(f"Unknown path {path}", "invalid_request_error",
                                           "unknown_url"))
            return
        wire = ANTHROPIC_WIRE if path in anthropic_wire.MESSAGES_PATHS else OPENAI_WIRE
        try:
            body = json.loads(raw or b"null")
        except ValueError as exc:
            body = None
            problem = f"invalid JSON body: {exc}"
        else:
            problem = "the body must be a JSON object"
        if not isinstance(body, dict):
            self.send_json(400, error_body(problem, "invalid_request_error", None))
            return
        try:
            self.server.owner._handle_chat(self, body, wire)
        except _DISCONNECTS:
            self.close_connection = True
        finally:
            self.server.owner._note_answered(self.arrived)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def send_json(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def send_frames(self, frames: Iterable[str], chunk_delay: float, wire: Wire) -> None:
        """Server-sent events over chunked encoding, one flushed frame per event."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        stopping = self.server.owner._stopping
        for i, frame in enumerate(frames):
            if i and chunk_delay and stopping.wait(chunk_delay):
                self.close_connection = True
                return
            self._frame(frame.encode())
        if wire.done_frame:
            self._frame(wire.done_frame.encode())
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def send_plan(self, plan: WirePlan, stream: bool, chunk_delay: float,
                  wire: Wire = OPENAI_WIRE) -> None:
        """Play a wire fault: the plan's events (or its cut JSON body), then its ending."""
        stopping = self.server.owner._stopping
        self.close_connection = True  # whatever happens next, this connection is done
        if plan.empty_body or (not stream and plan.body == ""):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8" if stream
                             else "application/json")
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.wfile.flush()
            return
        if not stream:
            self._play_json(plan)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for i, frame in enumerate(plan.events):
            if i and chunk_delay and stopping.wait(chunk_delay):
                return
            self._frame(frame.encode())
        if plan.ending == "done":
            if wire.done_frame:
                self._frame(wire.done_frame.encode())
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        elif plan.ending == "eof":
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        else:
            self._end_badly(plan)

    def _play_json(self, plan: WirePlan) -> None:
        """The non-streaming form of a plan: the JSON body, cut or replaced as the plan says."""
        data = (plan.body or "").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if plan.ending == "done":
            self.wfile.write(data)
            self.wfile.flush()
            return
        self.wfile.write(data[:len(data) // 2])
        self.wfile.flush()
        if plan.ending != "eof":
            self._end_badly(plan)

    def _end_badly(self, plan: WirePlan) -> None:
        if plan.ending == "stall":
            # Silence: the client must notice by itself. Ends early if the server stops.
            self.server.owner._stopping.wait(plan.stall_seconds if plan.stall_seconds
                                             is not None else None)
        elif plan.ending == "reset":
            # SO_LINGER with a zero timeout turns close() into a TCP RST.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()

    def _frame(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


# -- CLI ---------------------------------------------------------------------------------------

def load_script(path: str) -> list[dict]:
    """A JSON list of steps, or an object with a "steps" list."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, dict):
        data = data.get("steps")
    if not isinstance(data, list):
        raise ScriptError(f"{path}: expected a JSON list of steps (or {{\"steps\": [...]}})")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m baseagent.testing.scripted_server",
        description="Serve a scripted OpenAI-compatible model on 127.0.0.1.")
    parser.add_argument("--script", required=True, help="JSON file: a list of steps")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--context-window", type=int, default=None)
    parser.add_argument("--prefix-cache", action="store_true")
    parser.add_argument("--anthropic-cache", action="store_true")
    parser.add_argument("--exhausted", choices=EXHAUSTED_MODES, default="message")
    parser.add_argument("--record", help="append each request body to this JSONL file")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    parser.add_argument("--loop", action="store_true",
                        help="start the script over when it runs out (repeatable demos)")
    args = parser.parse_args(argv)
    try:
        steps = load_script(args.script)
        record = open(args.record, "w", encoding="utf-8") if args.record else None
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def on_request(body: dict) -> None:
        if record is not None:
            record.write(json.dumps(body) + "\n")
            record.flush()

    try:
        server = ScriptedServer(steps, context_window=args.context_window,
                                prefix_cache=args.prefix_cache,
                                anthropic_cache=args.anthropic_cache,
                                exhausted=args.exhausted, on_request=on_request,
                                port=args.port, verbose=args.verbose, loop=args.loop)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    server.start()
    print(f"listening on {server.url}", flush=True)
    try:
        while not done.wait(0.2):
            pass
    finally:
        server.stop()
        if record is not None:
            record.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

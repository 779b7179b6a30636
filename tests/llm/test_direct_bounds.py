"""The direct client against a hostile model server: what the server sends is read within
the caps of llm/limits.py, and an attempt given up stops reading at once.

The server runs in the test (raw sockets on 127.0.0.1); the client runs in a subprocess
under an address-space limit and a timeout, so a regression (a cap gone, an unbounded
read) fails the test instead of taking the machine. Each case says how the call ended,
how long it took and the client's peak memory.
"""
from __future__ import annotations

import json
import os
import random
import resource
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
# The client's address space: far above what a bounded read needs (the interpreter, the
# client and a few caps' worth of buffers), far below what an unbounded one reaches.
ADDRESS_SPACE = 1 << 30
PEAK_RSS_MB = 300  # what a bounded read stays under (a few caps' worth, and the interpreter)
CALL_SECONDS = 60  # the subprocess's timeout: a call that does not end fails the test

# The client, in its own process: one call through the direct path to the hostile
# server, then one JSON line: how it ended, how long it took, its peak memory.
DRIVER = r"""
import json, sys, time
from baseagent.llm.client import ModelClient
from baseagent.llm.route import choose

base, options = sys.argv[1], json.loads(sys.argv[2])
linger = options.pop("linger", 0)
route = choose("openai/hostile", api_base=base, api_key="sk-test", env={})
assert route is not None
held = {}
def progress(text, reasoning, calls=()):
    held["text"] = text  # as the loop does (core/loop.py _StreamItems.latest)
client = ModelClient(model="openai/hostile", api_base=base, api_key="sk-test", route=route,
                     retry_base_delay=0.01, retry_max_delay=0.05, **options)
started = time.monotonic()
try:
    turn = client.complete([{"role": "user", "content": "hi"}], on_progress=progress)
    outcome = {"ended": "answer", "text": len(turn.text)}
except Exception as exc:
    outcome = {"ended": type(exc).__name__, "message": str(exc)}
outcome["seconds"] = time.monotonic() - started
# the peak of this program (ru_maxrss would keep the forked test worker's, across exec)
status = open("/proc/self/status").read()
outcome["peak_mb"] = int(status.split("VmHWM:")[1].split()[0]) / 1024
print(json.dumps(outcome), flush=True)
time.sleep(linger)  # a socket the call left open stays open until the process ends
"""


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def call(base: str, **options: Any) -> dict[str, Any]:
    options.setdefault("max_retries", 1)
    options.setdefault("max_tokens", 1000)
    proc = subprocess.run([sys.executable, "-c", DRIVER, base, json.dumps(options)],
                          capture_output=True, text=True, timeout=CALL_SECONDS,
                          preexec_fn=limit_memory,
                          env={**os.environ, "PYTHONPATH": str(SRC)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


class Hostile:
    """A server that reads a request, then answers with `respond(send)`: `send(bytes)`
    raises once the client has gone. It records each connection: bytes sent, and how long
    after the request the client closed it."""

    def __init__(self, respond: Callable[[Callable[[bytes], None]], None]) -> None:
        self.respond = respond
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.connections: list[dict[str, Any]] = []
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        record: dict[str, Any] = {"sent": 0, "closed_after": None}
        self.connections.append(record)
        with conn:
            if not self._read_request(conn):
                return
            started = time.monotonic()

            def send(data: bytes) -> None:
                if self.stop.is_set() or time.monotonic() - started > CALL_SECONDS:
                    raise ConnectionError("the test is over")
                conn.sendall(data)
                record["sent"] += len(data)

            try:
                self.respond(send)
            except OSError:
                pass
            else:  # the answer is out: wait for the client to let go of the connection
                conn.settimeout(CALL_SECONDS)
                try:
                    while conn.recv(65536):
                        pass
                except OSError:
                    pass
            record["closed_after"] = time.monotonic() - started

    @staticmethod
    def _read_request(conn: socket.socket) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            block = conn.recv(65536)
            if not block:
                return False
            data += block
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            block = conn.recv(65536)
            if not block:
                return False
            body += block
        return True

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.fixture
def hostile():
    servers: list[Hostile] = []

    def start(respond: Callable[[Callable[[bytes], None]], None]) -> Hostile:
        servers.append(Hostile(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Connection: close\r\n\r\n")


def forever(send: Callable[[bytes], None], block: bytes) -> None:
    while True:
        send(block)


def test_an_endless_error_body_is_cut_and_its_status_read(hostile):
    def respond(send):
        send(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
             b"Connection: close\r\n\r\n")
        forever(send, b'{"error": "' + b"x" * 65536)

    server = hostile(respond)
    outcome = call(server.base)
    assert outcome["ended"] == "ModelError"
    assert "after 1 retries" in outcome["message"] and "500" in outcome["message"]
    assert outcome["peak_mb"] < PEAK_RSS_MB and outcome["seconds"] < 20
    assert len(server.connections) == 2  # the 500 retried as any other, then given up
    assert all(c["sent"] < 64 << 20 for c in server.connections)


def test_an_endless_event_ends_the_attempt(hostile):
    # `data:` lines with never a blank line: one event that never ends
    server = hostile(lambda send: (send(SSE_HEAD), forever(send, b"data: " + b"x" * 1000
                                                           + b"\n")))
    outcome = call(server.base)
    assert outcome["ended"] == "StreamLimitExceeded", outcome
    assert "one event" in outcome["message"] and "not retried" in outcome["message"]
    assert outcome["peak_mb"] < PEAK_RSS_MB and outcome["seconds"] < 20
    assert len(server.connections) == 1


def test_an_endless_line_ends_the_attempt(hostile):
    server = hostile(lambda send: (send(SSE_HEAD + b"data: "), forever(send, b"y" * 65536)))
    outcome = call(server.base)
    assert outcome["ended"] == "StreamLimitExceeded", outcome
    assert "one line" in outcome["message"]
    assert outcome["peak_mb"] < PEAK_RSS_MB and outcome["seconds"] < 20


def delta_blocks(count: int = 64) -> list[bytes]:
    """Blocks of well-formed chunks with random text (and never a finish reason)."""
    rng = random.Random(7)
    blocks = []
    for _ in range(count):
        events = []
        for _ in range(200):
            piece = "".join(rng.choice("abc def\n{}\"\\é") for _ in range(rng.randint(1, 40)))
            events.append(b"data: " + json.dumps(
                {"choices": [{"index": 0, "delta": {"content": piece}}]}).encode() + b"\n\n")
        blocks.append(b"".join(events))
    return blocks


def random_deltas(send: Callable[[bytes], None]) -> None:
    """Endless deltas: the blocks in a random order (never periodic, so the repetition
    guard, llm/repetition.py, does not end the answer first)."""
    blocks = delta_blocks()
    rng = random.Random(11)
    send(SSE_HEAD)
    while True:
        send(rng.choice(blocks))


def test_endless_deltas_end_at_the_reply_cap(hostile):
    server = hostile(random_deltas)
    outcome = call(server.base)
    assert outcome["ended"] == "StreamLimitExceeded", outcome
    assert "a reply over 2,097,152 characters" in outcome["message"]
    assert outcome["peak_mb"] < PEAK_RSS_MB and outcome["seconds"] < 30
    assert len(server.connections) == 1  # not retried


def test_endless_tool_arguments_end_at_the_reply_cap(hostile):
    def respond(send):
        send(SSE_HEAD)
        first = {"index": 0, "id": "c1", "function": {"name": "shell", "arguments": ""}}
        send(b"data: " + json.dumps({"choices": [{"delta": {"tool_calls": [first]}}]})
             .encode() + b"\n\n")
        rng = random.Random(3)  # random, or the repetition guard cuts it first
        while True:
            piece = {"index": 0, "function": {"arguments": "".join(
                rng.choice("abcdefgh ") for _ in range(4000))}}
            send(b"data: " + json.dumps({"choices": [{"delta": {"tool_calls": [piece]}}]})
                 .encode() + b"\n\n")

    outcome = call(hostile(respond).base)
    assert outcome["ended"] == "StreamLimitExceeded", outcome
    assert "a reply" in outcome["message"] and outcome["peak_mb"] < PEAK_RSS_MB


def test_an_output_cap_that_allows_more_allows_more(hostile):
    # The caps follow max_tokens: a real answer of 100k tokens is never cut
    server = hostile(random_deltas)
    outcome = call(server.base, max_tokens=100_000)
    assert outcome["ended"] == "StreamLimitExceeded"
    assert "a reply over 3,200,000 characters" in outcome["message"]


def test_what_follows_the_end_of_an_answer_is_not_read(hostile):
    # After [DONE] the rest of the body is read only to keep the connection (64 KiB at
    # most); an endless tail loses the connection, not the answer.
    def respond(send):
        send(SSE_HEAD + b'data: {"choices": [{"delta": {"content": "hi"}, '
             b'"finish_reason": "stop"}]}\n\ndata: [DONE]\n\n')
        forever(send, b"z" * 65536)

    server = hostile(respond)
    outcome = call(server.base)
    assert outcome == {**outcome, "ended": "answer", "text": 2}
    assert outcome["seconds"] < 10 and outcome["peak_mb"] < PEAK_RSS_MB


@pytest.mark.parametrize("stage", ["headers", "stream"])
def test_an_attempt_given_up_closes_its_socket(hostile, stage):
    # The client's own clock (request_timeout) gives the attempt up long before the
    # socket's read timeout (stream_idle_timeout): the server must see the connection shut
    # then, not when the read times out, nor never (a reader left beside the retry).
    def respond(send):  # then silent, the connection open, until the client shuts it
        if stage == "stream":
            send(SSE_HEAD + b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n')

    server = hostile(respond)
    outcome = call(server.base, request_timeout=1.0, stream_idle_timeout=40.0, max_retries=0,
                   linger=4)
    assert outcome["ended"] == "ModelError" and "request exceeded 1s" in outcome["message"]
    closed = server.connections[0]["closed_after"]
    # shut when the client gave up, not when its process ended (4 s later)
    assert closed is not None and closed < outcome["seconds"] + 2, (closed, outcome)


# -- Anthropic's fragments: data that is not JSON, kept until it reads as JSON -------------------

def test_unreadable_anthropic_data_is_kept_within_a_cap():
    from baseagent.llm.limits import StreamLimitExceeded
    from baseagent.llm.wire_anthropic import FRAGMENT_CHARS, _StreamParser

    parser = _StreamParser()
    assert parser.parse(None, "not json") is None
    with pytest.raises(StreamLimitExceeded, match="unreadable event data"):
        for _ in range(FRAGMENT_CHARS // 1000 + 2):
            parser.parse(None, "x" * 1000)


def test_rereading_fragments_is_capped():
    # Each line ending in a brace makes the parser try the whole buffer again: an open
    # string that never closes would make that quadratic without the cap on re-reading.
    from baseagent.llm.limits import StreamLimitExceeded
    from baseagent.llm.wire_anthropic import _StreamParser

    parser = _StreamParser()
    parser.parse(None, '{"type": "content_block_delta", "delta": {"text": "')
    started = time.process_time()
    with pytest.raises(StreamLimitExceeded, match="re-read"):
        for _ in range(1_000_000):
            parser.parse(None, "}")
    assert time.process_time() - started < 10

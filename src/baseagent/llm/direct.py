"""The direct transport: a provider's wire spoken over the standard library's http.client.

For the wires the project speaks itself (OpenAI-compatible chat completions,
llm/wire_openai.py; Anthropic's Messages API, llm/wire_anthropic.py) a request needs no
litellm: importing it takes seconds and ~150 MB, and its per-call work grows with the
history. Nor does it need httpx (with httpcore, ~0.1 s to import and a TLS context built
even for a plain-http local server): one kept-alive connection, one POST, server-sent
events read line by line. `DirectTransport.open` sends one request and returns the stream
of its chunks (llm/chunks.py), which llm/client.py reads with the same loop as litellm's,
so retries, usage, reasoning and events do not depend on the transport. Which calls take
this path is decided in llm/route.py, which also resolves the proxy and CA bundle from the
environment as httpx would (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY / NO_PROXY, SSL_CERT_FILE
/ SSL_CERT_DIR, else certifi's bundle).

Failures are raised as the retry policy reads litellm's: no answer at all as a
TransportFailure (the URL, the stage and the OS error under it), an HTTP error answer as a
ProviderError (llm/provider_errors.py), a stream that breaks after it started as a
MidStreamError.

What the server sends is read within the caps of llm/limits.py: an error body is cut at
its cap (and the connection closed), and a line, an event or a body past its cap ends the
attempt with StreamLimitExceeded. An `Attempt` lets the caller give a request up from
another thread: once it has a connection (sending, waiting for the headers, streaming) its
socket is shut, so the read blocked on it ends at once and nothing keeps reading beside the
retry; a connection still being made is closed as soon as it is made.
"""
from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any, Callable, Iterator, Protocol
from urllib.parse import urlsplit

from baseagent.llm.chunks import Chunk
from baseagent.llm.limits import StreamLimitExceeded, StreamLimits
from baseagent.llm.provider_errors import (MidStreamError, ProviderError, TransportFailure,
                                           provider_error)

READ_SIZE = 65536
# What is read of a body after the answer's end to keep its connection ([DONE] and what
# follows); a server that goes on past this loses the connection instead.
DRAIN_BYTES = 64 * 1024
# What reading an event the server wrote raises when it is not what the wire says: a
# shape the parser does not expect (a list where an object goes), a count that is not a
# number, nesting deeper than json takes. The stream is broken (a MidStreamError), as
# when its JSON does not parse.
_UNREADABLE = (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError)
# What a kept-alive connection the server has meanwhile closed looks like when reused:
# worth one more try on a fresh connection (nothing reached the server).
_STALE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError,
          http.client.RemoteDisconnected)


class Wire(Protocol):
    name: str

    def url(self, api_base: str) -> str: ...

    def headers(self, api_key: str) -> dict[str, str]: ...

    def body(self, messages: list[dict[str, Any]], params: dict[str, Any],
             tools: list[dict[str, Any]] | None) -> bytes: ...

    def stream_parser(self) -> Callable[[str | None, str], Chunk | None]:
        """A reader for one stream's events: (event name, data) -> chunk or None."""

    def second_attempt(self, error: Exception, messages: list[dict[str, Any]],
                       params: dict[str, Any]
                       ) -> tuple[list[dict[str, Any]], dict[str, Any]] | None: ...


class AttemptAbandoned(Exception):
    """The caller gave the attempt up (from another thread) before it had a connection."""


class Attempt:
    """One request's connection, which the caller may shut from any thread at any moment
    (`abort`): the read blocked on it ends at once, and a connection given up is never
    kept for another request. Once the exchange is over (`release`) aborting does
    nothing: the connection may be the idle one, kept for the next call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # The connection's socket, held here: http.client lets go of it (conn.sock = None)
        # once an answer that closes the connection has its headers, and reads the body
        # through the response alone
        self.sock: socket.socket | None = None
        self._watched = False
        self.aborted = False

    def watch(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self.aborted:
                self.sock, self._watched = conn.sock, True
                return
        conn.close()
        raise AttemptAbandoned("the attempt was abandoned")

    def release(self) -> bool:
        """The exchange is over: False when it had been aborted (drop the connection)."""
        with self._lock:
            self._watched = False
            return not self.aborted

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            sock = self.sock if self._watched else None
            self._watched = False
        _shut(sock)


def _shut(sock: socket.socket | None) -> None:
    """Shut a socket (from any thread: a read blocked on it returns at once)."""
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class DirectTransport:
    """One client's connection to its provider, kept alive between calls (one idle
    connection is kept; an attempt the caller abandoned takes its connection with it)."""

    def __init__(self, wire: Wire, route: Any,
                 limits: StreamLimits = StreamLimits.for_output(None)) -> None:
        self.wire = wire
        self.limits = limits
        self.url = wire.url(route.api_base)
        parts = urlsplit(self.url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._tls else 80)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._proxy = urlsplit(route.proxy) if route.proxy else None
        self._ca = (route.ca_file, route.ca_dir)
        self._headers = {**wire.headers(route.api_key), "User-Agent": route.user_agent,
                         "Accept-Encoding": "identity"}
        if not self._tls and self._proxy is not None:  # plain http through a proxy
            self._path = self.url
        self._idle: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()
        self._ssl: Any = None

    def open(self, body: bytes, timeout: float,
             second: Callable[[Exception], bytes | None] = lambda _e: None,
             attempt: Attempt | None = None) -> "DirectStream":
        """Send one request; returns once the answer's headers are in. An error answer is
        raised here, as a ProviderError, unless `second(error)` gives a body to send once
        more (litellm's fixes for picky servers, wire_openai.second_attempt). `attempt`:
        the handle another thread gives the request up with."""
        attempt = attempt if attempt is not None else Attempt()
        try:
            return self._send(body, timeout, attempt)
        except ProviderError as error:
            again = second(error)
            if again is None:
                raise
        return self._send(again, timeout, attempt)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, None
        if idle is not None:
            idle.close()

    def _send(self, body: bytes, timeout: float, attempt: Attempt) -> "DirectStream":
        conn = self._take()
        reused = conn is not None
        if conn is None:
            conn = self._connect(timeout)
        attempt.watch(conn)
        try:
            response = self._exchange(conn, body, timeout)
        except _STALE as exc:
            conn.close()
            if not reused:
                raise TransportFailure(self.url, "answer", exc) from exc
            conn = self._connect(timeout)  # the server had closed the idle connection
            attempt.watch(conn)
            try:
                response = self._exchange(conn, body, timeout)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            conn.close()
            raise
        if response.status >= 400:
            try:
                raw = _read_capped(response, self.limits.error_body).decode("utf-8", "replace")
            except (OSError, http.client.HTTPException):
                raw = ""
            self._done(conn, response, attempt)
            try:
                parsed = json.loads(raw) if raw.strip() else None
            except _UNREADABLE:
                parsed = None
            raise provider_error(self.wire.name, response.status, parsed, raw,
                                 _Answer(response.status, response.getheaders()))
        return DirectStream(self, conn, response, attempt)

    def _exchange(self, conn: http.client.HTTPConnection, body: bytes,
                  timeout: float) -> http.client.HTTPResponse:
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        try:
            conn.request("POST", self._path, body=body,
                         headers={**self._headers, "Content-Length": str(len(body))})
        except _STALE:
            raise
        except (OSError, http.client.HTTPException) as exc:
            raise TransportFailure(self.url, "send", exc) from exc
        try:
            return conn.getresponse()
        except _STALE:
            raise
        except (OSError, http.client.HTTPException) as exc:
            raise TransportFailure(self.url, "answer", exc) from exc

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        host, port = self._host, self._port
        if self._proxy is not None:
            host = self._proxy.hostname or ""
            port = self._proxy.port or (443 if self._proxy.scheme == "https" else 80)
        if self._tls:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=self._context())
            if self._proxy is not None:
                conn.set_tunnel(self._host, self._port)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise TransportFailure(self.url, "connect", exc) from exc
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _context(self) -> Any:
        if self._ssl is None:
            import ssl

            cafile, capath = self._ca
            if not cafile and not capath:
                try:
                    import certifi

                    cafile = certifi.where()
                except ImportError:  # the system's store, then
                    pass
            self._ssl = ssl.create_default_context(cafile=cafile or None,
                                                   capath=capath or None)
        return self._ssl

    def _take(self) -> http.client.HTTPConnection | None:
        with self._lock:
            conn, self._idle = self._idle, None
        return conn

    def _done(self, conn: http.client.HTTPConnection,
              response: http.client.HTTPResponse | None, attempt: Attempt) -> None:
        """The exchange on `conn` is over: keep the connection if it can carry another
        (and the attempt was not given up meanwhile)."""
        if not attempt.release() or response is None or response.will_close \
                or not response.isclosed():
            conn.close()
            return
        with self._lock:
            if self._idle is None:
                self._idle = conn
                return
        conn.close()


class _Answer:
    """What the retry policy reads of an error answer: its status and headers."""

    def __init__(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.status_code = status
        self.headers = {k.lower(): v for k, v in headers}


class DirectStream:
    """The chunks of one streamed answer, read from its server-sent events."""

    custom_llm_provider = "direct"

    def __init__(self, transport: DirectTransport, conn: http.client.HTTPConnection,
                 response: http.client.HTTPResponse, attempt: Attempt | None = None) -> None:
        self._transport = transport
        self._conn = conn
        self._response = response
        self._attempt = attempt if attempt is not None else Attempt()
        self._closed = False
        # What the provider itself said about finishing (llm/client.py reads it to tell a
        # finished answer from a cut one)
        self.received_finish_reason: str | None = None

    def __iter__(self) -> Iterator[Chunk]:
        parse = self._transport.wire.stream_parser()
        finished = False
        try:
            for event, data in _events(self._response, self._transport.limits):
                if data == "[DONE]":
                    finished = True
                    break
                chunk = _chunk_of(parse, event, data)
                if chunk is None:
                    continue
                for choice in chunk.choices:
                    if choice.finish_reason:
                        self.received_finish_reason = choice.finish_reason
                yield chunk
            else:
                finished = True
            if finished:  # the rest of the body, if short: the connection can be reused
                _read_capped(self._response, DRAIN_BYTES)
        except MidStreamError:
            self.close()
            raise
        except (OSError, http.client.HTTPException, ValueError) as exc:
            self.close()
            raise MidStreamError(exc) from exc
        except BaseException:
            self.close()
            raise
        if not self._closed:
            self._closed = True
            self._transport._done(self._conn, self._response, self._attempt)

    def close(self) -> None:
        """Give the answer up (from any thread): the connection is shut, which also ends a
        read blocked on it."""
        if self._closed:
            return
        self._closed = True
        self._attempt.release()
        _shut(self._attempt.sock)
        try:
            self._response.close()  # its file holds the socket open otherwise
        except Exception:  # noqa: BLE001 - a response read elsewhere as it closes
            pass
        self._conn.close()


def _chunk_of(parse: Callable[[str | None, str], Chunk | None], event: str | None,
              data: str) -> Chunk | None:
    """The chunk of one event; an event that cannot be read is a MidStreamError."""
    try:
        return parse(event, data)
    except MidStreamError:
        raise
    except _UNREADABLE as exc:
        raise MidStreamError(exc) from exc


def _read_capped(response: http.client.HTTPResponse, cap: int) -> bytes:
    """At most `cap` bytes of what is left of a body (a longer body is left unread: the
    connection will not be kept)."""
    parts: list[bytes] = []
    size = 0
    while size < cap:
        block = response.read1(min(READ_SIZE, cap - size))
        if not block:
            break
        parts.append(block)
        size += len(block)
    return b"".join(parts)


def _events(response: http.client.HTTPResponse,
            limits: StreamLimits) -> Iterator[tuple[str | None, str]]:
    """(event name, data) of each server-sent event (data lines joined by newlines),
    within `limits`: one line, one event's data and the whole body are capped.

    Each block is searched for line ends only in its new bytes, and a line is kept as a
    growing buffer, so an endless line costs its length once, not once per block."""
    event: str | None = None
    data: list[str] = []
    data_bytes = 0
    pending = bytearray()
    total = 0

    def take(raw: bytes) -> tuple[str | None, str] | None:
        nonlocal event, data, data_bytes
        line = raw.decode("utf-8").rstrip("\r")
        if not line:
            done = (event, "\n".join(data)) if data else None
            event, data, data_bytes = None, [], 0
            return done
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data_bytes += len(raw) + 1
            if data_bytes > limits.event:
                raise StreamLimitExceeded("one event", limits.event)
            data.append(value)
        elif field == "event":
            event = value
        return None

    while True:
        block = response.read1(READ_SIZE)
        if not block:
            break
        total += len(block)
        if total > limits.body:
            raise StreamLimitExceeded("a streamed body", limits.body)
        start = 0
        while True:
            end = block.find(b"\n", start)
            if end < 0:
                pending += block[start:]
                if len(pending) > limits.line:
                    raise StreamLimitExceeded("one line", limits.line)
                break
            if pending:
                pending += block[start:end]
                raw = bytes(pending)
                pending.clear()
            else:
                raw = block[start:end]
            start = end + 1
            if len(raw) > limits.line:
                raise StreamLimitExceeded("one line", limits.line)
            found = take(raw)
            if found is not None:
                yield found
    if bytes(pending).strip():
        line = pending.decode("utf-8").rstrip("\r")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield event, "\n".join(data)


def wire_for(route: Any, kept_reasoning: frozenset[str]) -> Wire:
    """The wire a route speaks, for one client."""
    if route.wire == "openai":
        from baseagent.llm.wire_openai import OpenAIWire

        return OpenAIWire(route.name, kept_reasoning)
    if route.wire == "anthropic":
        from baseagent.llm.wire_anthropic import AnthropicWire

        return AnthropicWire(route.name, kept_reasoning)
    raise ValueError(f"no direct wire {route.wire!r}")

"""The direct transport: a provider's wire spoken over httpx, without litellm.

For the wires the project speaks itself (OpenAI-compatible chat completions,
llm/wire_openai.py; Anthropic's Messages API, llm/wire_anthropic.py) a request needs no
litellm: importing it takes seconds and some 150 MB, and its per-call work grows with the
history. `DirectTransport.open` sends one request and returns the stream of its chunks
(llm/chunks.py), which llm/client.py reads with the same loop as litellm's, so retries,
usage, reasoning and events do not depend on the transport. Which calls take this path is
decided in llm/route.py.

What fails is raised as litellm's path would have it seen by the retry policy: a transport
error before the answer as the httpx exception itself (llm/retry.py names the URL and the
cause), an HTTP error answer as a ProviderError (llm/provider_errors.py), a stream that
breaks after it started as a MidStreamError.
"""
from __future__ import annotations

import json
import threading
from typing import Any, Callable, Iterator, Protocol

import httpx

from baseagent.llm.chunks import Chunk
from baseagent.llm.provider_errors import MidStreamError, ProviderError, provider_error


class Wire(Protocol):
    name: str

    def url(self, api_base: str) -> str: ...

    def headers(self, api_key: str) -> dict[str, str]: ...

    def body(self, messages: list[dict[str, Any]], params: dict[str, Any],
             tools: list[dict[str, Any]] | None) -> bytes: ...

    def parse(self, event: str | None, data: str) -> Chunk | None: ...

    def second_attempt(self, error: Exception, messages: list[dict[str, Any]],
                       params: dict[str, Any]
                       ) -> tuple[list[dict[str, Any]], dict[str, Any]] | None: ...


class DirectTransport:
    """One client's connection to its provider (kept alive between calls)."""

    def __init__(self, wire: Wire, api_base: str, api_key: str, user_agent: str) -> None:
        self.wire = wire
        self.url = wire.url(api_base)
        self._headers = {**wire.headers(api_key), "User-Agent": user_agent}
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def open(self, body: bytes, timeout: float,
             second: Callable[[Exception], bytes | None] = lambda _e: None) -> "DirectStream":
        """Send one request; returns once the answer's headers are in. An error answer is
        raised here, as a ProviderError, unless `second(error)` gives a body to send once
        more (litellm's fixes for picky servers, wire_openai.second_attempt)."""
        try:
            return self._send(body, timeout)
        except ProviderError as error:
            again = second(error)
            if again is None:
                raise
        return self._send(again, timeout)

    def _send(self, body: bytes, timeout: float) -> "DirectStream":
        client = self._connection()
        request = client.build_request("POST", self.url, content=body, headers=self._headers,
                                       timeout=httpx.Timeout(timeout))
        response = client.send(request, stream=True)
        if response.status_code >= 400:
            try:
                raw = response.read().decode("utf-8", "replace")
            finally:
                response.close()
            try:
                parsed = json.loads(raw) if raw.strip() else None
            except ValueError:
                parsed = None
            raise provider_error(self.wire.name, response.status_code, parsed, raw, response)
        return DirectStream(self.wire, response)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _connection(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                # trust_env: proxies and CA bundles from the environment, as litellm's and
                # openai's own httpx clients honour them
                self._client = httpx.Client(follow_redirects=True)
            return self._client


class DirectStream:
    """The chunks of one streamed answer, read from its server-sent events."""

    custom_llm_provider = "direct"

    def __init__(self, wire: Wire, response: httpx.Response) -> None:
        self._wire = wire
        self._response = response
        # What the provider itself said about finishing (llm/client.py reads it to tell a
        # finished answer from a cut one)
        self.received_finish_reason: str | None = None

    def __iter__(self) -> Iterator[Chunk]:
        try:
            for event, data in _events(self._response):
                if data == "[DONE]":
                    return
                chunk = self._wire.parse(event, data)
                if chunk is None:
                    continue
                for choice in chunk.choices:
                    if choice.finish_reason:
                        self.received_finish_reason = choice.finish_reason
                yield chunk
        except MidStreamError:
            raise
        except (httpx.HTTPError, OSError, UnicodeDecodeError) as exc:
            raise MidStreamError(exc) from exc
        finally:
            self._response.close()

    def close(self) -> None:
        self._response.close()


def _events(response: httpx.Response) -> Iterator[tuple[str | None, str]]:
    """(event name, data) of each server-sent event (data lines joined by newlines)."""
    event: str | None = None
    data: list[str] = []
    for line in response.iter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
    if data:
        yield event, "\n".join(data)


def wire_for(route: Any, kept_reasoning: frozenset[str]) -> Wire:
    """The wire a route speaks, for one client."""
    if route.wire == "openai":
        from baseagent.llm.wire_openai import OpenAIWire

        return OpenAIWire(route.name, kept_reasoning)
    raise ValueError(f"no direct wire {route.wire!r}")

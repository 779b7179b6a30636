"""The direct client's reading of server-sent events, fuzzed (hypothesis).

Bodies are built from the pieces SSE is made of and cut into reads at random places:
- the events read do not depend on where the reads were cut, and are what a plain reading
  of the whole body gives (the reference below, the SSE rules the parser follows);
- with small caps, a body past a cap (one line, one event's data, the whole body) ends in
  StreamLimitExceeded, having read at most one read beyond the byte that broke the cap,
  and a body within them is read whole;
- through either wire's parser, whatever the events hold, a stream ends in chunks, a
  MidStreamError (retried) or StreamLimitExceeded: never another exception.
"""
from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baseagent.llm.direct import DirectStream, DirectTransport, _events, wire_for
from baseagent.llm.limits import StreamLimitExceeded, StreamLimits
from baseagent.llm.provider_errors import MidStreamError

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
PIECES = [b"data: ", b"data:", b"event: ", b"message_start", b": comment", b"\n", b"\n",
          b"\r\n", b"\n\n", b"abc", b" ", b"{}", b"\xc3\xa9", b"[DONE]", b"retry: 1",
          b"x" * 40]
LARGE = StreamLimits(reply=1 << 20, event=1 << 20, line=1 << 20, body=1 << 24)


class Response:
    """What DirectStream reads of an http.client response: the body in given reads."""

    def __init__(self, body: bytes, cuts: list[int]) -> None:
        points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
        self.blocks = [body[a:b] for a, b in zip(points, points[1:]) if b > a]
        self.largest = max((len(b) for b in self.blocks), default=0)
        self.consumed = 0
        self.will_close = True

    def read1(self, n: int = -1) -> bytes:
        if not self.blocks:
            return b""
        block = self.blocks[0]
        if 0 < n < len(block):
            self.blocks[0], block = block[n:], block[:n]
        else:
            self.blocks.pop(0)
        self.consumed += len(block)
        return block

    def isclosed(self) -> bool:
        return not self.blocks

    def close(self) -> None:
        self.blocks = []


def reference(body: bytes, limits: StreamLimits) -> tuple[list[tuple[Any, str]], int | None]:
    """The events of a whole body by the SSE rules, and the offset of the first byte that
    breaks a cap (None when the body is within them)."""
    events: list[tuple[Any, str]] = []
    broken: list[int] = []
    if len(body) > limits.body:
        broken.append(limits.body + 1)
    *lines, trailing = body.split(b"\n")
    event, data, data_bytes, offset = None, [], 0, 0
    for raw in lines:
        if len(raw) > limits.line:
            broken.append(offset + limits.line + 1)
        offset += len(raw) + 1
        line = raw.decode().rstrip("\r")
        if not line:
            if data:
                events.append((event, "\n".join(data)))
            event, data, data_bytes = None, [], 0
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
            data_bytes += len(raw) + 1
            if data_bytes > limits.event:
                broken.append(offset)
        elif name == "event":
            event = value
    if len(trailing) > limits.line:
        broken.append(offset + limits.line + 1)
    if trailing.strip():
        line = trailing.decode().rstrip("\r")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        events.append((event, "\n".join(data)))
    return events, min(broken) if broken else None


def read(body: bytes, cuts: list[int], limits: StreamLimits
         ) -> tuple[list[tuple[Any, str]], BaseException | None, Response]:
    response = Response(body, cuts)
    got: list[tuple[Any, str]] = []
    try:
        for item in _events(response, limits):  # type: ignore[arg-type]
            got.append(item)
    except StreamLimitExceeded as exc:
        return got, exc, response
    return got, None, response


bodies = st.lists(st.sampled_from(PIECES), max_size=80).map(b"".join)
cuts = st.lists(st.integers(min_value=0, max_value=4000), max_size=12)


@SETTINGS
@given(body=bodies, cuts=cuts)
def test_events_do_not_depend_on_where_reads_are_cut(body, cuts):
    got, error, _ = read(body, cuts, LARGE)
    assert error is None
    assert got == reference(body, LARGE)[0]


@settings(SETTINGS, max_examples=1500)
@given(body=bodies, cuts=cuts, line=st.integers(8, 400), event=st.integers(8, 400),
       total=st.integers(16, 800))
def test_every_cap_holds_and_nothing_is_read_far_past_it(body, cuts, line, event, total):
    limits = StreamLimits(reply=1 << 20, event=event, line=line, body=total)
    expected, broken = reference(body, limits)
    got, error, response = read(body, cuts, limits)
    if broken is None:
        assert error is None and got == expected
        return
    assert isinstance(error, StreamLimitExceeded), (broken, got)
    assert got == expected[:len(got)]
    # one read at most past the byte that broke the cap
    assert response.consumed <= broken + response.largest


def test_an_endless_line_costs_its_length_once():
    # 8 MiB in 1-byte reads of one line with no newline would copy the pending bytes
    # 8 million times if each read were joined to them; capped at 1 MiB, it stops there.
    limits = StreamLimits(reply=1 << 20, event=1 << 20, line=1 << 20, body=1 << 30)

    class Endless(Response):
        def read1(self, n: int = -1) -> bytes:
            self.consumed += 4096
            return b"y" * 4096

    response = Endless(b"", [])
    with pytest.raises(StreamLimitExceeded, match="one line"):
        list(_events(response, limits))  # type: ignore[arg-type]
    assert response.consumed <= (1 << 20) + 4096


# -- whole streams through each wire's parser ---------------------------------------------------

KEYS = ["choices", "delta", "content", "tool_calls", "function", "index", "arguments", "name",
        "id", "usage", "prompt_tokens", "completion_tokens", "type", "finish_reason",
        "message", "content_block", "partial_json", "text", "thinking", "signature",
        "stop_reason", "error", "reasoning_content", "reasoning_details", "data",
        "prompt_tokens_details", "cached_tokens", "input_tokens", "output_tokens"]
TYPES = ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
         "message_delta", "message_stop", "error", "ping", "text", "tool_use", "thinking",
         "redacted_thinking", "text_delta", "input_json_delta"]


def json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8) \
        | st.sampled_from(TYPES + ["stop", "tool_calls", "end_turn", "-1", "1e400"])
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
                        max_leaves=10)


def objects() -> st.SearchStrategy[Any]:
    return st.dictionaries(st.sampled_from(KEYS), json_values(), max_size=4) | json_values()


# Events shaped like each wire's, with anything in their fields
OPENAI_EVENT = st.fixed_dictionaries(
    {"choices": st.lists(st.fixed_dictionaries({}, optional={
        "delta": objects(), "finish_reason": json_values(), "index": json_values()})
        | json_values(), max_size=2)},
    optional={"usage": objects(), "error": json_values()})
ANTHROPIC_EVENT = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES) | json_values()},
    optional={"message": objects(), "content_block": objects(), "delta": objects(),
              "usage": objects(), "index": json_values(), "error": objects()})


def stream_body(datas: list[str]) -> bytes:
    return b"".join(b"data: " + d.encode() + b"\n\n" for d in datas)


# Deeper than json.loads goes (a RecursionError), a list, and the end of the stream
ODD = ["[" * 1500, '{"choices": ' * 1200, "[1]", "[DONE]"]
EVENT = (OPENAI_EVENT | ANTHROPIC_EVENT).map(json.dumps)
data_items = st.lists(st.one_of(EVENT, EVENT, EVENT, objects().map(json.dumps),
                                st.text(max_size=20), st.sampled_from(ODD)), max_size=8)


@SETTINGS
@given(datas=data_items, cuts=cuts, wire=st.sampled_from(["openai", "anthropic"]))
def test_whatever_the_events_hold_a_stream_ends_in_chunks_or_a_stream_error(datas, cuts,
                                                                              wire):
    route = SimpleNamespace(wire=wire, name="m", api_base="http://127.0.0.1:9/v1",
                            proxy=None, ca_file=None, ca_dir=None, api_key="k",
                            user_agent="test")
    transport = DirectTransport(wire_for(route, frozenset()), route,
                                StreamLimits(reply=1 << 16, event=1 << 15, line=1 << 14,
                                             body=1 << 17))
    conn = SimpleNamespace(sock=None, close=lambda: None)
    stream = DirectStream(transport, conn, Response(stream_body(datas), cuts))  # type: ignore
    try:
        for chunk in stream:
            assert chunk.choices is not None
    except (MidStreamError, StreamLimitExceeded):
        pass

"""Retry policy and the model client against every fault the scripted server can inject.

The client runs in-process against the real scripted server over HTTP, so each fault goes
through litellm's real parsing and exception mapping (no mocks). The wire faults are also
checked at the byte level, so the fault really is what its name says.
"""
from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
from email.utils import formatdate
from typing import Any

import pytest

from baseagent.llm.errors import ContextOverflowError, ModelError, ModelInterrupted
from baseagent.llm.retry import (MAX_HINT_SECONDS, StreamBroken, Verdict,
                                 backoff_delay, classify, describe, failure_message,
                                 provider_message, retry_hint)
from baseagent.testing.script import MALFORMED_PAYLOAD, WIRE_FAULT_TEXT, ScriptError
from baseagent.testing.scripted_server import ScriptedServer

USER = [{"role": "user", "content": "hi"}]
ANSWER = "The complete answer, streamed in several pieces."


@pytest.fixture(scope="module")
def litellm():
    from baseagent.llm.client import load_litellm

    return load_litellm()


@pytest.fixture(autouse=True, scope="module")
def _litellm_imported() -> None:
    """Several tests time a call; the one-off import of litellm (seconds) must not count."""
    from baseagent.llm.client import load_litellm

    load_litellm()


@pytest.fixture(params=["litellm", "direct"])
def transport(request: pytest.FixtureRequest) -> str:
    """The client tests run on both paths a call can take: one behaviour either way."""
    return request.param


def make_client(server: ScriptedServer, transport: str = "litellm", **kw: Any):
    from baseagent.llm.client import ModelClient
    from baseagent.llm.route import choose

    notices: list[str] = []
    params = dict(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
                  max_retries=3, retry_base_delay=0.01, retry_max_delay=0.05,
                  stream_idle_timeout=1.0, on_notice=notices.append)
    params.update(kw)
    if transport == "direct":
        params["route"] = choose(params["model"], api_base=params["api_base"],
                                 api_key=params["api_key"], env={})
        assert params["route"] is not None
    client = ModelClient(**params)
    client.notices = notices  # type: ignore[attr-defined]
    return client


def raised_by(litellm, server: ScriptedServer) -> BaseException:
    """The exception litellm raises for the server's next step (streaming, no retries)."""
    try:
        stream = litellm.completion(model="openai/scripted", api_base=server.api_base,
                                    api_key="sk-test-dummy", messages=USER, stream=True,
                                    num_retries=0, timeout=1.0,
                                    stream_options={"include_usage": True})
        list(stream)
    except Exception as exc:  # noqa: BLE001 - the point is to look at it
        return exc
    raise AssertionError("no exception")


# -- classification of real litellm exceptions ------------------------------------------------

STATUS_VERDICTS = [
    ({"status": 400}, Verdict.FATAL), ({"status": 401}, Verdict.FATAL),
    ({"status": 403}, Verdict.FATAL), ({"status": 404}, Verdict.FATAL),
    ({"status": 408}, Verdict.RETRY), ({"status": 409}, Verdict.RETRY),
    ({"status": 413}, Verdict.OVERFLOW),
    ({"status": 429}, Verdict.RETRY),
    ({"status": 429, "code": "insufficient_quota", "message": "You exceeded your quota."},
     Verdict.FATAL),
    ({"status": 500}, Verdict.RETRY), ({"status": 502}, Verdict.RETRY),
    ({"status": 503}, Verdict.RETRY), ({"status": 504}, Verdict.RETRY),
    ({"status": 529}, Verdict.RETRY),
]


def test_status_codes_classify_by_type_and_status(litellm, scripted_server):
    server = scripted_server([{"fault": "status", **s} for s, _ in STATUS_VERDICTS]
                             + [{"fault": "context_length"}])
    for step, verdict in STATUS_VERDICTS:
        exc = raised_by(litellm, server)
        assert classify(exc) is verdict, (step, type(exc).__name__)
    assert classify(raised_by(litellm, server)) is Verdict.OVERFLOW


def test_422_is_resent_once_by_litellm_then_fatal(litellm, scripted_server):
    # litellm (drop_params on) answers a 422 by resending the request once without the
    # parameters the server named; a second 422 is final. Nothing more is retried.
    server = scripted_server([{"fault": "status", "status": 422}] * 3)
    exc = raised_by(litellm, server)
    assert classify(exc) is Verdict.FATAL and len(server.requests) == 2


def test_classification_ignores_message_text(litellm, scripted_server):
    # A retryable status whose text sounds fatal, and a fatal one that sounds retryable.
    server = scripted_server([
        {"fault": "status", "status": 503, "message": "Invalid API key. Permission denied."},
        {"fault": "status", "status": 401, "message": "Overloaded, rate limit, try again."},
    ])
    assert classify(raised_by(litellm, server)) is Verdict.RETRY
    assert classify(raised_by(litellm, server)) is Verdict.FATAL


@pytest.mark.parametrize("fault", [
    {"fault": "reset"}, {"fault": "stall", "seconds": 3}, {"fault": "malformed"},
])
def test_broken_streams_raise_a_retryable_error(litellm, scripted_server, fault):
    exc = raised_by(litellm, scripted_server([fault]))
    assert type(exc).__name__ == "MidStreamFallbackError"
    assert classify(exc) is Verdict.RETRY
    assert describe(exc).startswith("stream error: ")


def test_stall_before_headers_is_a_timeout(litellm, scripted_server):
    exc = raised_by(litellm, scripted_server([{"content": "late", "delay": 3}]))
    assert type(exc).__name__ == "Timeout" and classify(exc) is Verdict.RETRY


# -- hints, backoff, messages -----------------------------------------------------------------

class FakeError(Exception):
    def __init__(self, message: str = "", headers: dict | None = None,
                 status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.litellm_response_headers = headers or {}
        if status_code is not None:
            self.status_code = status_code


@pytest.mark.parametrize("exc, seconds", [
    (FakeError(headers={"Retry-After": "7"}), 7.0),
    (FakeError(headers={"retry-after-ms": "1500", "Retry-After": "9"}), 1.5),
    (FakeError("Rate limit reached. Please try again in 1.238s. Visit ..."), 1.238),
    (FakeError("try again in 120ms"), 0.12),
    (FakeError("Please try again in 6m0s."), 360.0),
    (FakeError("please try again in 20 seconds"), 20.0),
    (FakeError("no hint here"), None),
])
def test_retry_hint(exc, seconds):
    assert retry_hint(exc) == pytest.approx(seconds) if seconds is not None \
        else retry_hint(exc) is None


def test_retry_hint_http_date():
    when = formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_hint(FakeError(headers={"retry-after": when})) <= 31


def test_backoff_is_exponential_capped_and_jittered():
    fixed = random.Random(1)
    delays = [backoff_delay(n, base=0.2, cap=1.0, factor=2.0, rng=fixed) for n in range(1, 7)]
    for n, delay in enumerate(delays, 1):
        expected = min(1.0, 0.2 * 2 ** (n - 1))
        assert expected * 0.9 <= delay <= expected * 1.1
    assert backoff_delay(3, base=1, cap=100, factor=3.0, rng=fixed) == pytest.approx(9, rel=0.1)
    # a server hint wins when longer, but is itself capped
    assert backoff_delay(1, 0.2, 30, hint=5.0, rng=fixed) == 5.0
    assert backoff_delay(1, 0.2, 30, hint=10_000, rng=fixed) == MAX_HINT_SECONDS
    assert backoff_delay(5, 0.2, 30, hint=0.01, rng=fixed) > 2.0


def test_messages_are_one_clean_line(litellm, scripted_server):
    server = scripted_server([{"fault": "status", "status": 401},
                              {"fault": "status", "status": 429, "code": "insufficient_quota",
                               "message": "You exceeded your current quota."},
                              {"fault": "status", "status": 403}])
    auth, quota, forbidden = (raised_by(litellm, server) for _ in range(3))
    assert failure_message(auth).startswith("authentication failed (check the API key) "
                                            "(401): Incorrect API key provided")
    assert failure_message(quota) == ("quota exceeded (check the plan and billing) (429): "
                                      "You exceeded your current quota.")
    assert failure_message(forbidden).startswith("permission denied (403): ")
    for exc in (auth, quota, forbidden):
        assert "litellm" not in failure_message(exc) and "\n" not in failure_message(exc)
        assert not provider_message(exc).startswith(("OpenAIException", "AuthenticationError"))


# -- the client against each fault ------------------------------------------------------------

@pytest.mark.parametrize("fault, reason", [
    ({"fault": "reset"}, "stream error: [Errno 104] Connection reset by peer"),
    ({"fault": "drop"}, "stream ended early"),
    ({"fault": "stall", "seconds": 3}, "stream error: timed out"),
    ({"fault": "stall", "after": 0, "seconds": 3}, "stream error: timed out"),
    ({"fault": "malformed"}, "stream error: "),
    ({"fault": "empty"}, "stream ended early"),
    ({"fault": "empty", "shape": "done"}, "stream ended early"),
    # no headers within the idle timeout: litellm says "408 Timeout", a status nobody sent
    ({"content": "late", "delay": 3}, "no answer from http://127.0.0.1:"),
    ({"fault": "status", "status": 503}, "503 ServiceUnavailableError"),
    ({"fault": "status", "status": 529}, "529 APIError"),
])
def test_client_retries_fault_then_succeeds(scripted_server, fault, reason, transport):
    server = scripted_server([{**fault, "content": ANSWER} if fault.get("fault") in (
        "reset", "drop", "stall", "malformed") else fault, {"content": ANSWER}])
    client = make_client(server, transport)
    progress: list[str] = []
    turn = client.complete(USER, on_progress=lambda text, _r: progress.append(text))
    assert turn.text == ANSWER and turn.finish_reason == "stop"
    assert len(server.requests) == 2
    assert server.requests[0]["messages"] == server.requests[1]["messages"]  # same request
    assert len(client.notices) == 1
    assert client.notices[0].startswith(f"Reconnecting... 1/3 after {reason}")
    # the retried stream restarted its text: no attempt's text was appended to another's
    assert progress[-1] == ANSWER and all(ANSWER.startswith(p) for p in progress if p)
    assert client.totals.output_tokens > 0  # usage of the successful attempt only


def test_empty_answer_with_a_finish_reason_is_the_models_not_retried(scripted_server, transport):
    """A stream that finished (finish_reason stop) with nothing in it is the model's answer:
    resending the same request at temperature 0 would get the same nothing, so the client
    hands the empty turn to the loop (which tells the model what is expected)."""
    server = scripted_server([{"fault": "empty", "shape": "no_content"}, {"content": ANSWER}])
    client = make_client(server, transport)
    turn = client.complete(USER)
    assert turn.text == "" and turn.tool_calls == [] and turn.finish_reason == "stop"
    assert len(server.requests) == 1 and client.notices == []


def test_partial_text_is_replaced_not_duplicated(scripted_server, transport):
    server = scripted_server([{"fault": "reset", "content": ANSWER, "chunk_size": 5,
                               "after": 6}, {"content": ANSWER, "chunk_size": 5}])
    client = make_client(server, transport)
    seen: list[str] = []
    turn = client.complete(USER, on_progress=lambda text, _r: seen.append(text))
    reset_at = seen.index("")
    assert seen[reset_at - 1] == ANSWER[:25]  # role chunk + 5 deltas of the broken attempt
    assert seen[-1] == turn.text == ANSWER


def test_retry_after_is_honoured(scripted_server, transport):
    server = scripted_server([{"fault": "status", "status": 429, "retry_after": 1},
                              {"fault": "status", "status": 503,
                               "message": "Overloaded. Please try again in 0.6s."},
                              {"content": "ok"}])
    client = make_client(server, transport)
    assert client.complete(USER).text == "ok"
    times = server.request_times
    assert times[1] - times[0] >= 0.95 and times[2] - times[1] >= 0.55
    assert [n.split(" (")[0] for n in client.notices] == [
        "Reconnecting... 1/3 after 429 RateLimitError",
        "Reconnecting... 2/3 after 503 ServiceUnavailableError"]
    assert "(waiting 1.0s)" in client.notices[0]


@pytest.mark.parametrize("step, message", [
    ({"fault": "status", "status": 401}, "model call failed: authentication failed"),
    ({"fault": "status", "status": 403}, "model call failed: permission denied (403)"),
    ({"fault": "status", "status": 400}, "model call failed: invalid request (400)"),
    ({"fault": "status", "status": 404}, "model call failed: model or endpoint not found"),
    ({"fault": "status", "status": 429, "code": "insufficient_quota"},
     "model call failed: quota exceeded"),
])
def test_fatal_errors_fail_at_once(scripted_server, step, message, transport):
    server = scripted_server([step, {"content": "never"}])
    client = make_client(server, transport)
    with pytest.raises(ModelError) as info:
        client.complete(USER)
    assert str(info.value).startswith(message)
    assert len(server.requests) == 1 and client.notices == []


def test_context_window_error_goes_to_compaction_not_retry(scripted_server, transport):
    server = scripted_server([{"fault": "context_length", "window": 10}, {"content": "x"}])
    client = make_client(server, transport)
    with pytest.raises(ContextOverflowError, match="maximum context length is 10 tokens"):
        client.complete(USER)
    assert len(server.requests) == 1 and client.notices == []


def test_retries_run_out_with_a_clear_message(scripted_server, transport):
    server = scripted_server([{"fault": "status", "status": 502}] * 4)
    client = make_client(server, transport, max_retries=2)
    with pytest.raises(ModelError) as info:
        client.complete(USER)
    assert str(info.value) == ("model call failed after 2 retries: 502 BadGatewayError: "
                               "Bad gateway.")
    assert len(server.requests) == 3 and len(client.notices) == 2


def test_truncated_tool_arguments_are_returned_as_sent(scripted_server, transport):
    # A complete response whose arguments are not JSON is the model's mistake, not the
    # wire's: it is not retried; the registry tells the model what was wrong.
    call = {"name": "shell", "arguments": {"command": "echo hello"}}
    server = scripted_server([{"fault": "truncated_args", "tool_calls": [call], "keep": 12}])
    turn = make_client(server, transport).complete(USER)
    assert turn.finish_reason == "tool_calls"
    assert [c.arguments for c in turn.tool_calls] == ['{"command": ']
    assert len(server.requests) == 1


def test_interrupt_stops_a_silent_wait_at_once(scripted_server, transport):
    server = scripted_server([{"content": "late", "delay": 30}])
    flag = threading.Event()
    client = make_client(server, transport, cancelled=flag.is_set, stream_idle_timeout=60)
    threading.Timer(0.3, flag.set).start()
    started = time.monotonic()
    with pytest.raises(ModelInterrupted):
        client.complete(USER)
    assert time.monotonic() - started < 1.5


def test_interrupt_during_backoff(scripted_server, transport):
    server = scripted_server([{"fault": "status", "status": 429, "retry_after": 20}])
    flag = threading.Event()
    client = make_client(server, transport, cancelled=flag.is_set)
    threading.Timer(0.3, flag.set).start()
    started = time.monotonic()
    with pytest.raises(ModelInterrupted):
        client.complete(USER)
    assert time.monotonic() - started < 1.5 and len(server.requests) == 1


def test_client_gives_up_on_a_stall_the_transport_misses(scripted_server, monkeypatch, transport):
    # Without httpx's read timeout (a transport that never times out), the client's own
    # idle clock still ends the attempt.
    from baseagent.llm import client as client_module

    monkeypatch.setattr(client_module, "IDLE_GRACE_SECONDS", 0.0)
    server = scripted_server([{"fault": "stall", "seconds": 5, "content": ANSWER},
                              {"content": ANSWER}])
    client = make_client(server, transport, stream_idle_timeout=0.5,
                         extra_params={"timeout": 30})  # transport timeout far away
    started = time.monotonic()
    assert client.complete(USER).text == ANSWER
    assert time.monotonic() - started < 3
    assert client.notices[0].startswith("Reconnecting... 1/3 after stream stalled")


def test_stream_errors_are_retryable_types():
    assert classify(StreamBroken("x")) is Verdict.RETRY


# -- the fault modes on the wire --------------------------------------------------------------

def raw_stream(server: ScriptedServer) -> tuple[bytes, BaseException | None]:
    """POST a streaming request on a raw socket; read until the server stops talking."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=2)
    body = json.dumps({"model": "m", "messages": USER, "stream": True}).encode()
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    data, error = b"", None
    try:
        while chunk := sock.recv(65536):
            data += chunk
            if data.endswith(b"0\r\n\r\n"):
                break
    except OSError as exc:
        error = exc
    finally:
        sock.close()
    return data, error


def sse_events(raw: bytes) -> list[str]:
    return [line[6:] for line in raw.decode("utf-8", "replace").split("\n")
            if line.startswith("data: ")]


def test_wire_reset_cuts_the_stream_with_rst(scripted_server):
    server = scripted_server([{"fault": "reset", "content": ANSWER, "after": 3}])
    raw, error = raw_stream(server)
    assert isinstance(error, ConnectionResetError)
    assert len(sse_events(raw)) == 3 and b"[DONE]" not in raw


def test_wire_drop_ends_cleanly_without_finish(scripted_server):
    server = scripted_server([{"fault": "drop"}])
    raw, error = raw_stream(server)
    events = sse_events(raw)
    assert error is None and raw.endswith(b"0\r\n\r\n") and "[DONE]" not in events
    chunks = [json.loads(e) for e in events]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
    assert WIRE_FAULT_TEXT.startswith("".join(c["choices"][0]["delta"].get("content") or ""
                                              for c in chunks))


def test_wire_stall_goes_silent(scripted_server):
    server = scripted_server([{"fault": "stall", "after": 2, "seconds": 0.6}])
    started = time.monotonic()
    raw, error = raw_stream(server)
    assert time.monotonic() - started >= 0.5
    assert len(sse_events(raw)) == 2 and b"[DONE]" not in raw


def test_wire_malformed_and_empty(scripted_server):
    server = scripted_server([{"fault": "malformed", "after": 2}, {"fault": "empty"},
                              {"fault": "empty", "shape": "no_content"}])
    events = sse_events(raw_stream(server)[0])
    assert events[2] == MALFORMED_PAYLOAD and events[-1] == "[DONE]"
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("POST", "/v1/chat/completions", json.dumps({"messages": USER, "stream": True}))
    response = conn.getresponse()
    assert response.status == 200 and response.read() == b""
    conn.close()
    chunks = [json.loads(e) for e in sse_events(raw_stream(server)[0])[:-1]]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert not any(c["choices"][0]["delta"].get("content") for c in chunks)


def test_wire_faults_validate_their_keys():
    for bad in ({"fault": "reset", "after": -1}, {"fault": "stall", "seconds": "x"},
                {"fault": "empty", "shape": "weird"}, {"fault": "truncated_args"},
                {"fault": "drop", "bogus": 1}, {"fault": "malformed", "payload": 3}):
        with pytest.raises(ScriptError):
            ScriptedServer([bad])


# -- connection problems: the URL and the cause, not litellm's invented 500 --------------------

def _wrapped(cause: BaseException, url: str = "http://h.example:8/v1/chat/completions"):
    """The chain litellm 1.105.0 raises for a request that got no answer (checked live):
    InternalServerError <- openai.APIConnectionError <- httpx.ConnectError <- the OS error."""
    import httpx
    import litellm
    import openai

    request = httpx.Request("POST", url)
    transport = httpx.ConnectError(str(cause), request=request)
    transport.__cause__ = cause
    sdk = openai.APIConnectionError(request=request)
    sdk.__cause__ = transport
    outer = litellm.InternalServerError("Connection error.", llm_provider="openai",
                                        model="openai/x")
    outer.__cause__ = sdk
    return outer


@pytest.mark.parametrize("cause, text, verdict", [
    (ConnectionRefusedError(111, "Connection refused"), "connection refused", Verdict.RETRY),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
     "DNS lookup failed (Name or service not known)", Verdict.FATAL),
    (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
     "DNS lookup failed (Temporary failure in name resolution)", Verdict.RETRY),
    (__import__("ssl").SSLCertVerificationError(1, "certificate verify failed"),
     "TLS certificate verification failed", Verdict.FATAL),
    (__import__("ssl").SSLError(1, "wrong version number"), "TLS handshake failed",
     Verdict.FATAL),
    (TimeoutError("timed out"), "", Verdict.RETRY),
])
def test_connection_problems_name_the_url_and_the_cause(cause, text, verdict):
    from baseagent.llm.client import load_litellm
    from baseagent.llm.retry import connection_problem

    load_litellm()
    exc = _wrapped(cause)
    problem = connection_problem(exc)
    assert problem is not None and problem.url == "http://h.example:8/v1/chat/completions"
    assert text in problem.cause
    assert classify(exc) is verdict
    for line in (describe(exc), failure_message(exc)):
        assert line.startswith("cannot connect to http://h.example:8/v1/chat/completions: ")
        assert "500" not in line and "InternalServerError" not in line


def test_an_http_answer_is_not_a_connection_problem():
    from baseagent.llm.client import load_litellm
    from baseagent.llm.retry import connection_problem

    litellm = load_litellm()
    assert connection_problem(litellm.RateLimitError("slow down", "openai", "x")) is None
    assert connection_problem(StreamBroken("cut")) is None


# -- the wait for the first byte (a local server reading a long prompt) ----------------------

def test_a_slow_first_byte_is_not_a_stall(scripted_server, transport):
    # A server silent before its first byte for longer than the idle timeout, but within
    # first_byte_timeout, is still reading the prompt: the call waits, nothing is resent.
    server = scripted_server([{"content": ANSWER, "delay": 2.5}, {"content": ANSWER}])
    client = make_client(server, transport, stream_idle_timeout=1.0, first_byte_timeout=10.0)
    turn = client.complete(USER)
    assert turn.text == ANSWER and turn.finish_reason == "stop"
    assert len(server.requests) == 1 and client.notices == []


def test_a_stall_mid_stream_still_retries_with_a_long_first_byte_wait(
        scripted_server, monkeypatch, transport):
    from baseagent.llm import client as client_module

    monkeypatch.setattr(client_module, "IDLE_GRACE_SECONDS", 0.0)
    server = scripted_server([{"fault": "stall", "seconds": 5, "content": ANSWER},
                              {"content": ANSWER}])
    client = make_client(server, transport, stream_idle_timeout=0.5, first_byte_timeout=30.0)
    started = time.monotonic()
    assert client.complete(USER).text == ANSWER
    assert time.monotonic() - started < 3 and len(server.requests) == 2
    assert client.notices[0].startswith("Reconnecting... 1/3 after stream stalled")


def test_no_first_byte_in_time_is_retried_as_no_answer_yet(scripted_server, monkeypatch,
                                                           transport):
    from baseagent.llm import client as client_module

    monkeypatch.setattr(client_module, "IDLE_GRACE_SECONDS", 0.0)
    server = scripted_server([{"content": "late", "delay": 5}, {"content": ANSWER}])
    client = make_client(server, transport, stream_idle_timeout=0.3, first_byte_timeout=1.0,
                         extra_params={"timeout": 30})  # transport timeout far away
    assert client.complete(USER).text == ANSWER and len(server.requests) == 2
    assert client.notices[0].startswith("Reconnecting... 1/3 after no answer yet after 1 s")


@pytest.mark.parametrize("given, expected", [
    ({"model": "openai/m", "api_base": "http://127.0.0.1:8080/v1"}, 600.0),
    ({"model": "openai/m", "api_base": "http://localhost:8080/v1"}, 600.0),
    ({"model": "openai/m", "api_base": "http://[::1]:8080/v1", "request_timeout": 900}, 900.0),
    ({"model": "openai/m", "oss": True}, 600.0),
    ({"model": "openai/m", "api_base": "https://api.example.com/v1"}, 300.0),
    ({"model": "openai/m", "stream_idle_timeout": 120}, 120.0),
    ({"model": "openai/m", "api_base": "http://127.0.0.1:8080/v1",
      "first_byte_timeout": 45}, 45.0),
])
def test_first_byte_timeout_default_is_the_request_timeout_on_a_local_server(given, expected):
    from baseagent.config.settings import Settings
    from baseagent.compose.model import first_byte_timeout

    assert first_byte_timeout(Settings.model_validate(given)) == expected

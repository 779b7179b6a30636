"""The scripted model server, driven the way the agent drives it: litellm over real HTTP."""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from baseagent.testing.script import (EXHAUSTED_TEXT, ScriptError, estimate_prompt_tokens,
                                      prompt_parts)
from baseagent.testing.scripted_server import PrefixCache, ScriptedServer, _cache_marks
from helpers import REPO

TOOLS = [{"type": "function", "function": {
    "name": "shell", "description": "run a command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}}]
USER = [{"role": "user", "content": "list the files"}]


@pytest.fixture(scope="module")
def litellm():
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm as module

    module.suppress_debug_info = True
    return module


def complete(litellm, server: ScriptedServer, messages=USER, stream=True, **kw: Any):
    params = dict(model="openai/scripted", api_base=server.api_base, api_key="dummy",
                  messages=messages, num_retries=0, stream=stream, **kw)
    if stream:
        params["stream_options"] = {"include_usage": True}
    return litellm.completion(**params)


def assemble(chunks) -> dict:
    """What an agent rebuilds from a stream; also counts deltas to prove real streaming."""
    out: dict[str, Any] = {"content": "", "reasoning": "", "calls": {}, "finish": None,
                           "usage": None, "content_deltas": 0, "arg_deltas": {}}
    for chunk in chunks:
        out["usage"] = getattr(chunk, "usage", None) or out["usage"]
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta.content:
            out["content"] += delta.content
            out["content_deltas"] += 1
        out["reasoning"] += getattr(delta, "reasoning_content", None) or ""
        for tc in delta.tool_calls or []:
            entry = out["calls"].setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
            entry["id"] = tc.id or entry["id"]
            entry["name"] = tc.function.name or entry["name"]
            if tc.function.arguments:
                entry["arguments"] += tc.function.arguments
                out["arg_deltas"][tc.index] = out["arg_deltas"].get(tc.index, 0) + 1
        out["finish"] = choice.finish_reason or out["finish"]
    return out


def post(server: ScriptedServer, body: dict, path: str = "/v1/chat/completions"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def sse_payloads(raw: bytes) -> list[str]:
    return [line[len("data: "):] for line in raw.decode().split("\n\n") if line.strip()]


# -- litellm end to end -----------------------------------------------------------------------

def test_stream_text_reasoning_and_usage(litellm, scripted_server):
    server = scripted_server([{"content": "Hello there, world!", "reasoning": "thinking hard",
                               "chunk_size": 5,
                               "usage": {"prompt_tokens": 120, "completion_tokens": 9,
                                         "cached_tokens": 100}}])
    got = assemble(complete(litellm, server))
    assert got["content"] == "Hello there, world!"
    assert got["content_deltas"] == 4  # 19 chars in deltas of 5
    assert got["reasoning"] == "thinking hard"
    assert got["finish"] == "stop"
    usage = got["usage"]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (120, 9, 129)
    assert usage.prompt_tokens_details.cached_tokens == 100


def test_stream_tool_calls_are_split_and_assembled(litellm, scripted_server):
    server = scripted_server([{"content": "Let me look.", "tool_calls": [
        {"name": "shell", "arguments": {"command": "ls -la /tmp"}},
        {"name": "shell", "arguments": '{"command": "oops', "id": "call_custom"}]}])
    got = assemble(complete(litellm, server, tools=TOOLS))
    assert got["finish"] == "tool_calls"
    assert got["content"] == "Let me look."
    first, second = got["calls"][0], got["calls"][1]
    assert first["name"] == "shell" and first["id"] == "call_0_0"
    assert json.loads(first["arguments"]) == {"command": "ls -la /tmp"}
    assert second["arguments"] == '{"command": "oops'  # invalid JSON, verbatim
    assert second["id"] == "call_custom"
    assert got["arg_deltas"][0] > 1 and got["arg_deltas"][1] > 1


def test_openrouter_reasoning_shape(scripted_server):
    """reasoning_format "openrouter": the text as `reasoning`, and `reasoning_details`
    pieces of one entry (index 0) whose last piece carries the signature; the same whole
    in a non-streamed answer."""
    from baseagent.testing.script import reasoning_signature

    step = {"content": "ok", "reasoning": "abcdefghi", "reasoning_format": "openrouter"}
    server = scripted_server([step, step])
    _, _, raw = post(server, {"model": "m", "messages": USER, "stream": True})
    events = [json.loads(p) for p in sse_payloads(raw) if p != "[DONE]"]
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    pieces = [d for d in deltas if "reasoning_details" in d]
    assert "".join(d["reasoning"] for d in pieces) == "abcdefghi"
    assert len(pieces) == 3 and all("reasoning_content" not in d for d in deltas)
    assert [p["reasoning_details"][0]["index"] for p in pieces] == [0, 0, 0]
    assert [("signature" in p["reasoning_details"][0]) for p in pieces] == [False, False, True]
    assert pieces[-1]["reasoning_details"][0]["signature"] == reasoning_signature("abcdefghi")
    _, _, raw = post(server, {"model": "m", "messages": USER})
    message = json.loads(raw)["choices"][0]["message"]
    assert message["reasoning"] == "abcdefghi"
    assert message["reasoning_details"] == [{
        "type": "reasoning.text", "text": "abcdefghi", "format": "unknown", "index": 0,
        "signature": reasoning_signature("abcdefghi")}]


def test_non_stream_text_and_tool_calls(litellm, scripted_server):
    server = scripted_server([
        {"content": "plain answer", "reasoning": "because"},
        {"tool_calls": [{"name": "shell", "arguments": "not json"}], "finish_reason": "length"},
    ])
    first = complete(litellm, server, stream=False)
    assert first.choices[0].message.content == "plain answer"
    assert first.choices[0].message.reasoning_content == "because"
    assert first.choices[0].finish_reason == "stop"
    assert first.usage.prompt_tokens == estimate_prompt_tokens(prompt_parts(
        {"messages": USER}))
    second = complete(litellm, server, stream=False, tools=TOOLS)
    call = second.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments, call.id) == ("shell", "not json",
                                                                      "call_1_0")
    assert second.choices[0].finish_reason == "length"
    assert second.usage.prompt_tokens_details.cached_tokens == 0
    assert second.usage.total_tokens == (second.usage.prompt_tokens
                                         + second.usage.completion_tokens)


def test_default_prompt_tokens_grow_with_the_request(litellm, scripted_server):
    server = scripted_server([{"content": "a"}, {"content": "b"}])
    small = assemble(complete(litellm, server))["usage"].prompt_tokens
    longer = USER + [{"role": "assistant", "content": "x" * 400}, {"role": "user", "content": "y"}]
    big = assemble(complete(litellm, server, messages=longer))["usage"].prompt_tokens
    assert big >= small + 100


def test_openai_sdk_parses_the_stream_strictly(scripted_server):
    import openai
    from openai.types.chat import ChatCompletionChunk

    server = scripted_server([{"content": "hi", "tool_calls": [
        {"name": "shell", "arguments": {"command": "pwd"}}]}])
    status, headers, raw = post(server, {"model": "m", "messages": USER, "stream": True,
                                         "stream_options": {"include_usage": True}})
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    payloads = sse_payloads(raw)
    assert payloads[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(p) for p in payloads[:-1]]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])
    client = openai.OpenAI(base_url=server.api_base, api_key="x", max_retries=0)
    server.extend([{"content": "again"}])
    stream = client.chat.completions.create(model="m", messages=USER, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "again"


# -- faults ------------------------------------------------------------------------------------

def test_status_fault_with_retry_after_then_next_step(scripted_server):
    server = scripted_server([{"fault": "status", "status": 429, "retry_after": 3},
                              {"fault": "status", "status": 503, "message": "busy",
                               "retry_after": 0.5},
                              {"content": "recovered"}])
    status, headers, raw = post(server, {"model": "m", "messages": USER})
    assert status == 429 and headers["Retry-After"] == "3"
    assert json.loads(raw)["error"]["code"] == "rate_limit_exceeded"
    status, headers, raw = post(server, {"model": "m", "messages": USER}, "/chat/completions")
    assert status == 503 and headers["retry-after-ms"] == "500"
    assert json.loads(raw)["error"] == {"message": "busy", "type": "server_error",
                                        "param": None, "code": None}
    status, _, raw = post(server, {"model": "m", "messages": USER})
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "recovered"
    assert server.steps_served == 3


def test_faults_map_to_litellm_exceptions(litellm, scripted_server):
    server = scripted_server([{"fault": "status", "status": 429, "retry_after": 2},
                              {"fault": "status", "status": 401},
                              {"fault": "context_length"}])
    with pytest.raises(litellm.RateLimitError):
        assemble(complete(litellm, server))
    with pytest.raises(litellm.AuthenticationError):
        assemble(complete(litellm, server))
    with pytest.raises(litellm.ContextWindowExceededError):
        assemble(complete(litellm, server))
    assert len(server.requests) == 3  # num_retries=0: the SDK did not retry underneath


def test_context_window_refuses_without_consuming_a_step(litellm, scripted_server):
    server = scripted_server([{"content": "first"}, {"content": "second"}], context_window=50)
    big = [{"role": "user", "content": "z" * 1000}]
    assert assemble(complete(litellm, server))["content"] == "first"
    status, _, raw = post(server, {"model": "m", "messages": big})
    error = json.loads(raw)["error"]
    assert status == 400 and error["code"] == "context_length_exceeded"
    assert error["message"].startswith("This model's maximum context length is 50 tokens. "
                                       "However, your messages resulted in ")
    with pytest.raises(litellm.ContextWindowExceededError):
        assemble(complete(litellm, server, messages=big))
    assert assemble(complete(litellm, server))["content"] == "second"
    assert len(server.requests) == 4 and server.steps_served == 2


# -- prefix cache ------------------------------------------------------------------------------

def test_prefix_cache_reports_shared_prefix(litellm, scripted_server):
    server = scripted_server([{"content": "one"}, {"content": "two"}, {"content": "three"}],
                             prefix_cache=True)
    system = {"role": "system", "content": "You are a careful agent. " * 40}
    first = assemble(complete(litellm, server, messages=[system] + USER, tools=TOOLS))["usage"]
    assert first.prompt_tokens_details.cached_tokens == 0
    longer = [system] + USER + [{"role": "assistant", "content": "one"},
                                {"role": "user", "content": "go on"}]
    second = assemble(complete(litellm, server, messages=longer, tools=TOOLS))["usage"]
    cached = second.prompt_tokens_details.cached_tokens
    assert 0 < cached <= second.prompt_tokens
    assert cached == first.prompt_tokens  # the whole first prompt is the shared prefix
    other = [{"role": "system", "content": "different"}] + longer[1:]
    third = assemble(complete(litellm, server, messages=other, tools=TOOLS))["usage"]
    # only the tool definitions (sent before the messages) are still shared
    tools_part = prompt_parts({"tools": server.requests[2]["tools"]})[0]
    assert third.prompt_tokens_details.cached_tokens == len(tools_part) // 4


def test_prefix_cache_ignores_moving_cache_markers_and_anthropic_mode():
    def msg(text, mark=False):
        block = {"type": "text", "text": text * 50}
        if mark:
            block["cache_control"] = {"type": "ephemeral"}
        return {"role": "user", "content": [block]}

    def cached(cache, messages):
        body = {"messages": messages}
        return cache.lookup_and_store(prompt_parts(body), _cache_marks(body))

    openai_style = PrefixCache()
    assert cached(openai_style, [msg("a"), msg("b", True)]) == 0
    shared = cached(openai_style, [msg("a"), msg("b"), msg("c", True)])
    assert shared == sum(len(p) for p in prompt_parts({"messages": [msg("a"), msg("b")]}))

    anthropic = PrefixCache(anthropic=True)
    cached(anthropic, [msg("a", True), msg("b"), msg("c")])  # only [a] is written
    assert cached(anthropic, [msg("a"), msg("b"), msg("c")]) == 0  # no marker: no read
    hit = cached(anthropic, [msg("a"), msg("b"), msg("c", True)])
    assert hit == len(prompt_parts({"messages": [msg("a")]})[0])


# -- recording, script control ----------------------------------------------------------------

def test_requests_arrival_and_answer_times_are_recorded(scripted_server):
    server = scripted_server([{"content": "slow", "delay": 0.3}, {"content": "fast"}])
    before = time.time()
    post(server, {"model": "m", "messages": USER, "temperature": 0.5})
    after_first = time.time()
    post(server, {"model": "m", "messages": USER + USER})
    assert after_first - before >= 0.3  # the delay happened before answering
    bodies, times = server.requests, server.request_times
    assert [b.get("temperature") for b in bodies] == [0.5, None]
    assert len(bodies[1]["messages"]) == 2
    assert before <= times[0] < before + 0.2  # stamped on arrival, not after the delay
    assert times[0] < times[1]
    assert after_first <= times[1]
    # stamped once the answer was written: the client may read it before the server's
    # thread gets to the stamp, so wait for both stamps rather than race them
    deadline = time.monotonic() + 5
    while None in server.answer_times and time.monotonic() < deadline:
        time.sleep(0.01)
    answered = server.answer_times
    assert times[0] + 0.3 <= answered[0] and times[1] <= answered[1]


def test_exhausted_script_answers_message_or_error(scripted_server):
    server = scripted_server([{"content": "only"}])
    post(server, {"model": "m", "messages": USER})
    status, _, raw = post(server, {"model": "m", "messages": USER})
    assert status == 200
    assert json.loads(raw)["choices"][0]["message"]["content"] == EXHAUSTED_TEXT
    assert server.overruns == 1 and server.remaining == 0 and server.steps_served == 1
    server.extend([{"content": "more"}])  # an overrun does not skip steps added later
    _, _, raw = post(server, {"model": "m", "messages": USER})
    assert json.loads(raw)["choices"][0]["message"]["content"] == "more"
    strict = scripted_server([], exhausted="error")
    status, _, raw = post(strict, {"model": "m", "messages": USER})
    assert status == 500 and json.loads(raw)["error"]["code"] == "script_exhausted"
    assert strict.overruns == 1


def test_responder_reacts_to_the_request(scripted_server):
    def responder(body: dict, index: int) -> dict | None:
        if index == 2:
            return None
        if index == 1:
            return {"bogus": True}
        return {"content": f"{index}:{len(body['messages'])}"}

    server = scripted_server(responder)
    _, _, raw = post(server, {"model": "m", "messages": USER * 3})
    assert json.loads(raw)["choices"][0]["message"]["content"] == "0:3"
    status, _, raw = post(server, {"model": "m", "messages": USER})
    assert status == 500 and "bogus" in json.loads(raw)["error"]["message"]
    assert server.errors and "bogus" in server.errors[0]
    _, _, raw = post(server, {"model": "m", "messages": USER})
    assert json.loads(raw)["choices"][0]["message"]["content"] == EXHAUSTED_TEXT


@pytest.mark.parametrize("step", [
    {"content": "x", "tool_call": []},
    {"tool_calls": [{"arguments": {}}]},
    {"fault": "teapot"},
    {"fault": "status", "status": 200},
    {"content": "x", "usage": {"prompt": 3}},
    {"content": "x", "reasoning": "r", "reasoning_format": "anthropic"},
    "just a string",
])
def test_bad_steps_fail_at_construction(step):
    with pytest.raises(ScriptError):
        ScriptedServer([step])


def test_models_endpoint_and_unknown_path(scripted_server):
    server = scripted_server([])
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "/v1/models")
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["data"][0]["id"] == "scripted"
    conn.close()
    status, _, _ = post(server, {"model": "m"}, "/v1/embeddings")
    assert status == 404
    status, _, _ = post(server, [1, 2], "/v1/chat/completions")  # type: ignore[arg-type]
    assert status == 400


def test_client_disconnect_mid_stream_is_quiet(scripted_server, capfd):
    server = scripted_server([{"content": "x" * 200, "chunk_size": 1, "chunk_delay": 0.005}])
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    body = json.dumps({"model": "m", "messages": USER, "stream": True}).encode()
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert sock.recv(100).startswith(b"HTTP/1.1 200")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()  # RST: the server's next writes fail
    time.sleep(0.3)
    server.stop()
    assert "Traceback" not in capfd.readouterr().err


def test_stop_refuses_further_connections():
    server = ScriptedServer([{"content": "x"}]).start()
    port = server.port
    server.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).recv(1)


# -- CLI ---------------------------------------------------------------------------------------

def test_cli_serves_a_script_file_and_records(tmp_path):
    script = tmp_path / "steps.json"
    script.write_text(json.dumps([{"content": "from a file"}]))
    record = tmp_path / "requests.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "baseagent.testing.scripted_server",
                             "--script", str(script), "--record", str(record)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        port = int(line.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/v1/chat/completions",
                     json.dumps({"model": "m", "messages": USER}))
        answer = json.loads(conn.getresponse().read())
        conn.close()
        assert answer["choices"][0]["message"]["content"] == "from a file"
        recorded = [json.loads(x) for x in record.read_text().splitlines()]
        assert recorded == [{"model": "m", "messages": USER}]  # appended on arrival
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert out == "" and "Traceback" not in err


def test_loop_replays_the_script_for_repeatable_demos(litellm, scripted_server):
    server = scripted_server([{"content": "one"}, {"content": "two"}], loop=True)
    texts = [complete(litellm, server, stream=False).choices[0].message.content
             for _ in range(5)]
    assert texts == ["one", "two", "one", "two", "one"]
    assert server.overruns == 0
    once = scripted_server([{"content": "one"}])  # without --loop: the script runs out
    complete(litellm, once, stream=False)
    assert complete(litellm, once, stream=False).choices[0].message.content != "one"
    assert once.overruns == 1


def test_the_cli_takes_loop(tmp_path):
    import subprocess
    import sys
    import urllib.request

    script = tmp_path / "s.json"
    script.write_text('[{"content": "again"}]')
    proc = subprocess.Popen([sys.executable, "-m", "baseagent.testing.scripted_server",
                             "--script", str(script), "--loop"], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(
                                REPO / "src")})
    try:
        url = proc.stdout.readline().split()[-1]
        for _ in range(3):
            request = urllib.request.Request(
                url + "/v1/chat/completions", method="POST",
                data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
                .encode(), headers={"Content-Type": "application/json"})
            body = json.load(urllib.request.urlopen(request, timeout=30))
            assert body["choices"][0]["message"]["content"] == "again"
    finally:
        proc.terminate()
        proc.wait(timeout=30)

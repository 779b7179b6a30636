"""bench/usage_proxy.py: every row of the exercises reaches the server through it, and it
counts what the server answered each (calls, tokens, the prompt cache's share) without
changing a byte of the answers (of a request, at most one field llama-server reads)."""
from __future__ import annotations

import json
import sys
import urllib.request

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
from usage_proxy import (UsageProxy, answer_text, longest_shared_prefix,  # noqa: E402
                         prompt_text, usage_of)


def _post(api_base: str, body: dict) -> bytes:
    request = urllib.request.Request(f"{api_base}/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read()


def test_answers_pass_through_and_usage_is_counted_per_tag(scripted_server):
    server = scripted_server([{"content": "one", "usage": {"prompt_tokens": 100,
                                                           "completion_tokens": 5,
                                                           "cached_tokens": 60}},
                              {"content": "two"}])
    proxy = UsageProxy(server.api_base).start()
    try:
        proxy.tag = "alone/hamming"
        plain = _post(proxy.api_base, {"model": "m", "messages": [{"role": "user",
                                                                   "content": "hi"}]})
        assert json.loads(plain)["choices"][0]["message"]["content"] == "one"
        proxy.tag = "aider/hamming"
        streamed = _post(proxy.api_base, {"model": "m", "stream": True,
                                          "stream_options": {"include_usage": True},
                                          "messages": [{"role": "user", "content": "hi"}]})
        assert streamed.rstrip().endswith(b"data: [DONE]")
    finally:
        proxy.stop()
    assert proxy.totals("alone/") == {"calls": 1, "input_tokens": 100, "cached_tokens": 60,
                                      "output_tokens": 5, "fresh_tokens": 100,
                                      "unseen_tokens": 100}
    assert proxy.totals("aider/")["calls"] == 1
    assert proxy.totals()["calls"] == 2


def test_usage_is_read_from_each_wire_and_from_llama_server_timings():
    chat = {"usage": {"prompt_tokens": 10, "completion_tokens": 2,
                      "prompt_tokens_details": {"cached_tokens": 7}}}
    assert usage_of(json.dumps(chat).encode()) == (10, 7, 2)
    llama = {"usage": {"prompt_tokens": 10, "completion_tokens": 2},
             "timings": {"cache_n": 6, "prompt_n": 4, "predicted_n": 2}}
    assert usage_of(json.dumps(llama).encode()) == (10, 6, 2)
    timings_only = 'data: {"choices":[]}\n\ndata: {"timings":{"cache_n":6,"prompt_n":4,' \
                   '"predicted_n":3}}\n\ndata: [DONE]\n\n'
    assert usage_of(timings_only.encode()) == (10, 6, 3)
    responses = 'data: {"type":"response.completed","response":{"usage":{"input_tokens":50,' \
                '"input_tokens_details":{"cached_tokens":40},"output_tokens":9}}}\n\n'
    assert usage_of(responses.encode()) == (50, 40, 9)
    assert usage_of(b"not json") is None


def test_the_input_no_one_slot_cache_could_serve_is_counted_against_the_call_before(
        scripted_server):
    """The ceiling of the cached share: a call that repeats the one before and its answer
    and adds a little is nearly all servable; one that starts otherwise is all new."""
    usage = {"prompt_tokens": 1000, "completion_tokens": 5, "cached_tokens": 0}
    server = scripted_server([{"content": "x" * 300, "usage": usage},
                              {"content": "ok", "usage": usage},
                              {"content": "ok", "usage": usage}])
    proxy = UsageProxy(server.api_base).start()
    first = [{"role": "system", "content": "s" * 600}, {"role": "user", "content": "u" * 100}]
    try:
        proxy.tag = "agent/a"
        _post(proxy.api_base, {"model": "m", "messages": first})
        again = first + [{"role": "assistant", "content": "x" * 300},
                         {"role": "user", "content": "f" * 100}]
        _post(proxy.api_base, {"model": "m", "stream": True, "messages": again,
                               "stream_options": {"include_usage": True}})
        proxy.tag = "agent/b"
        _post(proxy.api_base, {"model": "m", "messages": [{"role": "system", "content": "t"}]})
    finally:
        proxy.stop()
    # the second call: its last 125 of 1,168 characters are new (after the first's prompt
    # and answer: `</assistant>` and the feedback)
    assert proxy.totals("agent/a")["fresh_tokens"] == 1000 + round(1000 * 125 / 1168)
    # "[]<system>t</system>": its first 10 characters are the call before's
    assert proxy.totals("agent/b")["fresh_tokens"] == 500
    assert answer_text(b'data: {"choices":[{"delta":{"content":"a"}}]}\n\n'
                       b'data: {"choices":[{"delta":{"content":"b"}}]}\n\ndata: [DONE]\n') \
        == "<assistant>ab"
    assert prompt_text(b"not json") == "" and prompt_text(b"[1]") == ""


def test_a_cache_that_kept_every_call_is_counted_against_the_closest_earlier_call():
    """`unseen_tokens`: a prompt that goes back to an earlier call's prefix after another
    kind of call evicted it (the conversation between two probe prompts) is new to a
    one-slot cache, not to one that kept every call."""
    proxy = UsageProxy("http://127.0.0.1:9/v1")
    probe = "<system>probe</system><user>" + "t" * 80
    proxy.record("agent/", (100, 0, 5), probe + "</user>", "<assistant>a")
    proxy.record("agent/", (100, 0, 5), "<system>conversation</system>" + "c" * 71, "")
    proxy.record("agent/", (100, 90, 5), probe + "f" * 10, "")  # the probe again
    proxy.record("agent/", (100, 0, 5), "z" * 100, "")  # new to every cache
    totals = proxy.totals("agent/")
    # one slot: the second and third share "<system>" (8 characters) with the call before
    assert totals["fresh_tokens"] == 100 + 92 + round(100 * 110 / 118) + 100
    # every call kept: the third shares its first 108 characters with the first
    assert totals["unseen_tokens"] == 100 + 92 + round(100 * 10 / 118) + 100
    assert longest_shared_prefix("abc", []) == 0
    assert longest_shared_prefix("abd", sorted(["abc", "b", "a"])) == 2


def test_the_cached_share_is_shown_beside_its_ceiling():
    from exercises import cached_share

    assert cached_share({"input_tokens": 1000, "cached_tokens": 846}) == "84.6%"
    assert cached_share({"input_tokens": 1000, "cached_tokens": 846, "fresh_tokens": 130}) \
        == "84.6% (at most 87.0%)"
    assert cached_share({"input_tokens": 1000, "cached_tokens": 846, "fresh_tokens": 130,
                         "unseen_tokens": 88}) == "84.6% (at most 87.0%, 91.2% with every call kept)"
    assert cached_share(None) == "-" and cached_share({"input_tokens": 0}) == "-"


def test_a_call_the_client_cut_short_is_counted(scripted_server):
    """The agent stops reading a reply once it holds what it asked for (the line search's
    first code block): the call still counts, and its prompt is what the slot holds next."""
    import socket
    import time
    from urllib.parse import urlsplit

    server = scripted_server([{"content": "word " * 400, "chunk_delay": 0.01}])
    proxy = UsageProxy(server.api_base).start()
    try:
        proxy.tag = "agent/cut"
        where = urlsplit(proxy.api_base)
        body = json.dumps({"model": "m", "stream": True,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        with socket.create_connection((where.hostname, where.port), timeout=30) as client:
            client.sendall(f"POST {where.path}/chat/completions HTTP/1.1\r\nHost: x\r\n"
                           f"Content-Type: application/json\r\nContent-Length: {len(body)}"
                           "\r\n\r\n".encode() + body)
            client.recv(64)  # the first bytes, then hang up
        deadline = time.monotonic() + 20
        while proxy.totals("agent/")["calls"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proxy.stop()
    assert proxy.totals("agent/") == {"calls": 1, "input_tokens": 0, "cached_tokens": 0,
                                      "output_tokens": 0, "fresh_tokens": 0,
                                      "unseen_tokens": 0}


def test_a_call_cut_short_counts_its_prompt_when_the_server_sends_timings():
    """In front of the llama-server the bench serves, a streamed chat completion asks for
    `timings_per_token` (as this llama-server build answers it: every chunk carries the
    prompt's tokens read and cached), so a call the client cuts short counts what its
    prompt cost; the rest of the request is sent as it came, and a server the bench does
    not serve gets the request unchanged."""
    import socket
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlsplit

    bodies: list[dict] = []

    class LlamaLike(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *_args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            timings = {"cache_n": 1500, "prompt_n": 120, "predicted_n": 1}
            try:
                for n in range(400):
                    chunk = {"choices": [{"index": 0, "delta": {"content": "word "}}]}
                    if body.get("timings_per_token"):
                        chunk["timings"] = {**timings, "predicted_n": n + 1}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(0.01)
            except OSError:
                pass

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), LlamaLike)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{upstream.server_address[1]}/v1"
    request = {"model": "m", "stream": True, "temperature": 0,
               "messages": [{"role": "user", "content": "hi"}]}

    def cut_call(proxy: UsageProxy) -> dict[str, int]:
        where = urlsplit(proxy.api_base)
        body = json.dumps(request).encode()
        with socket.create_connection((where.hostname, where.port), timeout=30) as client:
            client.sendall(f"POST {where.path}/chat/completions HTTP/1.1\r\nHost: x\r\n"
                           f"Content-Type: application/json\r\nContent-Length: {len(body)}"
                           "\r\n\r\n".encode() + body)
            seen = b""
            while seen.count(b"data:") < 3:  # a few chunks, then hang up
                seen += client.recv(4096)
        deadline = time.monotonic() + 20
        while proxy.totals()["calls"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        return proxy.totals()

    try:
        served_here = UsageProxy(base, timings=True).start()
        try:
            totals = cut_call(served_here)
        finally:
            served_here.stop()
        elsewhere = UsageProxy(base).start()
        try:
            untouched = cut_call(elsewhere)
        finally:
            elsewhere.stop()
    finally:
        upstream.shutdown()
        upstream.server_close()
    assert bodies[0] == {**request, "timings_per_token": True}
    assert totals["calls"] == 1 and totals["input_tokens"] == 1620
    assert totals["cached_tokens"] == 1500 and 3 <= totals["output_tokens"] < 400
    assert bodies[1] == request
    assert untouched["calls"] == 1 and untouched["input_tokens"] == 0

"""A pass-through HTTP proxy in front of the model server that counts, per tag, the model
calls, the input tokens, the input tokens the server's prompt cache served, and the output
tokens, read from each answer's usage as the server reports it.

bench/exercises.py puts one in front of the server so that every row (baseagent, the model
alone, Aider, Codex CLI, mini-swe-agent) is measured the same way, whatever each reports
about itself: the cached share of input tokens per row comes from here.

Usage is read from chat completions (`usage.prompt_tokens`, `completion_tokens`,
`prompt_tokens_details.cached_tokens`; llama-server's `timings.cache_n` when the details
are missing) and the Responses API (`response.usage.input_tokens`, `output_tokens`,
`input_tokens_details.cached_tokens`), streamed (the last `data:` event that has usage) or
not. Answers pass through byte for byte and unbuffered (a streamed answer reaches the
client as the server writes it); the proxy keeps at most the last 1 MiB of each answer
for reading usage.

A call the client cuts short (the probe stops reading once a reply holds its files) never
reaches the answer's last event, where usage is. In front of a llama-server the bench
serves itself (`timings=True`), a streamed chat completion is therefore sent asking for
`timings_per_token`: every chunk then carries the server's `timings` (the prompt's tokens
read and served from the cache), which clients ignore, and the cut call counts what its
prompt cost. Nothing else of a request changes. Without it, 4 of anagram's first 24
calls at de3c5da counted no token at all.

It also counts the input tokens no one-slot cache could have served (`fresh_tokens`): the
part of each request past what it shares with the call before it (that call's prompt, then
its answer), in characters of a plain rendering of the request (`prompt_text`), turned into
tokens in proportion. The cached share is then read against that ceiling: a row whose every
call is new text after a short shared prefix cannot reach 90% however the cache works.
Beside it, `unseen_tokens`: the input past the longest prefix a request shares with any
earlier call (its prompt, then its answer), what a cache that kept every call (a provider's,
or a server with more slots) could not have served either: each task's own text, the tests
it shows, each failure fed back. The one-slot ceiling falls below it where calls of two
kinds take turns (the probe's prompts and the conversation's), each evicting the other.
"""
from __future__ import annotations

import bisect
import http.client
import json
import os
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

KEPT_BYTES = 1 << 20  # the tail of an answer kept to read its usage
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host",
              "proxy-connection", "te", "trailer", "upgrade"}


def usage_of(body: bytes) -> tuple[int, int, int] | None:
    """(input, cached input, output) tokens of one answer (JSON or SSE), or None."""
    text = body.decode("utf-8", errors="replace").strip()
    candidates: list[Any] = []
    if text.startswith("{"):
        try:
            candidates.append(json.loads(text))
        except ValueError:
            pass
    else:
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                try:
                    candidates.append(json.loads(line[5:]))
                except ValueError:
                    continue
    for data in reversed(candidates):
        if not isinstance(data, dict):
            continue
        response = data.get("response") if isinstance(data.get("response"), dict) else data
        usage = response.get("usage")
        timings = response.get("timings")
        if not isinstance(usage, dict) and isinstance(timings, dict):  # llama-server alone
            cached = int(timings.get("cache_n") or 0)
            return (int(timings.get("prompt_n") or 0) + cached, cached,
                    int(timings.get("predicted_n") or 0))
        if not isinstance(usage, dict):
            continue
        if "input_tokens" in usage:  # the Responses API
            details = usage.get("input_tokens_details") or {}
            return (int(usage.get("input_tokens") or 0), int(details.get("cached_tokens") or 0),
                    int(usage.get("output_tokens") or 0))
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens")
        if cached is None:
            cached = (response.get("timings") or {}).get("cache_n") or 0
        return (int(usage.get("prompt_tokens") or 0), int(cached),
                int(usage.get("completion_tokens") or 0))
    return None


def prompt_text(body: bytes | None) -> str:
    """A plain rendering of a request's prompt, in the order a chat template lays it out
    (the tools, then each message's role, text and tool calls; the Responses API's
    instructions, then its input items): two requests share a prefix here where they share
    one on the server."""
    try:
        data = json.loads(body or b"")
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    parts = [json.dumps(data.get("tools") or [], sort_keys=True)]
    if isinstance(data.get("messages"), list):
        for message in data["messages"]:
            if isinstance(message, dict):
                parts.append(_message_text(message.get("role"), message.get("content"),
                                           message.get("tool_calls")))
    else:
        parts.append(str(data.get("instructions") or ""))
        items = data.get("input")
        for item in items if isinstance(items, list) else [items]:
            parts.append(item if isinstance(item, str) else json.dumps(item, sort_keys=True))
    return "".join(parts)


def _message_text(role: Any, content: Any, calls: Any) -> str:
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p)
                          for p in content)
    text = f"<{role}>{content or ''}"
    return text + (json.dumps(calls, sort_keys=True) if calls else "") + f"</{role}>"


def answer_text(body: bytes) -> str:
    """The text (and tool call arguments) of an answer, JSON or streamed, as the next
    request's rendering of it begins (`<assistant>` and the text, unclosed)."""
    text = body.decode("utf-8", errors="replace").strip()
    pieces: list[str] = []
    events = [text] if text.startswith("{") else [
        line[5:] for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]")]
    for event in events:
        try:
            data = json.loads(event)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("delta"), str):  # the Responses API's text deltas
            pieces.append(data["delta"])
        for choice in data.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            part = choice.get("delta") or choice.get("message") or {}
            if isinstance(part, dict) and isinstance(part.get("content"), str):
                pieces.append(part["content"])
    return "<assistant>" + "".join(pieces)


def with_timings(body: bytes | None) -> bytes | None:
    """A streamed chat completion's request asking llama-server for `timings_per_token`
    (every chunk then says what the prompt cost, so a stream cut short does too); any other
    body as it was."""
    try:
        data = json.loads(body or b"")
    except ValueError:
        return body
    if not isinstance(data, dict) or data.get("stream") is not True \
            or "timings_per_token" in data:
        return body
    return json.dumps({**data, "timings_per_token": True}).encode()


def shared_prefix(a: str, b: str) -> int:
    """How many characters `a` and `b` begin with alike."""
    return len(os.path.commonprefix([a, b]))


def longest_shared_prefix(text: str, seen: list[str]) -> int:
    """The longest prefix `text` shares with any string of `seen` (sorted): the one that
    shares most sorts next to where `text` would go, so two comparisons find it."""
    at = bisect.bisect_left(seen, text)
    return max((shared_prefix(text, seen[i]) for i in (at - 1, at) if 0 <= i < len(seen)),
               default=0)


class UsageProxy:
    """`UsageProxy(upstream_api_base).start()`; point clients at `.api_base`; set `.tag`
    before each task; read `.totals(prefix)`."""

    def __init__(self, upstream: str, timings: bool = False) -> None:
        parts = urlsplit(upstream)
        # Whether streamed chat completions ask the server for `timings_per_token` (only a
        # llama-server knows it: another server may refuse the field).
        self.timings = timings
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.upstream_path = parts.path.rstrip("/")
        self.tag = ""
        # Where each counted call is appended as it is served (a JSON line: its tag and
        # usage), so that a row stopped part way and resumed later (bench/exercises.py's
        # agent row) counts the calls of both invocations: replay() reads them back.
        self.journal: Path | None = None
        self._lock = threading.Lock()
        self._totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
        self._before = ""  # the last call's prompt and answer (the slot's cache, at best)
        self._seen: list[str] = []  # every call's prompt and answer so far, sorted
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.proxy = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.upstream_path}"

    def start(self) -> "UsageProxy":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def record(self, tag: str, usage: tuple[int, int, int] | None, prompt: str = "",
               answer: str = "") -> None:
        """Count one call; `prompt` and `answer` (their plain renderings) give the part of
        its input that was new since the call before, and new since any earlier call."""
        with self._lock:
            fresh = unseen = None
            if prompt:
                new = len(prompt) - shared_prefix(prompt, self._before)
                never = len(prompt) - longest_shared_prefix(prompt, self._seen)
                if usage is not None:
                    fresh = round(usage[0] * new / len(prompt))
                    unseen = round(usage[0] * never / len(prompt))
                self._before = prompt + answer  # what the slot holds now, cut short or not
                bisect.insort(self._seen, self._before)
            self._add(tag, usage, fresh, unseen)
            if self.journal is not None:
                with self.journal.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps([tag, usage, fresh, unseen]) + "\n")

    def replay(self, journal: Path) -> int:
        """Count the calls an earlier invocation journaled; returns how many."""
        lines = journal.read_text(encoding="utf-8").splitlines() if journal.is_file() else []
        with self._lock:
            for line in lines:
                tag, usage, *ceilings = json.loads(line)  # lines of older runs: fewer
                fresh, unseen = (ceilings + [None, None])[:2]
                self._add(str(tag), tuple(usage) if usage is not None else None, fresh, unseen)
        return len(lines)

    def _add(self, tag: str, usage: tuple[int, int, int] | None, fresh: int | None,
             unseen: int | None) -> None:
        total = self._totals[tag]
        total[0] += 1
        if usage is not None:
            total[1] += usage[0]
            total[2] += usage[1]
            total[3] += usage[2]
            # a call whose prompt was not read counts as all new
            total[4] += usage[0] if fresh is None else fresh
            total[5] += usage[0] if unseen is None else unseen

    def totals(self, prefix: str = "") -> dict[str, int]:
        """Calls and tokens of every tag that starts with `prefix` (`fresh_tokens`: the
        input no one-slot cache could have served; `unseen_tokens`: no cache at all)."""
        with self._lock:
            rows = [t for tag, t in self._totals.items() if tag.startswith(prefix)]
        return {"calls": sum(r[0] for r in rows), "input_tokens": sum(r[1] for r in rows),
                "cached_tokens": sum(r[2] for r in rows),
                "output_tokens": sum(r[3] for r in rows),
                "fresh_tokens": sum(r[4] for r in rows),
                "unseen_tokens": sum(r[5] for r in rows)}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the answer ends when the connection closes

    def log_message(self, *_args: Any) -> None:
        pass

    def _forward(self) -> None:
        proxy: UsageProxy = self.server.proxy  # type: ignore[attr-defined]
        tag = proxy.tag
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        sent = with_timings(body) if proxy.timings and self.path.endswith(
            "/chat/completions") else body
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port,
                                              timeout=3600)
        answer = None
        kept = bytearray()
        try:
            upstream.request(self.command, self.path, body=sent, headers=headers)
            answer = upstream.getresponse()
            self.send_response(answer.status, answer.reason)
            for key, value in answer.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            while chunk := answer.read1(65536):
                kept += chunk
                if len(kept) > KEPT_BYTES:
                    del kept[:len(kept) - KEPT_BYTES]
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass  # the client stopped reading (a reply cut early) or the server went away
        finally:
            upstream.close()
        if self.command == "POST" and answer is not None and answer.status == 200:
            # a call the client cut short counts too: its tokens only if its usage came
            proxy.record(tag, usage_of(bytes(kept)), prompt_text(body), answer_text(bytes(kept)))

    do_GET = do_POST = _forward

"""One `[openapi.NAME]` document as a tool source: loaded in the background when the agent
is made, its operations offered as tools, each call sent with httpx.

A call's result for the model is the HTTP status, a few useful response headers and the
body (JSON pretty-printed), cut in the middle like shell output. The body is streamed and
no more than MAX_RESPONSE_BYTES of it is read; a loader its run stopped waiting for is
told to stop (document.py bounds the document and what its references expand to). An HTTP error is such a
result (the item is failed, the run goes on), and so is a service that cannot be reached.
The auth value (from an environment variable) is added to every request and to the fetch of
the document; it is removed from everything the model, the events and the session record
could see (response bodies that echo it, error messages that quote a URL).

`mode` chooses the tools: one per operation ("operations"), one generic `http_request` held to
the document's servers ("generic", openapi/generic.py), or both. Both kinds share the call
below: the same auth, timeout, interruption and size caps.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, Callable

from baseagent.config.sources import OpenApiConfig
from baseagent.openapi.document import OpenApiError, load, server_urls
from baseagent.openapi.generic import NAME, HttpRequestTool, description, request_parts, target
from baseagent.openapi.operations import Operation, operations, tool_name
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import Tool, ToolResult, check_json_arguments

# What the model reads of a response, cut in the middle beyond this (shell's limit).
MODEL_OUTPUT_MAX_CHARS = 10_000
# Response headers worth the model's attention.
SHOWN_HEADERS = ("content-type", "location", "retry-after", "www-authenticate", "etag",
                 "link", "x-request-id", "x-ratelimit-remaining")
# Time to load a document before the first turn stops waiting (on top of timeout_sec).
LOAD_GRACE_SECONDS = 5.0
# What is read of a response body (the model sees 10,000 characters of it).
MAX_RESPONSE_BYTES = 1024 * 1024
REDACTED = "[REDACTED]"


class OpenApiSource:
    """A ToolSource (tools/sources.py) for one document."""

    def __init__(self, name: str, config: OpenApiConfig, env: Mapping[str, str]) -> None:
        self.name = name
        self.config = config
        self._secret = ""
        self._auth_headers: dict[str, str] = {}
        self._auth_query: dict[str, str] = {}
        self._problem = ""
        auth = config.auth
        if auth is not None:
            value = env.get(auth.env, "")
            if not value:
                self._problem = f"the auth variable {auth.env} is not set"
            else:
                self._secret = value
                if auth.query is not None:
                    self._auth_query[auth.query] = value
                else:
                    header = auth.header_name or "Authorization"
                    self._auth_headers[header] = f"Bearer {value}" if auth.type == "bearer" \
                        else value
        self._thread: threading.Thread | None = None
        self._loaded = threading.Event()
        self._stop = threading.Event()  # the run stopped waiting: the loader gives up
        self._operations: list[Operation] = []
        self._doc: dict[str, Any] | None = None
        self._spec_url: str | None = None
        self._base = ""
        self._servers: list[str] = []  # where http_request may go (the base first)
        self._client: Any = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def secrets(self) -> list[str]:
        return [self._secret] if self._secret else []

    # -- ToolSource ------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name=f"openapi-{self.name}",
                                            daemon=True)
            self._thread.start()

    def wait(self, cancelled: Callable[[], bool]) -> list[str]:
        self.start()
        limit = self.config.timeout_sec + LOAD_GRACE_SECONDS
        waited = 0.0
        while not self._loaded.wait(0.05):
            waited += 0.05
            if cancelled():
                self._stop.set()
                return []
            if waited > limit:
                self._problem = self._problem or f"loading took longer than {limit:g}s"
                self._stop.set()
                break
        if self._problem:
            return [f"OpenAPI document '{self.name}' is unusable: {self._clean(self._problem)}; "
                    "continuing without its tools"]
        return []

    def tools(self, taken: set[str]) -> list[Tool]:
        if self._problem or self._doc is None:
            return []
        mode = self.config.mode
        out: list[Tool] = []
        ops = operations(self._doc, source=self.name, include=self.config.include,
                         exclude=self.config.exclude,
                         taken=taken if mode != "generic" else set(taken),
                         reserved_headers=set(self._auth_headers))
        if mode != "generic":
            out += [OpenApiTool(self, op) for op in ops]
        if mode != "operations":
            title = str((self._doc.get("info") or {}).get("title") or "")
            out.append(HttpRequestTool(self, tool_name(self.name, NAME, taken),
                                       description(self.name, title, self._servers, ops)))
        return out

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._closed = True
            if self._client is not None:
                self._client.close()
                self._client = None

    def kill(self) -> None:
        """Nothing to kill: no process of its own."""

    # -- loading, on its own thread ------------------------------------------------------

    def _load(self) -> None:
        try:
            if self._problem:
                return
            self._doc, self._spec_url = load(self.config.spec, timeout=self.config.timeout_sec,
                                             headers=self._auth_headers, stop=self._stop)
            self._servers = server_urls(self._doc, self.config.base_url, self._spec_url)
            self._base = self._servers[0]
            # Build the operations once here, so a bad `$ref` is this document's notice
            # rather than an error when the run's tools are fixed.
            found = operations(self._doc, source=self.name, include=self.config.include,
                               exclude=self.config.exclude, taken=set(), stop=self._stop)
            if not found and self.config.mode == "operations":
                self._problem = "no operation matches include/exclude" \
                    if self.config.include or self.config.exclude else "it has no operations"
        except OpenApiError as exc:
            self._problem = str(exc)
        except Exception as exc:  # noqa: BLE001 - a bad document must not end the run
            self._problem = f"{type(exc).__name__}: {exc}"
        finally:
            self._loaded.set()

    # -- calls -----------------------------------------------------------------------------

    def send(self, op: Operation, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path, query, headers, body = op.request(args)
        has_body = any(a.location == "body" and a.prop in args for a in op.arguments)
        return self._call(op.method, self._base + path, query, headers, ctx,
                          json_body=body if has_body else None, redirects=True)

    def send_generic(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """A call of the generic `http_request` tool: its target held to the document's
        servers, its headers and query to what the model may set (openapi/generic.py), then
        the auth added here, where the model never sees it; redirects not followed."""
        where = target(str(args["path"]), self._servers)
        query, headers, content, body = request_parts(
            args, auth_headers=set(self._auth_headers), auth_query=set(self._auth_query))
        return self._call(str(args["method"]).upper(), where.url, query, headers, ctx,
                          json_body=body, content=content, redirects=False)

    def _call(self, method: str, url: Any, query: dict[str, Any], headers: dict[str, str],
              ctx: ToolContext, *, json_body: Any = None, content: bytes | None = None,
              redirects: bool) -> ToolResult:
        """Send one request with the source's auth, within its timeout, abandoned on an
        interrupt; the result as the model reads it."""
        import httpx

        query = {**query, **self._auth_query}
        headers = {"Accept": "application/json, */*;q=0.5", **headers, **self._auth_headers}
        shown = f"{method} {_without_query(url)}"
        try:
            client = self._http()
            response = _interruptible(
                lambda: _bounded(client, client.build_request(
                    method, url, params=query, headers=headers, json=json_body,
                    content=content), redirects), ctx.cancelled)
        except _Interrupted:
            return ToolResult(output=f"Error: {shown} was interrupted", success=False)
        except httpx.TimeoutException:
            return ToolResult(output=f"Error: {shown} did not answer within "
                                     f"{self.config.timeout_sec:g}s (timeout_sec)", success=False)
        except (httpx.HTTPError, RuntimeError) as exc:
            return ToolResult(output=self._clean(f"Error: cannot reach {shown}: "
                                                 f"{type(exc).__name__}: {exc}"), success=False)
        return self._result(response, ctx.output_max_chars or MODEL_OUTPUT_MAX_CHARS)

    def _http(self) -> Any:
        import httpx

        with self._lock:
            if self._closed:
                raise RuntimeError("the agent is closed")
            if self._client is None:
                self._client = httpx.Client(timeout=self.config.timeout_sec,
                                            follow_redirects=True)
            return self._client

    def _result(self, response: "_Response", max_chars: int = MODEL_OUTPUT_MAX_CHARS) -> ToolResult:
        lines = [f"HTTP {response.status_code} {response.reason_phrase}".rstrip()]
        lines += [f"{h}: {response.headers[h]}" for h in SHOWN_HEADERS if h in response.headers]
        body = _body_text(response)
        if response.cut:
            body += f"\n[... the response was cut after {MAX_RESPONSE_BYTES:,} bytes ...]"
        text = self._clean("\n".join(lines) + "\n\n" + body)
        if len(text) > max_chars:
            from baseagent.tools.output_buffer import truncate_middle

            text = truncate_middle(text, max_chars)
        return ToolResult(output=text, success=response.status_code < 400,
                          item={"content": [{"type": "text", "text": text}]})

    def _clean(self, text: str) -> str:
        """The auth value never leaves: not to the model, not to an event."""
        return text.replace(self._secret, REDACTED) if self._secret else text


class OpenApiTool(Tool):
    """One operation, as the registry sees it."""

    item_type = "mcp_tool_call"

    def __init__(self, source: OpenApiSource, op: Operation) -> None:
        self._source = source
        self.op = op
        self.name = op.name
        self.server = source.name
        self.description = op.description

    @property
    def tool_name(self) -> str:
        return self.op.operation_id

    def parameters(self) -> dict[str, Any]:
        return self.op.schema

    def parse(self, data: dict[str, Any]) -> dict[str, Any]:
        return check_json_arguments(self.name, self.op.schema, data)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return self._source.send(self.op, args, ctx)


class _Interrupted(Exception):
    pass


def _interruptible(send: Callable[[], Any], cancelled: Callable[[], bool]) -> Any:
    """Run a blocking request on a helper thread so an interrupt is noticed at once (the
    abandoned request ends by its own timeout)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["value"] = send()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="openapi-call", daemon=True).start()
    while not done.wait(0.05):
        if cancelled():
            raise _Interrupted()
    if "error" in box:
        raise box["error"]
    return box["value"]


class _Response:
    """What is kept of a response: status, headers, and at most MAX_RESPONSE_BYTES of body."""

    def __init__(self, response: Any, content: bytes, cut: bool) -> None:
        self.status_code = response.status_code
        self.reason_phrase = response.reason_phrase
        self.headers = response.headers
        self.encoding = response.encoding or "utf-8"
        self.content = content
        self.cut = cut

    @property
    def text(self) -> str:
        try:
            return self.content.decode(self.encoding, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")


def _without_query(url: Any) -> str:
    """A URL as errors show it: without its query (where a query-string key would be)."""
    return str(url).split("?", 1)[0]


def _bounded(client: Any, request: Any, redirects: bool = True) -> _Response:
    """Send `request` and read no more of the body than the limit (a 2 GB answer costs
    a megabyte). `redirects`: follow them (the operations' calls) or return the 3xx."""
    response = client.send(request, stream=True, follow_redirects=redirects)
    try:
        chunks: list[bytes] = []
        size = 0
        cut = False
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                cut = True
                break
        content = b"".join(chunks)[:MAX_RESPONSE_BYTES]
    finally:
        response.close()
    return _Response(response, content, cut)


def _body_text(response: _Response) -> str:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if not response.content:
        return "(empty body)"
    if (kind == "application/json" or kind.endswith("+json")) and not response.cut:
        try:
            return json.dumps(json.loads(response.content), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    if kind.startswith("text/") or kind in ("", "application/xml", "application/yaml") \
            or "json" in kind or "xml" in kind:
        return response.text
    return f"({len(response.content)}{'+' if response.cut else ''} bytes of {kind})"

"""The generic `http_request` tool of an `[openapi.NAME]` source in mode "generic" or
"both" (AgentB's GenericHttpApiTool): one tool that sends any request the model writes,
held to that document's servers.

The model's request is untrusted: it may try to reach another host or smuggle one through
the path (`//evil`, `@evil`, `http://evil/`, `\\evil`, `/../`), set the credentials itself,
or send headers that change how the request is framed. `target()` and `request_parts()`
are pure and refuse each of these with a one-line ToolError the model reads; the URL is
checked as httpx parsed it (what is really sent), not as the model wrote it. Redirects are
not followed (a 3xx and its Location are the result), so no answer can lead the call, or
its credentials, elsewhere. The source adds its auth after these checks, outside the
model's view (openapi/source.py).
"""
from __future__ import annotations

import json
import re
from typing import Any, Protocol
from urllib.parse import unquote

from baseagent.openapi.operations import Operation
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import Tool, ToolError, ToolResult, check_json_arguments

NAME = "http_request"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
# Headers that frame the request or carry credentials: the agent's, never the model's.
RESERVED_HEADERS = frozenset({
    "host", "authorization", "proxy-authorization", "content-length", "transfer-encoding",
    "connection", "keep-alive", "te", "trailer", "upgrade", "expect"})
_TOKEN = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
# A request body larger than this is refused (a model pasting a file by mistake).
MAX_REQUEST_BODY_BYTES = 1024 * 1024
# How many operations the description lists (the model's map of the API in generic mode).
MAX_LISTED_OPERATIONS = 60
MAX_DESCRIPTION_CHARS = 6_000

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "method": {"type": "string", "enum": list(METHODS)},
        "path": {"type": "string", "description": (
            "The path under the API's base URL, starting with / (e.g. /pets/1), with path "
            "parameters filled in; or a full URL under one of the API's servers. No query "
            "string: put it in `query`.")},
        "query": {"type": "object", "description": "Query parameters (a list repeats one).",
                  "additionalProperties": {"anyOf": [
                      {"type": "string"}, {"type": "number"}, {"type": "boolean"},
                      {"type": "array", "items": {"type": ["string", "number", "boolean"]}}]}},
        "headers": {"type": "object", "description": "Extra request headers (the API's "
                    "credentials are added for you: never send them).",
                    "additionalProperties": {"type": "string"}},
        "body": {"description": "The request body: sent as JSON, or as text when it is a "
                 "string and `headers` sets a non-JSON Content-Type."},
    },
    "required": ["method", "path"],
    "additionalProperties": False,
}


class Target:
    """A checked request target: the URL to send, and the server it lies under."""

    def __init__(self, url: Any, server: str) -> None:
        self.url = url
        self.server = server


def target(path: str, servers: list[str]) -> Target:
    """The URL `path` names, if it lies under one of `servers` (absolute http(s) URLs, the
    first being the base a relative path is taken against); ToolError otherwise."""
    import httpx

    if not path:
        raise ToolError("path is empty: give the path under the API, e.g. /items")
    bad = next((c for c in path if c in "\\#?" or ord(c) < 0x21 or ord(c) == 0x7f), None)
    if bad is not None:
        what = {"?": "a query string (put it in `query`)", "#": "a fragment",
                "\\": "a backslash"}.get(bad, "whitespace or a control character")
        raise ToolError(f"path {path!r} contains {what}")
    if path.startswith("/") and not path.startswith("//"):
        url = servers[0] + path
    elif path.lower().startswith(("http://", "https://")):
        url = path
    else:
        raise ToolError(f"path {path!r} must start with a single / (relative to "
                        f"{servers[0]}) or be a URL under {_listed(servers)}")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise ToolError(f"path {path!r} is not a usable URL: {exc}") from None
    if parsed.userinfo:
        raise ToolError(f"path {path!r} carries user information (user@host): refused")
    # As written (httpx would fold them away, and a server might not): never ambiguous.
    if any(segment in (".", "..") for segment in unquote(path).split("/")):
        raise ToolError(f"path {path!r} contains a . or .. segment: give the path itself")
    for server in servers:
        if _under(parsed, httpx.URL(server)):
            return Target(parsed, server)
    raise ToolError(f"{_shown(parsed)} is not under the API's servers ({_listed(servers)}): "
                    "only those can be reached")


def _under(url: Any, server: Any) -> bool:
    if (url.scheme, url.host.lower(), _port(url)) != \
            (server.scheme, server.host.lower(), _port(server)):
        return False
    prefix = server.path.rstrip("/")
    return not prefix or url.path == prefix or url.path.startswith(prefix + "/")


def _port(url: Any) -> int:
    return url.port or (443 if url.scheme == "https" else 80)


def _shown(url: Any) -> str:
    return f"{url.scheme}://{url.host}{':' + str(url.port) if url.port else ''}{url.path}"


def _listed(servers: list[str]) -> str:
    return ", ".join(servers)


def request_parts(args: dict[str, Any], *, auth_headers: set[str], auth_query: set[str]) \
        -> tuple[dict[str, Any], dict[str, str], bytes | None, Any]:
    """(query, headers, raw content or None, JSON body or None) from the model's
    arguments; ToolError for a header or parameter the agent owns, or a body too large."""
    owned = RESERVED_HEADERS | {h.lower() for h in auth_headers}
    headers: dict[str, str] = {}
    for name, value in (args.get("headers") or {}).items():
        if not _TOKEN.match(name):
            raise ToolError(f"header name {name!r} is not a valid HTTP header name")
        if name.lower() in owned:
            raise ToolError(f"header {name!r} is set by the agent (credentials and framing "
                            "are not the model's to send)")
        if any(c in value for c in "\r\n\0"):
            raise ToolError(f"header {name!r} has a line break or NUL in its value")
        headers[name] = value
    query: dict[str, Any] = {}
    for name, value in (args.get("query") or {}).items():
        if name in auth_query:
            raise ToolError(f"query parameter {name!r} is set by the agent (credentials)")
        query[name] = [_text(v) for v in value] if isinstance(value, list) else _text(value)
    if "body" not in args:
        return query, headers, None, None
    body = args["body"]
    kind = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    if isinstance(body, str) and kind and "json" not in kind.lower():
        raw = body.encode("utf-8")
        size, content, json_body = len(raw), raw, None
    else:
        size = len(json.dumps(body, ensure_ascii=False).encode("utf-8"))
        content, json_body = None, body
        headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
    if size > MAX_REQUEST_BODY_BYTES:
        raise ToolError(f"the request body is {size:,} bytes; at most "
                        f"{MAX_REQUEST_BODY_BYTES:,} are sent")
    return query, headers, content, json_body


def description(source: str, title: str, servers: list[str], ops: list[Operation]) -> str:
    """What the model reads: where the tool reaches, that auth is added, and the document's
    operations (its map of the API), listed up to a limit."""
    lines = [f"Send an HTTP request to the {source} API{f' ({title})' if title else ''}. "
             f"Relative paths go to {servers[0]}"
             + (f"; full URLs may also name {', '.join(servers[1:])}" if servers[1:] else "")
             + ". No other host can be reached; redirects are returned, not followed. "
             "Its credentials are added for you.",
             "", "Operations of the document:"]
    for op in ops[:MAX_LISTED_OPERATIONS]:
        lines.append(f"- {op.method} {op.path}" + (f": {op.summary}" if op.summary else ""))
    if len(ops) > MAX_LISTED_OPERATIONS:
        lines.append(f"- ... and {len(ops) - MAX_LISTED_OPERATIONS} more")
    if not ops:
        lines.append("- (none listed)")
    text = "\n".join(lines)
    return text if len(text) <= MAX_DESCRIPTION_CHARS \
        else text[:MAX_DESCRIPTION_CHARS].rstrip() + "\n..."


class GenericSender(Protocol):
    """What the generic tool needs of its source (openapi/source.py `OpenApiSource`, which
    imports this module, never the other way): its name, and the call sent with its auth."""

    name: str

    def send_generic(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


class HttpRequestTool(Tool):
    """The one generic tool of a source, as the registry sees it."""

    item_type = "mcp_tool_call"

    def __init__(self, source: GenericSender, name: str, text: str) -> None:
        self._source = source
        self.name = name
        self.server = source.name
        self.description = text

    @property
    def tool_name(self) -> str:
        return NAME

    def parameters(self) -> dict[str, Any]:
        return SCHEMA

    def parse(self, data: dict[str, Any]) -> dict[str, Any]:
        return check_json_arguments(self.name, SCHEMA, data)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return self._source.send_generic(args, ctx)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

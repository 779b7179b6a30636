"""Each operation of a document as one tool: its name, description and argument schema,
and how a call's arguments become an HTTP request. Pure (no I/O): tested on documents
alone.

Arguments: one property per path, query and header parameter (under its own name; a name
used in two places gets its location as a prefix: `query_id`), plus `body` for a JSON
request body. Parameters the agent sets itself (the auth header, Accept, Content-Type,
Authorization) are not offered. Cookie parameters are not supported and are left out.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from baseagent.openapi.document import resolve

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MAX_NAME_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# Headers the agent owns: the model must not set them.
_RESERVED_HEADERS = {"accept", "content-type", "authorization", "content-length", "host"}
# How long a description may be (some documents put whole manuals there).
MAX_DESCRIPTION_CHARS = 1_000


@dataclass
class Argument:
    """Where one property of the arguments goes in the request."""

    prop: str  # the property name the model uses
    name: str  # the parameter's own name
    location: str  # path | query | header | body


@dataclass
class Operation:
    name: str  # the tool's name
    operation_id: str  # what the item shows as `tool`
    method: str
    path: str
    description: str
    schema: dict[str, Any]
    arguments: list[Argument] = field(default_factory=list)
    body_type: str | None = None
    # The operation's tags, in the document's order (toolsets by tag: compose/orchestrator.py;
    # a specialist may take one tag's tools).
    tags: list[str] = field(default_factory=list)
    summary: str = ""

    def request(self, args: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, str], Any]:
        """(path with its parameters filled in, query, headers, JSON body or None)."""
        path = self.path
        query: dict[str, Any] = {}
        headers: dict[str, str] = {}
        body: Any = None
        for arg in self.arguments:
            if arg.prop not in args:
                continue
            value = args[arg.prop]
            if arg.location == "path":
                path = path.replace("{" + arg.name + "}", quote(_text(value), safe=""))
            elif arg.location == "query":
                query[arg.name] = [_text(v) for v in value] if isinstance(value, list) \
                    else _text(value)
            elif arg.location == "header":
                headers[arg.name] = _text(value)
            else:
                body = value
        return path, query, headers, body


def operations(doc: dict[str, Any], *, source: str, include: list[str], exclude: list[str],
               taken: set[str], reserved_headers: set[str] = frozenset(),
               stop: threading.Event | None = None) -> list[Operation]:
    """The selected operations in document order (paths as written, methods in the order
    of METHODS), named so no name is in `taken` (which gains them). `stop` set abandons the
    work (OpenApiError)."""
    out = []
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        item = resolve(doc, item, stop)
        shared = item.get("parameters") or []
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict) or not selected(op, include, exclude):
                continue
            out.append(_operation(doc, source, method, path, op, shared, taken,
                                  {h.lower() for h in reserved_headers}))
    return out


def selected(op: dict[str, Any], include: list[str], exclude: list[str]) -> bool:
    """include/exclude name operationIds or tags (include first, then exclude)."""
    keys = {str(op.get("operationId", ""))} | {str(t) for t in op.get("tags") or []}
    if include and not keys & set(include):
        return False
    return not keys & set(exclude)


def tool_name(source: str, operation_id: str, taken: set[str]) -> str:
    """The operationId made safe for providers; on a clash, prefixed with the source, then
    numbered. Added to `taken`."""
    base = _UNSAFE.sub("_", operation_id).strip("_") or "operation"
    candidates = [base[:MAX_NAME_LENGTH],
                  f"{_UNSAFE.sub('_', source)}__{base}"[:MAX_NAME_LENGTH]]
    for candidate in candidates:
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    number = 2
    while f"{candidates[1][:MAX_NAME_LENGTH - 4]}_{number}" in taken:
        number += 1
    name = f"{candidates[1][:MAX_NAME_LENGTH - 4]}_{number}"
    taken.add(name)
    return name


def _operation(doc: dict[str, Any], source: str, method: str, path: str, op: dict[str, Any],
               shared: list[Any], taken: set[str], reserved: set[str]) -> Operation:
    operation_id = str(op.get("operationId") or f"{method}_{path}")
    params = _parameters(shared, op.get("parameters") or [], reserved)
    properties: dict[str, Any] = {}
    required: list[str] = []
    arguments: list[Argument] = []
    names = [p["name"] for p in params]
    for param in params:
        prop = param["name"] if names.count(param["name"]) == 1 \
            else f"{param['in']}_{param['name']}"
        schema = dict(param.get("schema") or {})
        if param.get("description"):
            schema["description"] = _short(str(param["description"]))
        properties[prop] = schema
        arguments.append(Argument(prop, param["name"], param["in"]))
        if param.get("required") or param["in"] == "path":
            required.append(prop)
    body_type = None
    body = resolve(doc, op.get("requestBody")) if op.get("requestBody") else None
    if isinstance(body, dict):
        body_type, media = _json_media(body.get("content") or {})
        if media is not None:
            prop = "body" if "body" not in properties else "request_body"
            schema = dict(media.get("schema") or {})
            if body.get("description") and "description" not in schema:
                schema["description"] = _short(str(body["description"]))
            properties[prop] = schema
            arguments.append(Argument(prop, prop, "body"))
            if body.get("required"):
                required.append(prop)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    summary = str(op.get("summary") or "").strip()
    detail = str(op.get("description") or "").strip()
    text = "\n\n".join(part for part in (summary, detail) if part) or operation_id
    description = f"{_short(text)}\n\n({method.upper()} {path} on the {source} API)"
    return Operation(name=tool_name(source, operation_id, taken), operation_id=operation_id,
                     method=method.upper(), path=path, description=description, schema=schema,
                     arguments=arguments, body_type=body_type,
                     tags=[str(t) for t in op.get("tags") or []],
                     summary=summary or _short(detail.splitlines()[0] if detail else ""))


def _parameters(shared: list[Any], own: list[Any], reserved: set[str]) -> list[dict[str, Any]]:
    """Path-item parameters overridden by the operation's (same name and location)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for param in [*shared, *own]:
        if not isinstance(param, dict) or "name" not in param:
            continue
        where = param.get("in")
        if where not in ("path", "query", "header"):
            continue  # cookies are not supported
        if where == "header" and str(param["name"]).lower() in _RESERVED_HEADERS | reserved:
            continue
        merged[(str(param["name"]), where)] = param
    return list(merged.values())


def _json_media(content: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    for media_type, media in content.items():
        kind = media_type.split(";")[0].strip().lower()
        if kind == "application/json" or kind.endswith("+json"):
            return kind, media if isinstance(media, dict) else {}
    return None, None


def _short(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION_CHARS \
        else text[:MAX_DESCRIPTION_CHARS].rstrip() + " ..."


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, separators=(",", ":"))
    return str(value)

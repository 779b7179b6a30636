"""MCP tools as the model and the event stream see them: names, arguments, results.

Pure functions over the wire form (dicts), so they are tested without any server:
- names: `mcp__SERVER__TOOL` (Codex's scheme), sanitised to what providers accept, cut to
  64 characters with a hash suffix, and made unique against every other tool of the run;
- arguments: checked against the tool's inputSchema (jsonschema) before the call;
- results: the model gets the text of the content blocks (or the structured content), the
  `mcp_tool_call` item gets the blocks themselves.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any, Callable

from baseagent.tools.context import ToolContext
from baseagent.tools.tool import Tool, ToolResult, check_json_arguments

DELIMITER = "__"
PREFIX = "mcp"
# OpenAI's limit on function names (and most providers'); longer names get a hash suffix.
MAX_NAME_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# Text blocks kept in an event item: the model's copy is capped by the registry; the item
# must not carry megabytes either.
MAX_BLOCK_CHARS = 40_000


def qualified_name(server: str, tool: str, taken: set[str]) -> str:
    """A name for `tool` of `server` that no other tool of the run has; adds it to `taken`."""
    raw = f"{PREFIX}{DELIMITER}{server}{DELIMITER}{tool}"
    name = _UNSAFE.sub("_", raw)
    if len(name) > MAX_NAME_LENGTH or name in taken:
        digest = hashlib.sha1(raw.encode("utf-8")).hexdigest()[:10]
        name = f"{name[:MAX_NAME_LENGTH - len(digest) - 1]}_{digest}"
        counter = 2
        while name in taken:  # two raw names with one digest prefix: practically never
            name = f"{name[:MAX_NAME_LENGTH - 3]}_{counter}"
            counter += 1
    taken.add(name)
    return name


def select(names: Iterable[str], enabled: list[str] | None, disabled: list[str]) -> list[str]:
    """Codex's order: the allow-list first (when given), then the deny-list removed."""
    chosen = [n for n in names if enabled is None or n in enabled]
    return [n for n in chosen if n not in disabled]


def model_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The inputSchema as sent to the model: an object schema, without `$schema`/`title`."""
    out = dict(schema or {})
    out.pop("$schema", None)
    out.pop("title", None)
    if out.get("type") != "object":
        out["type"] = "object"
    out.setdefault("properties", {})
    return out


check_arguments = check_json_arguments


def result_text(content: list[dict[str, Any]], structured: Any) -> str:
    """What the model reads: the text blocks; other blocks described in one line each; the
    structured content when there is no text."""
    parts: list[str] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            size = len(block.get("data") or "") * 3 // 4
            parts.append(f"[{kind}: {block.get('mimeType', 'unknown type')}, ~{size} bytes]")
        elif kind == "resource":
            resource = block.get("resource") or {}
            if "text" in resource:
                parts.append(str(resource["text"]))
            else:
                parts.append(f"[resource: {resource.get('uri', '?')}]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.get('uri', '?')} {block.get('name', '')}]"
                         .replace(" ]", "]"))
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    text = "\n".join(p for p in parts if p)
    if not text.strip() and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, indent=2)
    return text


def item_blocks(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The content blocks for the event item, long text blocks cut."""
    out = []
    for block in content:
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str) and len(text) > MAX_BLOCK_CHARS:
            block = {**block, "text": text[:MAX_BLOCK_CHARS] + "\n[... truncated]"}
        out.append(block)
    return out


def call_result(content: list[dict[str, Any]], structured: Any, is_error: bool) -> ToolResult:
    text = result_text(content, structured)
    if is_error and not text.strip():
        text = "the tool reported an error without a message"
    return ToolResult(output=f"Error: {text}" if is_error else text, success=not is_error,
                      item={"content": item_blocks(content), "structured_content": structured})


Caller = Callable[[str, dict[str, Any], ToolContext], ToolResult]


class McpTool(Tool):
    """One tool of one MCP server, as the registry sees it."""

    item_type = "mcp_tool_call"

    def __init__(self, *, name: str, server: str, tool: str, description: str,
                 schema: dict[str, Any] | None, call: Caller) -> None:
        self.name = name
        self.server = server
        self._tool = tool
        self.description = description.strip() or f"Tool {tool!r} of the MCP server {server!r}."
        self._schema = model_schema(schema)
        self._call = call

    @property
    def tool_name(self) -> str:
        return self._tool

    def parameters(self) -> dict[str, Any]:
        return self._schema

    def parse(self, data: dict[str, Any]) -> dict[str, Any]:
        return check_arguments(self.name, self._schema, data)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return self._call(self._tool, args, ctx)

"""Anthropic's Messages API on the wire: the request body and the streamed events.

What the direct transport (llm/direct.py) sends for an `anthropic/<model>` call, built as
litellm 1.105.0 builds it (AnthropicConfig.transform_request and anthropic_messages_pt)
for what this agent sends: the leading system messages become `system` blocks; user and
tool messages, merged while consecutive, become `text`, `image` and `tool_result` blocks;
assistant messages become their signed thinking blocks, then `text`, then `tool_use`
blocks (arguments parsed); message-level `cache_control` markers move onto the block
litellm puts them on; an empty text becomes litellm's placeholder; the last assistant
text loses its trailing whitespace. Tools become `custom` tools with a cleaned input
schema; tool_choice maps to Anthropic's.

Only calls without reasoning_effort and temperature take this path (llm/route.py): those
are where litellm's rules differ model by model (adaptive or budgeted thinking, effort,
sampling parameters removed from newer models); a request with anything else this module
does not build (an image by http URL, a tool name Anthropic would refuse, arguments that
are not JSON, a system message after the first turn) raises Unsupported and goes through
litellm. tests/llm/test_direct_parity.py compares the bodies the server received, and the
turns, for every chat model of the pinned map.

Each message's blocks are built and encoded once (llm/per_message.py); a request joins
them, merging consecutive roles as it goes.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

from baseagent.llm.chunks import Choice, Chunk, Delta, FunctionDelta, ToolCallDelta, Usage
from baseagent.llm.limits import StreamLimitExceeded
from baseagent.llm.per_message import PerMessage
from baseagent.llm.provider_errors import MidStreamError
from baseagent.llm.reasoning import REASONING_KEYS, without_keys
from baseagent.llm.surrogates import scrub_surrogates
from baseagent.llm.wire_openai import Unsupported, dumps, map_finish

ANTHROPIC_VERSION = "2023-06-01"
# A stream that is not well-formed keeps its data lines until they read as JSON (litellm's
# way, below): at most this many characters are kept, and every attempt to read them
# re-reads the whole buffer, so the characters re-read in one stream are capped too.
FRAGMENT_CHARS = 1 << 20
FRAGMENT_REREAD_CHARS = 64 << 20
# litellm's _EMPTY_TEXT_PLACEHOLDER: Anthropic refuses an empty text block.
EMPTY_TEXT = "[System: Empty message content sanitised to satisfy protocol]"
# The keys of a tool's input schema Anthropic accepts (litellm's AnthropicInputSchema).
_SCHEMA_KEYS = ("type", "properties", "additionalProperties", "required", "$defs", "strict")
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_TOOL_ID_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_ENCRYPTED = "litellm_encrypted_reasoning:"
_DECODER = json.JSONDecoder()
_TOOL_CHOICES = {"auto": {"type": "auto"}, "required": {"type": "any"},
                 "none": {"type": "none"}}

# What one history message becomes: its kind ("system", "user" for user and tool
# messages, "assistant") and its encoded content blocks.
Blocks = tuple[str, list[bytes]]


def _cache(part: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """litellm's add_cache_control_to_content: the source's dict cache_control, if any."""
    marker = source.get("cache_control")
    if isinstance(marker, dict):
        part["cache_control"] = dict(marker)
    return part


def _image(part: dict[str, Any]) -> dict[str, Any]:
    image = part.get("image_url")
    url = image if isinstance(image, str) else (image or {}).get("url", "")
    media_format = None if isinstance(image, str) else (image or {}).get("format")
    if url.startswith("https://"):
        return {"type": "image", "source": {"type": "url", "url": url}}
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url.split("data:")[1].split(";base64,")
        return {"type": "image", "source": {
            "type": "base64", "media_type": media_format or media_type.replace("\\/", "/"),
            "data": data}}
    raise Unsupported("an image litellm would fetch or could not read")


def _empty(text: Any) -> bool:
    return not isinstance(text, str) or not text or not text.strip()


def _user_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        text = EMPTY_TEXT if _empty(content) else content
        return [_cache({"type": "text", "text": text}, message)]
    if not isinstance(content, list):
        raise Unsupported("user content that is neither text nor parts")
    blocks = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            text = EMPTY_TEXT if _empty(part.get("text")) else part["text"]
            blocks.append(_cache({"type": "text", "text": text}, part))
        elif kind == "image_url":
            blocks.append(_cache(_image(part), part))
        else:
            raise Unsupported(f"a {kind!r} part in a user message")
    return blocks


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, list):
        parts: list[dict[str, Any]] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                text: dict[str, Any] = {"type": "text", "text": part["text"]}
                if part.get("cache_control") is not None:
                    text["cache_control"] = part["cache_control"]
                parts.append(text)
            elif kind == "image_url":
                parts.append(_cache(_image(part), part))
            else:
                raise Unsupported(f"a {kind!r} part in a tool result")
        content = parts
    elif not isinstance(content, str):
        content = ""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str):
        raise Unsupported("a tool result without its call id")
    result = {"type": "tool_result", "tool_use_id": _TOOL_ID_INVALID.sub("_", call_id) or "_",
              "content": content}
    if message.get("cache_control") is not None:
        result["cache_control"] = message["cache_control"]
    return result


def _signable(block: Any) -> bool:
    """litellm's is_unsignable_thinking_block, inverted."""
    if not isinstance(block, dict):
        return True
    if block.get("type") == "thinking":
        signature = block.get("signature")
        if isinstance(signature, str) and signature.startswith(_ENCRYPTED):
            return False
        return isinstance(signature, str) and bool(signature) \
            and isinstance(block.get("thinking"), str) and bool(block["thinking"].strip())
    if block.get("type") == "redacted_thinking":
        data = block.get("data")
        return not (isinstance(data, str) and data.startswith(_ENCRYPTED))
    return True


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    if message.get("provider_specific_fields") or message.get("function_call"):
        raise Unsupported("an assistant message with provider fields")
    blocks: list[dict[str, Any]] = []
    thinking = message.get("thinking_blocks")
    calls = message.get("tool_calls") or []
    if thinking is not None and any(str((c or {}).get("id", "")).startswith("srvtoolu_")
                                    for c in calls):
        raise Unsupported("server tool calls")
    if thinking:
        blocks.extend(b for b in thinking if _signable(b))
    content = message.get("content")
    if isinstance(content, list):
        raise Unsupported("assistant content given as parts")
    if isinstance(content, str):
        if _empty(content):
            content = EMPTY_TEXT
        blocks.append(_cache({"type": "text", "text": content}, message))
    for call in calls:
        if not isinstance(call, dict) or call.get("type") != "function":
            continue
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if not arguments or not arguments.strip():
            arguments_value: Any = {}
        else:
            try:
                arguments_value = json.loads(arguments)
            except ValueError:
                raise Unsupported("tool call arguments that are not JSON") from None
        call_id = str(call.get("id") or "")
        blocks.append(_cache({"type": "tool_use", "id": _TOOL_ID_INVALID.sub("_", call_id) or "_",
                              "name": function.get("name"), "input": arguments_value}, call))
    return blocks


def message_blocks(message: dict[str, Any]) -> Blocks:
    """One history message as (kind, its content blocks encoded)."""
    role = message.get("role")
    if role == "system":
        content = message.get("content")
        blocks: list[dict[str, Any]] = []
        if isinstance(content, str):
            if content:
                block: dict[str, Any] = {"type": "text", "text": content}
                if "cache_control" in message:
                    block["cache_control"] = message["cache_control"]
                blocks.append(block)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "text" and not part.get("text"):
                    continue
                block = {"type": part.get("type"), "text": part.get("text")}
                if "cache_control" in part:
                    block["cache_control"] = part["cache_control"]
                blocks.append(block)
        return "system", [dumps(b) for b in blocks]
    if role == "user":
        return "user", [dumps(b) for b in _user_blocks(message)]
    if role == "tool":
        return "user", [dumps(_tool_result(message))]
    if role == "assistant":
        return "assistant", [dumps(b) for b in _assistant_blocks(message)]
    raise Unsupported(f"a {role!r} message")


def request_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict) \
                or "eager_input_streaming" in tool or "eager_input_streaming" in function:
            raise Unsupported("a tool that is not a plain function")
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise Unsupported("a tool name Anthropic refuses")
        schema = dict(function.get("parameters") or {"type": "object", "properties": {}})
        if "definitions" in schema or "components" in schema:
            raise Unsupported("a schema with legacy definitions")
        if schema.get("type") != "object":
            schema["type"] = "object"
        schema.setdefault("properties", {})
        entry: dict[str, Any] = {"name": name,
                                 "input_schema": {k: v for k, v in schema.items()
                                                  if k in _SCHEMA_KEYS},
                                 "type": "custom"}
        if function.get("description") is not None:
            entry["description"] = function["description"]
        out.append(entry)
    return out


def tool_choice(choice: Any) -> dict[str, Any] | None:
    if isinstance(choice, str):
        return dict(_TOOL_CHOICES[choice]) if choice in _TOOL_CHOICES else None
    if isinstance(choice, dict):
        if "type" in choice and "function" not in choice:
            kind = {"required": "any"}.get(choice["type"], choice["type"])
            return {"type": kind} if kind in ("auto", "any", "none") else None
        name = (choice.get("function") or {}).get("name")
        return {"type": "tool", "name": name} if name is not None else None
    return None


class AnthropicWire:
    """Builds the requests of one client (one model) and reads its streams."""

    name = "anthropic"

    def __init__(self, model: str, kept_reasoning: frozenset[str] = frozenset()) -> None:
        self.model = model  # Anthropic's name for it (no `anthropic/` prefix)
        drop = tuple(k for k in REASONING_KEYS if k not in kept_reasoning)
        self._blocks: PerMessage[Blocks] = PerMessage(
            lambda m: message_blocks(scrub_surrogates(without_keys(m, drop))))
        self._tools: tuple[Any, list[dict[str, Any]]] = (None, [])

    def url(self, api_base: str) -> str:
        return api_base if api_base.endswith("/v1/messages") else api_base + "/v1/messages"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION, "accept": "application/json",
                "content-type": "application/json", "x-api-key": api_key}

    def body(self, messages: list[dict[str, Any]], params: dict[str, Any],
             tools: list[dict[str, Any]] | None) -> bytes:
        converted = self._blocks(messages)
        system: list[bytes] = []
        start = 0
        while start < len(converted) and converted[start][0] == "system":
            system += converted[start][1]
            start += 1
        groups: list[tuple[str, list[bytes]]] = []
        for index in range(start, len(converted)):
            kind, blocks = converted[index]
            if kind == "system":
                raise Unsupported("a system message after the first turn")
            if groups and groups[-1][0] == kind:
                groups[-1][1].extend(blocks)
            else:
                groups.append((kind, list(blocks)))
        if not groups:
            raise Unsupported("no message after the system prompt")
        if groups[-1][0] == "assistant":  # no trailing whitespace in a final assistant text
            groups[-1] = ("assistant", [self._rstripped(b) for b in groups[-1][1]])
        wire_messages = [b'{"role":"' + kind.encode() + b'","content":[' + b",".join(blocks)
                         + b"]}" for kind, blocks in groups if blocks]
        if params.get("temperature") is not None:  # litellm's rules differ model by model
            raise Unsupported("a temperature")
        head: dict[str, Any] = {"model": self.model}
        max_tokens = params.get("max_tokens")
        if not isinstance(max_tokens, int):
            raise Unsupported("no output cap")
        head["max_tokens"] = max_tokens
        if tools:
            if self._tools[0] is not tools:
                self._tools = (tools, request_tools(tools))
            head["tools"] = self._tools[1]
            choice = tool_choice(params.get("tool_choice"))
            if choice is not None:
                head["tool_choice"] = choice
        elif any(m.get("tool_calls") for m in messages):
            raise Unsupported("tool calls in the history and no tools")
        head["stream"] = True
        encoded = dumps(head)
        if system:
            encoded = encoded[:-1] + b',"system":[' + b",".join(system) + b"]}"
        return b'{"messages":[' + b",".join(wire_messages) + b"]," + encoded[1:]

    @staticmethod
    def _rstripped(block: bytes) -> bytes:
        value = json.loads(block)
        if value.get("type") == "text":
            value["text"] = value["text"].rstrip()
            return dumps(value)
        return block

    def stream_parser(self) -> Callable[[str | None, str], Chunk | None]:
        return _StreamParser().parse

    def second_attempt(self, error: Exception, messages: list[dict[str, Any]],
                       params: dict[str, Any]
                       ) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
        return None  # litellm's Anthropic handler sends nothing twice


class _StreamParser:
    """One stream's events as chunks, the way litellm's Anthropic iterator reads them."""

    def __init__(self) -> None:
        self.tool_index = -1
        self.block_type: str | None = None
        self.block_thinking: list[str] = []
        self.block_args = False
        self.usage: dict[str, Any] = {}
        # After data that is not JSON, litellm accumulates every later data line until
        # the buffer starts with a whole JSON value (it takes the first bad line for a
        # fragment split across reads); None while the stream is well-formed.
        self.fragments: list[str] | None = None
        self.fragment_chars = 0
        self.reread = 0

    def parse(self, event: str | None, data: str) -> Chunk | None:
        if self.fragments is None:
            try:
                obj = json.loads(data)
            except ValueError:
                self.fragments = []
                return self._accumulate(data)
        else:
            return self._accumulate(data)
        return self._chunk(obj)

    def _accumulate(self, data: str) -> Chunk | None:
        assert self.fragments is not None
        self.fragments.append(data)
        self.fragment_chars += len(data)
        if self.fragment_chars > FRAGMENT_CHARS:
            raise StreamLimitExceeded("unreadable event data", FRAGMENT_CHARS, "characters")
        if not data.rstrip().endswith(("}", "]")):
            return None
        buffer = "".join(self.fragments).lstrip()
        self.reread += len(buffer)
        if self.reread > FRAGMENT_REREAD_CHARS:
            raise StreamLimitExceeded("unreadable event data", FRAGMENT_REREAD_CHARS,
                                      "characters re-read")
        while buffer:
            try:
                value, end = _DECODER.raw_decode(buffer)
            except ValueError:
                self._keep(buffer)
                return None
            buffer = buffer[end:].lstrip()
            if isinstance(value, dict):
                self._keep(buffer)
                return self._chunk(value)
        self._keep("")
        return None

    def _keep(self, buffer: str) -> None:
        self.fragments = [buffer] if buffer else []
        self.fragment_chars = len(buffer)

    def _chunk(self, obj: Any) -> Chunk | None:
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "message_start":
            message = obj.get("message") or {}
            return Chunk([Choice(Delta())], self._usage(message.get("usage")))
        if kind == "content_block_start":
            block = obj.get("content_block") or {}
            self.block_type = block.get("type")
            self.block_thinking, self.block_args = [], False
            if self.block_type == "text":
                return Chunk([Choice(Delta(content=block.get("text") or None))])
            if self.block_type in ("tool_use", "server_tool_use"):
                self.tool_index += 1
                return Chunk([Choice(Delta(tool_calls=[ToolCallDelta(
                    self.tool_index, block.get("id"), FunctionDelta(block.get("name"), "")
                )]))])
            if self.block_type == "redacted_thinking":
                return Chunk([Choice(Delta(thinking_blocks=[
                    {"type": "redacted_thinking", "data": block.get("data")}]))])
            return None
        if kind == "content_block_delta":
            delta = obj.get("delta") or {}
            if "text" in delta:
                return Chunk([Choice(Delta(content=delta["text"] or None))])
            if "partial_json" in delta:
                if self.block_type in ("tool_use", "server_tool_use"):
                    self.block_args = self.block_args or bool(delta["partial_json"])
                    return Chunk([Choice(Delta(tool_calls=[ToolCallDelta(
                        self.tool_index, None, FunctionDelta(None, delta["partial_json"]))]))])
                return None
            if "thinking" in delta or "signature" in delta:
                thinking = delta.get("thinking")
                reasoning, blocks = None, None
                if isinstance(thinking, str) and thinking:
                    self.block_thinking.append(thinking)
                    reasoning = thinking
                    blocks = [{"type": "thinking", "thinking": thinking}]
                signature = delta.get("signature")
                if isinstance(signature, str) and signature:
                    blocks = [{"type": "thinking", "thinking": "".join(self.block_thinking),
                               "signature": signature}]
                    reasoning = reasoning if reasoning is not None else ""
                return Chunk([Choice(Delta(reasoning_content=reasoning or None,
                                           thinking_blocks=blocks))])
            return None
        if kind == "content_block_stop":
            closing, self.block_type = self.block_type, None
            if closing in ("tool_use", "server_tool_use") and not self.block_args:
                return Chunk([Choice(Delta(tool_calls=[ToolCallDelta(
                    self.tool_index, None, FunctionDelta(None, "{}"))]))])
            return None
        if kind == "message_delta":
            delta = obj.get("delta") or {}
            usage = self._usage(obj.get("usage")) if "usage" in obj else None
            return Chunk([Choice(Delta(), map_finish(delta.get("stop_reason") or "stop"))],
                         usage)
        if kind == "error":
            error = obj.get("error") or {}
            raise MidStreamError(RuntimeError(error.get("message") or str(obj)))
        return None

    def _usage(self, raw: Any) -> Usage | None:
        """litellm's calculate_usage over the usage so far (message_delta's is cumulative
        but may leave out what message_start reported)."""
        if not isinstance(raw, dict):
            return None
        self.usage = {**self.usage, **raw}
        u = self.usage

        def count(key: str) -> int:
            value = u.get(key)
            return int(value) if isinstance(value, (int, float)) else 0

        written, read = count("cache_creation_input_tokens"), count("cache_read_input_tokens")
        details = u.get("output_tokens_details")
        thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
        completion = count("output_tokens")
        prompt = count("input_tokens") + written + read
        if not prompt and not completion:
            return None  # litellm keeps the usage it had rather than an empty one
        reasoning = min(max(0, int(thinking)), completion) if isinstance(thinking, int) else 0
        return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=read,
                     cache_creation_tokens=written, reasoning_tokens=reasoning,
                     anthropic=True)

"""Anthropic's Messages API for the scripted server: request checks and the answer's wire form.

Pure functions, like testing/script.py: the same script steps play on this protocol.
What a step becomes here:

- `reasoning` -> a `thinking` block (thinking_delta pieces, then a signature_delta). The
  signature is an HMAC of the thinking text, so a client that edits or drops the block is
  caught, as the real API catches it.
- `content` -> a `text` block; `tool_calls` -> `tool_use` blocks (input_json_delta pieces).
- usage -> `input_tokens` (the uncached part), `cache_read_input_tokens`,
  `cache_creation_input_tokens`, `output_tokens`, as Anthropic reports them.

The request is held to the rules of the real API that a client can break (checked against
Anthropic's documentation): every `tool_use` answered by a `tool_result` in the next message
and no stray results; with extended thinking on, budget_tokens >= 1024 and below max_tokens,
no temperature other than 1, every thinking block's signature valid, and the assistant
message that made the last tool calls starting with its thinking block.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from baseagent.testing.script import (Answer, ErrorReply, Wire, canonical, split_text)

MESSAGES_PATHS = ("/v1/messages", "/messages")
# Signs thinking blocks. Not a secret: it only has to make a tampered block fail.
_SIGNING_KEY = b"baseagent-scripted-thinking"
MIN_THINKING_BUDGET = 1024
_STOP_REASONS = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens",
                 "content_filter": "refusal"}
# OpenAI error types the fault builders use, as Anthropic names them, by HTTP status.
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def sign(thinking: str) -> str:
    digest = hmac.new(_SIGNING_KEY, thinking.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return base64.b64encode(digest.digest()).decode("ascii")


def error_body(message: str, type_: str = "invalid_request_error") -> dict:
    return {"type": "error", "error": {"type": type_, "message": message}}


# -- the request -------------------------------------------------------------------------------

def prompt_parts(body: dict) -> list[str]:
    """The prompt in order (tools, system, each message), for token estimates and caching."""
    parts = [canonical(body["tools"])] if body.get("tools") else []
    if body.get("system"):
        parts.append(canonical(body["system"]))
    parts.extend(canonical(m) for m in body.get("messages") or [])
    return parts


def cache_marks(body: dict) -> list[bool]:
    """Which prompt parts end at a cache_control breakpoint (parallel to prompt_parts)."""
    marks = [has_cache_control(body["tools"])] if body.get("tools") else []
    if body.get("system"):
        marks.append(has_cache_control(body["system"]))
    marks.extend(has_cache_control(m) for m in body.get("messages") or [])
    return marks


def has_cache_control(obj: Any) -> bool:
    """Whether a cache_control marker is anywhere inside (both wires mark blocks this way)."""
    if isinstance(obj, dict):
        return "cache_control" in obj or any(has_cache_control(v) for v in obj.values())
    if isinstance(obj, list):
        return any(has_cache_control(v) for v in obj)
    return False


def thinking_enabled(body: dict) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def check_request(body: dict) -> str | None:
    """Why the real API would answer 400 invalid_request_error, or None."""
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    problem = _check_tool_pairs(messages)
    if problem is None and thinking_enabled(body):
        problem = _check_thinking(body, messages)
    return problem


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _check_tool_pairs(messages: list[dict]) -> str | None:
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        uses = [b.get("id") for b in _blocks(message) if b.get("type") == "tool_use"]
        if not uses:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = {b.get("tool_use_id") for b in _blocks(following or {})
                    if b.get("type") == "tool_result"} if following \
            and following.get("role") == "user" else set()
        missing = [u for u in uses if u not in answered]
        if missing:
            return (f"messages.{index}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block "
                    "must have a corresponding `tool_result` block in the next message.")
    for index, message in enumerate(messages):
        results = [b.get("tool_use_id") for b in _blocks(message)
                   if b.get("type") == "tool_result"]
        if not results:
            continue
        before = messages[index - 1] if index else {}
        uses = {b.get("id") for b in _blocks(before) if b.get("type") == "tool_use"} \
            if before.get("role") == "assistant" else set()
        stray = [r for r in results if r not in uses]
        if stray:
            return (f"messages.{index}.content: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {', '.join(map(str, stray))}. Each "
                    "`tool_result` block must have a corresponding `tool_use` block in the "
                    "previous message.")
    return None


def _check_thinking(body: dict, messages: list[dict]) -> str | None:
    thinking = body["thinking"]
    if thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
            return f"thinking.enabled.budget_tokens: Input should be >= {MIN_THINKING_BUDGET}"
        if budget >= body["max_tokens"]:
            return ("`max_tokens` must be greater than `thinking.budget_tokens`. Please "
                    f"consult our documentation at {THINKING_DOCS}")
    if body.get("temperature") not in (None, 1, 1.0):
        return ("`temperature` may only be set to 1 when thinking is enabled. Please consult "
                f"our documentation at {THINKING_DOCS}")
    for index, message in enumerate(messages):
        for position, block in enumerate(_blocks(message)):
            if block.get("type") != "thinking":
                continue
            if not hmac.compare_digest(str(block.get("signature") or ""),
                                       sign(str(block.get("thinking") or ""))):
                return f"messages.{index}.content.{position}: Invalid `signature` in `thinking` block"
    last_use = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"
                    and any(b.get("type") == "tool_use" for b in _blocks(m))), default=None)
    if last_use is None or last_use != len(messages) - 2:
        return None  # not in the middle of a tool-use loop
    first = (_blocks(messages[last_use]) or [{"type": "text"}])[0]
    if first.get("type") not in ("thinking", "redacted_thinking"):
        return (f"messages.{last_use}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{first.get('type')}`. When `thinking` is "
                "enabled, a final `assistant` message must start with a thinking block "
                "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                "recommend you include thinking blocks from previous turns. To avoid this "
                "requirement, disable `thinking`. Please consult our documentation at "
                f"{THINKING_DOCS}")
    return None


# -- the answer --------------------------------------------------------------------------------

def anthropic_usage(usage: dict | None) -> dict:
    """Script usage (OpenAI-shaped, prompt_tokens = the whole prompt) in Anthropic's terms."""
    usage = usage or {}
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0)
    written = int(details.get("cache_creation_tokens") or 0)
    prompt = int(usage.get("prompt_tokens") or 0)
    return {"input_tokens": max(0, prompt - cached - written),
            "cache_creation_input_tokens": written, "cache_read_input_tokens": cached,
            "output_tokens": int(usage.get("completion_tokens") or 0)}


def _blocks_of(answer: Answer) -> list[dict]:
    """The content blocks of an answer, complete (tool input as the raw argument text)."""
    blocks: list[dict] = []
    if answer.reasoning:
        blocks.append({"type": "thinking", "thinking": answer.reasoning,
                       "signature": sign(answer.reasoning)})
    if answer.content:
        blocks.append({"type": "text", "text": answer.content})
    for call in answer.tool_calls:
        blocks.append({"type": "tool_use", "id": call["id"],
                       "name": call["function"]["name"],
                       "input_text": call["function"]["arguments"]})
    return blocks


def _message_start(answer: Answer) -> dict:
    usage = anthropic_usage(answer.usage)
    usage["output_tokens"] = 1  # as the real API reports it before the first token
    return {"type": "message_start", "message": {
        "id": answer.completion_id, "type": "message", "role": "assistant",
        "model": answer.model, "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": usage}}


def stream_events(answer: Answer) -> list[tuple[str, dict]]:
    """(event name, data) pairs of a streamed answer, in the real API's order."""
    events: list[tuple[str, dict]] = [("message_start", _message_start(answer)),
                                      ("ping", {"type": "ping"})]
    for index, block in enumerate(_blocks_of(answer)):
        kind = block["type"]
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": piece}
                      for piece in split_text(block["thinking"], answer.chunk_size)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece}
                      for piece in split_text(block["text"], answer.chunk_size)]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in split_text(block["input_text"], answer.chunk_size)]
        events.append(("content_block_start", {"type": "content_block_start",
                                               "index": index, "content_block": start}))
        events.extend(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": delta}) for delta in deltas)
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    usage = anthropic_usage(answer.usage)
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": _STOP_REASONS.get(answer.finish_reason, "end_turn"),
                  "stop_sequence": None},
        "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def message_body(answer: Answer) -> dict:
    """The non-streaming `message` object."""
    content: list[dict[str, Any]] = []
    for block in _blocks_of(answer):
        if block["type"] == "tool_use":
            try:
                tool_input = json.loads(block["input_text"] or "{}")
            except ValueError:
                tool_input = {}
            content.append({"type": "tool_use", "id": block["id"], "name": block["name"],
                            "input": tool_input})
        else:
            content.append(block)
    return {"id": answer.completion_id, "type": "message", "role": "assistant",
            "model": answer.model, "content": content,
            "stop_reason": _STOP_REASONS.get(answer.finish_reason, "end_turn"),
            "stop_sequence": None, "usage": anthropic_usage(answer.usage)}


def context_length_reply(window: int, tokens: int) -> ErrorReply:
    """The real API's wording for a prompt over the window (litellm maps it to
    ContextWindowExceededError)."""
    return ErrorReply(400, error_body(f"prompt is too long: {tokens} tokens > {window} maximum"))


class AnthropicWire(Wire):
    name = "anthropic"
    done_frame = ""  # message_stop is the last event; there is no [DONE]

    def frames(self, answer: Answer, include_usage: bool) -> list[str]:
        return [f"event: {name}\ndata: {json.dumps(data)}\n\n"
                for name, data in stream_events(answer)]

    def junk_frame(self, payload: str) -> str:
        return f"event: content_block_delta\ndata: {payload}\n\n"

    def body(self, answer: Answer) -> dict:
        return message_body(answer)

    def error(self, reply: ErrorReply) -> ErrorReply:
        """An OpenAI-shaped error body in Anthropic's shape; a scripted body stays as is."""
        error = reply.body.get("error") if isinstance(reply.body, dict) else None
        if not isinstance(error, dict) or reply.body.get("type") == "error":
            return reply
        type_ = _ERROR_TYPES.get(reply.status, "api_error" if reply.status >= 500
                                 else "invalid_request_error")
        return ErrorReply(reply.status, error_body(str(error.get("message") or ""), type_),
                          reply.headers)


ANTHROPIC_WIRE = AnthropicWire()

"""OpenAI chat completions on the wire: the request body and the streamed chunks.

What the direct transport (llm/direct.py) sends for an `openai/<model>` that litellm knows
no rules for (a local server, a proxy, a model name outside its price map), built as
litellm 1.105.0 builds it for such a model (its OpenAIUnknownModelConfig): every message
with its None fields dropped, image parts given as an object, the parameters the client
sets passed as they are. tests/llm/test_direct_parity.py sends the same calls both ways and
compares the bodies the server received.

A message is encoded to JSON once: the encodings of the last request's messages are kept
(history messages are never modified in place) and the body is joined from the pieces, so
building a request costs its new messages and one join, not a walk, a copy and an encode of
the whole history.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from baseagent.llm.chunks import Choice, Chunk, Delta, FunctionDelta, ToolCallDelta, Usage
from baseagent.llm.provider_errors import MidStreamError
from baseagent.llm.per_message import PerMessage
from baseagent.llm.reasoning import REASONING_KEYS, without_keys
from baseagent.llm.surrogates import scrub_surrogates

# litellm's map_finish_reason (core_helpers._FINISH_REASON_MAP, 1.105.0); anything else is
# "stop" there too.
FINISH_REASONS = {
    "stop_sequence": "stop", "end_turn": "stop", "max_tokens": "length",
    "tool_use": "tool_calls", "refusal": "content_filter", "compaction": "length",
    "COMPLETE": "stop", "ERROR_TOXIC": "content_filter", "ERROR": "stop",
    "eos_token": "stop", "eos": "stop", "STOP": "stop", "MAX_TOKENS": "length",
    "SAFETY": "content_filter", "RECITATION": "content_filter",
    "FINISH_REASON_UNSPECIFIED": "stop", "MALFORMED_FUNCTION_CALL": "stop",
    "LANGUAGE": "content_filter", "OTHER": "content_filter", "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter", "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter", "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "TOO_MANY_TOOL_CALLS": "stop", "MALFORMED_RESPONSE": "stop", "NO_IMAGE": "content_filter",
    "IMAGE_RECITATION": "content_filter", "IMAGE_OTHER": "content_filter",
    "ESCALATION": "content_filter", "UNEXPECTED_TOOL_CALL": "stop",
    "MISSING_THOUGHT_SIGNATURE": "stop", "network_error": "stop", "sensitive": "content_filter",
    "guardrail_intervened": "content_filter", "stop": "stop", "length": "length",
    "tool_calls": "tool_calls", "function_call": "function_call",
    "content_filter": "content_filter", "content_filtered": "content_filter", "error": "stop",
}


class Unsupported(Exception):
    """A request this wire does not build the way litellm would: the client sends it
    through litellm instead (one call; the next may come back)."""


def map_finish(reason: Any) -> str:
    return FINISH_REASONS.get(reason, "stop") if isinstance(reason, str) else "stop"


def dumps(value: Any) -> bytes:
    """Compact JSON, UTF-8 (lone surrogates were scrubbed before: they cannot encode)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """One history message as litellm sends it to an OpenAI-compatible server."""
    out = {k: v for k, v in message.items() if v is not None}
    content = out.get("content")
    if isinstance(content, list):
        role = out.get("role")
        parts = []
        for part in content:
            if not isinstance(part, dict):
                raise Unsupported("a content part that is not an object")
            kind = part.get("type")
            if kind == "image_url" and role == "user":
                image = part.get("image_url")
                if isinstance(image, str):
                    part = {**part, "image_url": {"url": image}}
                elif isinstance(image, dict) and "format" in image:
                    part = {**part, "image_url": {k: v for k, v in image.items()
                                                  if k != "format"}}
            elif kind == "text":
                pass
            else:
                raise Unsupported(f"a {kind!r} part in a {role} message")
            parts.append(part)
        out["content"] = parts
    return out


# -- litellm's second attempt ----------------------------------------------------------------

def second_attempt(error: Exception, messages: list[dict[str, Any]], params: dict[str, Any]
                   ) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """The request litellm's OpenAI handler sends once more after this error answer (its
    fixes for OpenAI-compatible servers that refuse a request), or None. A 422 resends
    without the parameters its body names (drop_params is on); servers that want strictly
    alternating roles, a last user message or no `index` in tool calls get them."""
    text = str(error)
    if getattr(error, "status_code", None) == 422:
        return messages, _without_refused_params(getattr(error, "body", None), params)
    if "Conversation roles must alternate user/assistant" in text \
            or "user and assistant roles should be alternating" in text:
        alternating: list[dict[str, Any]] = []
        for current, following in zip(messages, messages[1:]):
            alternating.append(current)
            if current.get("role") == following.get("role"):
                filler = "assistant" if current.get("role") == "user" else "user"
                alternating.append({"role": filler, "content": ""})
        return alternating + messages[-1:], params
    if "Last message must have role `user`" in text:
        return messages + [{"role": "user", "content": ""}], params
    if "unknown field: parameter index is not a valid field" in text:
        return [{**m, "tool_calls": [{k: v for k, v in c.items() if k != "index"}
                                     if isinstance(c, dict) else c for c in m["tool_calls"]]}
                if isinstance(m.get("tool_calls"), list) else m for m in messages], params
    return None


def _without_refused_params(body: Any, params: dict[str, Any]) -> dict[str, Any]:
    """litellm's drop_params_from_unprocessable_entity_error: the parameters named in a
    422's `detail` (FastAPI style: loc ["body", NAME]) are left out."""
    inner = body.get("error", body) if isinstance(body, dict) else body
    refused: list[Any] = []
    if isinstance(inner, dict) and inner.get("message"):
        message = inner["message"]
        if isinstance(message, str):
            try:
                message = json.loads(message)
            except ValueError:
                message = {"detail": message}
        detail = message.get("detail") if isinstance(message, dict) else None
        if isinstance(detail, list) and detail and isinstance(detail[0], dict):
            refused = [d["loc"][1] for d in detail
                       if isinstance(d.get("loc"), list) and len(d["loc"]) == 2]
    return {k: v for k, v in params.items() if k not in refused}


# -- the stream -------------------------------------------------------------------------------

def parse_event(data: str) -> Chunk | None:
    """One `data:` payload of the stream as a chunk; None for nothing worth reading."""
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise MidStreamError(exc) from None
    if not isinstance(obj, dict):
        raise MidStreamError(ValueError(f"unexpected event: {data[:200]}"))
    error = obj.get("error")
    if error:
        raise MidStreamError(RuntimeError(_error_text(error)))
    usage = _usage(obj.get("usage"))
    choices = obj.get("choices") or []
    if not choices:
        return Chunk([], usage) if usage is not None else None
    choice = choices[0]
    delta = choice.get("delta") or {}
    reasoning = delta.get("reasoning_content")
    if reasoning is None:
        reasoning = delta.get("reasoning")
    calls = None
    if delta.get("tool_calls"):
        calls = []
        for call in delta["tool_calls"]:
            function = call.get("function") or {}
            calls.append(ToolCallDelta(call.get("index"), call.get("id"),
                                       FunctionDelta(function.get("name"),
                                                     function.get("arguments"))))
    finish = choice.get("finish_reason")
    if finish == "error" and not delta.get("content"):
        raise MidStreamError(RuntimeError(
            "the provider raised a streaming error (finish_reason: error, no content)"))
    details = delta.get("reasoning_details")
    return Chunk([Choice(Delta(delta.get("content"), reasoning, None, calls,
                               details if isinstance(details, list) else None),
                         map_finish(finish) if finish else None)], usage)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    return Usage(prompt_tokens=int(raw.get("prompt_tokens") or 0),
                 completion_tokens=int(raw.get("completion_tokens") or 0),
                 cached_tokens=int(prompt_details.get("cached_tokens") or 0),
                 cache_creation_tokens=int(prompt_details.get("cache_creation_tokens") or 0),
                 reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0))


# -- one client's encoder ---------------------------------------------------------------------

class OpenAIWire:
    """Builds the requests of one client (one model): keeps each history message's
    encoding, and the tools', for the next request."""

    name = "openai"

    def __init__(self, model: str, kept_reasoning: frozenset[str] = frozenset()) -> None:
        self.model = model  # the provider's name for it (no `openai/` prefix)
        self._drop = tuple(k for k in REASONING_KEYS if k not in kept_reasoning)
        self._encoded = PerMessage(self._encode)  # the encodings, kept between requests
        self._tools: tuple[Any, bytes] = (None, b"")

    def url(self, api_base: str) -> str:
        return api_base.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                "Accept": "application/json"}

    def body(self, messages: list[dict[str, Any]], params: dict[str, Any],
             tools: list[dict[str, Any]] | None) -> bytes:
        """The request body: `params` are the request's parameters but messages and tools
        (sent only with `tools`, as `tools`)."""
        parts = self._encoded(messages)
        head = {"model": self.model}
        head.update(sorted(params.items()))
        encoded = dumps(head)
        if tools:
            if self._tools[0] is not tools:
                self._tools = (tools, dumps(tools))
            encoded = encoded[:-1] + b',"tools":' + self._tools[1] + b"}"
        return b'{"messages":[' + b",".join(parts) + b"]," + encoded[1:]

    def _encode(self, message: dict[str, Any]) -> bytes:
        return dumps(wire_message(scrub_surrogates(without_keys(message, self._drop))))

    def stream_parser(self) -> Callable[[str | None, str], Chunk | None]:
        return lambda _event, data: parse_event(data)

    def second_attempt(self, error: Exception, messages: list[dict[str, Any]],
                       params: dict[str, Any]
                       ) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
        return second_attempt(error, messages, params)

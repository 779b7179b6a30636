"""The script a scripted model server plays: step validation, token estimates, wire shapes.

Pure functions only (no sockets), so the wire formats can be checked apart from HTTP and
reused by anything that needs a fake provider. The same steps drive both protocols the
server speaks: OpenAI chat completions (here) and Anthropic's Messages API
(testing/anthropic_wire.py), where "reasoning" becomes a signed thinking block. A step is a JSON-loadable dict so that
scripts can live in files next to demos:

    {"content": str, "reasoning": str, "reasoning_format": str,
     "tool_calls": [{"name": str, "arguments": dict | str, "id": str}],
     "usage": {"prompt_tokens": int, "completion_tokens": int, "cached_tokens": int,
               "cache_write_tokens": int},
     "finish_reason": str, "delay": float, "chunk_size": int, "chunk_delay": float}

reasoning_format: how the OpenAI wire carries "reasoning" (REASONING_FORMATS):
"reasoning_content" (the default: DeepSeek, vLLM, llama.cpp and most OpenAI-compatible
servers), or "openrouter" (OpenRouter: the text as `reasoning`, and `reasoning_details`
entries, a `reasoning.text` one streamed in pieces by index whose last piece carries a
signature, which a client must send back on the assistant message). The Anthropic wire
always sends a signed thinking block.
delay: seconds to wait before answering. chunk_size: characters per streamed delta of
content, reasoning and tool arguments (default: each is cut into DEFAULT_PIECES deltas).
chunk_delay: seconds between streamed chunks. Left-out usage figures are estimated;
"usage": false sends no usage at all (a provider that ignores stream_options).

A fault step, {"fault": NAME, "delay"?, ...}, answers an error or misbehaves on the wire;
the known faults and the keys each accepts are in FAULTS:
    {"fault": "status", "status": 429, "retry_after": 2, "message": ..., "code": ...,
     "body": {...}, "headers": {...}}
    {"fault": "context_length", "window": N}   (OpenAI's context_length_exceeded 400)
Wire faults stream the answer the step describes (content, tool_calls, ... as in a normal
step) and break it after `after` SSE events (default: half of them, at least one):
    {"fault": "reset", ...}        TCP reset (RST) mid-stream
    {"fault": "drop", ...}         the response ends cleanly mid-stream: no finish_reason,
                                   no [DONE] (a proxy that gave up)
    {"fault": "stall", "seconds": S, ...}  the stream goes silent for S seconds (default:
                                   until the server stops); after=0 stalls before any event
    {"fault": "malformed", "payload": "...", ...}  one event whose data is not valid JSON
                                   (default: a cut-off chunk), then the rest of the stream
    {"fault": "empty", "shape": "body" | "done" | "no_content"}  a 200 with an empty body,
                                   with only `data: [DONE]`, or with a finish but no content
    {"fault": "truncated_args", "keep": N, ...}  the stream completes normally but every
                                   tool call's arguments are cut to N characters (default
                                   half): invalid JSON with finish_reason "tool_calls"
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

# The cheap rule of thumb for English and JSON (about 4 characters per token): tests need
# consistent figures, not exact ones, and tokenising 100K-token histories per request is slow.
CHARS_PER_TOKEN = 4
# Content, reasoning and arguments are cut into at least this many deltas by default, so a
# client that keeps only the last delta (instead of assembling them) visibly fails.
DEFAULT_PIECES = 3
EXHAUSTED_TEXT = "(script exhausted)"

ANSWER_KEYS = frozenset({"content", "reasoning", "reasoning_format", "tool_calls", "usage",
                         "finish_reason", "delay", "chunk_size", "chunk_delay"})
REASONING_FORMATS = ("reasoning_content", "openrouter")
# The answer a wire fault streams before it breaks (delay is a common fault key already).
STREAMED_KEYS = ANSWER_KEYS - {"delay"}
# Default text a wire fault streams when its step gives none: something to cut in half.
WIRE_FAULT_TEXT = "This answer is cut off by a fault injected on the wire."
MALFORMED_PAYLOAD = '{"id": "chatcmpl-broken", "choices": [{"index": 0, "delta": {"cont'
EMPTY_SHAPES = ("body", "done", "no_content")
USAGE_KEYS = frozenset({"prompt_tokens", "completion_tokens", "cached_tokens",
                        "cache_write_tokens"})
TOOL_CALL_KEYS = frozenset({"name", "arguments", "id"})
COMMON_FAULT_KEYS = frozenset({"fault", "delay"})


class ScriptError(ValueError):
    """A step the server cannot play; raised at load time for lists, per request for callables."""


# -- token estimates ---------------------------------------------------------------------------

def canonical(obj: Any) -> str:
    """One stable text per JSON value, so equal prefixes serialise to equal text."""
    return json.dumps(_strip_cache_control(obj), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def _strip_cache_control(obj: Any) -> Any:
    """Cache markers move between requests; a real provider does not count them as content."""
    if isinstance(obj, dict):
        return {k: _strip_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cache_control(v) for v in obj]
    return obj


def prompt_parts(body: dict) -> list[str]:
    """The prompt as the provider sees it, in order: tool definitions, then each message."""
    parts = [canonical(body["tools"])] if body.get("tools") else []
    parts.extend(canonical(m) for m in body.get("messages") or [])
    return parts


def tokens_of_chars(chars: int) -> int:
    return chars // CHARS_PER_TOKEN


def estimate_prompt_tokens(parts: list[str]) -> int:
    return max(1, tokens_of_chars(sum(len(p) for p in parts)))


# -- steps -------------------------------------------------------------------------------------

def validate_step(step: Any, where: str) -> dict:
    """Reject typos and wrong types up front: a silently ignored key makes a test lie."""
    if not isinstance(step, dict):
        raise ScriptError(f"{where}: a step must be a dict, got {type(step).__name__}")
    if "fault" in step:
        fault = FAULTS.get(step["fault"])
        if fault is None:
            raise ScriptError(f"{where}: unknown fault {step['fault']!r} "
                              f"(known: {', '.join(sorted(FAULTS))})")
        _check_keys(step, COMMON_FAULT_KEYS | fault.keys, where)
        fault.validate(step, where)
        return step
    _check_keys(step, ANSWER_KEYS, where)
    _check_answer(step, where)
    return step


def _check_answer(step: dict, where: str) -> None:
    """Types of the answer keys (shared by text steps and the wire faults that stream one)."""
    for key in ("content", "reasoning", "finish_reason"):
        if key in step and step[key] is not None and not isinstance(step[key], str):
            raise ScriptError(f"{where}: {key} must be a string")
    if step.get("reasoning_format", "reasoning_content") not in REASONING_FORMATS:
        raise ScriptError(f"{where}: reasoning_format must be one of "
                          f"{', '.join(REASONING_FORMATS)}")
    for key in ("delay", "chunk_delay"):
        if key in step and not (isinstance(step[key], (int, float)) and step[key] >= 0):
            raise ScriptError(f"{where}: {key} must be a number >= 0")
    if "chunk_size" in step and not (isinstance(step["chunk_size"], int)
                                     and step["chunk_size"] > 0):
        raise ScriptError(f"{where}: chunk_size must be a positive int")
    usage = step.get("usage") or {}
    _check_keys(usage, USAGE_KEYS, f"{where} usage")
    for i, call in enumerate(step.get("tool_calls") or []):
        _check_keys(call, TOOL_CALL_KEYS, f"{where} tool_calls[{i}]")
        if not isinstance(call.get("name"), str) or not call["name"]:
            raise ScriptError(f"{where} tool_calls[{i}]: name is required")
        if not isinstance(call.get("arguments", {}), (dict, str)):
            raise ScriptError(f"{where} tool_calls[{i}]: arguments must be a dict or a string")


def _check_keys(d: Any, allowed: frozenset, where: str) -> None:
    if not isinstance(d, dict):
        raise ScriptError(f"{where}: expected a dict, got {type(d).__name__}")
    unknown = set(d) - allowed
    if unknown:
        raise ScriptError(f"{where}: unknown key(s) {sorted(unknown)}; "
                          f"allowed: {sorted(allowed)}")


# -- answers -----------------------------------------------------------------------------------

@dataclass
class Answer:
    """A text/tool-call step resolved against one request: everything the wire needs."""

    content: str
    reasoning: str
    tool_calls: list[dict]  # OpenAI shape: {id, type, function: {name, arguments}}
    finish_reason: str
    usage: dict | None  # None: the provider reports no usage
    chunk_size: int | None = None
    reasoning_format: str = "reasoning_content"
    model: str = "scripted"
    completion_id: str = "chatcmpl-scripted"
    created: int = field(default_factory=lambda: int(time.time()))


def resolve_answer(step: dict, *, prompt_tokens: int, cached_tokens: int, call_prefix: str,
                   model: str, completion_id: str, cache_write_tokens: int = 0) -> Answer:
    """Fill in ids, argument text and usage the script left out."""
    calls = []
    for i, call in enumerate(step.get("tool_calls") or []):
        args = call.get("arguments", {})
        calls.append({"id": call.get("id") or f"{call_prefix}_{i}", "type": "function",
                      "function": {"name": call["name"],
                                   "arguments": args if isinstance(args, str)
                                   else json.dumps(args)}})
    content = step.get("content") or ""
    reasoning = step.get("reasoning") or ""
    out_chars = len(content) + len(reasoning) + sum(
        len(c["function"]["name"]) + len(c["function"]["arguments"]) for c in calls)
    given = step.get("usage") or {}
    prompt = int(given.get("prompt_tokens", prompt_tokens))
    completion = int(given.get("completion_tokens", max(1, tokens_of_chars(out_chars))))
    cached = min(int(given.get("cached_tokens", cached_tokens)), prompt)
    written = min(int(given.get("cache_write_tokens", cache_write_tokens)), prompt - cached)
    details: dict[str, int] = {"cached_tokens": cached, "audio_tokens": 0}
    if written:  # OpenAI itself never reports cache writes; gateways in front of Claude do
        details["cache_creation_tokens"] = written
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": details,
        "completion_tokens_details": {
            "reasoning_tokens": min(completion, tokens_of_chars(len(reasoning))),
            "audio_tokens": 0, "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0},
    }
    finish = step.get("finish_reason") or ("tool_calls" if calls else "stop")
    return Answer(content=content, reasoning=reasoning, tool_calls=calls, finish_reason=finish,
                  usage=None if step.get("usage") is False else usage,
                  chunk_size=step.get("chunk_size"),
                  reasoning_format=step.get("reasoning_format") or "reasoning_content",
                  model=model, completion_id=completion_id)


def reasoning_signature(reasoning: str) -> str:
    """The signature an OpenRouter-style `reasoning.text` detail carries (deterministic, so
    a test can tell the detail came back intact)."""
    return "sig-" + hashlib.sha256(reasoning.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def reasoning_details(reasoning: str) -> list[dict]:
    """OpenRouter's `reasoning_details` of a whole answer (the non-streamed shape)."""
    return [{"type": "reasoning.text", "text": reasoning, "format": "unknown", "index": 0,
             "signature": reasoning_signature(reasoning)}]


def completion_body(a: Answer) -> dict:
    """The non-streaming `chat.completion` object."""
    message: dict[str, Any] = {"role": "assistant", "content": a.content or None,
                               "refusal": None}
    if a.reasoning and a.reasoning_format == "openrouter":
        message["reasoning"] = a.reasoning
        message["reasoning_details"] = reasoning_details(a.reasoning)
    elif a.reasoning:
        message["reasoning_content"] = a.reasoning
    if a.tool_calls:
        message["tool_calls"] = a.tool_calls
    return {"id": a.completion_id, "object": "chat.completion", "created": a.created,
            "model": a.model, "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": a.finish_reason}],
            "usage": a.usage}


def stream_chunks(a: Answer, include_usage: bool) -> Iterator[dict]:
    """The `chat.completion.chunk` objects of a streamed answer, in wire order.

    Order follows OpenAI: role first, then reasoning, content, each tool call (id and name
    once, arguments in fragments), an empty delta with the finish reason, and, when asked,
    a usage chunk with no choices.
    """
    def chunk(delta: dict, finish: str | None = None) -> dict:
        out = {"id": a.completion_id, "object": "chat.completion.chunk", "created": a.created,
               "model": a.model, "system_fingerprint": "fp_scripted",
               "choices": [{"index": 0, "delta": delta, "logprobs": None,
                            "finish_reason": finish}]}
        if include_usage:
            out["usage"] = None
        return out

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    pieces = split_text(a.reasoning, a.chunk_size)
    for n, piece in enumerate(pieces):
        if a.reasoning_format == "openrouter":
            detail = {"type": "reasoning.text", "text": piece, "format": "unknown", "index": 0}
            if n == len(pieces) - 1:
                detail["signature"] = reasoning_signature(a.reasoning)
            yield chunk({"reasoning": piece, "reasoning_details": [detail]})
        else:
            yield chunk({"reasoning_content": piece})
    for piece in split_text(a.content, a.chunk_size):
        yield chunk({"content": piece})
    for index, call in enumerate(a.tool_calls):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"],
                                                  "arguments": ""}}]})
        for piece in split_text(call["function"]["arguments"], a.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, a.finish_reason)
    if include_usage and a.usage is not None:
        yield {"id": a.completion_id, "object": "chat.completion.chunk", "created": a.created,
               "model": a.model, "system_fingerprint": "fp_scripted", "choices": [],
               "usage": a.usage}


def split_text(text: str, chunk_size: int | None) -> list[str]:
    """Cut text into deltas; by default into DEFAULT_PIECES so assembly is always exercised."""
    if not text:
        return []
    size = chunk_size or max(1, math.ceil(len(text) / DEFAULT_PIECES))
    return [text[i:i + size] for i in range(0, len(text), size)]


# -- wire protocols ----------------------------------------------------------------------------

class Wire:
    """How one provider protocol puts an answer on the wire; the fault plans below build on
    it, so every fault works for every protocol. This is OpenAI chat completions; the
    Anthropic Messages API is testing/anthropic_wire.py."""

    name = "openai"
    done_frame = "data: [DONE]\n\n"  # what ends a complete stream after the last event

    def frames(self, answer: Answer, include_usage: bool) -> list[str]:
        """The SSE frames of a streamed answer, in order, each ending in a blank line."""
        return [f"data: {json.dumps(chunk)}\n\n" for chunk in stream_chunks(answer,
                                                                           include_usage)]

    def junk_frame(self, payload: str) -> str:
        return f"data: {payload}\n\n"

    def body(self, answer: Answer) -> dict:
        """The non-streaming response body."""
        return completion_body(answer)

    def error(self, reply: "ErrorReply") -> "ErrorReply":
        """An error answer in this protocol's shape (the fault builders use OpenAI's)."""
        return reply


OPENAI_WIRE = Wire()


# -- faults ------------------------------------------------------------------------------------

@dataclass
class ErrorReply:
    """An HTTP error answer: status, extra headers and an OpenAI-style JSON body."""

    status: int
    body: dict
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RequestInfo:
    """What a fault may need to know about the request it answers."""

    prompt_tokens: int
    context_window: int | None
    model: str


@dataclass
class WirePlan:
    """A 200 answer that misbehaves on the wire; the server plays it literally.

    events: SSE frames in order (each a complete `data: ...` or `event: ...` frame).
    ending: "done" (the protocol's normal end, e.g. data: [DONE]), "eof" (the final
    chunk without [DONE]: the HTTP response ends cleanly, the stream does not), "reset"
    (TCP RST), "stall" (silence for stall_seconds, or until the server stops, then close).
    empty_body: send a 200 with Content-Length 0 instead of any event.
    For a non-streaming request the same plan applies to the JSON body: it is cut where the
    events stop (reset, eof, stall), replaced by junk (malformed) or left empty.
    """

    events: list[str]
    ending: str = "done"
    stall_seconds: float | None = None
    empty_body: bool = False
    body: str | None = None  # the non-streaming body for the same answer


@dataclass
class Fault:
    """A named fault: the step keys it accepts, a checker, and what it answers.

    `reply` builds an HTTP error answer; `plan` (for wire faults) turns the step's answer
    into a WirePlan. A fault has exactly one of the two.
    """

    keys: frozenset
    reply: Callable[[dict, RequestInfo], ErrorReply] | None = None
    validate: Callable[[dict, str], None] = lambda _step, _where: None
    plan: Callable[[dict, Answer, bool, Wire], WirePlan] | None = None


# Default (message, type, code) per status, modelled on what OpenAI answers.
_STATUS_DEFAULTS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided: dummy. You can find your API key at "
          "https://platform.openai.com/account/api-keys.", "invalid_request_error",
          "invalid_api_key"),
    403: ("You are not allowed to access this model.", "invalid_request_error",
          "model_not_allowed"),
    404: ("The model does not exist or you do not have access to it.",
          "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests. Please try again later.", "requests",
          "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!",
          "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error",
          None),
}


def error_body(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _status_reply(step: dict, _info: RequestInfo) -> ErrorReply:
    status = int(step["status"])
    message, type_, code = _STATUS_DEFAULTS.get(
        status, ("Scripted error.", "server_error" if status >= 500 else "invalid_request_error",
                 None))
    body = step.get("body") or error_body(step.get("message", message), type_,
                                          step.get("code", code))
    headers = {str(k): str(v) for k, v in (step.get("headers") or {}).items()}
    if step.get("retry_after") is not None:
        seconds = float(step["retry_after"])
        headers["Retry-After"] = str(int(seconds)) if seconds.is_integer() else str(seconds)
        headers["retry-after-ms"] = str(int(seconds * 1000))
    return ErrorReply(status, body, headers)


def _check_status(step: dict, where: str) -> None:
    status = step.get("status")
    if not isinstance(status, int) or not 400 <= status <= 599:
        raise ScriptError(f"{where}: status fault needs an int status in 400..599")
    if "body" in step and not isinstance(step["body"], dict):
        raise ScriptError(f"{where}: body must be a dict")


def context_length_reply(window: int, tokens: int) -> ErrorReply:
    """OpenAI's exact wording: litellm recognises it as ContextWindowExceededError."""
    return ErrorReply(400, error_body(
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error", "context_length_exceeded", "messages"))


def _context_length_fault(step: dict, info: RequestInfo) -> ErrorReply:
    window = step.get("window") or info.context_window or max(1, info.prompt_tokens - 1)
    return context_length_reply(int(window), info.prompt_tokens)


# -- wire faults -------------------------------------------------------------------------------

def _wire_answer(step: dict, answer: Answer) -> Answer:
    """A wire fault with nothing to say still streams some text, so there is something to cut."""
    if not (answer.content or answer.reasoning or answer.tool_calls):
        answer.content = WIRE_FAULT_TEXT
    return answer




def _cut_point(step: dict, events: list[str]) -> int:
    """Events sent before the break: `after`, else half (at least the role chunk and one more)."""
    if "after" in step:
        return min(int(step["after"]), len(events))
    return max(2, len(events) // 2)


def _broken_plan(ending: str) -> Callable[[dict, Answer, bool, Wire], WirePlan]:
    def plan(step: dict, answer: Answer, include_usage: bool, wire: Wire) -> WirePlan:
        answer = _wire_answer(step, answer)
        events = wire.frames(answer, include_usage)
        return WirePlan(events[:_cut_point(step, events)], ending,
                        stall_seconds=step.get("seconds"),
                        body=json.dumps(wire.body(answer)))
    return plan


def _malformed_plan(step: dict, answer: Answer, include_usage: bool, wire: Wire) -> WirePlan:
    answer = _wire_answer(step, answer)
    events = wire.frames(answer, include_usage)
    cut = _cut_point(step, events)
    junk = step.get("payload", MALFORMED_PAYLOAD)
    return WirePlan(events[:cut] + [wire.junk_frame(junk)] + events[cut:], "done", body=junk)


def _empty_plan(step: dict, answer: Answer, include_usage: bool, wire: Wire) -> WirePlan:
    shape = step.get("shape", "body")
    if shape == "body":
        return WirePlan([], empty_body=True)
    if shape == "done":
        return WirePlan([], "done", body="")
    answer.content, answer.reasoning, answer.tool_calls = "", "", []
    answer.finish_reason = step.get("finish_reason") or "stop"
    return WirePlan(wire.frames(answer, include_usage), "done",
                    body=json.dumps(wire.body(answer)))


def _truncated_args_plan(step: dict, answer: Answer, include_usage: bool,
                         wire: Wire) -> WirePlan:
    for call in answer.tool_calls:
        text = call["function"]["arguments"]
        keep = int(step["keep"]) if "keep" in step else len(text) // 2
        call["function"]["arguments"] = text[:keep]
    return WirePlan(wire.frames(answer, include_usage), "done",
                    body=json.dumps(wire.body(answer)))


def _check_wire(step: dict, where: str) -> None:
    _check_answer(step, where)
    if "after" in step and not (isinstance(step["after"], int) and step["after"] >= 0):
        raise ScriptError(f"{where}: after must be an int >= 0")
    if "seconds" in step and not (isinstance(step["seconds"], (int, float))
                                  and step["seconds"] >= 0):
        raise ScriptError(f"{where}: seconds must be a number >= 0")
    if "shape" in step and step["shape"] not in EMPTY_SHAPES:
        raise ScriptError(f"{where}: shape must be one of {EMPTY_SHAPES}")
    if "payload" in step and not isinstance(step["payload"], str):
        raise ScriptError(f"{where}: payload must be a string")
    if "keep" in step and not (isinstance(step["keep"], int) and step["keep"] >= 0):
        raise ScriptError(f"{where}: keep must be an int >= 0")
    if step["fault"] == "truncated_args" and not step.get("tool_calls"):
        raise ScriptError(f"{where}: truncated_args needs tool_calls to cut")


_CUT_KEYS = STREAMED_KEYS | {"after"}

# The fault registry: add an entry to teach the server a new fault.
FAULTS: dict[str, Fault] = {
    "status": Fault(frozenset({"status", "retry_after", "body", "message", "code", "headers"}),
                    _status_reply, _check_status),
    "context_length": Fault(frozenset({"window"}), _context_length_fault),
    "reset": Fault(_CUT_KEYS, validate=_check_wire, plan=_broken_plan("reset")),
    "drop": Fault(_CUT_KEYS, validate=_check_wire, plan=_broken_plan("eof")),
    "stall": Fault(_CUT_KEYS | {"seconds"}, validate=_check_wire, plan=_broken_plan("stall")),
    "malformed": Fault(_CUT_KEYS | {"payload"}, validate=_check_wire, plan=_malformed_plan),
    "empty": Fault(frozenset({"shape", "finish_reason", "usage"}), validate=_check_wire,
                   plan=_empty_plan),
    "truncated_args": Fault(STREAMED_KEYS | {"keep"}, validate=_check_wire,
                            plan=_truncated_args_plan),
}

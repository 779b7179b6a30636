"""What one model call sends: its parameters as OpenAI names them, litellm's keyword
arguments around them, and the body the direct path sends again after an error answer.

Pure functions of the client's settings (llm/client.py holds them and opens the stream), so
what a request carries is read in one place, whichever transport sends it.
"""
from __future__ import annotations

from typing import Any


def wire_params(tools: list[dict] | None, tool_choice: Any, *, temperature: float | None,
                max_tokens: int | None, reasoning_effort: str | None,
                extra_params: dict[str, Any]) -> dict[str, Any]:
    """The request's parameters as OpenAI names them (litellm maps them per provider)."""
    params: dict[str, Any] = {"stream": True, "stream_options": {"include_usage": True}}
    if tools and tool_choice is not None:
        params["tool_choice"] = tool_choice
    if temperature is not None:
        params["temperature"] = temperature
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    if reasoning_effort is not None:
        # litellm maps it per provider (OpenAI's field; Anthropic's thinking budget)
        params["reasoning_effort"] = reasoning_effort
    params.update(extra_params)
    return params


def litellm_params(model: str, messages: list[dict], tools: list[dict] | None, *,
                   api_base: str | None, api_key: str | None, timeout: float,
                   wire: dict[str, Any]) -> dict[str, Any]:
    """litellm.completion's keyword arguments: `messages` as sent, `wire` the parameters
    (wire_params), `timeout` the transport's per-read timeout."""
    params: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "num_retries": 0,
        # httpx applies this per read (checked: a stream silent mid-response raises after
        # it), so it bounds silence, not the whole call; request_timeout bounds the call.
        "timeout": timeout,
    }
    if tools:
        params["tools"] = tools
    if api_base:
        params["api_base"] = api_base
    if api_key:
        params["api_key"] = api_key
    params.update(wire)
    return params


def second_body(wire: Any, error: Exception, messages: list[dict], params: dict[str, Any],
                tools: list[dict] | None) -> bytes | None:
    """The body litellm would send once more after this error answer, or None (`wire`: the
    direct path's, llm/wire_openai.py or llm/wire_anthropic.py)."""
    again = wire.second_attempt(error, messages, params)
    if again is None:
        return None
    return wire.body(again[0], again[1], tools)

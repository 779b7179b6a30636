"""Prompt caching: where a request may carry cache breakpoints, and what else keeps it cheap.

Anthropic-style providers (Anthropic, Claude on Bedrock and Vertex, OpenRouter's Anthropic
models) cache only up to blocks marked `cache_control`, at most 4 per request. Marking the
system prompt and the last two messages makes each request write the cache at its end and
read it back at the previous request's end, since the history only grows between
compactions. OpenAI-style providers cache the longest byte-identical prefix on their own:
there, the only help is a stable `prompt_cache_key` so requests of one thread land on the
same cache.

Markers go on a copy of the request, never on the stored history, so the history stays
provider-neutral and byte-stable. They are message-level `cache_control` keys, which
litellm moves onto the right content block for each provider (text, tool_result, Bedrock
cachePoint), and which leave the message content itself unchanged.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
# Anthropic accepts at most 4 breakpoints; we use 3 (system + last two messages).
MAX_BREAKPOINTS = 4
# How many of the latest messages get a breakpoint: the newest writes the cache, the one
# before it is where the previous request wrote it (a read hit even if the newest is new).
TAIL_BREAKPOINTS = 2
# Hosts of the real OpenAI API; other OpenAI-compatible servers may reject unknown fields.
_OPENAI_HOSTS = ("api.openai.com",)


def uses_cache_control(model: str) -> bool:
    """Whether the provider behind a litellm model string honours `cache_control` markers."""
    name = model.strip().lower()
    provider, _, rest = name.partition("/")
    if not rest:  # a bare model name: litellm routes claude-* to Anthropic
        return name.startswith("claude")
    if provider == "anthropic":
        return True
    if provider in ("bedrock", "vertex_ai", "vertex_ai_beta"):
        return "claude" in rest or "anthropic." in rest
    if provider == "openrouter":
        return rest.startswith("anthropic/")
    return False


def wants_cache_markers(model: str, setting: str = "auto") -> bool:
    """The `cache_markers` setting: "on"/"off" force it (gateways, tests), "auto" detects."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    return uses_cache_control(model)


def add_cache_markers(messages: list[dict[str, Any]], model: str | None = None
                      ) -> list[dict[str, Any]]:
    """A new request list with breakpoints on the system prompt and the last two messages.

    Pure: the input list and its dicts are not modified (marked messages are shallow
    copies). With a `model` whose provider ignores markers, the list is returned unmarked.
    Only messages with text can hold a breakpoint (an assistant message that is only tool
    calls has no block litellm would mark), so such a message is skipped and the one before
    it is marked instead.
    """
    out = list(messages)
    if model is not None and not uses_cache_control(model):
        return out
    chosen: list[int] = []
    for index, message in enumerate(out):
        if message.get("role") == "system" and _markable(message):
            chosen.append(index)
            break
    tail: list[int] = []
    for index in range(len(out) - 1, -1, -1):
        if len(tail) == TAIL_BREAKPOINTS:
            break
        if index not in chosen and _markable(out[index]):
            tail.append(index)
    for index in (chosen + tail)[:MAX_BREAKPOINTS]:
        out[index] = {**out[index], "cache_control": dict(EPHEMERAL)}
    return out


def _markable(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return bool(content) and isinstance(content, (str, list))


def count_breakpoints(messages: list[dict[str, Any]]) -> int:
    """Markers in a request, whether message-level or on content parts (tests, checks)."""
    total = 0
    for message in messages:
        total += "cache_control" in message
        content = message.get("content")
        if isinstance(content, list):
            total += sum(1 for p in content if isinstance(p, dict) and "cache_control" in p)
    return total


def prompt_cache_params(model: str, api_base: str | None, key: str) -> dict[str, Any]:
    """Extra request parameters that route a thread's requests to the same prompt cache.

    Only for the real OpenAI API: `prompt_cache_key` is an OpenAI field, and other servers
    behind the `openai/` prefix (vLLM, proxies) may reject fields they do not know.
    """
    name = model.strip().lower()
    provider, _, rest = name.partition("/")
    openai_model = provider == "openai" if rest else name.startswith(("gpt-", "o1", "o3",
                                                                         "o4", "chatgpt"))
    if not openai_model or not key:
        return {}
    if api_base:
        host = (urlparse(api_base).hostname or "").lower()
        if host not in _OPENAI_HOSTS:
            return {}
    return {"prompt_cache_key": key}

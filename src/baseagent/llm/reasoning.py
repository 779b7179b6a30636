"""Which reasoning the history sends back to each provider.

The history keeps every assistant message's reasoning as litellm names it
(`reasoning_content`, the text; `thinking_blocks`, Anthropic's signed blocks), so a thread
can move between providers and exports see it. What goes on the wire differs:

- Anthropic (and Claude on Bedrock and Vertex) needs its thinking blocks back, signatures
  intact: with extended thinking on, a tool-use loop whose last assistant message lost its
  thinking block is rejected (400). litellm turns `thinking_blocks` into content blocks.
- DeepSeek's thinking mode wants `reasoning_content` back (litellm's DeepSeek transform
  even fails the request without it).
- Everyone else gets neither: OpenAI rejects unknown message fields, and reasoning text
  sent as a field most servers ignore would only cost tokens where they do not.
"""
from __future__ import annotations

from typing import Any

REASONING_KEYS = ("reasoning_content", "thinking_blocks")
# litellm provider prefixes that take the reasoning text back as `reasoning_content`.
_REASONING_CONTENT_PROVIDERS = frozenset({"deepseek"})


def kept_reasoning_keys(model: str) -> frozenset[str]:
    """The reasoning keys this model's provider should receive on assistant messages."""
    name = model.strip().lower()
    provider, _, rest = name.partition("/")
    if not rest:  # a bare model name: litellm routes claude-* to Anthropic
        provider, rest = ("anthropic" if name.startswith("claude") else ""), name
    if provider == "anthropic" or (provider in ("bedrock", "vertex_ai", "vertex_ai_beta")
                                   and ("claude" in rest or "anthropic." in rest)):
        return frozenset({"thinking_blocks"})
    if provider in _REASONING_CONTENT_PROVIDERS:
        return frozenset({"reasoning_content"})
    return frozenset()


def dropped_reasoning_keys(model: str) -> tuple[str, ...]:
    """The reasoning keys this model's provider must not receive."""
    kept = kept_reasoning_keys(model)
    return tuple(key for key in REASONING_KEYS if key not in kept)


def without_keys(message: dict[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    """The message without `drop`'s keys: the same dict when it has none of them."""
    if not any(key in message for key in drop):
        return message
    return {k: v for k, v in message.items() if k not in drop}

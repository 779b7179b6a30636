"""Which reasoning the history sends back to each provider.

The history keeps every assistant message's reasoning as the providers name it
(`reasoning_content`, the text; `thinking_blocks`, Anthropic's signed blocks;
`reasoning_details`, OpenRouter's structured entries), so a thread can move between
providers and exports see it. What goes on the wire differs:

- Anthropic (and Claude on Bedrock and Vertex) needs its thinking blocks back, signatures
  intact: with extended thinking on, a tool-use loop whose last assistant message lost its
  thinking block is rejected (400). litellm turns `thinking_blocks` into content blocks.
- DeepSeek's thinking mode wants `reasoning_content` back (litellm's DeepSeek transform
  even fails the request without it).
- OpenRouter (hermes-agent's default provider) continues a model's reasoning from the
  `reasoning_details` of the assistant messages it is sent (signed or encrypted entries
  for Claude, Gemini and OpenAI models): they go back as they came.
- An OpenAI-compatible server of your own (`openai/<model>` with an api_base that is not
  OpenAI's, for a model that is not one of OpenAI's (gpt-*, o1/o3/o4*, ...: those keep
  OpenAI's rules behind any proxy): vLLM, SGLang, llama.cpp, Ollama) gets back what it
  sent: `reasoning_content` (the chat templates of reasoning models such as Qwen3 read it)
  and `reasoning_details`. A message carries these only when the server produced them.
- Everyone else gets none: OpenAI rejects unknown message fields, and reasoning text
  sent as a field most servers ignore would only cost tokens where they do not.
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

REASONING_KEYS = ("reasoning_content", "thinking_blocks", "reasoning_details")
# litellm provider prefixes that take the reasoning text back as `reasoning_content`.
_REASONING_CONTENT_PROVIDERS = frozenset({"deepseek"})
_OPENAI_HOSTS = ("api.openai.com",)
# OpenAI's own model names: they keep OpenAI's rules whatever the api_base (a proxy to it).
_OPENAI_MODEL = re.compile(r"(ft:)?(gpt-|chatgpt-|o\d|codex-|computer-use|text-|davinci|babbage)")
# The text fields of a reasoning_details entry that arrive in pieces (OpenRouter: text for
# reasoning.text, summary for reasoning.summary, data for reasoning.encrypted).
_DETAIL_TEXT_FIELDS = ("text", "summary", "data")


def kept_reasoning_keys(model: str, api_base: str | None = None) -> frozenset[str]:
    """The reasoning keys this model's provider should receive on assistant messages.
    `api_base`: where the calls go (None: the provider's own endpoint)."""
    name = model.strip().lower()
    provider, _, rest = name.partition("/")
    if not rest:  # a bare model name: litellm routes claude-* to Anthropic
        provider, rest = ("anthropic" if name.startswith("claude") else ""), name
    if provider == "anthropic" or (provider in ("bedrock", "vertex_ai", "vertex_ai_beta")
                                   and ("claude" in rest or "anthropic." in rest)):
        return frozenset({"thinking_blocks"})
    if provider in _REASONING_CONTENT_PROVIDERS:
        return frozenset({"reasoning_content"})
    if provider == "openrouter":
        return frozenset({"reasoning_details"})
    if provider == "openai" and api_base and not _is_openai(api_base) \
            and not _OPENAI_MODEL.match(rest):
        return frozenset({"reasoning_content", "reasoning_details"})
    return frozenset()


def _is_openai(api_base: str) -> bool:
    host = (urlsplit(api_base.strip()).hostname or "").lower()
    return host in _OPENAI_HOSTS or host.endswith(".openai.azure.com")


def dropped_reasoning_keys(model: str, api_base: str | None = None) -> tuple[str, ...]:
    """The reasoning keys this model's provider must not receive."""
    kept = kept_reasoning_keys(model, api_base)
    return tuple(key for key in REASONING_KEYS if key not in kept)


def without_keys(message: dict[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    """The message without `drop`'s keys: the same dict when it has none of them."""
    if not any(key in message for key in drop):
        return message
    return {k: v for k, v in message.items() if k not in drop}


def merge_details(details: list[dict[str, Any]], pieces: Any) -> None:
    """Add one streamed delta's `reasoning_details` to those of the answer so far.

    OpenRouter streams each entry in pieces that share its `index`: the text fields are
    concatenated, every other field (type, format, id, a signature on the last piece) is
    taken as given. A piece without an index is an entry of its own."""
    for piece in pieces or []:
        if hasattr(piece, "model_dump"):
            piece = piece.model_dump()
        if not isinstance(piece, dict):
            continue
        index = piece.get("index")
        entry = next((d for d in details if index is not None and d.get("index") == index),
                     None)
        if entry is None:
            details.append({k: v for k, v in piece.items() if v is not None})
            continue
        for key, value in piece.items():
            if value is None:
                continue
            if key in _DETAIL_TEXT_FIELDS and isinstance(value, str) \
                    and isinstance(entry.get(key), str):
                entry[key] += value
            else:
                entry[key] = value

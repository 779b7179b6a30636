"""The streamed pieces of an answer, as the client's chunk loop reads them.

litellm hands the client `ModelResponseStream` objects; the direct transports
(llm/direct.py) hand it these instead, with the same attribute names (`choices[0].delta`
with `content`, `reasoning_content`, `thinking_blocks`, `reasoning_details`, `tool_calls`;
`finish_reason`;
`usage` with `prompt_tokens`, `completion_tokens` and their details), so one loop in
llm/client.py assembles a turn whichever transport served the call. Plain slotted
objects: built once per chunk, read once.
"""
from __future__ import annotations

from typing import Any


class FunctionDelta:
    __slots__ = ("name", "arguments")

    def __init__(self, name: str | None = None, arguments: str | None = None) -> None:
        self.name = name
        self.arguments = arguments


class ToolCallDelta:
    __slots__ = ("index", "id", "function")

    def __init__(self, index: int | None, id: str | None = None,  # noqa: A002 - wire name
                 function: FunctionDelta | None = None) -> None:
        self.index = index
        self.id = id
        self.function = function


class Delta:
    __slots__ = ("content", "reasoning_content", "thinking_blocks", "tool_calls",
                 "reasoning_details")

    def __init__(self, content: str | None = None, reasoning_content: str | None = None,
                 thinking_blocks: list[dict[str, Any]] | None = None,
                 tool_calls: list[ToolCallDelta] | None = None,
                 reasoning_details: list[dict[str, Any]] | None = None) -> None:
        self.content = content
        self.reasoning_content = reasoning_content
        self.thinking_blocks = thinking_blocks
        self.tool_calls = tool_calls
        # OpenRouter's structured reasoning, in pieces merged by index (llm/reasoning.py)
        self.reasoning_details = reasoning_details


class Choice:
    __slots__ = ("delta", "finish_reason")

    def __init__(self, delta: Delta, finish_reason: str | None = None) -> None:
        self.delta = delta
        self.finish_reason = finish_reason


class Details:
    """prompt_tokens_details / completion_tokens_details: only the counts the client reads."""

    __slots__ = ("cached_tokens", "cache_creation_tokens", "reasoning_tokens")

    def __init__(self, cached_tokens: int = 0, cache_creation_tokens: int = 0,
                 reasoning_tokens: int = 0) -> None:
        self.cached_tokens = cached_tokens
        self.cache_creation_tokens = cache_creation_tokens
        self.reasoning_tokens = reasoning_tokens


class Usage:
    """A call's usage as litellm's `Usage` presents it: `prompt_tokens` is the whole prompt
    (cache reads and writes included), the details say how much of it was cached."""

    __slots__ = ("prompt_tokens", "completion_tokens", "prompt_tokens_details",
                 "completion_tokens_details", "cache_read_input_tokens",
                 "cache_creation_input_tokens")

    def __init__(self, prompt_tokens: int = 0, completion_tokens: int = 0,
                 cached_tokens: int = 0, cache_creation_tokens: int = 0,
                 reasoning_tokens: int = 0, anthropic: bool = False) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.prompt_tokens_details = Details(cached_tokens, cache_creation_tokens)
        self.completion_tokens_details = Details(reasoning_tokens=reasoning_tokens)
        # Anthropic's own names, as litellm also sets them on an Anthropic usage
        self.cache_read_input_tokens = cached_tokens if anthropic else None
        self.cache_creation_input_tokens = cache_creation_tokens if anthropic else None


class Chunk:
    __slots__ = ("choices", "usage")

    def __init__(self, choices: list[Choice], usage: Usage | None = None) -> None:
        self.choices = choices
        self.usage = usage

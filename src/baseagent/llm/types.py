"""Plain data the client hands back: what the model said in one call, and what it cost."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text exactly as the model produced it


@dataclass
class CallUsage:
    input_tokens: int = 0  # includes cached tokens, as providers report prompt_tokens
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None when litellm has no price for the model


@dataclass
class ModelTurn:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: CallUsage = field(default_factory=CallUsage)

    def assistant_message(self) -> dict:
        """The OpenAI-format message to append to the history."""
        message: dict = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


@dataclass
class UsageTotals:
    """Cumulative usage of the run (what turn.completed reports)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    calls: int = 0

    def add(self, usage: CallUsage) -> None:
        self.input_tokens += usage.input_tokens
        self.cached_input_tokens += usage.cached_input_tokens
        self.output_tokens += usage.output_tokens
        self.calls += 1
        if usage.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += usage.cost_usd


ProgressFn = Callable[[str, str], None]  # (text so far, reasoning so far)


class ModelClientProtocol(Protocol):
    """What the loop and compaction need of a model client: llm/client.ModelClient talks to
    litellm; testing/deterministic.py plays canned turns in-process."""

    totals: UsageTotals

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 on_progress: ProgressFn = ..., estimated_input_tokens: int = 0,
                 **options: Any) -> ModelTurn:
        """One model call (with the client's own retries); adds its usage to `totals`.
        `options` carries `tool_choice` when the run sets one (only then)."""

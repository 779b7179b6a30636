"""Plain data the client hands back: what the model said in one call, and what it cost."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from baseagent.cancellation import CancelToken

# The token counts of a call and of a thread, in the order Codex 0.169 writes them in
# `turn.completed.usage`. input_tokens is the whole prompt (cache reads and writes included,
# as providers report prompt_tokens); output_tokens includes reasoning_output_tokens.
TOKEN_KEYS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens",
              "output_tokens", "reasoning_output_tokens")


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text exactly as the model produced it
    # What the tool result tells the model beside the output: how the arguments were
    # repaired to be read (a call written as text with slips in its JSON), or that the call
    # was made from code the answer held (helps/prose_code.py). "" when there is nothing.
    note: str = ""


@dataclass
class CallUsage:
    input_tokens: int = 0  # includes cached tokens, as providers report prompt_tokens
    cached_input_tokens: int = 0  # read from the provider's prompt cache
    output_tokens: int = 0
    cost_usd: float | None = None  # None when litellm has no price for the model
    cache_write_input_tokens: int = 0  # written to it (Anthropic's cache_creation_input_tokens)
    reasoning_output_tokens: int = 0  # part of output_tokens


@dataclass
class ModelTurn:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: CallUsage = field(default_factory=CallUsage)
    # Provider reasoning blocks as litellm gives them (Anthropic thinking / redacted_thinking,
    # with their signatures): sent back verbatim, since Anthropic checks the signatures.
    thinking_blocks: list[dict[str, Any]] = field(default_factory=list)
    # OpenRouter's reasoning_details (merged by index): sent back verbatim to OpenRouter,
    # which needs them (signatures, encrypted reasoning) to continue the model's reasoning.
    reasoning_details: list[dict[str, Any]] = field(default_factory=list)
    # Calls to offered tools written as text that could not be read (one line each): the
    # loop tells the model they did not run, rather than taking the text for an answer.
    malformed_calls: list[str] = field(default_factory=list)

    def assistant_message(self) -> dict:
        """The OpenAI-format message to append to the history, with the call's reasoning.

        `reasoning_content` and `thinking_blocks` are the keys litellm itself uses
        (`reasoning_details` OpenRouter's); whether
        they are sent back is decided per provider when the request is built
        (llm/reasoning.py), so the history keeps them whatever the provider.
        """
        message: dict = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        if self.thinking_blocks:
            message["thinking_blocks"] = [dict(b) for b in self.thinking_blocks]
        if self.reasoning_details:
            message["reasoning_details"] = [dict(d) for d in self.reasoning_details]
        return message


@dataclass
class UsageTotals:
    """Cumulative usage of the thread (what turn.completed reports)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    calls: int = 0
    cache_write_input_tokens: int = 0
    reasoning_output_tokens: int = 0

    def add(self, usage: CallUsage) -> None:
        for key in TOKEN_KEYS:
            setattr(self, key, getattr(self, key) + getattr(usage, key))
        self.calls += 1
        if usage.cost_usd is None:
            self.cost_known = False
        else:
            self.cost_usd += usage.cost_usd


    def tokens(self) -> dict[str, int]:
        """The five token counts, in Codex's order."""
        return {key: getattr(self, key) for key in TOKEN_KEYS}

    def as_record(self) -> dict[str, Any]:
        """The session record's `usage` fields (records/recorder.py); read by from_record."""
        return {**self.tokens(), "cost_usd": self.cost_usd if self.cost_known else None,
                "calls": self.calls}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "UsageTotals":
        """Totals from a `usage` record; keys an older record lacks count as 0."""
        totals = cls(cost_usd=float(record.get("cost_usd") or 0.0),
                     cost_known=record.get("cost_usd") is not None,
                     calls=int(record.get("calls") or 0))
        for key in TOKEN_KEYS:
            setattr(totals, key, int(record.get(key) or 0))
        return totals

    def add_record(self, delta: dict[str, Any]) -> None:
        """Add one call's usage as an assistant `message` record carries it."""
        for key in TOKEN_KEYS:
            setattr(self, key, getattr(self, key) + int(delta.get(key) or 0))
        self.calls += int(delta.get("calls") or 0)
        if delta.get("cost_usd") is None:
            self.cost_known = False
        else:
            self.cost_usd += float(delta["cost_usd"])


@dataclass(frozen=True)
class CallProgress:
    """A tool call as far as the model has streamed it: `arguments` is the raw JSON text so
    far (a fragment of what ModelTurn.tool_calls will hold). `id` is what the stream gave,
    else `call_{index}` (the id the client gives a call that arrives without one)."""

    index: int
    id: str
    name: str
    arguments: str


class ProgressFn(Protocol):
    """What a model client calls as an answer streams: the text and reasoning so far, and,
    once the model writes tool calls, `calls` (every call so far, in order). A client that
    does not stream tool calls never passes `calls`."""

    def __call__(self, text: str, reasoning: str,
                 calls: tuple[CallProgress, ...] = ()) -> None: ...


class EnoughText(Exception):
    """Raised by a ProgressFn when the answer so far already holds all its caller needs
    (the whole-file probe: a complete block for each file to change, and the model starting
    another block, most often the test file again): the client stops reading the stream
    there and returns the first `keep` characters of the text as the answer, its finish
    reason ENOUGH_FINISH. Nothing is lost that the caller would use, and the minutes a small
    model spends copying out a test file are not waited for."""

    def __init__(self, keep: int) -> None:
        super().__init__(f"enough after {keep} characters")
        self.keep = keep


# The finish reason of an answer whose reader stopped it (EnoughText).
ENOUGH_FINISH = "enough"


def no_progress(text: str, reasoning: str, calls: tuple[CallProgress, ...] = ()) -> None:
    """The default ProgressFn: nobody is watching the stream."""


@runtime_checkable
class ModelClientProtocol(Protocol):
    """What the loop and compaction need of a model client: llm/client.ModelClient talks to
    litellm or the direct path; testing/deterministic.py plays canned turns in-process. A
    client a library caller injects (`Agent(model_client=...)`) is held to it when the run
    is built."""

    totals: UsageTotals

    def bind_cancel(self, cancelled: CancelToken) -> None:
        """Take the run's cancellation (the composition root calls this once, before the
        first call): a call in flight is abandoned once `cancelled()` is true."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 on_progress: ProgressFn = ..., estimated_input_tokens: int = 0,
                 **options: Any) -> ModelTurn:
        """One model call (with the client's own retries); adds its usage to `totals`.
        `options` carries `tool_choice` when the run sets one (only then), and `temperature`
        for a call sampled at its own (the whole-file probe's repair candidates, only
        then)."""

    def close(self) -> None:
        """Release what the client holds open (the direct path's connection to the
        provider); a client that holds nothing does nothing. Whoever made the client closes
        it (an injected one is its caller's)."""

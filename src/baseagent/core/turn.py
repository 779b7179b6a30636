"""A turn's vocabulary: what goes into one (TurnInput), where it is (TurnState), how it ends
(Status, TurnOutcome) and the ways out other than an answer (TurnEnded, ActionRequired),
beside what the loop is handed for its history (ContextPolicy, HistorySink) and the
messages it stores. core/loop.py runs the turn; the helps (helps/) and the Agent speak of
it in these words.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from baseagent.core.verification.evidence import Evidence
from baseagent.records.pending import PendingCall
from baseagent.core.repeats import RepeatedCalls
from baseagent.llm.errors import ContextOverflowError
from baseagent.llm.types import ModelTurn
from baseagent.tools.registry import MAX_ARGUMENT_CHARS

# How a turn ends (RunResult.status; exit_codes.py maps it to the process exit code).
Status = Literal["completed", "failed", "interrupted", "limit", "requires_action"]


@dataclass
class TurnOutcome:
    """How a turn ended; `pending` holds the calls the caller must run when the status is
    requires_action."""

    status: Status
    final_message: str | None = None
    error: str | None = None
    pending: list[PendingCall] = field(default_factory=list)


class FinalCheck(Protocol):
    """Holds the final answer to a requirement (exec's --output-schema): one correction
    round, then the turn fails with `failure(problem)`."""

    def problem(self, answer: str) -> str | None: ...

    def correction(self, problem: str) -> str: ...

    def failure(self, problem: str) -> str: ...


@dataclass(frozen=True)
class TurnInput:
    """One turn's instruction: the text the verification reminder restates, what the user
    message carries (the text, or the text with image parts), and an optional final check."""

    text: str
    content: str | list[dict[str, Any]] | None = None
    final_check: FinalCheck | None = None

    @property
    def message_content(self) -> str | list[dict[str, Any]]:
        return self.text if self.content is None else self.content


class ContextPolicy(Protocol):
    """Compaction and caching (core/context/compaction.py) as the loop sees them."""

    def prepare(self, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """Compact `history` in place if needed; return (messages to send, estimated tokens)."""

    def on_overflow(self, history: list[dict[str, Any]], attempt: int) -> None:
        """The provider rejected the prompt as too long: shrink `history` in place, harder."""


class HistorySink(Protocol):
    def message(self, message: dict[str, Any]) -> None: ...

    def paused(self, paused: dict[str, Any] | None) -> None:
        """The turn is waiting for tool outputs (None: it no longer is)."""


@dataclass
class TurnState:
    """Where the running turn is, so a paused turn continues where it stopped."""

    input: TurnInput
    turn_id: str
    verified: bool
    correcting: bool = False
    steps: int = 0
    cost_before: float = 0.0  # the thread's cost when the turn (or its continuation) began
    # What the answer can rest on (edits, commands after them), and whether the one extra
    # round asking for it was spent.
    evidence: Evidence = field(default_factory=Evidence)
    evidence_asked: bool = False
    repeats: RepeatedCalls = field(default_factory=RepeatedCalls)


class PassThrough:
    """No context management: send the history as it is."""

    def prepare(self, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        return history, 0

    def on_overflow(self, history: list[dict[str, Any]], attempt: int) -> None:
        raise ContextOverflowError("the prompt is too long and no compaction is configured")


class TurnEnded(Exception):
    """A way out of a turn other than a final answer (a limit, a cut-off answer). `code`
    names the rule that ended it, when one did (all_tools_failed)."""

    def __init__(self, status: Status, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class ActionRequired(Exception):
    """The model called tools the caller runs: the turn pauses until their outputs come."""

    def __init__(self, calls: list[PendingCall]) -> None:
        super().__init__(", ".join(c.name for c in calls))
        self.calls = calls


def history_message(turn: ModelTurn) -> dict[str, Any]:
    """The assistant message as stored: arguments that are not JSON are replaced by `{}` so
    strict providers accept the history; the tool result explains the error to the model."""
    message = turn.assistant_message()
    for tc in message.get("tool_calls", []):
        if len(tc["function"]["arguments"] or "") > MAX_ARGUMENT_CHARS:
            tc["function"]["arguments"] = "{}"  # refused by the registry; not resent each call
            continue
        try:
            json.loads(tc["function"]["arguments"] or "{}")
        except (ValueError, RecursionError):  # not JSON, or nested past what json reads
            tc["function"]["arguments"] = "{}"
    return message


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def attachment_message(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The user message holding what a step's tools attached (None: nothing)."""
    return {"role": "user", "content": list(parts)} if parts else None


def tool_choice(choice: str | None, offered: bool, called: bool) -> dict[str, Any]:
    """The `tool_choice` of the next call, as a keyword (none at all when unset, so any
    model client works). `required` or a tool's name holds until the model has `called` a
    tool in this turn, then the model chooses freely: forcing every call would never let
    it answer (the OpenAI Agents SDK resets it the same way)."""
    if choice is None or not offered:
        return {}
    if choice in ("auto", "none"):
        return {"tool_choice": choice}
    if called:
        return {"tool_choice": "auto"}
    if choice == "required":
        return {"tool_choice": "required"}
    return {"tool_choice": {"type": "function", "function": {"name": choice}}}

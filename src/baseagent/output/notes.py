"""Run notes: the internal events the Codex wire has no place for.

The loop emits Codex events (output/events.py) and, beside them, these notes: where a turn
and each model step begin, what the model asked for when its answer was complete, which
tool call an item belongs to and what the tool returned. The Codex sinks (JSONL, terminal,
the session record) never see them; mappers to other vocabularies (output/agentb.py) read
both, so every stream is built from the same run and they cannot drift apart.

Notes go through the Emitter's redaction like events do (tool outputs and arguments can
hold a secret the agent knows).
"""
from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class _Note(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TurnOpened(_Note):
    """Emitted just before `turn.started`. `continued`: the turn resumes after the caller
    submitted tool outputs (the same `turn_id` as the turn that paused)."""

    kind: Literal["turn_opened"] = "turn_opened"
    turn_id: str
    thread_id: str
    instruction: str | None = None
    continued: bool = False


class StepStarted(_Note):
    """A model call is about to be made (one observe → think → act step)."""

    kind: Literal["step_started"] = "step_started"
    turn_id: str
    number: int


class NoteToolCall(_Note):
    id: str
    name: str
    arguments: str  # raw JSON text as the model wrote it


class ModelResponded(_Note):
    """The model's answer is complete: its text (already streamed as the agent_message
    item) and the tool calls it made, in order."""

    kind: Literal["model_responded"] = "model_responded"
    text: str = ""
    tool_calls: list[NoteToolCall] = Field(default_factory=list)
    finish_reason: str | None = None


class ToolStarted(_Note):
    """A tool call is about to run; its item is `item_id` (emitted right after)."""

    kind: Literal["tool_started"] = "tool_started"
    call_id: str
    name: str
    item_id: str
    arguments: Any = None


class ToolFinished(_Note):
    """A tool call ran; `output` is the text the model gets back."""

    kind: Literal["tool_finished"] = "tool_finished"
    call_id: str
    name: str
    item_id: str
    success: bool
    output: str


class OutputSubmitted(_Note):
    """The caller's output for one of its tools (an external tool), entering the history."""

    kind: Literal["output_submitted"] = "output_submitted"
    call_id: str
    name: str
    item_id: str
    output: str


class TurnClosing(_Note):
    """Emitted just before turn.completed / turn.failed / turn.requires_action: how the
    turn ended, in the loop's own terms."""

    kind: Literal["turn_closing"] = "turn_closing"
    status: Literal["completed", "failed", "interrupted", "limit", "requires_action"]
    error: str | None = None


RunNote = Union[TurnOpened, StepStarted, ModelResponded, ToolStarted, ToolFinished,
                OutputSubmitted, TurnClosing]

"""Run notes: what the Codex wire has no place for, mapped from the engine's events.

The engine emits its own events (core/events.py); the Emitter maps each to Codex events
(output/codex.py) and to these notes (`run_notes`): where a turn and each model step begin,
what the model asked for when its answer was complete, which tool call an item belongs to
and what the tool returned. The Codex sinks (JSONL, terminal, the session record) never see
them; mappers to other vocabularies (output/agentb.py) read both, so every stream is built
from the same run and they cannot drift apart.

Notes go through the Emitter's redaction like events do (tool outputs and arguments can
hold a secret the agent knows).
"""
from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from baseagent.core import events as engine


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


def run_notes(event: engine.RunEvent) -> list[RunNote]:
    """The notes one engine event is (none for what the Codex events carry alone)."""
    if isinstance(event, engine.TurnStarted):
        return [TurnOpened(turn_id=event.turn_id, thread_id=event.thread_id,
                           instruction=event.instruction, continued=event.continued)]
    if isinstance(event, engine.StepStarted):
        return [StepStarted(turn_id=event.turn_id, number=event.number)]
    if isinstance(event, engine.ModelResponded):
        return [ModelResponded(
            text=event.text, finish_reason=event.finish_reason,
            tool_calls=[NoteToolCall(id=c.id, name=c.name, arguments=c.arguments)
                        for c in event.tool_calls])]
    if isinstance(event, engine.ToolStarted):
        return [ToolStarted(call_id=event.call_id, name=event.name, item_id=event.item_id,
                            arguments=event.arguments)]
    if isinstance(event, engine.ToolFinished):
        return [ToolFinished(call_id=event.call_id, name=event.name, item_id=event.item_id,
                             success=event.success, output=event.output)]
    if isinstance(event, engine.OutputSubmitted):
        return [OutputSubmitted(call_id=event.call_id, name=event.name,
                                item_id=event.item_id, output=event.output)]
    if isinstance(event, engine.TurnEnded):
        return [TurnClosing(status=event.status, error=event.error)]
    return []

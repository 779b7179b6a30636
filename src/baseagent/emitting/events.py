"""The engine's own events and items: what a run says happened, in the loop's terms.

The loop, the delegate tool and the Agent emit these through the Emitter and never build a
wire type. Every output is a mapper over them, in output/: `output/codex.py` (the Codex
`exec --json` events, output/events.py, which the JSONL sink and the session record take),
`output/agentb.py` (AgentB's events) and `output/pretty.py` (the terminal). So each stream
is made from the same run and they cannot drift apart.

Items are snapshots: each ItemStarted / ItemUpdated / ItemCompleted carries the whole item
as it stands, so mapping one is a pure function of the event (no mapper keeps item state).

This module imports nothing of baseagent: it sits below output/ and core/ alike (the
mappers in output/ read it; the engine in core/ writes it); emitting/interface.py is how the
engine sends them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

# How a turn ends (core/loop.py Status; repeated here so this module stays a leaf).
EndStatus = Literal["completed", "failed", "interrupted", "limit", "requires_action"]

# ---- items -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextItem:
    """Text the model streams: its answer (`message`) or its reasoning."""

    id: str
    kind: Literal["message", "reasoning"]
    text: str


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call returned: `output` is the text the model gets back, `data` the
    tool's structured result (ToolResult.item). `interrupted`: the run was cancelled while
    it ran. `named`: the files a failed file-changing call was about (shown with why it
    failed, even when the call was refused before it planned anything)."""

    success: bool
    output: str
    data: Mapping[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    named: tuple[Mapping[str, str], ...] = ()


@dataclass(frozen=True)
class ToolCallItem:
    """One tool call. `kind` is how its tool shows it (tools/tool.py ITEM_KINDS; a call that
    could not be prepared is a generic `mcp_tool_call`). What the call is about, by kind:
    `command` (a shell command), `changes` (the files a file-changing call plans to touch),
    `task` and `thread_id` (a delegated sub-task and the thread that handed it over),
    `specialist` (the named specialist it went to; None: the generic delegate tool),
    `server`/`tool`/`arguments` (any call). `progress` is the tool's latest progress
    payload while it runs; `outcome` is set once it has run."""

    id: str
    kind: str
    name: str
    server: str
    tool: str
    arguments: Any = None
    command: str = ""
    changes: tuple[Mapping[str, str], ...] = ()
    task: str | None = None
    thread_id: str = ""
    specialist: str | None = None
    progress: Mapping[str, Any] | None = None
    outcome: ToolOutcome | None = None


@dataclass(frozen=True)
class TurnScopedItem:
    """An item that spans the turn (core/items.py TURN_SCOPED: the plan, `todo_list`),
    with its tool's latest payload."""

    id: str
    kind: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class ApprovalItem:
    """A command waiting for a person's yes (tools/approval.py), then their answer.
    `kind`: escalation (the model asked to leave the sandbox), unsafe (not known to be
    read-only, under `untrusted`), retry (it failed in the sandbox, under `on-failure`) or
    write (a file tool's write outside the workspace or into `.git`, under `untrusted`).
    `decision` is None while waiting, then approved | approved_for_session | denied."""

    id: str
    command: str
    cwd: str
    kind: str
    reason: str = ""
    prefix: str = ""
    decision: str | None = None
    note: str = ""


Item = Union[TextItem, ToolCallItem, TurnScopedItem, ApprovalItem]
ITEM_TYPES = (TextItem, ToolCallItem, TurnScopedItem, ApprovalItem)

# ---- events ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadStarted:
    thread_id: str


@dataclass(frozen=True)
class TurnStarted:
    """A turn begins; `continued`: it resumes after the caller submitted tool outputs (the
    same `turn_id` as the turn that paused, and no instruction)."""

    turn_id: str
    thread_id: str
    instruction: str | None = None
    continued: bool = False


@dataclass(frozen=True)
class StepStarted:
    """A model call is about to be made (one observe → think → act step)."""

    turn_id: str
    number: int


@dataclass(frozen=True)
class ItemStarted:
    item: Item


@dataclass(frozen=True)
class ItemUpdated:
    item: Item


@dataclass(frozen=True)
class ItemCompleted:
    item: Item


@dataclass(frozen=True)
class CallRequest:
    """A tool call as the model wrote it (`arguments`: the raw JSON text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a tool call's arguments as the model streams it (throttled like text):
    `delta` is the raw JSON text new since the last piece of call `index`, so the pieces
    of a call join up to the arguments as streamed. The first piece names the call (`id`,
    `name`). Only clients that stream tool calls send these; ModelResponded still carries
    every call whole (after any repair of its arguments). `text` is the answer's text
    streamed so far (what came before the calls: a mapper that has not shown all of it
    yet, the text being throttled, shows it first)."""

    index: int
    call_id: str
    name: str
    delta: str
    text: str = ""


@dataclass(frozen=True)
class ToolMessage:
    """A tool call's result entering the history, as the model will read it (the tool's
    output and any note for the model): one for every call of the model's, whoever ran it
    and however it ended (not run, declined, the caller's output)."""

    call_id: str
    name: str
    content: str


@dataclass(frozen=True)
class TurnCancelling:
    """The turn noticed it was cancelled and is winding down (its open items are closed
    next, then TurnEnded `interrupted`)."""

    reason: str


@dataclass(frozen=True)
class ModelResponded:
    """The model's answer is complete: its text (already streamed as a TextItem) and the
    tool calls it made, in order."""

    text: str = ""
    tool_calls: tuple[CallRequest, ...] = ()
    finish_reason: str | None = None


@dataclass(frozen=True)
class ToolStarted:
    """A tool call the agent runs is about to run; its item is `item_id` (started right
    after). Calls the caller runs, and turn-scoped calls, have none."""

    call_id: str
    name: str
    item_id: str
    arguments: Any = None


@dataclass(frozen=True)
class ToolFinished:
    """A tool call the agent ran has finished (after its item completed). `metadata`: the
    tool's own data about the call (ToolResult.metadata)."""

    call_id: str
    name: str
    item_id: str
    success: bool
    output: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OutputSubmitted:
    """The caller's output for one of its tools, entering the history."""

    call_id: str
    name: str
    item_id: str
    output: str


@dataclass(frozen=True)
class PendingTool:
    """A call to a tool the caller runs, waiting for its output (records/pending.py)."""

    id: str
    name: str
    arguments: Any
    item_id: str


@dataclass(frozen=True)
class TurnEnded:
    """How a turn ended, in the loop's terms. `usage` is the thread's cumulative tokens
    (llm/types.py TOKEN_KEYS; given when the turn completed or paused), `cost_usd` this turn's cost (None when the model is not
    priced), `verification` what the answer rests on (None when verification is off),
    `pending` the calls a `requires_action` turn waits for, `attempts` the
    attempts' verdict (--attempts N)."""

    status: EndStatus
    usage: Mapping[str, int] = field(default_factory=dict)
    error: str | None = None
    code: str | None = None  # why a failed turn failed, when a rule says (all_tools_failed)
    cost_usd: float | None = None
    verification: Mapping[str, Any] | None = None
    pending: tuple[PendingTool, ...] = ()
    # With --attempts N (core/verification/attempts.py): which attempt was applied, why, and how each
    # did; None for a turn of one attempt.
    attempts: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RunFailed:
    """The run failed before a turn could begin (its record could not be written)."""

    message: str


@dataclass(frozen=True)
class Notice:
    """A non-fatal notice (a retry, a compaction): the run goes on."""

    message: str


RunEvent = Union[ThreadStarted, TurnStarted, StepStarted, ItemStarted, ItemUpdated,
                 ItemCompleted, ToolCallDelta, ModelResponded, ToolStarted, ToolFinished,
                 OutputSubmitted, ToolMessage, TurnCancelling, TurnEnded, RunFailed, Notice]

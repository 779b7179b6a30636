"""Pydantic models of the event stream: the Codex `exec --json` schema.

These are the protocol; sinks (JSONL, terminal) only serialise or render them.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- items ---------------------------------------------------------------------------------

class AgentMessageItem(_Model):
    id: str
    type: Literal["agent_message"] = "agent_message"
    text: str


class ReasoningItem(_Model):
    id: str
    type: Literal["reasoning"] = "reasoning"
    text: str


ItemStatus = Literal["in_progress", "completed", "failed", "declined"]


class CommandExecutionItem(_Model):
    id: str
    type: Literal["command_execution"] = "command_execution"
    command: str
    aggregated_output: str = ""
    exit_code: int | None = None
    status: ItemStatus = "in_progress"


class FileUpdateChange(_Model):
    path: str
    kind: Literal["add", "delete", "update"]


class ItemError(_Model):
    """Why an item failed, in the shape Codex gives `mcp_tool_call.error`."""

    message: str


# The name Codex's schema uses for mcp_tool_call's error.
McpToolCallError = ItemError


class FileChangeItem(_Model):
    """Codex's file_change item. A failed one also carries `error: {message}` (the path is in
    `changes`): Codex's schema has no field for the reason, so baseagent adds this one, in
    the shape of mcp_tool_call's `error`, only on failed items; JSON consumers of Codex's
    schema ignore a field they do not know (docs/INTEROP.md)."""

    id: str
    type: Literal["file_change"] = "file_change"
    changes: list[FileUpdateChange] = Field(default_factory=list)
    status: Literal["in_progress", "completed", "failed"] = "in_progress"
    error: ItemError | None = None

    @model_serializer(mode="wrap")
    def _omit_absent_error(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("error") is None:
            data.pop("error", None)
        return data


class McpToolCallResult(_Model):
    content: list[dict[str, Any]] = Field(default_factory=list)
    structured_content: Any = None


class McpToolCallItem(_Model):
    """Read-only tools (read_file, grep_files, list_dir) appear as tool calls of the
    `baseagent` server: an item kind Codex consumers already know how to show."""

    id: str
    type: Literal["mcp_tool_call"] = "mcp_tool_call"
    server: str = "baseagent"
    tool: str
    arguments: Any = None
    result: McpToolCallResult | None = None
    error: McpToolCallError | None = None
    status: Literal["in_progress", "completed", "failed"] = "in_progress"


CollabAgentStatus = Literal["pending_init", "running", "interrupted", "completed", "errored",
                            "shutdown", "not_found"]


class CollabAgentState(_Model):
    status: CollabAgentStatus
    message: str | None = None


class CollabToolCallItem(_Model):
    """A call that hands work to another agent (the `delegate` tool), shaped like Codex's
    collab_tool_call: the parent thread, the child thread, the task (`prompt`) and the
    child's last known state. Two baseagent extensions: `items`, the child's completed
    items nested under the call as it works, and `usage`, what the child spent (already
    counted in the parent's turn usage)."""

    id: str
    type: Literal["collab_tool_call"] = "collab_tool_call"
    tool: Literal["spawn_agent", "send_input", "wait", "close_agent"] = "spawn_agent"
    sender_thread_id: str = ""
    receiver_thread_ids: list[str] = Field(default_factory=list)
    prompt: str | None = None
    agents_states: dict[str, CollabAgentState] = Field(default_factory=dict)
    status: Literal["in_progress", "completed", "failed"] = "in_progress"
    items: list[Annotated["ThreadItem", Field(discriminator="type")]] = Field(
        default_factory=list)
    usage: "Usage | None" = None


class TodoEntry(_Model):
    text: str
    completed: bool


class ApprovalRequestItem(_Model):
    """A command that waited for a person's answer (tools/approval.py): not in Codex's
    `exec --json` (Codex exec never asks), baseagent's own item, in Codex's item shape.
    `status` is in_progress while the question is open; `decision` is then approved,
    approved_for_session or denied (with the person's `note` to the model)."""

    id: str
    type: Literal["approval_request"] = "approval_request"
    command: str
    cwd: str
    kind: Literal["escalation", "unsafe", "retry", "write"]
    reason: str = ""
    prefix: str = ""
    decision: Literal["approved", "approved_for_session", "denied"] | None = None
    note: str = ""
    status: Literal["in_progress", "completed"] = "in_progress"


class TodoListItem(_Model):
    id: str
    type: Literal["todo_list"] = "todo_list"
    items: list[TodoEntry] = Field(default_factory=list)


class ErrorItem(_Model):
    id: str
    type: Literal["error"] = "error"
    message: str


ThreadItem = Union[
    AgentMessageItem,
    ReasoningItem,
    CommandExecutionItem,
    FileChangeItem,
    McpToolCallItem,
    CollabToolCallItem,
    TodoListItem,
    ErrorItem,
    ApprovalRequestItem,
]

# ---- events --------------------------------------------------------------------------------

class Usage(_Model):
    """Codex 0.169's five keys, cumulative over the thread. input_tokens is the whole prompt
    (cache reads and writes included); output_tokens includes the reasoning tokens."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0


class ThreadError(_Model):
    message: str


class ThreadStarted(_Model):
    type: Literal["thread.started"] = "thread.started"
    thread_id: str


class TurnStarted(_Model):
    type: Literal["turn.started"] = "turn.started"


class Verification(_Model):
    """What the turn's answer rests on (core/verification/evidence.py): `evidence`, a command that
    exercises the change and exited 0 after the last edit (`command`, `exit_code`), or only
    the model's `statement` (with the `reason` no evidence counted); `failed_writes`, only
    when there are some: the paths of writes that failed and were not made good."""

    by: Literal["evidence", "statement"]
    command: str | None = None
    exit_code: int | None = None
    reason: str | None = None
    failed_writes: list[str] | None = None

    @model_serializer(mode="wrap")
    def _without_unset_writes(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("failed_writes") is None:
            data.pop("failed_writes", None)  # the wire stays as it was without them
        return data


class TurnCompleted(_Model):
    type: Literal["turn.completed"] = "turn.completed"
    usage: Usage
    # baseagent's extension (Codex consumers ignore unknown fields): what this turn's model
    # calls cost in USD, from litellm's price map; null when the model is not priced.
    cost_usd: float | None = None
    # baseagent's extension: how the answer was verified; null when verification is off.
    verification: Verification | None = None
    # baseagent's extension, only with --attempts N (absent otherwise): which attempt was
    # applied and why, and each attempt's evidence (core/verification/attempts.py, docs/ATTEMPTS.md).
    attempts: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _without_absent_attempts(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("attempts", 0) is None:
            del data["attempts"]
        return data


class TurnFailed(_Model):
    type: Literal["turn.failed"] = "turn.failed"
    error: ThreadError


class ItemStarted(_Model):
    type: Literal["item.started"] = "item.started"
    item: ThreadItem = Field(discriminator="type")


class ItemUpdated(_Model):
    type: Literal["item.updated"] = "item.updated"
    item: ThreadItem = Field(discriminator="type")


class ItemCompleted(_Model):
    type: Literal["item.completed"] = "item.completed"
    item: ThreadItem = Field(discriminator="type")


class PendingToolCall(_Model):
    """A call to a tool the caller runs (an external tool): `id` is the key its output is
    submitted under, `arguments` are already validated against the tool's schema, and
    `item_id` names the mcp_tool_call item that stays in progress until then."""

    id: str
    name: str
    arguments: Any = None
    item_id: str


class TurnRequiresAction(_Model):
    """baseagent extension: the turn stopped because the model called tools the caller
    runs; nothing failed. Submit their outputs to continue the same turn (the library's
    `submit_tool_outputs`, the CLI's `--resume ID --tool-outputs FILE`). `usage` is
    cumulative, as in turn.completed."""

    type: Literal["turn.requires_action"] = "turn.requires_action"
    tool_calls: list[PendingToolCall]
    usage: Usage


class ErrorEvent(_Model):
    """A non-fatal notice (a retry, a compaction): the run goes on."""

    type: Literal["error"] = "error"
    message: str


ThreadEvent = Union[
    ThreadStarted, TurnStarted, TurnCompleted, TurnFailed, TurnRequiresAction,
    ItemStarted, ItemUpdated, ItemCompleted, ErrorEvent,
]

CollabToolCallItem.model_rebuild()


class _EventEnvelope(BaseModel):
    event: ThreadEvent = Field(discriminator="type")


def parse_event(data: dict[str, Any]) -> ThreadEvent:
    """Validate one decoded JSONL line against the schema (used by tests and consumers)."""
    return _EventEnvelope.model_validate({"event": data}).event

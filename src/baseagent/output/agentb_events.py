"""AgentB's event vocabulary as pydantic models: the wire types only.

AgentB (the TypeScript agent framework whose run model this project adopted for external
tools and delegation) streams `{type, timestamp, runId, threadId, data}` objects. The names
and payload fields here follow its documented `AgentEvent` types (src/agents/types.ts and
the `AgentEvent` API reference); where baseagent adds a field it says so. How baseagent's
run becomes these events is output/agentb.py; the table is in docs/AGENTB.md.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

AgentStatus = Literal["queued", "in_progress", "requires_action", "cancelling", "cancelled",
                      "failed", "completed", "expired"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- shared shapes ---------------------------------------------------------------------------

class ToolCallFunction(_Model):
    name: str
    arguments: str  # JSON text, as the model wrote it


class LLMToolCall(_Model):
    id: str
    type: Literal["function"] = "function"
    function: ToolCallFunction


class ToolResult(_Model):
    """A tool's outcome: `data` on success, `error` on failure."""

    success: bool
    data: Any = None
    error: str | None = None
    metadata: dict[str, Any] | None = None


class Message(_Model):
    id: str
    threadId: str
    role: Literal["user", "assistant", "system", "tool"]
    content: Any = ""
    createdAt: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class ErrorInfo(_Model):
    code: str
    message: str
    details: Any = None


class Usage(_Model):
    """baseagent extension on thread.run.completed: the thread's cumulative usage."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0


# ---- payloads --------------------------------------------------------------------------------

class RunCreatedData(_Model):
    status: Literal["queued", "in_progress"]
    initialMessages: list[dict[str, Any]] | None = None


class StepCreatedData(_Model):
    stepId: str
    details: dict[str, Any] | None = None


class MessageData(_Model):
    message: Message


class MessageDeltaBody(_Model):
    contentChunk: str | None = None
    toolCallsChunk: list[LLMToolCall] | None = None


class MessageDeltaData(_Model):
    messageId: str
    delta: MessageDeltaBody


class ToolCallData(_Model):
    stepId: str
    toolCall: LLMToolCall


class ToolExecutionStartedData(_Model):
    stepId: str
    toolCallId: str
    toolName: str
    input: Any = None


class ToolExecutionCompletedData(_Model):
    stepId: str
    toolCallId: str
    toolName: str
    result: ToolResult


class SubmitToolOutputs(_Model):
    tool_calls: list[LLMToolCall]


class RequiredAction(_Model):
    type: Literal["submit_tool_outputs"] = "submit_tool_outputs"
    submit_tool_outputs: SubmitToolOutputs


class RequiresActionData(_Model):
    status: Literal["requires_action"] = "requires_action"
    required_action: RequiredAction


class StatusChangedData(_Model):
    previousStatus: AgentStatus | None = None
    currentStatus: AgentStatus
    details: str | None = None


class RunFailedData(_Model):
    status: Literal["failed"] = "failed"
    error: ErrorInfo


class RunCompletedData(_Model):
    status: Literal["completed"] = "completed"
    finalMessages: list[Message] | None = None
    usage: Usage | None = None


class SubAgentStartedData(_Model):
    plannerStepId: str
    toolCallId: str
    specialistId: str
    subTaskDescription: str
    subAgentRunId: str


class SubAgentCompletedData(_Model):
    plannerStepId: str
    toolCallId: str
    specialistId: str
    subAgentRunId: str
    result: ToolResult


# ---- events ----------------------------------------------------------------------------------

class _Event(_Model):
    type: str  # each event narrows it to its Literal name (declared here to come first)
    timestamp: str  # ISO 8601, UTC
    runId: str
    threadId: str


class RunCreated(_Event):
    type: Literal["agent.run.created"] = "agent.run.created"
    data: RunCreatedData


class RunStepCreated(_Event):
    type: Literal["agent.run.step.created"] = "agent.run.step.created"
    data: StepCreatedData


class MessageCreated(_Event):
    type: Literal["thread.message.created"] = "thread.message.created"
    data: MessageData


class MessageDelta(_Event):
    type: Literal["thread.message.delta"] = "thread.message.delta"
    data: MessageDeltaData


class MessageCompleted(_Event):
    type: Literal["thread.message.completed"] = "thread.message.completed"
    data: MessageData


class ToolCallCreated(_Event):
    type: Literal["thread.run.step.tool_call.created"] = "thread.run.step.tool_call.created"
    data: ToolCallData


class ToolCallCompletedByLLM(_Event):
    type: Literal["thread.run.step.tool_call.completed_by_llm"] = \
        "thread.run.step.tool_call.completed_by_llm"
    data: ToolCallData


class ToolExecutionStarted(_Event):
    type: Literal["agent.tool.execution.started"] = "agent.tool.execution.started"
    data: ToolExecutionStartedData


class ToolExecutionCompleted(_Event):
    type: Literal["agent.tool.execution.completed"] = "agent.tool.execution.completed"
    data: ToolExecutionCompletedData


class RunRequiresAction(_Event):
    type: Literal["thread.run.requires_action"] = "thread.run.requires_action"
    data: RequiresActionData


class RunStatusChanged(_Event):
    type: Literal["agent.run.status.changed"] = "agent.run.status.changed"
    data: StatusChangedData


class RunFailed(_Event):
    type: Literal["thread.run.failed"] = "thread.run.failed"
    data: RunFailedData


class RunCompleted(_Event):
    type: Literal["thread.run.completed"] = "thread.run.completed"
    data: RunCompletedData


class SubAgentInvocationStarted(_Event):
    type: Literal["agent.sub_agent.invocation.started"] = "agent.sub_agent.invocation.started"
    data: SubAgentStartedData


class SubAgentInvocationCompleted(_Event):
    type: Literal["agent.sub_agent.invocation.completed"] = \
        "agent.sub_agent.invocation.completed"
    data: SubAgentCompletedData


AgentBEvent = Union[
    RunCreated, RunStepCreated, MessageCreated, MessageDelta, MessageCompleted,
    ToolCallCreated, ToolCallCompletedByLLM, ToolExecutionStarted, ToolExecutionCompleted,
    RunRequiresAction, RunStatusChanged, RunFailed, RunCompleted,
    SubAgentInvocationStarted, SubAgentInvocationCompleted,
]

EVENT_TYPES = tuple(cls.model_fields["type"].default for cls in AgentBEvent.__args__)


class _Envelope(BaseModel):
    event: Annotated[AgentBEvent, Field(discriminator="type")]


def parse_agentb_event(data: dict[str, Any]) -> AgentBEvent:
    """Validate one decoded AgentB JSONL line (tests and consumers)."""
    return _Envelope.model_validate({"event": data}).event

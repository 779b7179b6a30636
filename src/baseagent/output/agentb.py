"""Baseagent's run as AgentB's events: the mapping, apart from the wire types.

`AgentBMapper` listens to the same Emitter as the Codex sinks and maps the engine's own
events (emitting/events.py) it sends, as the Codex mapper (output/codex.py) does: each AgentB
event is made from one of them, in the order they happen, so the AgentB stream and the
Codex stream of a run always tell the same story. The table of what maps to what is in
docs/AGENTB.md.

Ids: `runId` is the turn's id (a paused turn keeps it when it continues, in this process or
another); `threadId` is the thread's; step and message ids are made here.
"""
from __future__ import annotations

import datetime as _dt
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from baseagent.emitting import events as engine
from baseagent.output import agentb_events as ab
from baseagent.output import events as ev
from baseagent.output.codex import codex_item
from baseagent.emitting.interface import EventListener

# thread.run.failed's error.code for each way a turn can fail.
FAILURE_CODES = {"failed": "failed", "limit": "limit_reached", "interrupted": "cancelled"}
# The specialistId of a sub-agent started by the generic delegate tool (a named
# specialist's call carries its own id: delegate_to_specialist's specialist_id).
DELEGATE_SPECIALIST = "delegate"
# agent.run.status.changed's details before each model call (AgentB's words).
LLM_CALL_DETAILS = "LLM call for turn {n}"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def _tool_call(call_id: str, name: str, arguments: Any) -> ab.LLMToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ab.LLMToolCall(id=call_id, function=ab.ToolCallFunction(name=name, arguments=text))


@dataclass
class _OpenMessage:
    id: str
    created_at: str
    step_id: str
    text: str = ""
    streamed_calls: set[str] = field(default_factory=set)  # calls sent in pieces


@dataclass
class _CallItem:
    call_id: str
    name: str
    step_id: str
    announced_child: str | None = None


class AgentBMapper(EventListener):
    """An Emitter listener that hands AgentB events to `out`, one at a time, in order."""

    run_events = True  # it maps the engine's events, not the Codex ones

    def __init__(self, out: Callable[[ab.AgentBEvent], None]) -> None:
        self._out = out
        self.thread_id = ""
        self.run_id = ""
        self._status: ab.AgentStatus = "queued"
        self._opened: engine.TurnStarted | None = None
        self._closing: engine.EndStatus | None = None  # how the last turn ended
        self._step_id = ""
        self._message: _OpenMessage | None = None
        self._last_answer: ab.Message | None = None
        self._calls: dict[str, _CallItem] = {}  # item id -> the tool call behind it

    # -- the input ----------------------------------------------------------------------------

    def emit(self, event: ev.ThreadEvent) -> None:
        """The Codex events: AgentB's are made from the engine's (`run_event`)."""

    def run_event(self, event: engine.RunEvent) -> None:
        if isinstance(event, (engine.ItemStarted, engine.ItemUpdated, engine.ItemCompleted)):
            self._item(event.item, done=isinstance(event, engine.ItemCompleted))
        elif isinstance(event, engine.TurnStarted):
            self.thread_id, self.run_id, self._opened = event.thread_id, event.turn_id, event
            self._closing = None
            self._step_id = ""  # a continued turn may come from another process: no step yet
            self._turn_started()
        elif isinstance(event, engine.StepStarted):
            self._step_started(event)
        elif isinstance(event, engine.ToolCallDelta):
            self._call_piece(event)
        elif isinstance(event, engine.ModelResponded):
            self._model_responded(event)
        elif isinstance(event, engine.ToolStarted):
            self._tool_started(event)
        elif isinstance(event, engine.ToolFinished):
            self._tool_finished(event)
        elif isinstance(event, engine.ToolMessage):  # every result, the caller's too
            self._send(ab.MessageCreated, data=ab.MessageData(message=self._new_message(
                "tool", event.content, {"toolCallId": event.call_id, "toolName": event.name,
                                        **({"stepId": self._step_id} if self._step_id
                                           else {})})))
        elif isinstance(event, engine.TurnCancelling):
            self._set_status("cancelling", event.reason)
        elif isinstance(event, engine.TurnEnded):
            self._closing = event.status
            self._close_message(incomplete=True)
            self._turn_ended(event)
        elif isinstance(event, engine.RunFailed):  # before a turn began
            self._failed(self._closing or "failed", event.message)
        elif isinstance(event, engine.Notice):  # a retry, a compaction
            self._set_status(self._status, event.message)

    def _turn_ended(self, event: engine.TurnEnded) -> None:
        if event.status == "completed":
            self._set_status("completed")
            self._send(ab.RunCompleted, data=ab.RunCompletedData(
                finalMessages=[self._last_answer] if self._last_answer else None,
                usage=ab.Usage(**event.usage)))
        elif event.status == "requires_action":
            self._set_status("requires_action", "waiting for the outputs of "
                             + ", ".join(c.id for c in event.pending))
            self._send(ab.RunRequiresAction, data=ab.RequiresActionData(
                required_action=ab.RequiredAction(submit_tool_outputs=ab.SubmitToolOutputs(
                    tool_calls=[_tool_call(c.id, c.name, c.arguments)
                                for c in event.pending]))))
        else:
            self._failed(event.status, event.error or "", event.code)

    def _failed(self, status: str, message: str, code: str | None = None) -> None:
        self._set_status("cancelled" if status == "interrupted" else "failed", message)
        self._send(ab.RunFailed, data=ab.RunFailedData(error=ab.ErrorInfo(
            code=code or FAILURE_CODES.get(status, "failed"), message=message)))

    # -- run and steps -------------------------------------------------------------------------

    def _turn_started(self) -> None:
        opened = self._opened
        if opened is not None and opened.continued:
            self._status = "requires_action"  # what the run was (maybe in another process)
            self._set_status("in_progress", "tool outputs submitted")
            return
        text = opened.instruction if opened is not None else None
        self._status = "queued"
        self._send(ab.RunCreated, data=ab.RunCreatedData(
            status="queued",
            initialMessages=[{"role": "user", "content": text}] if text is not None else None))
        self._set_status("in_progress")
        if text is not None:
            self._send(ab.MessageCreated,
                       data=ab.MessageData(message=self._new_message("user", text)))

    def _step_started(self, note: engine.StepStarted) -> None:
        self._step_id = f"step_{uuid.uuid4().hex}"
        self._send(ab.RunStepCreated, data=ab.StepCreatedData(
            stepId=self._step_id, details={"stepNumber": note.number}))
        self._set_status("in_progress", LLM_CALL_DETAILS.format(n=note.number))
        message = self._new_message("assistant", "", {"stepId": self._step_id,
                                                      "inProgress": True})
        self._message = _OpenMessage(message.id, message.createdAt, self._step_id)
        self._send(ab.MessageCreated, data=ab.MessageData(message=message))

    def _call_piece(self, note: engine.ToolCallDelta) -> None:
        """A piece of a call's arguments as a toolCallsChunk delta (`arguments` holds the
        piece: the pieces of one call id join up to its arguments as streamed)."""
        message = self._message
        if message is None:
            return
        if note.text:
            self._text(note.text)  # the text before the calls comes first, all of it
        message.streamed_calls.add(note.call_id)
        self._send(ab.MessageDelta, data=ab.MessageDeltaData(
            messageId=message.id,
            delta=ab.MessageDeltaBody(toolCallsChunk=[_tool_call(note.call_id, note.name,
                                                                 note.delta)])))

    def _model_responded(self, note: engine.ModelResponded) -> None:
        calls = [_tool_call(c.id, c.name, c.arguments) for c in note.tool_calls]
        for call in calls:
            data = ab.ToolCallData(stepId=self._step_id, toolCall=call)
            self._send(ab.ToolCallCreated, data=data)
            self._send(ab.ToolCallCompletedByLLM, data=data)
            # A call the model client did not stream in pieces comes whole, in one chunk.
            if self._message is not None and call.id not in self._message.streamed_calls:
                self._send(ab.MessageDelta, data=ab.MessageDeltaData(
                    messageId=self._message.id,
                    delta=ab.MessageDeltaBody(toolCallsChunk=[call])))
        if self._message is not None:
            self._message.text = note.text
        answer = self._close_message(extra={
            "finishReason": note.finish_reason,
            "tool_calls": [c.model_dump() for c in calls]})
        if answer is not None and not calls:
            self._last_answer = answer

    def _close_message(self, incomplete: bool = False,
                       extra: dict[str, Any] | None = None) -> ab.Message | None:
        open_message, self._message = self._message, None
        if open_message is None:
            return None
        metadata: dict[str, Any] = {"stepId": open_message.step_id, **(extra or {})}
        if incomplete:
            metadata["incomplete"] = True
        message = ab.Message(id=open_message.id, threadId=self.thread_id, role="assistant",
                             content=open_message.text, createdAt=open_message.created_at,
                             metadata=metadata)
        self._send(ab.MessageCompleted, data=ab.MessageData(message=message))
        return message

    # -- items ---------------------------------------------------------------------------------

    def _item(self, item: engine.Item, done: bool) -> None:
        if isinstance(item, engine.TextItem):
            if item.kind == "message":
                self._text(item.text)
        elif isinstance(item, engine.ToolCallItem) and item.kind == "collab_tool_call":
            # The delegate call as Codex shows it: its child thread, states and items.
            wire = codex_item(item)
            assert isinstance(wire, ev.CollabToolCallItem)
            self._sub_agent(wire, done, item.specialist or DELEGATE_SPECIALIST)

    def _text(self, text: str) -> None:
        """Streamed text as contentChunk deltas: what is new since the last one. (A retried
        call restarts its text; the completed message has the final text either way.)"""
        message = self._message
        if message is None or not text.startswith(message.text) or text == message.text:
            return
        chunk, message.text = text[len(message.text):], text
        self._send(ab.MessageDelta, data=ab.MessageDeltaData(
            messageId=message.id, delta=ab.MessageDeltaBody(contentChunk=chunk)))

    def _tool_started(self, note: engine.ToolStarted) -> None:
        self._calls[note.item_id] = _CallItem(note.call_id, note.name, self._step_id)
        self._send(ab.ToolExecutionStarted, data=ab.ToolExecutionStartedData(
            stepId=self._exec_step(note.call_id), toolCallId=note.call_id, toolName=note.name,
            input=note.arguments))

    def _tool_finished(self, note: engine.ToolFinished) -> None:
        self._calls.pop(note.item_id, None)
        self._send(ab.ToolExecutionCompleted, data=ab.ToolExecutionCompletedData(
            stepId=self._exec_step(note.call_id), toolCallId=note.call_id, toolName=note.name,
            result=ab.ToolResult(success=note.success,
                                 data=note.output if note.success else None,
                                 error=None if note.success else note.output,
                                 metadata={**note.metadata, "itemId": note.item_id})))

    def _sub_agent(self, item: ev.CollabToolCallItem, done: bool, specialist: str) -> None:
        """agent.sub_agent.invocation.started once the child exists, .completed with the
        delegate call's item. `specialist`: the named specialist's id, or "delegate"."""
        call = self._calls.get(item.id)
        if call is None or not item.receiver_thread_ids:
            return
        child = item.receiver_thread_ids[0]
        if call.announced_child is None:
            call.announced_child = child
            self._send(ab.SubAgentInvocationStarted, data=ab.SubAgentStartedData(
                plannerStepId=call.step_id, toolCallId=call.call_id,
                specialistId=specialist, subTaskDescription=item.prompt or "",
                subAgentRunId=child))
        if done:
            state = item.agents_states.get(child)
            message = state.message if state is not None else None
            ok = item.status == "completed"
            self._send(ab.SubAgentInvocationCompleted, data=ab.SubAgentCompletedData(
                plannerStepId=call.step_id, toolCallId=call.call_id,
                specialistId=specialist, subAgentRunId=child,
                result=ab.ToolResult(
                    success=ok, data=message if ok else None, error=None if ok else message,
                    metadata={"items": len(item.items), "status": state.status if state
                              else None,
                              "usage": item.usage.model_dump() if item.usage else None})))

    # -- helpers -------------------------------------------------------------------------------

    def _exec_step(self, call_id: str) -> str:
        return f"{self._step_id}-tool_exec-{call_id}"

    def _set_status(self, status: ab.AgentStatus, details: str | None = None) -> None:
        previous, self._status = self._status, status
        self._send(ab.RunStatusChanged, data=ab.StatusChangedData(
            previousStatus=previous, currentStatus=status, details=details))

    def _new_message(self, role: str, content: Any,
                     metadata: dict[str, Any] | None = None) -> ab.Message:
        return ab.Message(id=f"msg_{uuid.uuid4().hex}", threadId=self.thread_id, role=role,
                          content=content, createdAt=_now(), metadata=metadata or {})

    def _send(self, cls: type[Any], *, data: Any) -> None:
        self._out(cls(timestamp=_now(), runId=self.run_id, threadId=self.thread_id,
                      data=data))


class AgentBSink(EventListener):
    """The CLI's `--event-format agentb`: AgentB events as JSONL through a JSONL sink
    (which owns stdout, its flushing and its signal-safe exit)."""

    run_events = True

    def __init__(self, jsonl: Any) -> None:
        self._jsonl = jsonl
        self._mapper = AgentBMapper(jsonl.emit)

    def emit(self, event: ev.ThreadEvent) -> None:
        """The Codex events: not written (AgentB's are made from the engine's)."""

    def run_event(self, event: engine.RunEvent) -> None:
        self._mapper.run_event(event)

    def exit_when_idle(self, code: int) -> None:
        self._jsonl.exit_when_idle(code)

    def on_write_error(self, callback: Any) -> None:
        self._jsonl.on_write_error(callback)

    @property
    def failure(self) -> str | None:
        return self._jsonl.failure

    def close(self) -> None:
        self._jsonl.close()

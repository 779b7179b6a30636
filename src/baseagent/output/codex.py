"""The Codex mapper: the engine's events (emitting/events.py) as Codex `exec --json` events.

Like codex-rs' `exec --json` event processor, this is the one place the engine's items turn
into wire items (output/events.py). It is a pure function of each event: the engine's items
are whole snapshots, so no item state is kept here. The Emitter calls it for its listeners
(the JSONL sink, the session record, the library's callbacks and streams).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from baseagent.emitting import events as engine
from baseagent.output import events as ev

# Error lines prefixed by the registry for the model; the item's reason goes without it.
_ERROR_PREFIX = "Error: "


def codex_events(event: engine.RunEvent) -> list[ev.ThreadEvent]:
    """The Codex events one engine event is (none for what the Codex wire has no place
    for: steps, the model's calls, which item a call is; other mappers read those)."""
    if isinstance(event, engine.ItemStarted):
        return [ev.ItemStarted(item=codex_item(event.item))]
    if isinstance(event, engine.ItemUpdated):
        return [ev.ItemUpdated(item=codex_item(event.item))]
    if isinstance(event, engine.ItemCompleted):
        return [ev.ItemCompleted(item=codex_item(event.item))]
    if isinstance(event, engine.TurnStarted):
        return [ev.TurnStarted()]
    if isinstance(event, engine.TurnEnded):
        return [_turn_ended(event)]
    if isinstance(event, engine.ThreadStarted):
        return [ev.ThreadStarted(thread_id=event.thread_id)]
    if isinstance(event, engine.Notice):
        return [ev.ErrorEvent(message=event.message)]
    if isinstance(event, engine.RunFailed):
        return [ev.TurnFailed(error=ev.ThreadError(message=event.message))]
    return []


def _turn_ended(event: engine.TurnEnded) -> ev.ThreadEvent:
    if event.status == "completed":
        verification = event.verification
        return ev.TurnCompleted(
            usage=ev.Usage(**event.usage), cost_usd=event.cost_usd,
            verification=ev.Verification(**verification) if verification else None,
            attempts=dict(event.attempts) if event.attempts is not None else None)
    if event.status == "requires_action":
        return ev.TurnRequiresAction(tool_calls=[pending_call(c) for c in event.pending],
                                     usage=ev.Usage(**event.usage))
    return ev.TurnFailed(error=ev.ThreadError(message=event.error or ""))


def pending_call(call: Any) -> ev.PendingToolCall:
    """A call waiting for the caller (emitting/events.py PendingTool, records/pending.py
    PendingCall: the same four fields) as turn.requires_action lists it."""
    return ev.PendingToolCall(id=call.id, name=call.name, arguments=call.arguments,
                              item_id=call.item_id)


# ---- items -------------------------------------------------------------------------------

def codex_item(item: engine.Item) -> ev.ThreadItem:
    """One engine item as the Codex item it shows as."""
    if isinstance(item, engine.TextItem):
        if item.kind == "reasoning":
            return ev.ReasoningItem(id=item.id, text=item.text)
        return ev.AgentMessageItem(id=item.id, text=item.text)
    if isinstance(item, engine.TurnScopedItem):
        return _turn_scoped(item)
    if isinstance(item, engine.ApprovalItem):
        return ev.ApprovalRequestItem(
            id=item.id, command=item.command, cwd=item.cwd, kind=item.kind,
            reason=item.reason, prefix=item.prefix, decision=item.decision, note=item.note,
            status="in_progress" if item.decision is None else "completed")
    started = _started(item)
    if item.outcome is not None:
        return _completed(started, item.outcome)
    if item.progress is not None:
        return _updated(started, item.progress)
    return started


def _started(item: engine.ToolCallItem) -> ev.ThreadItem:
    if item.kind == "command_execution":
        return ev.CommandExecutionItem(id=item.id, command=item.command)
    if item.kind == "file_change":
        return ev.FileChangeItem(id=item.id, changes=list(item.changes))
    if item.kind == "collab_tool_call":
        return ev.CollabToolCallItem(id=item.id, sender_thread_id=item.thread_id,
                                     prompt=item.task)
    return ev.McpToolCallItem(id=item.id, server=item.server, tool=item.tool,
                              arguments=item.arguments)


def _fields(started: ev.ThreadItem, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The payload's keys the item has; a delegation's nested engine items as Codex ones."""
    allowed = {k: v for k, v in payload.items() if k in type(started).model_fields}
    if isinstance(started, ev.CollabToolCallItem) and "items" in allowed:
        allowed["items"] = [codex_item(i).model_dump(mode="json")
                            if isinstance(i, engine.ITEM_TYPES) else i
                            for i in allowed["items"]]
    return allowed


def _updated(started: ev.ThreadItem, payload: Mapping[str, Any]) -> ev.ThreadItem:
    """A tool's progress payload (e.g. growing shell output) on the started item. A
    delegation's payload (nested items, states) arrives as plain data and is validated."""
    allowed = _fields(started, payload)
    if isinstance(started, ev.CollabToolCallItem):
        return type(started).model_validate({**started.model_dump(), **allowed})
    return started.model_copy(update=allowed)


def failure_reason(output: str) -> str:
    """The reason a tool call failed, as the model was told it (without the `Error:`)."""
    text = output.strip()
    return text[len(_ERROR_PREFIX):] if text.startswith(_ERROR_PREFIX) else text


def command_status(outcome: engine.ToolOutcome) -> str:
    """How a command ended, as its item says (the terminal shows the same word)."""
    exit_code = outcome.data.get("exit_code")
    if outcome.data.get("status") == "declined":  # a person said no (tools/approval.py)
        return "declined"
    if outcome.interrupted:
        return "declined" if exit_code is None else "failed"
    return "completed" if outcome.success and exit_code == 0 else "failed"


def _completed(started: ev.ThreadItem, outcome: engine.ToolOutcome) -> ev.ThreadItem:
    data = outcome.data
    if isinstance(started, ev.CommandExecutionItem):
        return started.model_copy(update={
            "aggregated_output": data.get("aggregated_output", outcome.output),
            "exit_code": data.get("exit_code"),
            "status": command_status(outcome),
        })
    if isinstance(started, ev.FileChangeItem):
        if outcome.success:
            changes = [ev.FileUpdateChange(**c) for c in data.get("changes", [])]
            return started.model_copy(update={"changes": changes, "status": "completed"})
        # Failed: nothing changed; report the files the call was about, and why it failed.
        changes = started.changes or [ev.FileUpdateChange(**c) for c in outcome.named]
        return started.model_copy(update={
            "changes": changes, "status": "failed",
            "error": ev.ItemError(message=failure_reason(outcome.output))})
    if isinstance(started, ev.CollabToolCallItem):
        fields = _fields(started, data)
        fields["status"] = "completed" if outcome.success else "failed"
        return type(started).model_validate({**started.model_dump(), **fields})
    if isinstance(started, ev.McpToolCallItem):
        # A tool that has content blocks of its own (an MCP server's) shows those; the
        # others show their text as one block. A failed call carries the error message,
        # and its blocks when the tool returned some (an MCP result with isError).
        blocks = data.get("content")
        content = ev.McpToolCallResult(
            content=blocks if blocks is not None else [{"type": "text", "text": outcome.output}],
            structured_content=data.get("structured_content"))
        if outcome.success:
            return started.model_copy(update={"result": content, "status": "completed"})
        return started.model_copy(update={
            "result": content if blocks else None,
            "error": ev.McpToolCallError(message=outcome.output), "status": "failed"})
    return started


def _turn_scoped(item: engine.TurnScopedItem) -> ev.ThreadItem:
    """A turn-scoped item with its tool's latest payload (update_plan: `items`)."""
    if item.kind == "todo_list":
        return ev.TodoListItem(id=item.id, items=[ev.TodoEntry(**entry)
                                                  for entry in item.data.get("items", [])])
    raise ValueError(f"{item.kind!r} is not a turn-scoped item kind")

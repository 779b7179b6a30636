"""How a tool call looks in the event stream: the item kind and its payload per phase.

Kept out of the loop so the loop reads as phases, and out of the tools so tools never know
about events.
"""
from __future__ import annotations

from typing import Any, Callable

from baseagent.core.pending import PendingCall
from baseagent.output import events as ev
from baseagent.tools.tool import ToolContext, ToolResult
from baseagent.tools.external import EXTERNAL_SERVER
from baseagent.tools.registry import PreparedCall

# Item kinds that span the turn rather than one call: a tool of this kind feeds the turn's
# one item (core/loop.py _TurnItems), which is completed when the turn ends.
TURN_SCOPED = frozenset({"todo_list"})


def started_item(item_id: str, call: PreparedCall, ctx: ToolContext) -> ev.ThreadItem:
    kind = call.item_type if call.error is None else "mcp_tool_call"
    if kind == "command_execution":
        return ev.CommandExecutionItem(id=item_id, command=getattr(call.args, "command", ""))
    if kind == "file_change":
        return ev.FileChangeItem(id=item_id, changes=call.planned_changes(ctx))
    if kind == "collab_tool_call":
        return ev.CollabToolCallItem(id=item_id, sender_thread_id=ctx.thread_id,
                                     prompt=getattr(call.args, "task", None))
    return ev.McpToolCallItem(id=item_id, server=call.server, tool=call.tool_name,
                              arguments=call.arguments_for_display())


def updated_item(started: ev.ThreadItem, payload: dict[str, Any]) -> ev.ThreadItem:
    """Apply a tool's progress payload (e.g. growing shell output) to the started item.
    A delegation's payload (nested items, states) arrives as plain data and is validated."""
    allowed = {k: v for k, v in payload.items() if k in type(started).model_fields}
    if isinstance(started, ev.CollabToolCallItem):
        return type(started).model_validate({**started.model_dump(), **allowed})
    return started.model_copy(update=allowed)


# Error lines prefixed by the registry for the model; the item's reason goes without it.
_ERROR_PREFIX = "Error: "


def failure_reason(result: ToolResult) -> str:
    """The reason a tool call failed, as the model was told it (without the `Error:`)."""
    text = result.output.strip()
    return text[len(_ERROR_PREFIX):] if text.startswith(_ERROR_PREFIX) else text


def completed_item(started: ev.ThreadItem, result: ToolResult, interrupted: bool = False,
                   named: Callable[[], list[dict[str, str]]] = list) -> ev.ThreadItem:
    """`named` gives the paths a failed file change names (its path must show with its
    reason even when the call was refused before it planned anything)."""
    if isinstance(started, ev.CommandExecutionItem):
        exit_code = result.item.get("exit_code")
        status = "completed" if result.success and exit_code == 0 else "failed"
        if interrupted:
            status = "declined" if exit_code is None else "failed"
        return started.model_copy(update={
            "aggregated_output": result.item.get("aggregated_output", result.output),
            "exit_code": exit_code,
            "status": status,
        })
    if isinstance(started, ev.FileChangeItem):
        if result.success:
            changes = [ev.FileUpdateChange(**c) for c in result.item.get("changes", [])]
            return started.model_copy(update={"changes": changes, "status": "completed"})
        # Failed: nothing changed; report the files the call was about, and why it failed.
        changes = started.changes or [ev.FileUpdateChange(**c) for c in named()]
        return started.model_copy(update={
            "changes": changes, "status": "failed",
            "error": ev.ItemError(message=failure_reason(result))})
    if isinstance(started, ev.CollabToolCallItem):
        fields = {k: v for k, v in result.item.items() if k in type(started).model_fields}
        fields["status"] = "completed" if result.success else "failed"
        return type(started).model_validate({**started.model_dump(), **fields})
    if isinstance(started, ev.McpToolCallItem):
        # A tool that has content blocks of its own (an MCP server's) shows those; the
        # others show their text as one block. A failed call carries the error message,
        # and its blocks when the tool returned some (an MCP result with isError).
        blocks = result.item.get("content")
        content = ev.McpToolCallResult(
            content=blocks if blocks is not None else [{"type": "text", "text": result.output}],
            structured_content=result.item.get("structured_content"))
        if result.success:
            return started.model_copy(update={"result": content, "status": "completed"})
        return started.model_copy(update={
            "result": content if blocks else None,
            "error": ev.McpToolCallError(message=result.output), "status": "failed"})
    return started


def turn_item(kind: str, item_id: str, payload: dict[str, Any]) -> ev.ThreadItem:
    """A turn-scoped item with a tool's latest payload (update_plan: `items`)."""
    if kind == "todo_list":
        return ev.TodoListItem(id=item_id, items=[ev.TodoEntry(**entry)
                                                  for entry in payload.get("items", [])])
    raise ValueError(f"{kind!r} is not a turn-scoped item kind")


def external_result_item(call: PendingCall, output: str) -> ev.McpToolCallItem:
    """The completed item of a call the caller ran, with the output they submitted."""
    return ev.McpToolCallItem(
        id=call.item_id, server=EXTERNAL_SERVER, tool=call.name, arguments=call.arguments,
        result=ev.McpToolCallResult(content=[{"type": "text", "text": output}]),
        status="completed")

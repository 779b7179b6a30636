"""How a tool call looks in the event stream: the item kind and its payload per phase.

Kept out of the loop so the loop reads as phases, and out of the tools so tools never know
about events.
"""
from __future__ import annotations

from typing import Any

from baseagent.output import events as ev
from baseagent.tools.base import ToolContext, ToolResult
from baseagent.tools.registry import PreparedCall


def started_item(item_id: str, call: PreparedCall, ctx: ToolContext) -> ev.ThreadItem:
    kind = call.item_type if call.error is None else "mcp_tool_call"
    if kind == "command_execution":
        return ev.CommandExecutionItem(id=item_id, command=getattr(call.args, "command", ""))
    if kind == "file_change":
        return ev.FileChangeItem(id=item_id, changes=call.planned_changes(ctx))
    return ev.McpToolCallItem(id=item_id, server=call.server, tool=call.tool_name,
                              arguments=call.arguments_for_display())


def updated_item(started: ev.ThreadItem, payload: dict[str, Any]) -> ev.ThreadItem:
    """Apply a tool's progress payload (e.g. growing shell output) to the started item."""
    allowed = {k: v for k, v in payload.items() if k in type(started).model_fields}
    return started.model_copy(update=allowed)


def completed_item(started: ev.ThreadItem, result: ToolResult,
                   interrupted: bool = False) -> ev.ThreadItem:
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
        changes = [ev.FileUpdateChange(**c) for c in result.item.get("changes", [])]
        return started.model_copy(update={
            "changes": changes, "status": "completed" if result.success else "failed"})
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

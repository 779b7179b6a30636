"""How a tool call appears as an engine item (emitting/events.py), phase by phase.

Kept out of the loop so the loop reads as phases, and out of the tools so tools never know
about events. The items are the engine's own; output/codex.py maps them to Codex items.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from baseagent.emitting import events as engine
from baseagent.records.pending import PendingCall
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolResult
from baseagent.tools.external import EXTERNAL_SERVER
from baseagent.tools.registry import PreparedCall

# Item kinds that span the turn rather than one call: a tool of this kind feeds the turn's
# one item (core/loop.py _TurnItems), which is completed when the turn ends.
TURN_SCOPED = frozenset({"todo_list"})


def started_item(item_id: str, call: PreparedCall, ctx: ToolContext) -> engine.ToolCallItem:
    """The item of a call about to run: what it is about, by the kind its tool shows it as
    (a call that could not be prepared shows as a generic tool call)."""
    kind = call.item_type if call.error is None else "mcp_tool_call"
    about: dict[str, Any] = {}
    if kind == "command_execution":
        about["command"] = getattr(call.args, "command", "")
    elif kind == "file_change":
        about["changes"] = tuple(call.planned_changes(ctx))
    elif kind == "collab_tool_call":
        about.update(thread_id=ctx.thread_id, task=getattr(call.args, "task", None),
                     specialist=getattr(call.args, "specialist_id", None))
    return engine.ToolCallItem(id=item_id, kind=kind, name=call.name, server=call.server,
                               tool=call.tool_name, arguments=call.arguments_for_display(),
                               **about)


def updated_item(started: engine.ToolCallItem, payload: dict[str, Any]) -> engine.ToolCallItem:
    """The started item with a tool's latest progress payload (e.g. growing shell output)."""
    return dataclasses.replace(started, progress=payload)


def completed_item(started: engine.ToolCallItem, result: ToolResult, interrupted: bool = False,
                   named: Callable[[], list[dict[str, str]]] = list) -> engine.ToolCallItem:
    """The item of a call that ran. `named` gives the paths a failed file change names (its
    path must show with its reason even when the call was refused before it planned
    anything); asked only then."""
    files: tuple[dict[str, str], ...] = ()
    if not result.success and started.kind == "file_change" and not started.changes:
        files = tuple(named())
    return dataclasses.replace(started, outcome=engine.ToolOutcome(
        success=result.success, output=result.output, data=result.item,
        interrupted=interrupted, named=files))


def turn_item(kind: str, item_id: str, payload: dict[str, Any]) -> engine.TurnScopedItem:
    """A turn-scoped item with a tool's latest payload (update_plan: `items`)."""
    if kind not in TURN_SCOPED:
        raise ValueError(f"{kind!r} is not a turn-scoped item kind")
    return engine.TurnScopedItem(id=item_id, kind=kind, data=payload)


def external_result_item(call: PendingCall, output: str) -> engine.ToolCallItem:
    """The completed item of a call the caller ran, with the output they submitted."""
    return engine.ToolCallItem(
        id=call.item_id, kind="mcp_tool_call", name=call.name, server=EXTERNAL_SERVER,
        tool=call.name, arguments=call.arguments,
        outcome=engine.ToolOutcome(success=True, output=output))

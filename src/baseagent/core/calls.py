"""A tool call as the items a consumer sees: run (started, updated with its progress,
completed), fed into the turn's own item (update_plan), or handed to the caller (a tool the
caller runs, or a command waiting on the caller's approval: records/pending.py).

The loop (core/loop.py) decides which; this runs it and emits its events, never touching
the history.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from baseagent.cancellation import CancelToken
from baseagent.emitting import events as engine
from baseagent.core.items import (TURN_SCOPED, completed_item, external_result_item,
                                  started_item, updated_item)
from baseagent.records.pending import PendingCall
from baseagent.core.streaming import TurnItems
from baseagent.llm.types import ToolCall
from baseagent.emitting.interface import EventEmitter
from baseagent.tools.approval import (APPROVAL_CALL, ApprovalAnswer, ApprovalRequest,
                                      approval_item, declined_text, parse_decision)
from baseagent.tools.registry import PreparedCall, ToolRegistry
from baseagent.tools.context import CallBudget, ToolContext
from baseagent.tools.tool import ToolResult


class CallItems:
    def __init__(self, registry: ToolRegistry, emitter: EventEmitter, tool_context: ToolContext,
                 cancelled: CancelToken, turn_items: TurnItems,
                 where: Callable[[], tuple[str, int]] = lambda: ("", 0)) -> None:
        self.registry = registry
        # The running turn's instruction and model call (step), for each call's ToolContext.
        self.where = where
        self.emitter = emitter
        self.tool_context = tool_context
        self.cancelled = cancelled
        self.turn_items = turn_items

    def run(self, call: ToolCall, prepared: PreparedCall, budget: CallBudget) -> ToolResult:
        """Run a call as its item (or as the turn's item it feeds)."""
        if prepared.error is None and prepared.item_type in TURN_SCOPED:
            return self._run_turn_scoped(prepared)
        return self.run_as_item(call, prepared, budget)

    def _run_turn_scoped(self, prepared: PreparedCall) -> ToolResult:
        """A call that feeds the turn's item (update_plan: the todo_list) instead of being an
        item of its own; should it fail, it shows as a failed call, like any other."""
        result = self.registry.execute(prepared, self.tool_context)
        if result.success:
            self.turn_items.show(prepared.item_type, result.item)
            return result
        failed = started_item(self.emitter.new_item_id(), prepared, self.tool_context)
        self.emitter.send(engine.ItemStarted(failed))
        self.emitter.send(engine.ItemCompleted(completed_item(failed, result)))
        return result

    def run_as_item(self, call: ToolCall, prepared: PreparedCall,
                    budget: CallBudget | None) -> ToolResult:
        """A call as an item of its own: started, updated with its progress, completed."""
        item_id = self.emitter.new_item_id()
        started = started_item(item_id, prepared, self.tool_context)
        self.emitter.send(engine.ToolStarted(call_id=call.id, name=call.name, item_id=item_id,
                                             arguments=started.arguments))
        self.emitter.send(engine.ItemStarted(started))

        def progress(payload: dict[str, Any]) -> None:
            self.emitter.send(engine.ItemUpdated(updated_item(started, payload)))

        instruction, step = self.where()
        ctx = dataclasses.replace(self.tool_context, progress=progress, cancelled=self.cancelled,
                                  item_id=item_id, model_calls=budget, instruction=instruction,
                                  step=step)
        result = self.registry.execute(prepared, ctx)
        self.emitter.send(engine.ItemCompleted(completed_item(
            started, result, interrupted=self.cancelled(),
            named=lambda: prepared.named_changes(ctx))))
        self.emitter.send(engine.ToolFinished(call_id=call.id, name=call.name, item_id=item_id,
                                              success=result.success, output=result.output,
                                              metadata=result.metadata))
        if result.item.get("diff"):
            self.emitter.detail(item_id, result.item["diff"])
        return result

    def hand_over(self, call: ToolCall, prepared: PreparedCall) -> PendingCall:
        """Start the item of a call the caller will run; it completes with their output."""
        item_id = self.emitter.new_item_id()
        self.emitter.send(engine.ItemStarted(started_item(item_id, prepared,
                                                          self.tool_context)))
        return PendingCall(id=call.id, name=call.name,
                           arguments=prepared.arguments_for_display(), item_id=item_id)

    def caller_question(self, prepared: PreparedCall) -> ApprovalRequest | None:
        """The approval question a shell call waits on when the caller answers approvals
        through requires_action (tools/approval.py REQUIRES_ACTION); None otherwise."""
        approvals = self.tool_context.approvals
        if approvals is None or not approvals.deferred or prepared.error is not None \
                or prepared.item_type != "command_execution":
            return None
        args = prepared.args
        return approvals.question(
            args.command, str(self.tool_context.cwd),
            confined=self.tool_context.policy().restricted,
            escalate=bool(getattr(args, "with_escalated_permissions", False)),
            justification=getattr(args, "justification", None) or "")

    def hand_question(self, call: ToolCall, question: ApprovalRequest) -> PendingCall:
        """A command held for the caller's answer: its approval item starts now and the
        pending call carries the question and the held call."""
        item_id = self.emitter.new_item_id()
        self.emitter.send(engine.ItemStarted(approval_item(item_id, question)))
        return PendingCall(id=call.id, name=APPROVAL_CALL, item_id=item_id, arguments={
            "command": question.command, "cwd": question.cwd, "kind": question.kind,
            "reason": question.reason, "prefix": question.prefix,
            "call": {"name": call.name, "arguments": call.arguments}})

    def answered(self, call: PendingCall, output: str) -> tuple[ToolCall, str | None]:
        """The caller's answer to a held command (checked by core.pending.check_outputs):
        its approval item completes; the held call, and why it does not run (None: it
        runs, the approval given)."""
        held = call.arguments
        answer = parse_decision(output) or ApprovalAnswer("denied", output)
        question = ApprovalRequest(held["command"], held.get("cwd", ""), held["kind"],
                                   held.get("reason", ""), held.get("prefix", ""))
        self.emitter.send(engine.ItemCompleted(approval_item(call.item_id, question, answer)))
        tool_call = ToolCall(id=call.id, name=held["call"]["name"],
                             arguments=held["call"]["arguments"])
        approvals = self.tool_context.approvals
        if answer.decision == "denied":
            return tool_call, declined_text(answer.note)
        if approvals is None:
            return tool_call, "Error: not run: approvals are off in this run"
        approvals.give(held["command"], answer)
        return tool_call, None

    def output_taken(self, call: PendingCall, output: str) -> None:
        """The caller's output for a call it ran: its item completes."""
        self.emitter.send(engine.OutputSubmitted(call_id=call.id, name=call.name,
                                                 item_id=call.item_id, output=output))
        self.emitter.send(engine.ItemCompleted(external_result_item(call, output)))

    def refuse(self, call: ToolCall, refusal: str) -> ToolResult:
        """A call that gave the same result twice is not run again: a failed item, a
        notice, and the refusal as its result."""
        prepared = PreparedCall(name=call.name, raw_arguments=call.arguments,
                                error=refusal.removeprefix("Error: "))
        self.emitter.notice(f"not running {call.name} again: the same call gave the same "
                            "result twice")
        return self.run_as_item(call, prepared, None)

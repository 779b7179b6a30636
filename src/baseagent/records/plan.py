"""The model's plan as the history holds it: found, carried over compaction, checked.

The plan lives in the history itself, as the arguments of the model's update_plan calls
(tools/update_plan.py), so nothing else has to keep it in step: a resumed thread has it, an
export has it. Compaction can remove those calls (a summary replaces the work; a fallback
drops old turns), so `carry_plan` puts the latest plan back as a message of its own; and the
verification round names the steps the plan still has open. Pure functions over messages.
"""
from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from baseagent.prompts.system import (EVIDENCE_CHECK, PLAN_CHECK, PLAN_PREFIX,
                                     VERIFICATION_PROMPT)
from baseagent.tools.update_plan import NAME, RESULT, Args

Message = dict[str, Any]


def parse_plan(arguments: Any) -> Args | None:
    """A valid plan from update_plan arguments (JSON text or an object), else None."""
    try:
        data = json.loads(arguments) if isinstance(arguments, str) else arguments
        return Args.model_validate(data)
    except (TypeError, ValueError, ValidationError, RecursionError):
        return None


def is_plan_message(message: Message) -> bool:
    content = message.get("content")
    return (message.get("role") == "user" and isinstance(content, str)
            and content.startswith(PLAN_PREFIX))


def plan_message(plan: Args) -> Message:
    """The plan as a message of its own: the prefix, then the update_plan arguments."""
    data = plan.model_dump(mode="json", exclude_none=True)
    return {"role": "user", "content": PLAN_PREFIX + json.dumps(data, ensure_ascii=False)}


def latest_plan(messages: list[Message]) -> Args | None:
    """The plan as the model last set it: its newest update_plan call that succeeded (the
    result says so), or the newest plan message compaction left, whichever is later."""
    results: dict[Any, Any] = {}  # tool results seen so far, walking back from the newest
    for message in reversed(messages):
        role = message.get("role")
        if role == "tool":
            results[message.get("tool_call_id")] = message.get("content")
        elif role == "assistant":
            for call in reversed(message.get("tool_calls") or []):
                function = call.get("function") or {}
                result = results.get(call.get("id"))
                if function.get("name") != NAME or not isinstance(result, str) \
                        or not result.startswith(RESULT):
                    continue
                plan = parse_plan(function.get("arguments"))
                if plan is not None:
                    return plan
        elif is_plan_message(message):
            plan = parse_plan(message["content"][len(PLAN_PREFIX):])
            if plan is not None:
                return plan
    return None


def carry_plan(before: list[Message], after: list[Message], head: int) -> list[Message]:
    """`after` (a compacted `before`) with the latest plan of `before` put back if the
    rewrite lost it: a plan message where the removed work was, i.e. before the first turn
    that is left (or at the end when none is), so that no later update_plan call is shadowed
    and no tool call is parted from its result."""
    plan = latest_plan(before)
    if plan is None or latest_plan(after) == plan:
        return after
    at = next((i for i in range(head, len(after))
               if after[i].get("role") in ("assistant", "tool")), len(after))
    return [*after[:at], plan_message(plan), *after[at:]]


def open_steps(plan: Args | None) -> list[str]:
    """The steps not completed yet, as the verification reminder lists them."""
    if plan is None:
        return []
    return [f"- [{s.status}] {s.step}" for s in plan.plan if s.status != "completed"]


def verification_reminder(instruction: str, plan: Args | None,
                          missing: str | None = None) -> str:
    """The verification round's message: the instruction restated, what the turn's evidence
    lacks (core/verification/evidence.py) when it lacks something, and the plan's open steps when it has
    any (the reminder is then a check of the plan too)."""
    text = VERIFICATION_PROMPT.format(instruction=instruction)
    if missing:
        text += EVIDENCE_CHECK.format(missing=missing)
    steps = open_steps(plan)
    return text + PLAN_CHECK.format(steps="\n".join(steps)) if steps else text

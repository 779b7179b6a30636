"""update_plan: the model writes its plan down (Codex's tool, same arguments).

The tool does nothing to the workspace. Its arguments are what matters: the loop shows them
as the turn's `todo_list` item (core/items.py), compaction carries the latest plan over a
rewrite and the verification round lists the steps not yet completed (records/plan.py). The
checks a plan must pass (a step has text, at most one step is in progress) are part of the
argument model, so a bad plan is an argument error the model reads and fixes, like any other.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolResult

NAME = "update_plan"
ITEM_TYPE = "todo_list"
# What the model reads back (Codex answers the same): the plan itself is in its own call.
RESULT = "Plan updated"
DESCRIPTION = (
    "Updates the task plan: give the whole plan each time, as a list of steps, each with a "
    "status (pending, in_progress or completed), and optionally an explanation of what "
    "changed. At most one step can be in_progress at a time.\n"
    "Use it for multi-step work: changes across several files or phases, or anything you "
    "could lose track of. Write 3-7 short steps (a few words each) before you start, mark "
    "one in_progress while you work on it, mark steps completed as you finish them (in the "
    "same call that starts the next one), and revise the plan when you learn something that "
    "changes it. Do not plan a simple task (a one-line fix, a single command, a question): "
    "just do it. A plan is not the result: keep working until every step is completed."
)

StepStatus = Literal["pending", "in_progress", "completed"]
STATUSES = ("pending", "in_progress", "completed")

# Codex's schema, inline (no $defs, no null unions): the shape models are trained on. Args
# below checks the same and more.
PARAMETERS = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "plan": {
            "type": "array",
            "description": "The list of steps",
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "string"},
                    "status": {"type": "string", "enum": list(STATUSES),
                               "description": "One of: pending, in_progress, completed"},
                },
                "required": ["step", "status"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["plan"],
    "additionalProperties": False,
}


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: str
    status: StepStatus

    @field_validator("step")
    @classmethod
    def _has_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a step must say what it does (empty text)")
        return value.strip()


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    explanation: str | None = None
    plan: list[PlanStep] = Field(..., min_length=1)

    @model_validator(mode="after")
    def _one_in_progress(self) -> "Args":
        busy = [s.step for s in self.plan if s.status == "in_progress"]
        if len(busy) > 1:
            raise ValueError(f"at most one step can be in_progress at a time, got {len(busy)}: "
                             + "; ".join(busy))
        return self


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """The todo_list item's payload: the steps as Codex shows them (text, completed)."""
    items = [{"text": s.step, "completed": s.status == "completed"} for s in args.plan]
    return ToolResult(output=RESULT, item={"items": items})


# The tool as the registry sees it (tools/tool.py).
TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=run,
                 item_type=ITEM_TYPE, parameters=PARAMETERS)

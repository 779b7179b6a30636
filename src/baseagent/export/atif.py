"""ATIF v1.7 trajectories (the Harbor benchmark harness's interchange format), built from a
session record and validated by pydantic models that enforce the rules consumers check:

- steps are numbered 1..n in order;
- model_name, reasoning_effort, reasoning_content, tool_calls and metrics appear only on
  agent steps;
- every observation result's source_call_id names a tool call of the same step;
- tool call arguments are objects; timestamps are ISO 8601; token counts are integers;
- no field outside the schema, anywhere.

A compaction (a `history` record) becomes a system step with
`extra.context_management: {type: compaction|pruning, ...}`. The plan the model kept with
update_plan is in its tool calls; the trajectory's `extra.plan` holds the last one (steps
and statuses), so a consumer sees at a glance what the agent meant to do and what it did.
"""
from __future__ import annotations

import datetime as _dt
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from baseagent.records.plan import is_plan_message, latest_plan
from baseagent.export.log import Entry, SessionLog, linear_messages
from baseagent.records.messages import content_text

SCHEMA_VERSION = "ATIF-v1.7"
AGENT_NAME = "baseagent"
# `history` record reasons (core/context/compaction.py) that only replaced old tool outputs with a
# marker; any other rewrite (a model-written summary) is a compaction.
PRUNING_REASONS = frozenset({"prune", "fallback"})
AGENT_ONLY_FIELDS = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls",
                     "metrics")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class ObservationResult(_Strict):
    source_call_id: str | None = None
    content: str | None = None


class Observation(_Strict):
    results: list[ObservationResult]


class Metrics(_Strict):
    prompt_tokens: int | None = Field(None, ge=0, description="Includes cached tokens")
    completion_tokens: int | None = Field(None, ge=0)
    cached_tokens: int | None = Field(None, ge=0)
    cost_usd: float | None = Field(None, ge=0)
    extra: dict[str, Any] | None = None


class Step(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    llm_call_count: int | None = Field(None, ge=0)
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"timestamp {value!r} is not ISO 8601") from None
        return value

    @model_validator(mode="after")
    def _agent_fields_and_call_ids(self) -> "Step":
        if self.source != "agent":
            present = [name for name in AGENT_ONLY_FIELDS if getattr(self, name) is not None]
            if present:
                raise ValueError(f"step {self.step_id}: {', '.join(present)} only allowed on "
                                 f"agent steps (source is {self.source!r})")
        if self.observation is not None:
            call_ids = {call.tool_call_id for call in self.tool_calls or []}
            for result in self.observation.results:
                if result.source_call_id is not None and result.source_call_id not in call_ids:
                    raise ValueError(f"step {self.step_id}: observation source_call_id "
                                     f"{result.source_call_id!r} is not a tool call of this step")
        if self.llm_call_count == 0 and self.metrics is not None:
            raise ValueError(f"step {self.step_id}: metrics without an LLM call")
        return self


class Agent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Strict):
    total_prompt_tokens: int | None = Field(None, ge=0)
    total_completion_tokens: int | None = Field(None, ge=0)
    total_cached_tokens: int | None = Field(None, ge=0)
    total_cost_usd: float | None = Field(None, ge=0)
    total_steps: int | None = Field(None, ge=0)
    extra: dict[str, Any] | None = None


class Trajectory(_Strict):
    schema_version: Literal["ATIF-v1.7"] = SCHEMA_VERSION
    session_id: str
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _numbered(self) -> "Trajectory":
        for expected, step in enumerate(self.steps, 1):
            if step.step_id != expected:
                raise ValueError(f"step ids must run 1..n in order: found {step.step_id} "
                                 f"where {expected} was expected")
        if self.final_metrics is not None and self.final_metrics.total_steps is not None \
                and self.final_metrics.total_steps != len(self.steps):
            raise ValueError("final_metrics.total_steps does not match the number of steps")
        return self


# -- building ----------------------------------------------------------------------------------

def _arguments(raw: Any) -> dict[str, Any]:
    """ATIF wants an object; a call whose arguments were not a JSON object keeps them raw."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {"raw_arguments": str(raw)}
    return value if isinstance(value, dict) else {"value": value}


def _metrics(usage: dict[str, Any] | None) -> Metrics | None:
    if not usage:
        return None
    return Metrics(prompt_tokens=int(usage.get("input_tokens") or 0),
                   completion_tokens=int(usage.get("output_tokens") or 0),
                   cached_tokens=int(usage.get("cached_input_tokens") or 0),
                   cost_usd=usage.get("cost_usd"))


def _compaction_step(entry: Entry, before: list[dict[str, Any]]) -> dict[str, Any]:
    reason = entry.reason.lower()
    kind = "pruning" if reason in PRUNING_REASONS or "prun" in reason else "compaction"
    # The summary is what the snapshot says that the history before it did not: kept
    # instructions reappear (possibly reformatted, e.g. without their images), it does not.
    before_texts = [content_text(m.get("content")) for m in before]
    new_texts = [text for m in entry.messages if m.get("role") in ("user", "assistant")
                 and not is_plan_message(m)  # carried over, not written by the summary
                 for text in [content_text(m.get("content"))]
                 if text and not any(text in old for old in before_texts)]
    management: dict[str, Any] = {"type": kind, "reason": entry.reason,
                                  "messages_before": len(before),
                                  "messages_after": len(entry.messages)}
    summary = "\n\n".join(t for t in new_texts if t)
    if kind == "compaction" and summary:
        management["summary"] = summary
    message = (f"Context {'pruned' if kind == 'pruning' else 'compacted'} ({entry.reason}): "
               f"{len(before)} messages became {len(entry.messages)}.")
    return {"source": "system", "message": message,
            "extra": {"context_management": management}}


def build_steps(log: SessionLog) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    call_owner: dict[str, dict[str, Any]] = {}
    history: list[dict[str, Any]] = []  # what the model saw, to describe compactions
    for entry in log.entries:
        if entry.kind == "history":
            steps.append({"timestamp": entry.ts or None, **_compaction_step(entry, history)})
            history = list(entry.messages)
            continue
        message = entry.message
        history.append(message)
        role = message.get("role")
        if role == "tool":
            owner = call_owner.get(str(message.get("tool_call_id")))
            if owner is not None:
                owner.setdefault("observation", {"results": []})["results"].append(
                    {"source_call_id": str(message.get("tool_call_id")),
                     "content": content_text(message.get("content"))})
            continue
        step: dict[str, Any] = {"timestamp": entry.ts or None,
                                "message": content_text(message.get("content"))}
        if role == "assistant":
            step.update(source="agent", model_name=entry.model or None)
            if entry.reasoning:
                step["reasoning_content"] = entry.reasoning
            calls = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                calls.append({"tool_call_id": str(call.get("id")),
                              "function_name": str(function.get("name", "")),
                              "arguments": _arguments(function.get("arguments"))})
                call_owner[str(call.get("id"))] = step
            if calls:
                step["tool_calls"] = calls
            metrics = _metrics(entry.usage)
            if metrics is not None:
                step["metrics"] = metrics.model_dump(exclude_none=True)
        else:
            step["source"] = "system" if role == "system" else "user"
        steps.append(step)
    for number, step in enumerate(steps, 1):
        step["step_id"] = number
    return steps


def to_atif(log: SessionLog) -> dict[str, Any]:
    """The validated trajectory as plain JSON data (raises pydantic.ValidationError if the
    record cannot make a valid one)."""
    steps = build_steps(log)
    usage = log.usage
    plan = latest_plan(linear_messages(log))
    trajectory = Trajectory(
        session_id=log.thread_id,
        trajectory_id=log.thread_id,
        agent=Agent(name=AGENT_NAME, version=log.version or "unknown",
                    model_name=log.model or None, tool_definitions=log.tools or None),
        steps=[Step.model_validate(step) for step in steps],
        final_metrics=FinalMetrics(
            total_prompt_tokens=usage.input_tokens,
            total_completion_tokens=usage.output_tokens,
            total_cached_tokens=usage.cached_input_tokens,
            total_cost_usd=round(usage.cost_usd, 10) if usage.cost_known else None,
            total_steps=len(steps)),
        extra={"plan": plan.model_dump(mode="json", exclude_none=True)} if plan else None,
    )
    return trajectory.model_dump(mode="json", exclude_none=True)

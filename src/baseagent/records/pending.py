"""A turn paused for tools the caller runs: what it waits for, and how it continues.

When the model calls an external tool (tools/external.py) the turn stops with status
`requires_action`. `Paused` is everything needed to continue that same turn later, in this
process (the library's `submit_tool_outputs`) or another (the CLI's `--resume ID
--tool-outputs FILE`): the pending calls, the turn's id, its instruction (the verification
reminder restates it), whether the verification round already happened, and the model
calls it made and has left. It is written to the session record as a `paused` record and read back
by records/replay.py.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from baseagent.errors import InputError
from baseagent.tools.approval import APPROVAL_CALL, parse_decision


@dataclass(frozen=True)
class PendingCall:
    """One call waiting for the caller: `id` is the key its output is submitted under."""

    id: str
    name: str
    arguments: Any
    item_id: str


@dataclass
class Paused:
    turn_id: str
    instruction: str
    calls: list[PendingCall] = field(default_factory=list)
    verified: bool = True
    calls_left: int = 1
    steps: int = 0  # model calls the turn made before it paused
    # The user message with what the step's own tools attached (view_image's images): it
    # follows the caller's outputs, after every tool message of the step.
    attachment: dict[str, Any] | None = None

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> "Paused":
        """Raises ValueError/TypeError/KeyError on a malformed record (the caller reports it)."""
        calls = [PendingCall(id=str(c["id"]), name=str(c["name"]), arguments=c.get("arguments"),
                             item_id=str(c.get("item_id") or "")) for c in data["calls"]]
        return cls(turn_id=str(data["turn_id"]), instruction=str(data.get("instruction") or ""),
                   calls=calls, verified=bool(data.get("verified", True)),
                   calls_left=int(data.get("calls_left", 1)),
                   steps=int(data.get("steps", 0)),
                   attachment=_attachment(data.get("attachment")))

    @property
    def call_ids(self) -> list[str]:
        return [c.id for c in self.calls]


def _attachment(value: Any) -> dict[str, Any] | None:
    """A recorded attachment message, or ValueError for one that is not a user message."""
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("role") != "user" \
            or not isinstance(value.get("content"), list):
        raise ValueError("a paused record's attachment is not a user message")
    return value


def check_outputs(calls: list[PendingCall], outputs: Mapping[str, Any]) -> dict[str, str]:
    """The caller's outputs, one per pending call and no other: an InputError naming what is
    missing or unknown otherwise. Outputs that are not text are sent as JSON."""
    if not isinstance(outputs, Mapping):
        raise InputError("tool outputs must be a mapping of tool call id to output, got "
                         f"{type(outputs).__name__}")
    expected = [c.id for c in calls]
    if not expected:
        raise InputError("no tool calls are waiting for outputs in this thread")
    unknown = [k for k in outputs if k not in expected]
    missing = [k for k in expected if k not in outputs]
    problems = []
    if missing:
        problems.append(f"missing outputs for {', '.join(missing)}")
    if unknown:
        problems.append(f"no pending tool call has the id {', '.join(map(str, unknown))}")
    if problems:
        waiting = ", ".join(f"{c.id} ({c.name})" for c in calls)
        raise InputError(f"{'; '.join(problems)} (waiting for: {waiting})")
    texts = {call_id: _as_text(call_id, outputs[call_id]) for call_id in expected}
    for call in calls:
        if call.name == APPROVAL_CALL and isinstance(call.arguments, Mapping) \
                and parse_decision(texts[call.id]) is None:
            raise InputError(f"the answer for {call.id} (an approval of "
                             f"{call.arguments.get('command')!r}) must be approved, "
                             f"approved_for_session, denied or 'denied: NOTE', got "
                             f"{texts[call.id][:80]!r}")
    return texts


def _as_text(call_id: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        raise InputError(f"the output for {call_id} is neither text nor JSON-serialisable: "
                         f"{type(value).__name__}") from None

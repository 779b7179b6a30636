"""What the batch driver needs from whatever runs its workers (local processes, Ray actors).

The driver owns the schedule, the clocks, retries and results.jsonl; a backend only keeps
`workers` slots, each holding at most one task, and reports what happened to them. Both
backends run the same TaskRunner (batch/worker.py) inside each worker.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from baseagent.errors import BaseAgentError


class BatchError(BaseAgentError):
    """The batch cannot run (its backend is missing, its workers cannot start, its output
    directory is in use); one line for the user, nothing lost."""


@dataclass
class Outcome:
    """`done`: the worker finished the task (payload: {"result": its results.jsonl line}).
    `crashed`: the worker died or vanished while holding the task (reason says how)."""

    slot: int
    kind: Literal["done", "crashed"]
    payload: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


class Backend(Protocol):
    def start(self) -> None:
        """Start every worker (they warm up in the background)."""

    def idle_slots(self) -> list[int]:
        """Slots whose worker is warm and holds no task."""

    def busy(self) -> bool:
        """Any slot holding a task."""

    def submit(self, slot: int, task: dict[str, Any]) -> None:
        """Hand an idle slot a task (Task.to_dict())."""

    def poll(self, timeout: float) -> list[Outcome]:
        """Wait up to `timeout` seconds for anything to happen; raises BatchError when the
        workers cannot start at all (a missing API key, an unknown model, an import error)."""

    def cancel(self, slot: int, reason: str) -> None:
        """Ask the slot's worker to stop its task (it answers with an interrupted result)."""

    def replace(self, slot: int) -> None:
        """Kill the slot's worker (its task is lost) and start a new one in its place."""

    def close(self) -> None:
        """Stop every worker."""

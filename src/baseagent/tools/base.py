"""The contract every tool module follows.

A tool is a module exposing NAME, DESCRIPTION, an ``Args`` pydantic model (its JSON schema is
what the model sees), ITEM_TYPE (the event item kind it produces) and
``run(args, ctx) -> ToolResult``. Tools never print, never touch the message history and know
nothing about JSONL: they report through the returned ``ToolResult`` and, for long-running
work, through ``ctx.progress``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from baseagent.sandbox import SandboxMode
from baseagent.sandbox.policy import Policy
from baseagent.tools.procs import ProcessTracker

# Defaults of the per-run knobs below (the settings layer passes the configured values).
DEFAULT_SHELL_TIMEOUT_MS = 120_000
# A search that takes longer than this is too broad to be useful to the model anyway.
DEFAULT_GREP_TIMEOUT_S = 30.0


class ToolError(Exception):
    """Raised by a tool for an expected failure; the message goes to the model verbatim."""


@dataclass
class ToolResult:
    """What a tool hands back: text for the model, success flag, and the event item payload.

    ``item`` holds the fields of the event item beyond id/type (e.g. ``command``,
    ``exit_code`` for shell; ``changes`` for file edits). The registry fills in a status.
    """

    output: str
    success: bool = True
    item: dict[str, Any] = field(default_factory=dict)


class CallBudget:
    """Model calls left in the running turn. The loop spends one per step; a sub-agent's
    calls are spent from its parent's budget too, so delegating never multiplies the limit."""

    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self, calls: int = 1) -> None:
        self.left -= calls


class Delegator(Protocol):
    """Runs a sub-task in a child agent (core/delegation.py); on ToolContext when the
    delegate tool is enabled."""

    def run(self, task: str, tools: list[str] | None, max_iterations: int | None,
            ctx: "ToolContext") -> ToolResult: ...


@dataclass
class ToolContext:
    """Everything a tool may know about its run, handed in by the run that owns it.

    Nothing here is shared between runs: two agents in one process each have their own
    context, process tracker and environment, so neither can see or kill the other's work.
    """

    cwd: Path
    # Environment handed to child processes (already stripped of secrets by the caller).
    env: dict[str, str] = field(default_factory=dict)
    sandbox: SandboxMode = "danger-full-access"
    # Whether commands may use the network in workspace-write and read-only.
    sandbox_network: bool = False
    shell_timeout_ms: int = DEFAULT_SHELL_TIMEOUT_MS
    # Called with a partial item payload while a tool runs (e.g. growing shell output).
    progress: Callable[[dict[str, Any]], None] = lambda _payload: None
    # Set by the loop when the run is being interrupted; long tools poll it.
    cancelled: Callable[[], bool] = lambda: False
    # Extra writable roots (e.g. --add-dir) for workspace-write.
    writable_roots: list[Path] = field(default_factory=list)
    # The command sessions this run started, so an interrupt can end all of them.
    processes: ProcessTracker = field(default_factory=ProcessTracker)
    # grep_files: which search implementation, and how long a search may take.
    grep_backend: str = "auto"
    grep_timeout_s: float = DEFAULT_GREP_TIMEOUT_S
    # The thread this run belongs to, and the item of the call being run (set by the loop).
    thread_id: str = ""
    item_id: str = ""
    # The turn's model-call budget (set by the loop), for tools that make model calls.
    model_calls: CallBudget | None = None
    # The sub-agent runner, when the delegate tool is enabled.
    delegate: Delegator | None = None
    # The run's sandbox, its writable roots opened once (built when the run starts, else on
    # first use; shared with sub-agents' contexts).
    sandbox_policy: Policy | None = None

    def policy(self) -> Policy:
        """What the kernel lets this run's commands and file writes touch."""
        if self.sandbox_policy is None:
            self.sandbox_policy = Policy.build(self.sandbox, self.cwd, self.writable_roots,
                                               self.env, self.sandbox_network)
        return self.sandbox_policy

    def close(self) -> None:
        """The run is over: release what the sandbox policy holds open."""
        if self.sandbox_policy is not None:
            self.sandbox_policy.close()

    def resolve(self, path: str) -> Path:
        """Resolve a model-supplied path: absolute as given, relative against the workspace."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.cwd / p)

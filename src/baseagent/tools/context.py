"""What a tool may know about its run (`ToolContext`), handed in by the run that owns it,
with what it holds: the turn's model-call budget, the sub-agent runner, the thread's history
as a tool reads it. The contract a tool implements is tools/tool.py, below this module;
`ToolContext.shell()` runs the shell tool (tools/shell.py), which is why it sits above both.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Protocol, overload

from baseagent.cancellation import NEVER, CancelToken
from baseagent.sandbox import SandboxMode
from baseagent.sandbox.policy import Policy
from baseagent.tools.approval import Approvals
from baseagent.tools.procs import ProcessTracker
from baseagent.tools.tool import (DEFAULT_GREP_TIMEOUT_S, DEFAULT_SHELL_TIMEOUT_MS, TOOL_LOG,
                                  ToolResult)


class CallBudget:
    """Model calls left in the running turn. The loop spends one per step; a sub-agent's
    calls are spent from its parent's budget too, so delegating never multiplies the limit."""

    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self, calls: int = 1) -> None:
        self.left -= calls


class Delegator(Protocol):
    """Runs a sub-task in a child agent (core/delegation/delegate.py); on ToolContext when the
    delegate tool is enabled."""

    def run(self, task: str, tools: list[str] | None, max_iterations: int | None,
            ctx: "ToolContext") -> ToolResult: ...


class HistoryView(Sequence[Mapping[str, Any]]):
    """A thread's messages as a tool may read them: live (what the model has been sent so
    far, compaction included) and read-only (each message handed out is a copy)."""

    def __init__(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[Mapping[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [MappingProxyType(copy.deepcopy(dict(m))) for m in self._messages[index]]
        return MappingProxyType(copy.deepcopy(dict(self._messages[index])))

    def __repr__(self) -> str:
        return f"HistoryView({len(self)} messages)"


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
    # The run's cancellation (baseagent/cancellation.py), handed down by the loop: long
    # tools poll `ctx.cancelled()`.
    cancelled: CancelToken = NEVER
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
    # Who is asked before a command runs, and when (tools/approval.py); None: nobody, as
    # with approval policy `never`.
    approvals: Approvals | None = None
    # What the run is doing when the call runs (set by the loop for each call): the
    # running turn's instruction and the number of its model call (step) that made the call.
    instruction: str = ""
    step: int = 0
    # The thread's messages so far, read-only (a live view: each message a copy; set when
    # the run is built). A sub-agent's tools see the sub-agent's.
    history: Sequence[Mapping[str, Any]] = ()
    # The run's settings (config/settings.py AgentConfig; the API key left out). Read them;
    # changing them changes nothing.
    settings: Any = None
    # The longest output the model gets back from this tool, in characters (the settings'
    # tool_output_max_tokens, or the tool's own entry in tool_output_limits, x4; set by the
    # registry for each call). None: the tool's own cap.
    output_max_chars: int | None = None

    # -- helpers for tools -------------------------------------------------------------------

    def shell(self, command: str, *, workdir: str | None = None,
              timeout_ms: int | None = None) -> ToolResult:
        """Run `command` as the shell tool runs the model's (bash -c, in the workspace, under
        the run's sandbox, approvals, environment and cancellation; tracked so an interrupt
        ends it). The result's `item` holds `exit_code` and `aggregated_output`; `success`
        is exit code 0. Its output is not shown as an item of its own."""
        from baseagent.tools import shell as shell_tool

        args = shell_tool.Args(command=command, workdir=workdir, timeout_ms=timeout_ms)
        quiet = dataclasses.replace(self, progress=lambda _payload: None)
        return shell_tool.run(args, quiet)

    def log(self, message: str, level: int = logging.INFO) -> None:
        """A line for whoever watches the run (the `baseagent.tools` logger, with the thread
        and item ids), never for the model: what the tool returns is what the model reads."""
        TOOL_LOG.log(level, "%s", message, extra={"thread_id": self.thread_id,
                                                    "item_id": self.item_id,
                                                    "step": self.step})

    def done(self, output: str = "", *, metadata: Mapping[str, Any] | None = None,
             **item: Any) -> ToolResult:
        """The call succeeded: `output` for the model, `metadata` for the AgentB event
        (ToolResult.metadata), `item` fields for its event item."""
        return ToolResult(output=output, success=True, item=dict(item),
                          metadata=dict(metadata or {}))

    def fail(self, output: str, *, metadata: Mapping[str, Any] | None = None) -> ToolResult:
        """The call failed: `output` tells the model why (as raising ToolError does)."""
        return ToolResult(output=output, success=False, metadata=dict(metadata or {}))
    # Called before a call that may change the workspace runs (the registry calls it): the
    # turn's checkpoint is recorded at its first (checkpoints/; set by the Agent).
    before_change: Callable[[], None] = lambda: None
    # The run's secrets redacted from what a tool hands back, before it enters the history
    # the model is sent (output/redact.py: the run's Redactor.text); tools/registry.py
    # applies it to every result, whatever tool made it.
    redact: Callable[[str], str] = lambda text: text

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

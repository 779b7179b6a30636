"""The `delegate` tool: a sub-task handed to a child agent in this process.

The child is a Loop of its own, composed by core/assembly.py (`child_loop`): its own
history (a fresh context window: system prompt, environment, the task), the tools the parent
chose (read-only by default), and limits that come out of the parent's. It shares with the
parent what makes it part of the same run: the model client (so its usage adds into the
parent's, and the thread's cost limit counts both), the workspace, the sandbox, the
environment, the process tracker and the cancellation flag (cancelling the parent cancels
the child). Its final answer is the tool's result.

The call is one item whose progress carries the child's completed items (the engine's own,
core/events.py) as they happen, and its usage when it ends (`usage`); on the Codex wire it
is a `collab_tool_call` item (Codex's shape for a call that starts another agent) with
those items nested (`items`, mapped by output/codex.py).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Callable

from pydantic import BaseModel, Field

from baseagent.core import events as engine
from baseagent.core.ids import new_thread_id
from baseagent.core.loop import Loop, TurnInput, TurnOutcome
from baseagent.llm.errors import CostLimitError
from baseagent.llm.types import (ModelClientProtocol, ModelTurn, ProgressFn, UsageTotals,
                                 no_progress)
from baseagent.output.emitter import Emitter, EventListener
from baseagent.prompts.system import SUBAGENT_TASK
from baseagent.tools.tool import ModelTool, Tool, ToolContext, ToolError, ToolResult

NAME = "delegate"
# What a sub-agent gets when the parent does not choose: it can look, not change.
READ_ONLY_TOOLS = ("read_file", "grep_files", "list_dir")

DESCRIPTION = """\
Hand a self-contained sub-task to a sub-agent and get its final answer back. The sub-agent
starts with an empty context: it sees only `task` (include every path, name and detail it
needs), works in the same workspace with the tools you give it, and answers with its
findings. Use it for focused investigations (find where X is defined, read these files and
summarise Y) to keep your own context small. `tools` defaults to read-only tools
(read_file, grep_files, list_dir); give shell or file-editing tools only when the sub-task
needs them.
"""


class Args(BaseModel):
    task: str = Field(min_length=1, description="The sub-task, complete and self-contained.")
    tools: list[str] | None = Field(
        None, description="Names of your tools the sub-agent may use (default: read_file, "
                          "grep_files, list_dir).")
    max_iterations: int | None = Field(
        None, ge=1, description="Model calls the sub-agent may make (capped by the "
                                "configured limit and by what this turn has left).")


def delegate_tool() -> ModelTool:
    return ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=_run,
                     item_type="collab_tool_call")


def _run(args: Args, ctx: ToolContext) -> ToolResult:
    if ctx.delegate is None:
        raise ToolError("delegation is not available in this run")
    return ctx.delegate.run(args.task, args.tools, args.max_iterations, ctx)


# A child loop from its parts; core/assembly.py `child_loop` with the parent's settings bound.
ChildLoopFactory = Callable[..., Loop]


class Delegation:
    """Runs sub-tasks for one thread (it is the ToolContext's `delegate`)."""

    def __init__(self, *, build: ChildLoopFactory, client: ModelClientProtocol,
                 tools: Sequence[Tool], default_tools: Sequence[str] = READ_ONLY_TOOLS,
                 max_iterations: int = 20, cost_limit: float | None = None,
                 redact: Any = None) -> None:
        """tools: what the parent may hand on (its own tools minus delegate and the tools
        the caller runs). cost_limit: USD one sub-agent may spend."""
        self._build = build
        self._client = client
        self._tools = {t.name: t for t in tools}
        self._default = [n for n in default_tools if n in self._tools]
        self._max_iterations = max_iterations
        self._cost_limit = cost_limit
        self._redact = redact

    def run(self, task: str, tools: list[str] | None, max_iterations: int | None,
            ctx: ToolContext) -> ToolResult:
        toolset = self._toolset(tools)
        left = ctx.model_calls.left if ctx.model_calls is not None else self._max_iterations
        limit = min(max_iterations or self._max_iterations, self._max_iterations, left)
        if limit < 1:
            raise ToolError("no model calls are left in this turn for a sub-agent")
        child_id = new_thread_id()  # a thread id like any other (UUIDv7)
        nest = _Nest(ctx.progress, child_id)
        emitter = Emitter([nest], redact=self._redact, item_prefix=f"{ctx.item_id}.")
        child_ctx = dataclasses.replace(ctx, thread_id=child_id, item_id="", model_calls=None,
                                        delegate=None, progress=lambda _payload: None)
        client = _CappedClient(self._client, self._cost_limit) \
            if self._cost_limit is not None else self._client
        loop = self._build(client=client, tools=[self._tools[n] for n in toolset],
                           emitter=emitter, tool_context=child_ctx, max_iterations=limit)
        before = dataclasses.replace(self._client.totals)
        outcome = loop.run_turn(TurnInput(task, content=SUBAGENT_TASK.format(
            tools=", ".join(toolset) or "none", task=task)))
        if ctx.model_calls is not None:
            ctx.model_calls.spend(loop.calls_made)
        return nest.result(outcome, _spent(before, self._client.totals))

    def _toolset(self, names: list[str] | None) -> list[str]:
        if names is None:
            return list(self._default)
        unknown = [n for n in names if n not in self._tools]
        if unknown:
            raise ToolError(f"a sub-agent cannot be given {', '.join(unknown)}; choose from: "
                            f"{', '.join(self._tools)}")
        return list(dict.fromkeys(names))


class _Nest(EventListener):
    """The child's event listener: its completed items (engine items, redacted) go into the
    parent's delegate item. Every update carries the item's whole state (progress applies
    to the started item)."""

    run_events = True

    def __init__(self, progress: Callable[[dict[str, Any]], None], child_id: str) -> None:
        self._progress = progress
        self._child_id = child_id
        self._items: list[engine.Item] = []
        self._update()

    def emit(self, event: Any) -> None:
        """The child's Codex events: not needed (its engine events are)."""

    def run_event(self, event: engine.RunEvent) -> None:
        if isinstance(event, engine.ItemCompleted):
            self._items.append(event.item)
            self._update()

    def _update(self) -> None:
        self._progress({"receiver_thread_ids": [self._child_id],
                        "agents_states": {self._child_id: {"status": "running"}},
                        "items": list(self._items)})

    def result(self, outcome: TurnOutcome, usage: dict[str, int]) -> ToolResult:
        state = {"completed": "completed", "interrupted": "interrupted"}.get(
            outcome.status, "errored")
        message = outcome.final_message if outcome.status == "completed" else outcome.error
        item = {"receiver_thread_ids": [self._child_id],
                "agents_states": {self._child_id: {"status": state, "message": message}},
                "items": list(self._items), "usage": usage}
        if outcome.status == "completed":
            return ToolResult(output=outcome.final_message or "(the sub-agent gave no answer)",
                              item=item)
        return ToolResult(output=f"Error: the sub-agent did not finish ({outcome.status}): "
                                 f"{outcome.error}", success=False, item=item)


class _CappedClient:
    """The parent's model client with a spending cap for one sub-agent: the call that would
    start past the cap is not made."""

    def __init__(self, inner: ModelClientProtocol, cap: float) -> None:
        self._inner = inner
        self._cap = cap
        self._start = inner.totals.cost_usd

    @property
    def totals(self) -> UsageTotals:
        return self._inner.totals

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 on_progress: ProgressFn = no_progress,
                 estimated_input_tokens: int = 0) -> ModelTurn:
        spent = self._inner.totals.cost_usd - self._start
        if spent >= self._cap:
            raise CostLimitError(f"the sub-agent's cost limit (${self._cap:g}) is reached: it "
                                 f"spent ${spent:.4f}")
        return self._inner.complete(messages, tools, on_progress,
                                    estimated_input_tokens=estimated_input_tokens)


def _spent(before: UsageTotals, after: UsageTotals) -> dict[str, int]:
    """What the child spent, in the keys of the thread's usage (the others are 0)."""
    return {"input_tokens": after.input_tokens - before.input_tokens,
            "cached_input_tokens": after.cached_input_tokens - before.cached_input_tokens,
            "cache_write_input_tokens": 0,
            "output_tokens": after.output_tokens - before.output_tokens,
            "reasoning_output_tokens": 0}

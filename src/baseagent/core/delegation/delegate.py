"""The `delegate` tool: a sub-task handed to a child agent in this process.

The child is a Loop of its own, composed by compose/ (`child_loop`): its own
history (a fresh context window: system prompt, environment, the task), the tools the parent
chose (read-only by default), and limits that come out of the parent's. It shares with the
parent what makes it part of the same run: the model client (so its usage adds into the
parent's, and the thread's cost limit counts both), the workspace, the sandbox, the
environment, the process tracker and the cancellation flag (cancelling the parent cancels
the child). Its final answer is the tool's result.

The call is one item whose progress carries the child's completed items (the engine's own,
emitting/events.py) as they happen, and its usage when it ends (`usage`); on the Codex wire it
is a `collab_tool_call` item (Codex's shape for a call that starts another agent) with
those items nested (`items`, mapped by output/codex.py).

Named specialists (`delegate_to_specialist`, core/delegation/specialists.py) run through the same
`Delegation`: `run_specialist` starts the same child with the tools, limit and system prompt
the configuration gave the specialist, and with its own model's client when it has one
(`SharedTotals`: its usage still counts in the thread's).
"""
from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, Field

from baseagent.emitting import events as engine
from baseagent.core.ids import new_thread_id
from baseagent.core.loop import Loop, TurnInput, TurnOutcome
from baseagent.llm.errors import CostLimitError
from baseagent.llm.types import (ModelClientProtocol, ModelTurn, ProgressFn, UsageTotals,
                                 no_progress)
from baseagent.emitting.interface import EventListener, NewEmitter
from baseagent.prompts.system import OUTPUT_FORMAT, SUBAGENT_TASK
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, Tool, ToolError, ToolResult

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


# A child loop from its parts; compose/loops.py `child_loop` with the parent's settings bound.
ChildLoopFactory = Callable[..., Loop]


@dataclass
class SpecialistRun:
    """What starts one named specialist (core/delegation/specialists.py): its tools, its limit, its
    system prompt, and, when it has a model of its own, a maker of that model's client and
    the child_loop options for that model (its settings and route)."""

    name: str
    tools: list[Tool]
    max_iterations: int
    system: str
    client: Callable[[], ModelClientProtocol] | None = None
    loop_options: dict[str, Any] = field(default_factory=dict)


class Delegation:
    """Runs sub-tasks for one thread (it is the ToolContext's `delegate`): the generic
    `delegate` tool's, and the named specialists' (`delegate_to_specialist`)."""

    def __init__(self, *, build: ChildLoopFactory, client: ModelClientProtocol,
                 tools: Sequence[Tool], default_tools: Sequence[str] = READ_ONLY_TOOLS,
                 max_iterations: int = 20, cost_limit: float | None = None,
                 new_emitter: NewEmitter,
                 specialists: Mapping[str, SpecialistRun] | None = None) -> None:
        """tools: what the parent may hand on (its own tools minus delegate and the tools
        the caller runs). cost_limit: USD one sub-agent may spend. new_emitter: makes a
        sub-agent's emitter (its listeners, its item-id prefix), redacting as the run's."""
        self._build = build
        self._client = client
        self._tools = {t.name: t for t in tools}
        self._default = [n for n in default_tools if n in self._tools]
        self._max_iterations = max_iterations
        self._cost_limit = cost_limit
        self._new_emitter = new_emitter
        self._specialists = dict(specialists or {})
        self._own_clients: dict[str, ModelClientProtocol] = {}
        self._lock = threading.Lock()

    def run(self, task: str, tools: list[str] | None, max_iterations: int | None,
            ctx: ToolContext) -> ToolResult:
        """The generic delegate tool: the model chose the tools and the task."""
        toolset = self._toolset(tools)
        return self._child(ctx, task, SUBAGENT_TASK.format(
            tools=", ".join(toolset) or "none", task=task),
            [self._tools[n] for n in toolset],
            min(max_iterations or self._max_iterations, self._max_iterations))

    def run_specialist(self, name: str, sub_task: str, output_format: str | None,
                       ctx: ToolContext) -> ToolResult:
        """delegate_to_specialist: the configuration chose the tools, limit and model."""
        spec = self._specialists.get(name)
        if spec is None:  # the tool's schema only takes known names; a direct call may not
            raise ToolError(f"no specialist is named {name!r}; choose from: "
                            f"{', '.join(self._specialists) or 'none'}")
        content = SUBAGENT_TASK.format(tools=", ".join(t.name for t in spec.tools) or "none",
                                       task=sub_task)
        if output_format:
            content += OUTPUT_FORMAT.format(format=output_format.strip())
        return self._child(ctx, sub_task, content, spec.tools, spec.max_iterations,
                           client=self._client_of(spec), system=spec.system,
                           **spec.loop_options)

    def close(self) -> None:
        """Close the clients made for specialists with a model of their own."""
        with self._lock:
            clients, self._own_clients = list(self._own_clients.values()), {}
        for client in clients:
            client.close()  # the direct path's connection

    def _client_of(self, spec: SpecialistRun) -> ModelClientProtocol:
        if spec.client is None:
            return self._client
        with self._lock:
            if spec.name not in self._own_clients:
                self._own_clients[spec.name] = spec.client()
            return self._own_clients[spec.name]

    def _child(self, ctx: ToolContext, task: str, content: str, tools: Sequence[Tool],
               wanted: int, *, client: ModelClientProtocol | None = None,
               system: str | None = None, **loop_options: Any) -> ToolResult:
        """Run one child loop on `content` (its first message) with `tools`, at most `wanted`
        model calls and never more than this turn has left."""
        left = ctx.model_calls.left if ctx.model_calls is not None else self._max_iterations
        limit = min(wanted, left)
        if limit < 1:
            raise ToolError("no model calls are left in this turn for a sub-agent")
        child_id = new_thread_id()  # a thread id like any other (UUIDv7)
        nest = _Nest(ctx.progress, child_id)
        emitter = self._new_emitter([nest], f"{ctx.item_id}.")
        child_ctx = dataclasses.replace(ctx, thread_id=child_id, item_id="", model_calls=None,
                                        delegate=None, progress=lambda _payload: None)
        client = client or self._client
        if self._cost_limit is not None:
            client = _CappedClient(client, self._cost_limit)
        loop = self._build(client=client, tools=list(tools), emitter=emitter,
                           tool_context=child_ctx, max_iterations=limit, system=system,
                           **loop_options)
        before = dataclasses.replace(self._client.totals)
        outcome = loop.run_turn(TurnInput(task, content=content))
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
                 estimated_input_tokens: int = 0, **options: Any) -> ModelTurn:
        spent = self._inner.totals.cost_usd - self._start
        if spent >= self._cap:
            raise CostLimitError(f"the sub-agent's cost limit (${self._cap:g}) is reached: it "
                                 f"spent ${spent:.4f}")
        return self._inner.complete(messages, tools, on_progress,
                                    estimated_input_tokens=estimated_input_tokens, **options)


class SharedTotals:
    """A specialist's own model client whose usage also counts in the thread's (the
    parent client's totals: turn.completed, RunResult.usage, the record), and which makes
    no call once the thread's `cost_limit` is spent."""

    def __init__(self, inner: ModelClientProtocol, thread: ModelClientProtocol,
                 cost_limit: float | None) -> None:
        self._inner = inner
        self._thread = thread
        self._cost_limit = cost_limit

    @property
    def totals(self) -> UsageTotals:
        return self._thread.totals

    def bind_cancel(self, cancelled: Any) -> None:
        self._inner.bind_cancel(cancelled)

    def close(self) -> None:
        self._inner.close()

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 on_progress: ProgressFn = lambda _t, _r: None,
                 estimated_input_tokens: int = 0, **options: Any) -> ModelTurn:
        spent = self._thread.totals
        if self._cost_limit is not None and spent.cost_known \
                and spent.cost_usd >= self._cost_limit:
            raise CostLimitError(f"cost limit reached: spent ${spent.cost_usd:.4f} of "
                                 f"${self._cost_limit:g}")
        turn = self._inner.complete(messages, tools, on_progress,
                                    estimated_input_tokens=estimated_input_tokens, **options)
        self._thread.totals.add(turn.usage)
        return turn


def _spent(before: UsageTotals, after: UsageTotals) -> dict[str, int]:
    """What the child spent, in the keys of the thread's usage (the others are 0)."""
    return {"input_tokens": after.input_tokens - before.input_tokens,
            "cached_input_tokens": after.cached_input_tokens - before.cached_input_tokens,
            "cache_write_input_tokens": 0,
            "output_tokens": after.output_tokens - before.output_tokens,
            "reasoning_output_tokens": 0}

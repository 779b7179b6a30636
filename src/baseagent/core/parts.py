"""The engine's replaceable parts, as protocols a library caller implements.

    from baseagent import Agent, AgentLoop, ContextPolicy, LoopParts, ToolExecutor

    Agent(context_policy=MyCompaction(), tool_executor=MyExecutor(), loop=my_loop_factory)

- `ContextPolicy` (core/loop.py): what the loop sends the model and how it shrinks the
  history when the provider says it is too long. Default: `core/compaction.Compactor`
  (prune old tool outputs, then summarise; cache markers).
- `ToolExecutor` (tools/registry.py): how a validated tool call runs. The registry still
  validates the arguments, turns any exception into an error result and caps the output;
  the executor only decides how `tool.run(args, ctx)` is called (in a container, with a
  log, with a timeout of your own). Default: `DirectExecutor`, the call as it is.
- `AgentLoop` (below): the loop itself (AgentB's IAgent: the facade picks an
  implementation). `Agent(loop=factory)`: `factory(parts: LoopParts) -> AgentLoop`, called
  once when the thread connects to its model; `parts.default()` is baseagent's own loop
  over the same parts, for a factory that wraps or subclasses it.

A replacement talks to the rest through the same objects the default does: it emits the
engine's events (emitting/events.py) through `parts.emitter`, calls tools through
`parts.registry.prepare()` / `.execute()`, the model through `parts.client.complete()`,
and appends to `parts.history` (recording each message with `parts.session.message()` when
the thread is recorded). Every turn must end with exactly one `TurnEnded` event; the Agent
adds one if the loop raises (docs/LIBRARY.md, "Replacing the engine's parts").
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

from baseagent.core.loop import ContextPolicy, TurnInput, TurnOutcome
from baseagent.tools.registry import DirectExecutor, ToolExecutor

if TYPE_CHECKING:
    from baseagent.cancellation import CancelToken
    from baseagent.records.pending import Paused
    from baseagent.llm.types import ModelClientProtocol
    from baseagent.emitting.interface import EventEmitter
    from baseagent.tools.registry import ToolRegistry
    from baseagent.tools.context import ToolContext


@runtime_checkable
class AgentLoop(Protocol):
    """What the Agent needs of a loop: one turn at a time, on the thread's history."""

    # The thread's messages (the list the parts hand in: keep appending to it).
    history: list[dict[str, Any]]
    # A turn waiting for the caller's tool outputs, or None (records/pending.py).
    paused: Paused | None

    def run_turn(self, turn: TurnInput) -> TurnOutcome:
        """Work on one instruction (`turn.text`, `turn.message_content`): emit TurnStarted,
        the items, then one TurnEnded; return how it ended."""
        ...

    def continue_turn(self, outputs: Mapping[str, str]) -> TurnOutcome:
        """Continue the paused turn with the caller's tool outputs (call id -> text)."""
        ...


@dataclass
class LoopParts:
    """What a loop is built from (compose/builder.py connect)."""

    settings: Any  # config/settings.py AgentConfig
    client: ModelClientProtocol
    registry: ToolRegistry
    emitter: EventEmitter
    tool_context: ToolContext
    history: list[dict[str, Any]]
    context_policy: ContextPolicy
    session: Any  # records/recorder.SessionRecorder, or None when nothing is recorded
    cancelled: CancelToken
    thread_id: str
    paused: Paused | None
    # baseagent's own loop over these parts (core/loop.py Loop).
    default: Callable[[], AgentLoop]


LoopFactory = Callable[[LoopParts], AgentLoop]

__all__ = ["AgentLoop", "ContextPolicy", "DirectExecutor", "LoopFactory", "LoopParts",
           "ToolExecutor", "TurnInput", "TurnOutcome"]

"""What a turn of the library Agent hands back: `RunResult` and its `Usage`.

Plain data, apart from the Agent (agent.py) so that what a caller reads is found in one short
module; `baseagent.RunResult` and `baseagent.Usage` are these.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from baseagent.core.loop import Status
from baseagent.llm.types import UsageTotals
from baseagent.output import events as ev



@dataclass(frozen=True)
class Usage:
    """Tokens and cost. `cost_usd` is None when litellm has no price for the model."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0

    @classmethod
    def of(cls, totals: UsageTotals) -> "Usage":
        return cls(totals.input_tokens, totals.cached_input_tokens, totals.output_tokens,
                   totals.cost_usd if totals.cost_known else None)

    def minus(self, earlier: "Usage") -> "Usage":
        cost = None if self.cost_usd is None or earlier.cost_usd is None \
            else round(self.cost_usd - earlier.cost_usd, 10)
        return Usage(self.input_tokens - earlier.input_tokens,
                     self.cached_input_tokens - earlier.cached_input_tokens,
                     self.output_tokens - earlier.output_tokens, cost)


@dataclass
class RunResult:
    """How one turn ended.

    status: completed | failed (model error, cut-off answer) | interrupted (cancel()) |
    limit (max iterations, cost limit, output token limit) | requires_action (the model
    called tools the caller runs: `pending_tool_calls`; continue with
    `Agent.submit_tool_outputs`). `usage` is this turn's; `total_usage` the thread's so far
    (what `turn.completed` reports).
    """

    status: Status
    thread_id: str
    final_message: str | None = None
    items: list[ev.ThreadItem] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    total_usage: Usage = field(default_factory=Usage)
    error: str | None = None
    pending_tool_calls: list[ev.PendingToolCall] = field(default_factory=list)
    # What was raised inside the run when it failed unexpectedly (a bug in an injected
    # model client, loop or executor): the turn ended `failed` with a final event naming
    # it (`error`), and the exception is kept here for the caller to re-raise or log.
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "completed"


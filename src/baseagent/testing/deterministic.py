"""A model client that plays canned turns in-process: the loop without HTTP or litellm.

    from baseagent import Agent
    from baseagent.testing.deterministic import DeterministicClient

    model = DeterministicClient([
        {"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
        {"content": "Done."},
        {"content": "Verified."},
    ])
    result = Agent(model_client=model, cwd=repo, session=False).run("list the files")

Steps use the scripted server's answer keys (content, reasoning, tool_calls, finish_reason,
usage), so one script drives both. A step may also be an exception instance (raised from
complete(), e.g. a ModelError), a ModelTurn, or a callable `step(messages) -> step`. The
client records every request's messages, and honours the run's cancellation through
`delay` (seconds to "think", checked against the flag the run binds with `bind_cancel`).
"""
from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterable
from typing import Any

from baseagent.cancellation import NEVER, CancelToken
from baseagent.llm.errors import ModelError, ModelInterrupted
from baseagent.llm.types import (ENOUGH_FINISH, CallUsage, EnoughText, ModelTurn,
                                 ProgressFn, ToolCall, UsageTotals, no_progress)

Step = Any  # dict | ModelTurn | BaseException | Callable[[list[dict]], Any]
# How often a delayed step looks at the cancellation flag.
POLL_SECONDS = 0.01


class DeterministicClient:
    def __init__(self, steps: Iterable[Step], *, chars_per_token: int = 4) -> None:
        self._steps = list(steps)
        self._lock = threading.Lock()
        self._next = 0
        self.chars_per_token = chars_per_token
        self.totals = UsageTotals()
        self.requests: list[list[dict[str, Any]]] = []
        self.tools_seen: list[list[dict[str, Any]] | None] = []
        self.tool_choices: list[Any] = []  # per request; None when the run sent none
        self.temperatures: list[float | None] = []  # per request: the call's own, or None
        self.cancelled: CancelToken = NEVER

    def bind_cancel(self, cancelled: CancelToken) -> None:
        """Called by the composition root with the run's cancellation."""
        self.cancelled = cancelled

    def close(self) -> None:
        """Nothing to release: no connection is held."""

    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def remaining(self) -> int:
        return len(self._steps) - self._next

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 on_progress: ProgressFn = no_progress,
                 estimated_input_tokens: int = 0, tool_choice: Any = None,
                 temperature: float | None = None) -> ModelTurn:
        with self._lock:
            self.requests.append(copy.deepcopy(messages))
            self.tools_seen.append(tools)
            self.tool_choices.append(tool_choice)
            self.temperatures.append(temperature)
            if self._next >= len(self._steps):
                raise ModelError(f"deterministic client: script exhausted after "
                                 f"{len(self._steps)} steps")
            step = self._steps[self._next]
            self._next += 1
        if callable(step) and not isinstance(step, (ModelTurn, BaseException)):
            step = step(messages)
        if isinstance(step, BaseException):
            raise step
        turn = step if isinstance(step, ModelTurn) else self._turn(step, messages, on_progress)
        self.totals.add(turn.usage)
        return turn

    def _turn(self, step: dict[str, Any], messages: list[dict[str, Any]],
              on_progress: ProgressFn) -> ModelTurn:
        self._wait(float(step.get("delay", 0)))
        text = step.get("content") or ""
        reasoning = step.get("reasoning") or ""
        enough = None
        if text or reasoning:
            try:
                on_progress(text, reasoning)
            except EnoughText as stop:  # the reader stopped the answer there
                text, enough = text[:max(0, stop.keep)], ENOUGH_FINISH
        calls = [ToolCall(id=c.get("id", f"call_{self.calls}_{i}"), name=c["name"],
                          arguments=c["arguments"] if isinstance(c["arguments"], str)
                          else json.dumps(c["arguments"]))
                 for i, c in enumerate(step.get("tool_calls") or [])]
        if enough is not None:
            calls = []
        finish = enough or step.get("finish_reason") or ("tool_calls" if calls else "stop")
        usage = step.get("usage") or {}
        prompt = len(json.dumps(messages)) // self.chars_per_token
        return ModelTurn(text=text, reasoning=reasoning, tool_calls=calls, finish_reason=finish,
                         usage=CallUsage(
                             input_tokens=int(usage.get("prompt_tokens", prompt)),
                             cached_input_tokens=int(usage.get("cached_tokens", 0)),
                             output_tokens=int(usage.get("completion_tokens",
                                                         len(text) // self.chars_per_token + 1)),
                             cost_usd=usage.get("cost_usd", 0.0)))

    def _wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.cancelled():
                raise ModelInterrupted("interrupted")
            time.sleep(POLL_SECONDS)
        if self.cancelled():
            raise ModelInterrupted("interrupted")

"""What a help may see and do during a turn: the loop's side of helps/contract.py's
`TurnContext`, apart from the loop's own steps so core/loop.py reads as the flowchart.

`Loop` inherits these; they read the loop's state (the running turn, the history, the
tools, the emitter) and act through the loop's own steps (`_step`, `_calls`, `_observe`),
so a help's model call or tool call is the same as the loop's own, item for item.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from baseagent.core.repeats import RepeatedCalls
from baseagent.core.streaming import text_item
from baseagent.core.verification.evidence import Evidence, repository_notes
from baseagent.emitting import events as engine
from baseagent.helps.contract import Enough
from baseagent.llm.types import ModelTurn, ToolCall
from baseagent.tools.tool import ToolResult


class HelpActions:
    """TurnContext's properties and actions, mixed into `Loop`: they use its attributes
    (`_state`, `_budget`, `_calls`, `tool_context`, `registry`, `emitter`, `history`) and
    steps (`_step`, `_observe`, `_stop_if_cancelled`, `append`)."""

    @property
    def task(self) -> str:
        assert self._state is not None
        return self._state.input.text

    @property
    def cwd(self) -> Path:
        return self.tool_context.cwd

    @property
    def evidence(self) -> Evidence:
        assert self._state is not None
        return self._state.evidence

    @property
    def calls_left(self) -> int:
        return self._budget.left

    def has_tool(self, name: str) -> bool:
        return self.registry.get(name) is not None

    def notice(self, text: str) -> None:
        self.emitter.notice(text)

    def restart_evidence(self) -> None:
        assert self._state is not None
        self._state.evidence = Evidence.for_turn(self.task, repository_notes(self.history))
        self._state.repeats = RepeatedCalls()

    def ask_alone(self, messages: list[dict[str, Any]], notice: str,
                  max_chars: int | None = None,
                  temperature: float | None = None,
                  enough: Enough | None = None) -> ModelTurn:
        self._stop_if_cancelled()
        self.emitter.notice(notice)
        return self._step(messages, max_chars, temperature, enough)

    def run_in_copy(self, command: str, copy: Path,
                    timeout_s: float) -> tuple[int | None, str]:
        from baseagent.tools.confined import run_confined

        context = self.tool_context
        done = run_confined(["/bin/sh", "-c", command], cwd=copy, env=context.env,
                            timeout=timeout_s, mode=context.sandbox,
                            network=context.sandbox_network)
        if done is None:
            return None, ""
        return done.returncode, done.stdout + done.stderr

    def run_quiet(self, call: ToolCall) -> tuple[ToolResult, str]:
        prepared = self.registry.prepare(call.name, call.arguments)
        result = self._calls.run(call, prepared, self._budget)
        return result, self._observe(call, prepared, result)

    def say(self, text: str) -> None:
        item = text_item("agent_message", self.emitter.new_item_id(), text)
        self.emitter.send(engine.ItemStarted(item))
        self.emitter.send(engine.ItemCompleted(item))
        self.append({"role": "assistant", "content": text})

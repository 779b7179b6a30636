"""The observe → think → act loop, one function per phase.

The loop owns the message history and the iteration. It knows nothing about HTTP, SSE,
terminals or file formats: it talks to a model client, a ToolRegistry, an Emitter and
(optionally) a context policy and a session record, all handed in by the composition root
(core/assembly.py). Every way out of a turn other than a final answer is an exception,
so the loop body carries no flags.
"""
from __future__ import annotations

import dataclasses
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Literal, Protocol

from baseagent.core.interrupt import RunInterrupted
from baseagent.core.items import completed_item, started_item, updated_item
from baseagent.llm.errors import ContextOverflowError, CostLimitError, ModelError, ModelInterrupted
from baseagent.llm.types import ModelClientProtocol, ModelTurn, ToolCall
from baseagent.output import events as ev
from baseagent.output.emitter import Emitter
from baseagent.prompts.system import VERIFICATION_PROMPT
from baseagent.tools.base import ToolContext, ToolResult
from baseagent.tools.registry import ToolRegistry

# Streaming text updates are throttled: consumers need liveness, not one event per token.
STREAM_UPDATE_INTERVAL_S = 0.05
# How many times one call may be retried after compacting for a context-window error.
MAX_OVERFLOW_RECOVERIES = 3
# Finish reasons that mean the answer is not the model's whole answer.
CUT_OFF_REASONS = {
    "length": "the model's answer was cut off at the output token limit (finish_reason "
              "'length'); raise --max-tokens or ask for a shorter answer",
    "content_filter": "the provider's content filter stopped the model's answer "
                      "(finish_reason 'content_filter')",
}

Status = Literal["completed", "failed", "interrupted", "limit"]


@dataclass
class TurnOutcome:
    status: Status
    final_message: str | None = None
    error: str | None = None


class FinalCheck(Protocol):
    """Holds the final answer to a requirement (exec's --output-schema): one correction
    round, then the turn fails with `failure(problem)`."""

    def problem(self, answer: str) -> str | None: ...

    def correction(self, problem: str) -> str: ...

    def failure(self, problem: str) -> str: ...


@dataclass(frozen=True)
class TurnInput:
    """One turn's instruction: the text the verification reminder restates, what the user
    message carries (the text, or the text with image parts), and an optional final check."""

    text: str
    content: str | list[dict[str, Any]] | None = None
    final_check: FinalCheck | None = None

    @property
    def message_content(self) -> str | list[dict[str, Any]]:
        return self.text if self.content is None else self.content


class ContextPolicy(Protocol):
    """Compaction and caching (core/compaction.py) as the loop sees them."""

    def prepare(self, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """Compact `history` in place if needed; return (messages to send, estimated tokens)."""

    def on_overflow(self, history: list[dict[str, Any]], attempt: int) -> None:
        """The provider rejected the prompt as too long: shrink `history` in place, harder."""


class HistorySink(Protocol):
    def message(self, message: dict[str, Any]) -> None: ...


class _PassThrough:
    """No context management: send the history as it is."""

    def prepare(self, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        return history, 0

    def on_overflow(self, history: list[dict[str, Any]], attempt: int) -> None:
        raise ContextOverflowError("the prompt is too long and no compaction is configured")


class TurnEnded(Exception):
    """A way out of a turn other than a final answer (a limit, a cut-off answer)."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status


class Loop:
    def __init__(self, *, client: ModelClientProtocol, registry: ToolRegistry, emitter: Emitter,
                 tool_context: ToolContext, history: list[dict[str, Any]],
                 max_iterations: int = 200, verify: bool = True,
                 context: ContextPolicy | None = None, session: HistorySink | None = None,
                 cancelled: Callable[[], bool] = lambda: False,
                 cancel_reason: Callable[[], str] = lambda: "interrupted",
                 tool_choice: str | None = None) -> None:
        self.client = client
        self.registry = registry
        self.emitter = emitter
        self.tool_context = tool_context
        self.history = history
        self.max_iterations = max_iterations
        self.verify = verify
        self.context = context or _PassThrough()
        self.session = session
        self.cancelled = cancelled
        self.cancel_reason = cancel_reason
        self.tool_choice = tool_choice
        self._calls_left = max_iterations
        self._tool_called = False

    # -- the turn ----------------------------------------------------------------------------

    def run_turn(self, turn: TurnInput | str) -> TurnOutcome:
        """One user instruction, worked to completion; always ends with turn.completed/failed."""
        if isinstance(turn, str):
            turn = TurnInput(turn)
        self.emitter.turn_started()
        self._append({"role": "user", "content": turn.message_content})
        self._calls_left = self.max_iterations
        self._tool_called = False
        try:
            final = self._work(turn)
        except (RunInterrupted, ModelInterrupted):
            return self._fail("interrupted", f"interrupted ({self.cancel_reason()})")
        except CostLimitError as exc:
            return self._fail("limit", str(exc))
        except TurnEnded as exc:
            return self._fail(exc.status, str(exc))
        except ModelError as exc:
            return self._fail("failed", str(exc))
        totals = self.client.totals
        self.emitter.turn_completed(totals.input_tokens, totals.cached_input_tokens,
                                    totals.output_tokens)
        return TurnOutcome("completed", final_message=final)

    def _fail(self, status: Status, message: str) -> TurnOutcome:
        self.emitter.turn_failed(message)
        return TurnOutcome(status, error=message)

    def _work(self, turn: TurnInput) -> str:
        final = self._until_answer(turn.text, verify=self.verify)
        check = turn.final_check
        if check is None or (problem := check.problem(final)) is None:
            return final
        self._append({"role": "user", "content": check.correction(problem)})
        final = self._until_answer(turn.text, verify=False)  # a correction, not another review
        problem = check.problem(final)
        if problem is not None:
            raise ModelError(check.failure(problem))
        return final

    def _until_answer(self, instruction: str, verify: bool) -> str:
        """Step until the model answers without tool calls (after one verification round
        when `verify`); returns that answer."""
        verified = not verify
        while True:
            turn = self._step()
            if turn.tool_calls:
                continue
            if turn.finish_reason in CUT_OFF_REASONS:
                raise TurnEnded("limit" if turn.finish_reason == "length" else "failed",
                                CUT_OFF_REASONS[turn.finish_reason])
            if not verified:
                verified = True
                self._append({"role": "user",
                              "content": VERIFICATION_PROMPT.format(instruction=instruction)})
                continue
            return turn.text

    def _step(self) -> ModelTurn:
        """One observe → think → act round; returns what the model said."""
        self._stop_if_cancelled()
        if self._calls_left <= 0:
            raise TurnEnded("limit", f"max iterations reached ({self.max_iterations} model "
                                     "calls) before the task was finished")
        self._calls_left -= 1
        turn = self._think()
        if turn.tool_calls:
            self._act(turn.tool_calls)
        return turn

    # -- phases ------------------------------------------------------------------------------

    def _stop_if_cancelled(self) -> None:
        if self.cancelled():
            raise RunInterrupted()

    def _think(self) -> ModelTurn:
        """Call the model (streaming), emitting reasoning and message items as text arrives."""
        stream = _StreamItems(self.emitter)
        try:
            for attempt in range(MAX_OVERFLOW_RECOVERIES + 1):
                messages, estimate = self.context.prepare(self.history)
                try:
                    turn = self.client.complete(messages, self.registry.specs(),
                                                stream.progress, estimated_input_tokens=estimate,
                                                **self._choice())
                    break
                except ContextOverflowError:
                    if attempt == MAX_OVERFLOW_RECOVERIES:
                        raise
                    self.context.on_overflow(self.history, attempt + 1)
        except BaseException:
            stream.abandon()
            raise
        stream.finish(turn.text, turn.reasoning)
        for call in turn.tool_calls:
            if not call.id:
                call.id = f"call_{uuid.uuid4().hex[:24]}"
        self._append(_history_message(turn))
        return turn

    def _choice(self) -> dict[str, Any]:
        """The `tool_choice` of the next call, as a keyword (none at all when unset, so any
        model client works). `required` or a tool's name holds until the model has called a
        tool in this turn, then the model chooses freely: forcing every call would never let
        it answer (the OpenAI Agents SDK resets it the same way)."""
        choice = self.tool_choice
        if choice is None or not self.registry.specs():
            return {}
        if choice in ("auto", "none"):
            return {"tool_choice": choice}
        if self._tool_called:
            return {"tool_choice": "auto"}
        if choice == "required":
            return {"tool_choice": "required"}
        return {"tool_choice": {"type": "function", "function": {"name": choice}}}

    def _act(self, calls: list[ToolCall]) -> None:
        """Run each tool call in order; every call gets exactly one tool message back."""
        self._tool_called = True
        for index, call in enumerate(calls):
            if self.cancelled():
                for skipped in calls[index:]:
                    self._append(_tool_message(skipped.id, "Error: not run: the run was interrupted"))
                raise RunInterrupted()
            result = self._run_tool(call)
            self._append(_tool_message(call.id, result.output))
        self._stop_if_cancelled()

    def _run_tool(self, call: ToolCall) -> ToolResult:
        prepared = self.registry.prepare(call.name, call.arguments)
        item_id = self.emitter.new_item_id()
        started = started_item(item_id, prepared, self.tool_context)
        self.emitter.emit(ev.ItemStarted(item=started))

        def progress(payload: dict[str, Any]) -> None:
            self.emitter.emit(ev.ItemUpdated(item=updated_item(started, payload)))

        ctx = dataclasses.replace(self.tool_context, progress=progress, cancelled=self.cancelled)
        result = self.registry.execute(prepared, ctx)
        self.emitter.emit(ev.ItemCompleted(
            item=completed_item(started, result, interrupted=self.cancelled())))
        if result.item.get("diff"):
            self.emitter.detail(item_id, result.item["diff"])
        return result

    # -- history -----------------------------------------------------------------------------

    def _append(self, message: dict[str, Any]) -> None:
        self.history.append(message)
        if self.session is not None:
            self.session.message(message)


class _StreamItems:
    """Turns streamed text into reasoning / agent_message item events, throttled.

    Every item it starts it also completes, whatever happens to the call: a consumer that
    saw `item.started` must see `item.completed`, even when the call then fails."""

    def __init__(self, emitter: Emitter) -> None:
        self.emitter = emitter
        self.ids: dict[str, str] = {}
        self.latest: dict[str, str] = {}
        self.last_sent = 0.0

    def progress(self, text: str, reasoning: str) -> None:
        now = time.monotonic()
        throttled = now - self.last_sent < STREAM_UPDATE_INTERVAL_S
        for kind, value in (("reasoning", reasoning), ("agent_message", text)):
            if not value:
                continue
            self.latest[kind] = value
            if kind not in self.ids:
                self.ids[kind] = self.emitter.new_item_id()
                self.emitter.emit(ev.ItemStarted(item=_text_item(kind, self.ids[kind], value)))
            elif not throttled:
                self.emitter.emit(ev.ItemUpdated(item=_text_item(kind, self.ids[kind], value)))
        if not throttled:
            self.last_sent = now

    def finish(self, text: str, reasoning: str) -> None:
        """Complete the items with the final text; start-and-complete any never streamed."""
        for kind, value in (("reasoning", reasoning), ("agent_message", text)):
            if kind in self.ids:
                self.emitter.emit(ev.ItemCompleted(item=_text_item(kind, self.ids.pop(kind), value)))
            elif value.strip():
                item_id = self.emitter.new_item_id()
                self.emitter.emit(ev.ItemCompleted(item=_text_item(kind, item_id, value)))

    def abandon(self) -> None:
        """The call failed: close what was started with the text streamed so far."""
        for kind, item_id in list(self.ids.items()):
            self.emitter.emit(ev.ItemCompleted(
                item=_text_item(kind, item_id, self.latest.get(kind, ""))))
        self.ids.clear()


def _text_item(kind: str, item_id: str, text: str) -> ev.ThreadItem:
    if kind == "reasoning":
        return ev.ReasoningItem(id=item_id, text=text)
    return ev.AgentMessageItem(id=item_id, text=text)


def _history_message(turn: ModelTurn) -> dict[str, Any]:
    """The assistant message as stored: arguments that are not JSON are replaced by `{}` so
    strict providers accept the history; the tool result explains the error to the model."""
    message = turn.assistant_message()
    for tc in message.get("tool_calls", []):
        try:
            json.loads(tc["function"]["arguments"] or "{}")
        except ValueError:
            tc["function"]["arguments"] = "{}"
    return message


def _tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}

"""The observe → think → act loop: one turn of one thread.

The contract of a turn (`run_turn`), in order:

1. The turn opens (`turn.started`); each help (helps/contract.py) may add to the user
   message (`start_turn`), which then joins the history.
2. Before the first model call, a help may answer the turn on its own (`before_first_step`:
   the whole-file probe whose files pass the tests).
3. Steps, until an answer: think (one streamed model call over the history, compacted by
   the ContextPolicy; each help may rewrite the reply, `read_reply`), then act (every tool
   call gets exactly one tool message; calls to tools the caller runs pause the turn,
   `requires_action`, and `continue_turn(outputs)` steps on: records/pending.py). After each
   reply, a help may answer it with a note to the model (`after_reply`: a reply that is not
   an answer, code left in the text, an announced next step), and the loop steps again.
4. A reply without tool calls that no help takes is the answer. Unless the turn is already
   verified, one verification round asks the model to check its work (skipped when the
   answer already stands on evidence, or the turn changed no file and names no test:
   core/verification/evidence.py), and one more round when the answer still lacks evidence; a final
   check (--output-schema) gets one correction round.
5. The turn closes with exactly one of turn.completed (with `verification`), turn.failed
   or turn.requires_action, after the items that span the turn (the plan) complete and,
   unless it paused, after each help's `end_turn` (the probe's best attempt put back when
   the turn's files pass fewer tests).

Every way out other than an answer is an exception (core/turn.py TurnEnded, ActionRequired;
RunInterrupted, model errors), turned into the closing event by `_close`, so the loop body
carries no flags. The loop knows nothing about HTTP, terminals or file formats: it talks
to a model client, a ToolRegistry, an Emitter (engine events, emitting/events.py; the wire
formats are mappers in output/) and optionally a compactor and a session record, all handed
in by the composition root (compose/) with the list of helps.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Literal

from baseagent.cancellation import NEVER, CancelToken
from baseagent.emitting import events as engine
from baseagent.core.calls import CallItems
from baseagent.core.help_actions import HelpActions
from baseagent.core.verification.evidence import Evidence, repository_notes
from baseagent.core.interrupt import RunInterrupted
from baseagent.records.pending import Paused, PendingCall
from baseagent.records.plan import latest_plan, open_steps, verification_reminder
from baseagent.records.recorder import RecordWriteError
from baseagent.core.streaming import StreamItems, TurnItems
from baseagent.core.turn import (ActionRequired, ContextPolicy, HistorySink, PassThrough,
                                 Status, TurnEnded, TurnInput, TurnOutcome, TurnState,
                                 attachment_message, history_message, tool_choice,
                                 tool_message)
from baseagent.helps.contract import Enough, TurnHelp, capped, not_an_answer
from baseagent.llm.errors import ContextOverflowError, CostLimitError, ModelError, ModelInterrupted
from baseagent.llm.types import ModelClientProtocol, ModelTurn, ToolCall
from baseagent.emitting.interface import EventEmitter
from baseagent.prompts.system import EVIDENCE_PROMPT
from baseagent.tools.approval import APPROVAL_CALL, ApprovalRequest
from baseagent.tools.external import is_external
from baseagent.tools.registry import PreparedCall, ToolRegistry
from baseagent.tools.context import CallBudget, ToolContext
from baseagent.tools.tool import ToolResult

# How many times one call may be retried after compacting for a context-window error.
MAX_OVERFLOW_RECOVERIES = 3
# A finish reason that ends the turn: the provider refused to go on.
FILTERED = ("the provider's content filter stopped the model's answer "
            "(finish_reason 'content_filter')")
# What a model answer whose tool calls all failed leads to: the model reads the errors and
# goes on (Codex), or the turn fails (AgentB's rule, error code all_tools_failed).
AllToolsFailed = Literal["continue", "fail"]
ALL_TOOLS_FAILED_CODE = "all_tools_failed"
ALL_TOOLS_FAILED = ("every tool call of the model's answer failed ({n} of {n}); "
                    "all_tools_failed = \"fail\" ends the turn there")


class Loop(HelpActions):
    def __init__(self, *, client: ModelClientProtocol, registry: ToolRegistry, emitter: EventEmitter,
                 tool_context: ToolContext, history: list[dict[str, Any]],
                 max_iterations: int = 200, verify: bool = True,
                 compactor: ContextPolicy | None = None, session: HistorySink | None = None,
                 cancelled: CancelToken = NEVER,
                 thread_id: str = "", paused: Paused | None = None,
                 tool_choice: str | None = None, helps: Sequence[TurnHelp] = (),
                 all_tools_failed: AllToolsFailed = "continue") -> None:
        self.client = client
        self.registry = registry
        self.emitter = emitter
        self.tool_context = tool_context
        self.history = history
        self.max_iterations = max_iterations
        self.verify = verify
        self.compactor = compactor or PassThrough()
        self.session = session
        # The run's cancellation: polled between steps, handed to every tool call.
        self.cancelled = cancelled
        self.thread_id = thread_id
        # A turn waiting for the caller's tool outputs (restored from the record on resume).
        self.paused = paused
        # A pausing step's attachments, until the pause records them (Paused.attachment).
        self._deferred: dict[str, Any] | None = None
        self._budget = CallBudget(max_iterations)
        self._state: TurnState | None = None
        self._turn_items = TurnItems(emitter)
        self._calls = CallItems(registry, emitter, tool_context, cancelled, self._turn_items,
                                where=self._where)
        self.tool_choice = tool_choice
        self.helps = list(helps)  # called in order at the named points (helps/contract.py)
        self.all_tools_failed = all_tools_failed
        self._tool_called = False

    @property
    def calls_made(self) -> int:
        """Model calls the current (or last) turn made."""
        return self._state.steps if self._state is not None else 0

    # -- the turn ----------------------------------------------------------------------------

    def run_turn(self, turn: TurnInput | str) -> TurnOutcome:
        """One user instruction, worked to completion; always ends with turn.completed,
        turn.failed or turn.requires_action."""
        if isinstance(turn, str):
            turn = TurnInput(turn)
        if self.paused is not None:
            raise RuntimeError("the turn is waiting for tool outputs: continue_turn() first")
        notes = repository_notes(self.history)
        self._state = TurnState(turn, turn_id=str(uuid.uuid4()), verified=not self.verify,
                                evidence=Evidence.for_turn(turn.text, notes),
                                evidence_asked=not self.verify)
        self._open(continued=False)
        content = turn.message_content
        for help in self.helps:
            content = help.start_turn(self, content)
        self.append({"role": "user", "content": content})
        self._budget = CallBudget(self.max_iterations)
        self._tool_called = False
        return self._close(self._first_step_then_work)

    def continue_turn(self, outputs: Mapping[str, str]) -> TurnOutcome:
        """The caller ran the pending calls: `outputs` (call id → text, one per pending call,
        checked by the caller with core.pending.check_outputs) become their tool messages,
        and the paused turn steps on."""
        paused = self.paused
        if paused is None:
            raise RuntimeError("no turn is waiting for tool outputs")
        state = self._state
        if state is None or state.turn_id != paused.turn_id:  # paused in another process
            state = TurnState(TurnInput(paused.instruction), paused.turn_id, paused.verified,
                               steps=paused.steps,
                               evidence=Evidence.for_turn(paused.instruction,
                                                          repository_notes(self.history)),
                               evidence_asked=not self.verify)
            self._state = state
        for call in paused.calls:
            self.emitter.reserve_item_id(call.item_id)
        self._open(continued=True)
        self._budget = CallBudget(paused.calls_left)
        self._tool_called = True  # the paused turn had called tools
        for call in paused.calls:
            if call.name == APPROVAL_CALL and isinstance(call.arguments, Mapping):
                # The caller's answer to a held command: run it, or say why not.
                held, declined = self._calls.answered(call, outputs[call.id])
                self._append_tool(held, declined if declined is not None
                                  else self.run_quiet(held)[1])
            else:
                output = outputs[call.id] or "(no output)"
                self._calls.output_taken(call, output)
                self._append_tool(call, output)
        if paused.attachment is not None:  # what the step's own tools attached
            self.append(paused.attachment)
        self.paused = None
        self._record_paused(None)
        return self._close(self._work)

    def _open(self, continued: bool) -> None:
        state = self._state
        assert state is not None
        state.cost_before = self.client.totals.cost_usd
        self.emitter.send(engine.TurnStarted(
            turn_id=state.turn_id, thread_id=self.thread_id, continued=continued,
            instruction=None if continued else state.input.text))

    def _close(self, work: Callable[[], str]) -> TurnOutcome:
        """Run the turn's work and end it: every way out becomes one closing event, after
        the items that live as long as the turn (the plan) are completed."""
        try:
            try:
                final = work()
            except (RunInterrupted, ModelInterrupted):
                self.emitter.send(engine.TurnCancelling(reason=self.cancelled.reason))
                raise
            finally:
                self._turn_items.complete()
        except ActionRequired as exc:
            return self._pause(exc.calls)
        except (RunInterrupted, ModelInterrupted):
            return self._fail("interrupted", f"interrupted ({self.cancelled.reason})")
        except CostLimitError as exc:
            return self._fail("limit", str(exc))
        except TurnEnded as exc:
            return self._fail(exc.status, str(exc), exc.code)
        except ModelError as exc:
            return self._fail("failed", str(exc))
        except RecordWriteError as exc:  # a full disk: the record stops, so does the turn
            return self._fail("failed", str(exc))
        self._end_helps("completed")
        state = self._state
        totals = self.client.totals
        cost_before = state.cost_before if state is not None else 0.0
        # cost_usd: this turn's alone (None when the model is not priced).
        self.emitter.send(engine.TurnEnded(
            "completed", usage=totals.tokens(),
            cost_usd=round(totals.cost_usd - cost_before, 10) if totals.cost_known else None,
            verification=state.evidence.summary() if state is not None and self.verify
            else None))
        return TurnOutcome("completed", final_message=final)

    def _fail(self, status: Status, message: str, code: str | None = None) -> TurnOutcome:
        self._end_helps(status)
        self.emitter.send(engine.TurnEnded(status, error=message, code=code))
        return TurnOutcome(status, error=message)

    def _end_helps(self, status: Status) -> None:
        """Each help's `end_turn`, before the closing event (a paused turn has not ended); a
        help that fails there is named in a notice, and the turn still closes."""
        for help in self.helps:
            try:
                help.end_turn(self, status)
            except Exception as exc:  # noqa: BLE001 - the closing event must still go out
                self.emitter.notice(f"{type(help).__name__} at the end of the turn: {exc}")

    def _pause(self, calls: list[PendingCall]) -> TurnOutcome:
        state = self._state
        assert state is not None
        self.paused = Paused(turn_id=state.turn_id, instruction=state.input.text, calls=calls,
                             verified=state.verified, calls_left=self._budget.left,
                             steps=state.steps, attachment=self._deferred)
        self._deferred = None
        self._record_paused(self.paused)
        self.emitter.send(engine.TurnEnded(
            "requires_action", usage=self.client.totals.tokens(),
            pending=tuple(engine.PendingTool(c.id, c.name, c.arguments, c.item_id)
                          for c in calls)))
        return TurnOutcome("requires_action", pending=list(calls))

    def _first_step_then_work(self) -> str:
        """The turn's work, after any help that may answer it before the first step."""
        for help in self.helps:
            final = help.before_first_step(self)
            if final is not None:
                return final
        return self._work()

    def _work(self) -> str:
        """Answer, verified; with a final check, one correction round at most."""
        state = self._state
        assert state is not None
        final = self._until_answer()
        check = state.input.final_check
        if check is None or (problem := check.problem(final)) is None:
            return final
        if state.correcting:
            raise ModelError(check.failure(problem))
        state.correcting = True
        state.verified = True  # a correction, not another review
        self.append({"role": "user", "content": check.correction(problem)})
        return self._work()

    def _until_answer(self) -> str:
        """Step until the model answers without tool calls and no help takes the reply
        (after one verification round unless the turn is already verified, and one more
        when the answer lacks evidence); returns that answer."""
        state = self._state
        assert state is not None
        while True:
            turn = self._step()
            if not turn.tool_calls and turn.finish_reason == "content_filter":
                raise TurnEnded("failed", FILTERED)
            if any(help.after_reply(turn, self) for help in self.helps) or turn.tool_calls:
                continue
            if not state.verified:
                state.verified = True
                # The plan is checked when it is this turn's: an older turn's plan may be
                # about another task.
                plan = latest_plan(self.history) if self._turn_items.has("todo_list") else None
                if state.evidence.wants_round(open_steps(plan)):
                    reminder = verification_reminder(state.input.text, plan,
                                                     state.evidence.missing())
                    self.append({"role": "user", "content": reminder})
                    continue
            missing = state.evidence.missing()
            if missing is not None and not state.evidence_asked:
                state.evidence_asked = True
                self.append({"role": "user",
                             "content": EVIDENCE_PROMPT.format(missing=missing)})
                continue
            note = state.evidence.note()
            return f"{turn.text.rstrip()}\n\n{note}" if note else turn.text

    def _step(self, alone: list[dict[str, Any]] | None = None,
              max_chars: int | None = None, temperature: float | None = None,
              enough: Enough | None = None) -> ModelTurn:
        """One observe → think → act round; returns what the model said. With `alone`, only
        think, on those messages (TurnContext.ask_alone)."""
        state = self._state
        assert state is not None
        self._stop_if_cancelled()
        if self._budget.left <= 0:
            raise TurnEnded("limit", f"max iterations reached ({self.max_iterations} model "
                                     "calls) before the task was finished")
        self._budget.spend()
        state.steps += 1
        self.emitter.send(engine.StepStarted(turn_id=state.turn_id, number=state.steps))
        turn = self._think(alone, max_chars, temperature, enough)
        if turn.tool_calls and alone is None:
            self._act(turn.tool_calls)
        return turn

    # -- phases ------------------------------------------------------------------------------

    def _stop_if_cancelled(self) -> None:
        if self.cancelled():
            raise RunInterrupted()

    def _think(self, alone: list[dict[str, Any]] | None = None,
               max_chars: int | None = None, temperature: float | None = None,
               enough: Enough | None = None) -> ModelTurn:
        """Call the model (streaming), emitting reasoning and message items as text arrives.
        With `alone`, those messages are sent instead of the history, with no tools, and
        the reply does not reach the history."""
        specs = [] if alone is not None else self.registry.specs()
        stream = StreamItems(self.emitter, hold_calls=bool(specs))
        # a reply past max_chars: ReplyTooLong; one that holds enough: cut there
        progress = capped(stream.progress, max_chars, enough)
        try:
            for attempt in range(MAX_OVERFLOW_RECOVERIES + 1):
                messages, estimate = self.compactor.prepare(self.history) if alone is None \
                    else (alone, sum(len(str(m["content"])) for m in alone) // 4)
                try:
                    choice = tool_choice(self.tool_choice, bool(specs), self._tool_called)
                    if temperature is not None:  # a sampled call (TurnContext.ask_alone)
                        choice["temperature"] = temperature
                    turn = self.client.complete(messages, specs, progress,
                                                estimated_input_tokens=estimate, **choice)
                    break
                except ContextOverflowError:
                    if attempt == MAX_OVERFLOW_RECOVERIES or alone is not None:
                        raise
                    self.compactor.on_overflow(self.history, attempt + 1)
        except BaseException:
            stream.abandon()
            raise
        for call in turn.tool_calls:  # almost-JSON read with the tool's schema, said so
            repaired = self.registry.repair(call.name, call.arguments)
            if repaired is not None:
                call.arguments, call.note = repaired
        for help in self.helps:
            help.read_reply(turn, self, alone is not None)
        stream.finish(turn.text, turn.reasoning)
        for call in turn.tool_calls:
            if not call.id:
                call.id = f"call_{uuid.uuid4().hex[:24]}"
        self.emitter.send(engine.ModelResponded(
            text=turn.text, finish_reason=turn.finish_reason,
            tool_calls=tuple(engine.CallRequest(id=c.id, name=c.name, arguments=c.arguments)
                             for c in turn.tool_calls)))
        # An empty or repeating reply holds nothing worth keeping.
        if alone is None and not_an_answer(turn) not in ("empty", "repetition"):
            self.append(history_message(turn))
        return turn

    def _act(self, calls: list[ToolCall]) -> None:
        """Run each tool call in order; every call gets exactly one tool message back. Calls
        to tools the caller runs wait until the others have run, then pause the turn."""
        handed_over: list[tuple[ToolCall, PreparedCall, ApprovalRequest | None]] = []
        succeeded: list[bool] = []  # the calls that ran, for the all_tools_failed rule
        self._tool_called = True
        state = self._state
        assert state is not None
        # What the tools attached (view_image's images): one user message once every call
        # of the step has its tool message, which must come first on every wire.
        attached: list[dict[str, Any]] = []
        try:
            for index, call in enumerate(calls):
                if self.cancelled():
                    self._not_run([c for c, _, _ in handed_over] + calls[index:])
                    raise RunInterrupted()
                refusal = state.repeats.refusal(call.name, call.arguments)
                if refusal is not None:
                    # the same result twice: not run again, a failed item and a notice
                    self._append_tool(call, self._calls.refuse(call, refusal).output)
                    succeeded.append(False)
                    if state.repeats.exhausted():
                        self._not_run([c for c, _, _ in handed_over] + calls[index + 1:],
                                      "the turn ended")
                        raise TurnEnded("failed", "the model kept repeating calls that had "
                                                  "given the same result")
                    continue
                prepared = self.registry.prepare(call.name, call.arguments)
                if prepared.error is None and is_external(prepared.tool):
                    handed_over.append((call, prepared, None))
                    continue
                question = self._calls.caller_question(prepared)
                if question is not None:  # the caller answers it: the turn pauses for it
                    handed_over.append((call, prepared, question))
                    continue
                result = self._calls.run(call, prepared, self._budget)
                self._append_tool(call, self._observe(call, prepared, result))
                succeeded.append(result.success)
                attached += result.attachments
            if self.cancelled():
                self._not_run([c for c, _, _ in handed_over])
                raise RunInterrupted()
            if handed_over:
                # The caller's outputs are tool messages of this step too: the attachments
                # wait for them (records/pending.py Paused.attachment).
                self._deferred = attachment_message(attached)
                attached = []
                raise ActionRequired([self._calls.hand_over(c, p) if q is None
                                      else self._calls.hand_question(c, q)
                                      for c, p, q in handed_over])
        finally:
            message = attachment_message(attached)
            if message is not None:
                self.append(message)
        if self.all_tools_failed == "fail" and succeeded and not any(succeeded):
            raise TurnEnded("failed", ALL_TOOLS_FAILED.format(n=len(succeeded)),
                            code=ALL_TOOLS_FAILED_CODE)

    def _not_run(self, calls: list[ToolCall], why: str = "the run was interrupted") -> None:
        for call in calls:
            self._append_tool(call, f"Error: not run: {why}")

    def _observe(self, call: ToolCall, prepared: PreparedCall, result: ToolResult) -> str:
        """Take note of a finished call (evidence, repeated failures) and return the text
        its tool message carries: the output, and any note for the model."""
        state = self._state
        assert state is not None
        if prepared.error is None:
            state.evidence.saw(prepared.item_type, result.success, result.item, result.output,
                               lambda: prepared.named_changes(self.tool_context))
            if result.success and prepared.item_type == "file_change" \
                    and result.item.get("diff") != "":
                state.repeats.forget()  # files changed: earlier results may not repeat
        repeated = state.repeats.after(call.name, call.arguments, result.success,
                                       result.output)
        notes_for_model = [n for n in (repeated, call.note) if n]
        return result.output + "".join(
            n if n.startswith("\n") else f"\n\n{n}" for n in notes_for_model)

    def _record_paused(self, paused: Paused | None) -> None:
        if self.session is not None:
            self.session.paused(None if paused is None else paused.to_record())

    def _where(self) -> tuple[str, int]:
        """The running turn's instruction and model call, for the tools' context."""
        state = self._state
        return (state.input.text, state.steps) if state is not None else ("", 0)

    # -- history -----------------------------------------------------------------------------

    def append(self, message: dict[str, Any]) -> None:
        self.history.append(message)
        if self.session is not None:
            self.session.message(message)

    def _append_tool(self, call: ToolCall | PendingCall, content: str) -> None:
        """A call's result into the history, and the ToolMessage that says so."""
        self.append(tool_message(call.id, content))
        self.emitter.send(engine.ToolMessage(call_id=call.id, name=call.name, content=content))


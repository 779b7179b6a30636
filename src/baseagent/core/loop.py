"""The observe → think → act loop, one function per phase.

The loop owns the message history and the iteration. It knows nothing about HTTP, SSE,
terminals or file formats: it talks to a model client, a ToolRegistry, an Emitter and
(optionally) a compactor and a session record, all handed in by the composition root
(core/assembly.py). Every way out of a turn other than a final answer is an exception,
so the loop body carries no flags.

A turn can also pause: when the model calls a tool the caller runs (an external tool), the
turn ends `requires_action` with the pending calls; `continue_turn(outputs)` puts the
caller's outputs into the history and steps on in the same turn (core/pending.py).

The loop emits the engine's own events and items (core/events.py: turn and step
boundaries, streamed text, tool calls as items, the model's calls, how the turn ended)
through the Emitter; it never builds a wire type. The Codex JSONL, AgentB's events and the
terminal are mappers over them (output/).
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol

from baseagent.cancellation import NEVER, CancelToken
from baseagent.core import events as engine
from baseagent.core.echo import echoes
from baseagent.core.evidence import Evidence, is_test_file
from baseagent.core.interrupt import RunInterrupted
from baseagent.core.items import (TURN_SCOPED, completed_item, external_result_item,
                                  started_item, turn_item, updated_item)
from baseagent.core.pending import Paused, PendingCall
from baseagent.core.plan import latest_plan, open_steps, verification_reminder
from baseagent.core.named_files import named_file_texts, render_files
from baseagent.core.probe import MAX_REPAIR_ROUNDS, Attempt, ProbePlan
from baseagent.core.prose_code import (file_blocks, fragments, merged_blocks,
                                       test_command_block,
                                       without_blocks)
from baseagent.core.repeats import RepeatedCalls
from baseagent.core.recorder import RecordWriteError
from baseagent.core.test_report import read_report
from baseagent.llm.errors import ContextOverflowError, CostLimitError, ModelError, ModelInterrupted
from baseagent.llm.types import CallProgress, ModelClientProtocol, ModelTurn, ToolCall
from baseagent.output.emitter import Emitter
from baseagent.prompts.system import (EVIDENCE_PROMPT, PROBE_SYSTEM, PROBE_PASSED,
                                      PROBE_FOLLOW_UP, PROBE_FOLLOW_UP_NOTICE,
                                      PROBE_UNCHANGED,
                                      FRAGMENT_TELL, PROSE_CODE_APPLIED, PROSE_CODE_CUT,
                                      PROSE_CODE_MERGED,
                                      PROSE_CODE_TELL,
                                      PROSE_TESTS_RUN,
                                      PROSE_COMMAND_RUN, STUMBLE_PROMPTS)
from baseagent.tools.approval import (APPROVAL_CALL, ApprovalAnswer, ApprovalRequest,
                                      approval_item, declined_text, parse_decision)
from baseagent.tools.tool import CallBudget, ToolContext, ToolResult
from baseagent.tools.external import is_external
from baseagent.tools.registry import MAX_ARGUMENT_CHARS, PreparedCall, ToolRegistry

# Streaming text updates are throttled: consumers need liveness, not one event per token.
STREAM_UPDATE_INTERVAL_S = 0.05
# Each item.updated carries the whole text so far, so an update goes out only once the
# text has grown by this factor since the last one: the bytes one message puts in the JSONL
# (and the record) stay under ~6x its length instead of growing with its square.
STREAM_TEXT_GROWTH = 1.25
# How many times one call may be retried after compacting for a context-window error.
MAX_OVERFLOW_RECOVERIES = 3
# A finish reason that ends the turn: the provider refused to go on.
FILTERED = ("the provider's content filter stopped the model's answer "
            "(finish_reason 'content_filter')")
# Replies that are not answers (empty, cut off, repeating, an unreadable call) in a row
# that each get a note telling the model what is expected; one more ends the turn.
MAX_STUMBLES = 2
STUMBLE_ENDINGS = {
    "empty": "the model returned empty replies (no text, no tool call) {n} times in a row",
    "repetition": "the model's replies kept repeating themselves ({n} times in a row)",
    "length": "the model's replies were cut off at the output token limit {n} times in a "
              "row (finish_reason 'length'); raise --max-tokens or ask for shorter answers",
    "malformed": "the model wrote tool calls that could not be read {n} times in a row",
}
# Replies that only announce a next step ("I will run the tests") that get a note, a turn.
MAX_INTENT_NUDGES = 2
# Messages before a reply that an echo of them is looked for in (core/echo.py).
ECHO_LOOKBACK = 8
# The end of a reply that announces what it will do rather than saying what was done.
_ANNOUNCES = re.compile(r"\b(?:I will|I'll|I am going to|I'm going to|Let me|Let's|Next,? I|"
                        r"Now,? I|I need to|We need to|I should)\b", re.IGNORECASE)
# What an answer with code for a file and no tool call leads to (core/prose_code.py).
ProseCode = Literal["apply", "tell", "off"]
# What a model answer whose tool calls all failed leads to: the model reads the errors and
# goes on (Codex), or the turn fails (AgentB's rule, error code all_tools_failed).
AllToolsFailed = Literal["continue", "fail"]
ALL_TOOLS_FAILED_CODE = "all_tools_failed"
ALL_TOOLS_FAILED = ("every tool call of the model's answer failed ({n} of {n}); "
                    "all_tools_failed = \"fail\" ends the turn there")

# How a turn ends (RunResult.status; exit_codes.py maps it to the process exit code).
Status = Literal["completed", "failed", "interrupted", "limit", "requires_action"]


@dataclass
class TurnOutcome:
    """How a turn ended; `pending` holds the calls the caller must run when the status is
    requires_action."""

    status: Status
    final_message: str | None = None
    error: str | None = None
    pending: list[PendingCall] = field(default_factory=list)


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

    def paused(self, paused: dict[str, Any] | None) -> None:
        """The turn is waiting for tool outputs (None: it no longer is)."""


class _PassThrough:
    """No context management: send the history as it is."""

    def prepare(self, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        return history, 0

    def on_overflow(self, history: list[dict[str, Any]], attempt: int) -> None:
        raise ContextOverflowError("the prompt is too long and no compaction is configured")


class TurnEnded(Exception):
    """A way out of a turn other than a final answer (a limit, a cut-off answer). `code`
    names the rule that ended it, when one did (all_tools_failed)."""

    def __init__(self, status: Status, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class ActionRequired(Exception):
    """The model called tools the caller runs: the turn pauses until their outputs come."""

    def __init__(self, calls: list[PendingCall]) -> None:
        super().__init__(", ".join(c.name for c in calls))
        self.calls = calls


@dataclass
class _TurnState:
    """Where the running turn is, so a paused turn continues where it stopped."""

    input: TurnInput
    turn_id: str
    verified: bool
    correcting: bool = False
    steps: int = 0
    cost_before: float = 0.0  # the thread's cost when the turn (or its continuation) began
    # What the answer can rest on (edits, commands after them), and whether the one extra
    # round asking for it was spent.
    evidence: Evidence = field(default_factory=Evidence)
    evidence_asked: bool = False
    stumbles: int = 0  # replies in a row that were not answers
    intent_nudges: int = 0  # replies that only announced a next step, or only echoed
    told_prose_code: bool = False
    # A note for the model about code blocks that were not written because they drop
    # top-level names (core/prose_code.fragments), sent after the step; once a turn.
    fragment_note: str | None = None
    told_fragment: bool = False
    repeats: RepeatedCalls = field(default_factory=RepeatedCalls)
    # The whole-file probe's messages and attempts (core/probe.py); None when it cannot
    # be sent alone (images, a continued turn) or the task names no file to change.
    probe: ProbePlan | None = None


class Loop:
    def __init__(self, *, client: ModelClientProtocol, registry: ToolRegistry, emitter: Emitter,
                 tool_context: ToolContext, history: list[dict[str, Any]],
                 max_iterations: int = 200, verify: bool = True,
                 compactor: ContextPolicy | None = None, session: HistorySink | None = None,
                 cancelled: CancelToken = NEVER,
                 thread_id: str = "", paused: Paused | None = None,
                 tool_choice: str | None = None, prose_code: ProseCode = "apply",
                 show_named_files: bool = False, probe: bool = False,
                 probe_rounds: int = MAX_REPAIR_ROUNDS,
                 all_tools_failed: AllToolsFailed = "continue") -> None:
        self.client = client
        self.registry = registry
        self.emitter = emitter
        self.tool_context = tool_context
        self.history = history
        self.max_iterations = max_iterations
        self.verify = verify
        self.compactor = compactor or _PassThrough()
        self.session = session
        # The run's cancellation: polled between steps, handed to every tool call.
        self.cancelled = cancelled
        self.thread_id = thread_id
        # A turn waiting for the caller's tool outputs (restored from the record on resume).
        self.paused = paused
        # A pausing step's attachments, until the pause records them (Paused.attachment).
        self._deferred: dict[str, Any] | None = None
        self._budget = CallBudget(max_iterations)
        self._state: _TurnState | None = None
        self._turn_items = _TurnItems(emitter)
        self.tool_choice = tool_choice
        self.prose_code = prose_code
        self.show_named_files = show_named_files
        # Once a turn, before the conversation: the whole-file probe (_probe).
        self.probe = probe
        self.probe_rounds = probe_rounds  # its repair rounds at most (core/probe.py)
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
        self._state = _TurnState(turn, turn_id=str(uuid.uuid4()), verified=not self.verify,
                                 evidence=Evidence.for_turn(turn.text, self._repository_notes()),
                                 evidence_asked=not self.verify)
        self._open(continued=False)
        content = turn.message_content
        # The files the task names, read once: shown with it, and the probe's.
        named = named_file_texts(turn.text, self.tool_context.cwd) \
            if isinstance(content, str) and (self.show_named_files or self.probe) else {}
        if self.show_named_files and isinstance(content, str):
            content += render_files(named)
        command = self._state.evidence.test_command
        if self.probe and isinstance(content, str) and command is not None:
            files = {name: text for name, text in named.items() if not is_test_file(name)}
            tests = {name: text for name, text in named.items() if is_test_file(name)}
            if files:
                self._state.probe = ProbePlan(str(turn.message_content), files, tests, command,
                                              max_rounds=self.probe_rounds)
        self._append({"role": "user", "content": content})
        self._budget = CallBudget(self.max_iterations)
        self._tool_called = False
        return self._close(self._probe_then_work)

    def continue_turn(self, outputs: Mapping[str, str]) -> TurnOutcome:
        """The caller ran the pending calls: `outputs` (call id → text, one per pending call,
        checked by the caller with core.pending.check_outputs) become their tool messages,
        and the paused turn steps on."""
        paused = self.paused
        if paused is None:
            raise RuntimeError("no turn is waiting for tool outputs")
        state = self._state
        if state is None or state.turn_id != paused.turn_id:  # paused in another process
            state = _TurnState(TurnInput(paused.instruction), paused.turn_id, paused.verified,
                               steps=paused.steps,
                               evidence=Evidence.for_turn(paused.instruction,
                                                          self._repository_notes()),
                               evidence_asked=not self.verify)
            self._state = state
        for call in paused.calls:
            self.emitter.reserve_item_id(call.item_id)
        self._open(continued=True)
        self._budget = CallBudget(paused.calls_left)
        self._tool_called = True  # the paused turn had called tools
        for call in paused.calls:
            if call.name == APPROVAL_CALL and isinstance(call.arguments, Mapping):
                self._take_answer(call, outputs[call.id])
            else:
                self._take_output(call, outputs[call.id] or "(no output)")
        if paused.attachment is not None:  # what the step's own tools attached
            self._append(paused.attachment)
        self.paused = None
        self._record_paused(None)
        return self._close(self._work)

    def _repository_notes(self) -> str:
        """What the repository says about itself to the model (AGENTS.md, in the opening
        environment context), where a test command may be named."""
        for message in self.history[:3]:
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, str) \
                    and "<INSTRUCTIONS>" in content:
                return content
        return ""

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
        self.emitter.send(engine.TurnEnded(status, error=message, code=code))
        return TurnOutcome(status, error=message)

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

    def _probe_then_work(self) -> str:
        """The turn's work, after the whole-file probe when the run makes one: a probe
        whose files pass the tests is the answer; otherwise the turn starts as if it had
        not been made."""
        final = self._probe()
        return final if final is not None else self._work()

    def _probe(self) -> str | None:
        """Before the conversation (compact profile, a task naming its files and its test
        command): the task and its files sent without tools, asking for whole files, Aider's
        way; the files in the reply are written and the tests run. If they pass, that is the
        answer (verified by evidence) and the exchange joins the history. If not, the same
        is asked with the tests shown, then in repair rounds with the best attempt so far
        and one of its failing tests (core/probe.py says why and when they stop), each
        attempt starting from the files it was shown. If none passes, the files are put
        back as the task had them, the evidence of the probe is dropped and the turn goes
        on as the agent's own from the unchanged task: a model that answers a short prompt
        well keeps that answer, and one that does better with tools loses nothing but the
        probe's time. At temperature 0 the same prompt gets the same reply, so no message
        is sent twice."""
        state = self._state
        assert state is not None
        plan = state.probe
        if not self.probe or plan is None or self.prose_code != "apply" \
                or self.registry.get("write_file") is None or self.registry.get("shell") is None:
            return None
        # The probe spends at most half the turn's model calls: the rest are the agent's.
        keep = max(1, self._budget.left // 2)
        while self._budget.left > keep and (message := plan.next_message()) is not None:
            self._put_back(message.start)
            exchange = [{"role": "user", "content": message.text}]
            final, attempt, reply = self._probe_once(exchange, message.notice, plan)
            follow_up = self._follow_up(reply, plan) \
                if final is None and attempt is None and message.follow_up else None
            if follow_up is not None and self._budget.left > keep:
                # The reply said why the test fails but sent no code, or sent the code as
                # it was: asked for the changed file now, after what it said.
                exchange += [{"role": "assistant", "content": reply},
                             {"role": "user", "content": follow_up}]
                final, attempt, _ = self._probe_once(exchange, PROBE_FOLLOW_UP_NOTICE, plan)
            if final is not None:
                return final
            plan.took(attempt)
        self._put_back(plan.files)  # the turn starts from the task's files
        state.evidence = Evidence.for_turn(state.input.text, self._repository_notes())
        state.repeats = RepeatedCalls()
        return None

    def _follow_up(self, reply: str, plan: ProbePlan) -> str | None:
        """What a repair round's reply that wrote nothing is told: the file is asked for
        when it sent no code, and a change when it sent the code unchanged."""
        names = ", ".join(plan.files)
        if reply.strip() and "```" not in reply:
            return PROBE_FOLLOW_UP.format(names=names)
        if self._unchanged_blocks(reply):
            return PROBE_UNCHANGED.format(names=names)
        return None

    def _probe_once(self, exchange: list[dict[str, Any]], notice: str,
                    plan: ProbePlan) -> tuple[str | None, Attempt | None, str]:
        """One probe message (the last of `exchange`): (its answer, None) if the tests pass;
        else (None, what the attempt left and what the tests said of it, or None when it
        wrote nothing); and the reply's text."""
        state = self._state
        assert state is not None
        self._stop_if_cancelled()
        state.evidence = Evidence.for_turn(state.input.text, self._repository_notes())
        state.repeats = RepeatedCalls()
        self.emitter.notice(notice)
        self._budget.spend()
        state.steps += 1
        self.emitter.send(engine.StepStarted(turn_id=state.turn_id, number=state.steps))
        turn = self._think(alone=[{"role": "system", "content": PROBE_SYSTEM}, *exchange])
        reply = turn.text
        # Only the files to change are written (never a test file the reply repeats): what
        # the probe writes is what it puts back.
        cwd = self.tool_context.cwd
        allowed = {os.path.normpath(cwd / name) for name in plan.files}
        calls = [c for c in turn.tool_calls
                 if (path := _written_path(c)) is None or os.path.normpath(cwd / path) in allowed]
        if not any(_written_path(c) is not None for c in calls):
            return None, None, reply
        turn.tool_calls = calls
        results = [(call, *self._run_quiet(call)) for call in calls]
        if state.evidence.missing() is None and state.evidence.edits:
            self._append(_history_message(turn))
            for call, _, output in results:
                self._append(_tool_message(call.id, output))
            written = [os.path.relpath(p, self.tool_context.cwd) for p in state.evidence.edited]
            answer = PROBE_PASSED.format(files=", ".join(dict.fromkeys(written)) or "the files",
                                         command=state.evidence.summary().get("command"))
            item = _text_item("agent_message", self.emitter.new_item_id(), answer)
            self.emitter.send(engine.ItemStarted(item))
            self.emitter.send(engine.ItemCompleted(item))
            self._append({"role": "assistant", "content": answer})
            return answer, None, reply
        runs = [result for call, result, _ in results if call.name == "shell"]
        if not runs:
            return None, None, reply
        return None, Attempt(self._current(plan.files), read_report(runs[-1].output)), reply

    def _current(self, files: dict[str, str]) -> dict[str, str]:
        """These files as they are on disk now (a file that cannot be read: as given)."""
        current = {name: self._read(name) for name in files}
        return {name: text if text is not None else files[name]
                for name, text in current.items()}

    def _read(self, name: str) -> str | None:
        try:
            return (self.tool_context.cwd / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _put_back(self, files: dict[str, str]) -> None:
        """Write the files that differ from these contents (the probe's starting points)."""
        for name, content in files.items():
            if self._read(name) == content:
                continue
            self._run_quiet(ToolCall(
                id=f"call_{uuid.uuid4().hex[:24]}", name="write_file",
                arguments=json.dumps({"file_path": name, "content": content},
                                     ensure_ascii=False)))

    def _run_quiet(self, call: ToolCall) -> tuple[ToolResult, str]:
        """Run one call as an item, outside the history (the probe's); returns its result
        and what its tool message would say."""
        prepared = self.registry.prepare(call.name, call.arguments)
        result = self._run_tool(call, prepared)
        return result, self._observe(call, prepared, result)

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
        self._append({"role": "user", "content": check.correction(problem)})
        return self._work()

    def _until_answer(self) -> str:
        """Step until the model answers without tool calls (after one verification round
        unless the turn is already verified, and one more when the answer lacks evidence);
        returns that answer. A reply that is not an answer (empty, cut off, repeating, an
        unreadable call, code left in the text) is met with a note saying what is expected,
        never taken as the answer and never resent as it was."""
        state = self._state
        assert state is not None
        while True:
            turn = self._step()
            if turn.tool_calls:
                state.stumbles = 0
                continue
            if turn.finish_reason == "content_filter":
                raise TurnEnded("failed", FILTERED)
            stumble = _stumble(turn)
            if stumble is not None:
                self._recover(stumble, turn)
                continue
            state.stumbles = 0
            if self._tell_fragment() or self._tell_prose_code(turn) \
                    or self._nudge_intent(turn) or self._nudge_echo(turn):
                continue
            if not state.verified:
                state.verified = True
                # The plan is checked when it is this turn's: an older turn's plan may be
                # about another task.
                plan = latest_plan(self.history) if self._turn_items.has("todo_list") else None
                if not _proven(state.evidence, plan):
                    reminder = verification_reminder(state.input.text, plan,
                                                     state.evidence.missing())
                    self._append({"role": "user", "content": reminder})
                    continue
            missing = state.evidence.missing()
            if missing is not None and not state.evidence_asked:
                state.evidence_asked = True
                self._append({"role": "user",
                              "content": EVIDENCE_PROMPT.format(missing=missing)})
                continue
            note = state.evidence.tests_note()
            return f"{turn.text.rstrip()}\n\n{note}" if note else turn.text

    def _recover(self, stumble: str, turn: ModelTurn) -> None:
        """A reply that was not an answer: a note to the model, or the end of the turn when
        it keeps happening."""
        state = self._state
        assert state is not None
        state.stumbles += 1
        if state.stumbles > MAX_STUMBLES:
            raise TurnEnded("limit" if stumble == "length" else "failed",
                            STUMBLE_ENDINGS[stumble].format(n=state.stumbles))
        details = "; ".join(turn.malformed_calls)
        self._append({"role": "user",
                      "content": STUMBLE_PROMPTS[stumble].format(details=details)})

    def _nudge_intent(self, turn: ModelTurn) -> bool:
        """A reply that only announces what comes next ("I will run the tests") while the
        turn has not shown its work: the model is told nothing happened (twice a turn at
        most; after that the reply is taken as the answer)."""
        state = self._state
        assert state is not None
        if state.intent_nudges >= MAX_INTENT_NUDGES or state.evidence.missing() is None \
                or not _announces(turn.text):
            return False
        state.intent_nudges += 1
        self._append({"role": "user", "content": STUMBLE_PROMPTS["intent"]})
        return True

    def _nudge_echo(self, turn: ModelTurn) -> bool:
        """A reply that mostly repeats what the model was just shown (a test run's output,
        a tool's note), or sends a file's code exactly as the file already is, while the
        turn still lacks its evidence: the model is told that nothing changed and what is
        still missing (shares the nudges' limit a turn). A small model that resends its
        code unchanged believes it fixed it ("now the test should pass")."""
        state = self._state
        assert state is not None
        missing = state.evidence.missing()
        if state.intent_nudges >= MAX_INTENT_NUDGES or missing is None:
            return False
        unchanged = self._unchanged_blocks(turn.text)
        shown = [str(m.get("content") or "") for m in self.history[-ECHO_LOOKBACK - 1:-1]
                 if m.get("role") in ("tool", "user")]
        if not unchanged and not echoes(turn.text, shown):
            return False
        state.intent_nudges += 1
        note = STUMBLE_PROMPTS["unchanged"].format(paths=", ".join(unchanged),
                                                   details=missing) if unchanged \
            else STUMBLE_PROMPTS["echo"].format(details=missing)
        self._append({"role": "user", "content": note})
        return True

    def _unchanged_blocks(self, text: str) -> list[str]:
        """The files that `text` holds whole in a code block exactly as they already are."""
        state = self._state
        assert state is not None
        cwd = self.tool_context.cwd
        return list(dict.fromkeys(b.path for b in file_blocks(text, cwd, state.input.text)
                                  if not _differs(cwd / b.path, b.content)))

    def _tell_fragment(self) -> bool:
        """The note about a reply's code blocks that were not written because they leave
        out top-level names the file has (set by _apply_prose_code), after
        the step's tool results: without it the model believes the file changed."""
        state = self._state
        assert state is not None
        note, state.fragment_note = state.fragment_note, None
        if note is None:
            return False
        self._append({"role": "user", "content": note})
        return True

    def _tell_prose_code(self, turn: ModelTurn) -> bool:
        """An answer holding code for a file that no tool wrote, when the run tells the
        model rather than writing it (prose_code "tell"): once a turn."""
        state = self._state
        assert state is not None
        if self.prose_code != "tell" or state.told_prose_code:
            return False
        blocks = [b for b in file_blocks(turn.text, self.tool_context.cwd, state.input.text)
                  if _differs(self.tool_context.cwd / b.path, b.content)]
        if not blocks:
            return False
        state.told_prose_code = True
        self._append({"role": "user", "content": PROSE_CODE_TELL.format(
            paths=", ".join(b.path for b in blocks))})
        return True

    def _step(self) -> ModelTurn:
        """One observe → think → act round; returns what the model said."""
        state = self._state
        assert state is not None
        self._stop_if_cancelled()
        if self._budget.left <= 0:
            raise TurnEnded("limit", f"max iterations reached ({self.max_iterations} model "
                                     "calls) before the task was finished")
        self._budget.spend()
        state.steps += 1
        self.emitter.send(engine.StepStarted(turn_id=state.turn_id, number=state.steps))
        turn = self._think()
        if turn.tool_calls:
            self._act(turn.tool_calls)
            self._tell_fragment()
        return turn

    # -- phases ------------------------------------------------------------------------------

    def _stop_if_cancelled(self) -> None:
        if self.cancelled():
            raise RunInterrupted()

    def _think(self, alone: list[dict[str, Any]] | None = None) -> ModelTurn:
        """Call the model (streaming), emitting reasoning and message items as text arrives.
        With `alone`, those messages are sent instead of the history, with no tools (the
        probe), and the reply does not reach the history (the probe adds it if it passes)."""
        specs = [] if alone is not None else self.registry.specs()
        stream = _StreamItems(self.emitter, hold_calls=bool(specs))
        try:
            for attempt in range(MAX_OVERFLOW_RECOVERIES + 1):
                messages, estimate = self.compactor.prepare(self.history) if alone is None \
                    else (alone, sum(len(str(m["content"])) for m in alone) // 4)
                try:
                    turn = self.client.complete(messages, specs, stream.progress,
                                                estimated_input_tokens=estimate,
                                                **(self._choice() if alone is None else {}))
                    break
                except ContextOverflowError:
                    if attempt == MAX_OVERFLOW_RECOVERIES or alone is not None:
                        raise
                    self.compactor.on_overflow(self.history, attempt + 1)
        except BaseException:
            stream.abandon()
            raise
        self._repair_arguments(turn)
        self._apply_prose_code(turn, probe=alone is not None)
        stream.finish(turn.text, turn.reasoning)
        for call in turn.tool_calls:
            if not call.id:
                call.id = f"call_{uuid.uuid4().hex[:24]}"
        self.emitter.send(engine.ModelResponded(
            text=turn.text, finish_reason=turn.finish_reason,
            tool_calls=tuple(engine.CallRequest(id=c.id, name=c.name, arguments=c.arguments)
                             for c in turn.tool_calls)))
        # The probe's reply is added by the probe itself, and only if it passes; an empty or
        # repeating reply holds nothing worth keeping.
        if alone is None and _stumble(turn) not in ("empty", "repetition"):
            self._append(_history_message(turn))
        return turn

    def _repair_arguments(self, turn: ModelTurn) -> None:
        """Arguments that are not valid JSON but can be read with the tool's schema are
        replaced by the strict form (in the history too), and the result says so."""
        for call in turn.tool_calls:
            repaired = self.registry.repair(call.name, call.arguments)
            if repaired is not None:
                call.arguments, call.note = repaired

    def _apply_prose_code(self, turn: ModelTurn, probe: bool = False) -> None:
        """A reply that holds a file's whole new content in a code block (core/prose_code.py)
        gets write_file calls for it, when the run writes such code (prose_code "apply")
        and has write_file. Each call's result says what happened. Written before the calls
        the reply makes (its text comes first: "here is the file; now run the tests"),
        except for files those calls write themselves. Blocks that drop top-level names
        are not written, and the model is told so after the step; in the probe's reply
        (which the conversation never sees, and which is kept only if the tests pass)
        such a block is merged into its file by name instead (prose_code.merged_blocks),
        so that the tests judge it."""
        state = self._state
        stumble = _stumble(turn)
        cut = stumble in ("repetition", "length")  # complete blocks before the cut count
        if self.prose_code != "apply" or (stumble is not None and not cut) \
                or state is None or self.registry.get("write_file") is None:
            return
        cwd = self.tool_context.cwd
        written_by_calls = {os.path.normpath(cwd / p) for c in turn.tool_calls
                            if (p := _written_path(c)) is not None}
        blocks = [b for b in file_blocks(turn.text, cwd, state.input.text)
                  if os.path.normpath(cwd / b.path) not in written_by_calls
                  and _differs(cwd / b.path, b.content)]
        merged: dict[str, str] = {}  # the probe's: a fragment merged into its file
        if probe:
            taken = {b.path for b in blocks}
            for block, fragment in merged_blocks(turn.text, cwd, state.input.text):
                if block.path not in taken and _differs(cwd / block.path, block.content) \
                        and os.path.normpath(cwd / block.path) not in written_by_calls:
                    blocks.append(block)
                    merged[block.path] = ", ".join(f"`{n}`" for n in fragment.missing)
        if not state.told_fragment and not probe:
            dropped = [f for f in fragments(turn.text, cwd, state.input.text)
                       if os.path.normpath(cwd / f.path) not in written_by_calls]
            if dropped:
                state.told_fragment = True
                state.fragment_note = " ".join(FRAGMENT_TELL.format(
                    path=f.path, names=", ".join(f"`{n}`" for n in f.missing))
                    for f in dropped)
        why = "it kept repeating itself" if stumble == "repetition" \
            else "it reached the output limit"
        calls = [ToolCall(
            id=f"call_{uuid.uuid4().hex[:24]}", name="write_file",
            arguments=json.dumps({"file_path": b.path, "content": b.content},
                                 ensure_ascii=False),
            note=(PROSE_CODE_CUT.format(why=why, path=b.path) if cut
                  else PROSE_CODE_MERGED.format(path=b.path, names=merged[b.path])
                  if b.path in merged else PROSE_CODE_APPLIED.format(path=b.path)))
            for b in blocks]
        if cut:
            if not blocks:
                return
            # What followed the last whole file (invented output, the repeated span) goes.
            turn.text = turn.text[:max(b.span[1] for b in blocks)]
        # With no call of its own: the test run the reply shows but did not make, when the
        # turn still lacks one; else, after files written from the reply, the task's own
        # test command (Aider's auto-test): the model sees at once whether its code works.
        shown = test_command_block(turn.text)
        command = shown.content if shown is not None else state.evidence.test_command
        if not turn.tool_calls and command and self.registry.get("shell") is not None \
                and (blocks or (shown is not None and state.evidence.missing() is not None)):
            note = (PROSE_COMMAND_RUN if shown is not None else PROSE_TESTS_RUN)
            if shown is not None:
                blocks.append(shown)
            calls.append(ToolCall(
                id=f"call_{uuid.uuid4().hex[:24]}", name="shell",
                arguments=json.dumps({"command": command}, ensure_ascii=False),
                note=note.format(command=command)))
        if calls:
            turn.tool_calls = calls + turn.tool_calls
            turn.text = without_blocks(turn.text, blocks)

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
                    self._refuse(call, refusal)
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
                question = self._caller_question(prepared)
                if question is not None:  # the caller answers it: the turn pauses for it
                    handed_over.append((call, prepared, question))
                    continue
                result = self._run_tool(call, prepared)
                self._append_tool(call, self._observe(call, prepared, result))
                succeeded.append(result.success)
                attached += result.attachments
            if self.cancelled():
                self._not_run([c for c, _, _ in handed_over])
                raise RunInterrupted()
            if handed_over:
                # The caller's outputs are tool messages of this step too: the attachments
                # wait for them (core/pending.py Paused.attachment).
                self._deferred = _attachment_message(attached)
                attached = []
                raise ActionRequired([self._hand_over(c, p) if q is None
                                      else self._hand_question(c, q)
                                      for c, p, q in handed_over])
        finally:
            message = _attachment_message(attached)
            if message is not None:
                self._append(message)
        if self.all_tools_failed == "fail" and succeeded and not any(succeeded):
            raise TurnEnded("failed", ALL_TOOLS_FAILED.format(n=len(succeeded)),
                            code=ALL_TOOLS_FAILED_CODE)

    def _not_run(self, calls: list[ToolCall], why: str = "the run was interrupted") -> None:
        for call in calls:
            self._append_tool(call, f"Error: not run: {why}")

    def _refuse(self, call: ToolCall, refusal: str) -> None:
        """A call that gave the same result twice is not run again: a failed item, a
        notice, and the refusal as its result."""
        prepared = PreparedCall(name=call.name, raw_arguments=call.arguments,
                                error=refusal.removeprefix("Error: "))
        self.emitter.notice(f"not running {call.name} again: the same call gave the same "
                            "result twice")
        result = self._run_as_item(call, prepared)
        self._append_tool(call, result.output)

    def _observe(self, call: ToolCall, prepared: PreparedCall, result: ToolResult) -> str:
        """Take note of a finished call (evidence, repeated failures) and return the text
        its tool message carries: the output, and any note for the model."""
        state = self._state
        assert state is not None
        if prepared.error is None:
            state.evidence.saw(prepared.item_type, result.success, result.item)
            if result.success and prepared.item_type == "file_change" \
                    and result.item.get("diff") != "":
                state.repeats.forget()  # files changed: earlier results may not repeat
        repeated = state.repeats.after(call.name, call.arguments, result.success,
                                       result.output)
        notes_for_model = [n for n in (repeated, call.note) if n]
        return result.output + "".join(
            n if n.startswith("\n") else f"\n\n{n}" for n in notes_for_model)

    def _run_tool(self, call: ToolCall, prepared: PreparedCall) -> ToolResult:
        if prepared.error is None and prepared.item_type in TURN_SCOPED:
            return self._run_turn_scoped(call, prepared)
        return self._run_as_item(call, prepared)

    def _run_turn_scoped(self, call: ToolCall, prepared: PreparedCall) -> ToolResult:
        """A call that feeds the turn's item (update_plan: the todo_list) instead of being an
        item of its own; should it fail, it shows as a failed call, like any other."""
        result = self.registry.execute(prepared, self.tool_context)
        if result.success:
            self._turn_items.show(prepared.item_type, result.item)
            return result
        failed = started_item(self.emitter.new_item_id(), prepared, self.tool_context)
        self.emitter.send(engine.ItemStarted(failed))
        self.emitter.send(engine.ItemCompleted(completed_item(failed, result)))
        return result

    def _run_as_item(self, call: ToolCall, prepared: PreparedCall) -> ToolResult:
        """A call as an item of its own: started, updated with its progress, completed."""
        item_id = self.emitter.new_item_id()
        started = started_item(item_id, prepared, self.tool_context)
        self.emitter.send(engine.ToolStarted(call_id=call.id, name=call.name, item_id=item_id,
                                             arguments=started.arguments))
        self.emitter.send(engine.ItemStarted(started))

        def progress(payload: dict[str, Any]) -> None:
            self.emitter.send(engine.ItemUpdated(updated_item(started, payload)))

        state = self._state
        ctx = dataclasses.replace(self.tool_context, progress=progress, cancelled=self.cancelled,
                                  item_id=item_id, model_calls=self._budget,
                                  instruction=state.input.text if state else "",
                                  step=state.steps if state else 0)
        result = self.registry.execute(prepared, ctx)
        self.emitter.send(engine.ItemCompleted(completed_item(
            started, result, interrupted=self.cancelled(),
            named=lambda: prepared.named_changes(ctx))))
        self.emitter.send(engine.ToolFinished(call_id=call.id, name=call.name, item_id=item_id,
                                              success=result.success, output=result.output,
                                              metadata=result.metadata))
        if result.item.get("diff"):
            self.emitter.detail(item_id, result.item["diff"])
        return result

    # -- tools the caller runs ---------------------------------------------------------------

    def _hand_over(self, call: ToolCall, prepared: PreparedCall) -> PendingCall:
        """Start the item of a call the caller will run; it completes with their output."""
        item_id = self.emitter.new_item_id()
        self.emitter.send(engine.ItemStarted(started_item(item_id, prepared,
                                                          self.tool_context)))
        return PendingCall(id=call.id, name=call.name,
                           arguments=prepared.arguments_for_display(), item_id=item_id)

    def _caller_question(self, prepared: PreparedCall) -> ApprovalRequest | None:
        """The approval question a shell call waits on when the caller answers approvals
        through requires_action (tools/approval.py REQUIRES_ACTION); None otherwise."""
        approvals = self.tool_context.approvals
        if approvals is None or not approvals.deferred or prepared.error is not None \
                or prepared.item_type != "command_execution":
            return None
        args = prepared.args
        return approvals.question(
            args.command, str(self.tool_context.cwd),
            confined=self.tool_context.policy().restricted,
            escalate=bool(getattr(args, "with_escalated_permissions", False)),
            justification=getattr(args, "justification", None) or "")

    def _hand_question(self, call: ToolCall, question: ApprovalRequest) -> PendingCall:
        """A command held for the caller's answer: its approval item starts now and the
        pending call carries the question and the held call."""
        item_id = self.emitter.new_item_id()
        self.emitter.send(engine.ItemStarted(approval_item(item_id, question)))
        return PendingCall(id=call.id, name=APPROVAL_CALL, item_id=item_id, arguments={
            "command": question.command, "cwd": question.cwd, "kind": question.kind,
            "reason": question.reason, "prefix": question.prefix,
            "call": {"name": call.name, "arguments": call.arguments}})

    def _take_answer(self, call: PendingCall, output: str) -> None:
        """The caller's answer to a held command (checked by core.pending.check_outputs):
        its approval item completes, and the command runs (or, declined, does not)."""
        held = call.arguments
        answer = parse_decision(output) or ApprovalAnswer("denied", output)
        question = ApprovalRequest(held["command"], held.get("cwd", ""), held["kind"],
                                   held.get("reason", ""), held.get("prefix", ""))
        self.emitter.send(engine.ItemCompleted(approval_item(call.item_id, question, answer)))
        tool_call = ToolCall(id=call.id, name=held["call"]["name"],
                             arguments=held["call"]["arguments"])
        approvals = self.tool_context.approvals
        if answer.decision == "denied" or approvals is None:
            self._append_tool(tool_call, declined_text(answer.note)
                              if answer.decision == "denied" else
                              "Error: not run: approvals are off in this run")
            return
        approvals.give(held["command"], answer)
        prepared = self.registry.prepare(tool_call.name, tool_call.arguments)
        result = self._run_tool(tool_call, prepared)
        self._append_tool(tool_call, self._observe(tool_call, prepared, result))

    def _take_output(self, call: PendingCall, output: str) -> None:
        self.emitter.send(engine.OutputSubmitted(call_id=call.id, name=call.name,
                                                 item_id=call.item_id, output=output))
        self.emitter.send(engine.ItemCompleted(external_result_item(call, output)))
        self._append_tool(call, output)

    def _record_paused(self, paused: Paused | None) -> None:
        if self.session is not None:
            self.session.paused(None if paused is None else paused.to_record())

    # -- history -----------------------------------------------------------------------------

    def _append(self, message: dict[str, Any]) -> None:
        self.history.append(message)
        if self.session is not None:
            self.session.message(message)

    def _append_tool(self, call: ToolCall | PendingCall, content: str) -> None:
        """A call's result into the history, and the ToolMessage that says so."""
        self._append(_tool_message(call.id, content))
        self.emitter.send(engine.ToolMessage(call_id=call.id, name=call.name, content=content))


# How a tool call written as text begins (llm/text_tool_calls.py): streamed text that starts
# like this is not shown as an agent message until the answer is complete and the call
# taken out of it, so no empty agent_message is left behind by a call.
_CALL_OPENERS = ("```", "<tool_call>", "{", "[")


def _may_be_call(text: str) -> bool:
    head = text.lstrip()[:len("<tool_call>")]
    return any(head.startswith(o) or o.startswith(head) for o in _CALL_OPENERS)


class _StreamItems:
    """Turns streamed text into reasoning / agent_message item events, and streamed tool
    calls into ToolCallDelta events (their arguments piece by piece), throttled.

    Every item it starts it also completes, whatever happens to the call: a consumer that
    saw `item.started` must see `item.completed`, even when the call then fails. With
    `hold_calls` (the request offered tools), text that starts like a tool call written as
    text waits for the end of the answer."""

    def __init__(self, emitter: Emitter, hold_calls: bool = False) -> None:
        self.emitter = emitter
        self.hold_calls = hold_calls
        self.ids: dict[str, str] = {}
        self.latest: dict[str, str] = {}
        self.sent: dict[str, int] = {}  # length of the text the last event carried
        self.last_sent = 0.0
        self.calls: dict[int, CallProgress] = {}  # each streamed call as it stands
        self.call_sent: dict[int, str] = {}  # the arguments its pieces have carried so far
        self.call_last_sent = 0.0

    def progress(self, text: str, reasoning: str, calls: tuple[CallProgress, ...] = ()) -> None:
        if calls:
            self._call_pieces(calls)
        now = time.monotonic()
        throttled = now - self.last_sent < STREAM_UPDATE_INTERVAL_S
        for kind, value in (("reasoning", reasoning), ("agent_message", text)):
            if not value:
                continue
            if kind == "agent_message" and self.hold_calls and kind not in self.ids \
                    and _may_be_call(value):
                continue
            self.latest[kind] = value
            if kind not in self.ids:
                self.ids[kind] = self.emitter.new_item_id()
                self.sent[kind] = len(value)
                self.emitter.send(engine.ItemStarted(_text_item(kind, self.ids[kind], value)))
            elif not throttled and len(value) >= self.sent.get(kind, 0) * STREAM_TEXT_GROWTH:
                self.sent[kind] = len(value)
                self.emitter.send(engine.ItemUpdated(_text_item(kind, self.ids[kind], value)))
        if not throttled:
            self.last_sent = now

    def _call_pieces(self, calls: tuple[CallProgress, ...], flush: bool = False) -> None:
        """A piece of each call's arguments that is new since its last one: the first piece
        of a call at once (it names the call), later ones at most every
        STREAM_UPDATE_INTERVAL_S (all that is left with `flush`). A retried stream starts
        its calls afresh: its pieces go on only once they extend what was sent (the
        completed calls are whole in ModelResponded either way)."""
        now = time.monotonic()
        throttled = not flush and now - self.call_last_sent < STREAM_UPDATE_INTERVAL_S
        for call in calls:
            if call.index not in self.call_sent and self.calls:
                # A new call: the model is done with the earlier ones (calls stream one
                # after another), so what is left of them goes first, in order.
                self._call_pieces(tuple(self.calls.values()), flush=True)
            self.calls[call.index] = call
            sent = self.call_sent.get(call.index)
            if sent is None:
                sent = self.call_sent[call.index] = ""
            elif throttled or len(call.arguments) <= len(sent) \
                    or not call.arguments.startswith(sent):
                continue
            self.call_sent[call.index] = call.arguments
            self.call_last_sent = now
            self.emitter.send(engine.ToolCallDelta(
                index=call.index, call_id=call.id, name=call.name,
                delta=call.arguments[len(sent):], text=self.latest.get("agent_message", "")))

    def finish(self, text: str, reasoning: str) -> None:
        """Complete the items with the final text; start-and-complete any never streamed;
        send what is left of the calls' arguments."""
        for kind, value in (("reasoning", reasoning), ("agent_message", text)):
            if kind in self.ids:
                self.emitter.send(engine.ItemCompleted(_text_item(kind, self.ids.pop(kind),
                                                                  value)))
            elif value.strip():
                item_id = self.emitter.new_item_id()
                self.emitter.send(engine.ItemCompleted(_text_item(kind, item_id, value)))
        if self.calls:
            self._call_pieces(tuple(self.calls.values()), flush=True)

    def abandon(self) -> None:
        """The call failed: close what was started with the text streamed so far."""
        for kind, item_id in list(self.ids.items()):
            self.emitter.send(engine.ItemCompleted(
                _text_item(kind, item_id, self.latest.get(kind, ""))))
        self.ids.clear()


class _TurnItems:
    """Items that live as long as the turn (Codex's todo_list: the plan). The first update
    starts one, each later update is an item.updated of the same item, and the turn's close
    completes it, however the turn ends."""

    def __init__(self, emitter: Emitter) -> None:
        self.emitter = emitter
        self.items: dict[str, engine.TurnScopedItem] = {}

    def show(self, kind: str, payload: dict[str, Any]) -> None:
        current = self.items.get(kind)
        if current is None:
            self.items[kind] = turn_item(kind, self.emitter.new_item_id(), payload)
            self.emitter.send(engine.ItemStarted(self.items[kind]))
        else:
            self.items[kind] = turn_item(kind, current.id, payload)
            self.emitter.send(engine.ItemUpdated(self.items[kind]))

    def has(self, kind: str) -> bool:
        return kind in self.items

    def complete(self) -> None:
        items, self.items = self.items, {}
        for item in items.values():
            self.emitter.send(engine.ItemCompleted(item))


def _announces(text: str) -> bool:
    """Whether a reply's last paragraph announces a next step."""
    tail = text.strip().rsplit("\n\n", 1)[-1][-400:]
    return bool(_ANNOUNCES.search(tail))


def _proven(evidence: Evidence, plan: Any) -> bool:
    """Whether an answer already stands on evidence, so the verification round would only
    cost a model call: the turn edited code or names a test command, the tests ran after
    the last edit and exited 0, and the turn's plan (if any) has no open steps. Asked again
    at that point, a small model restates its success at length (one such reply ran past a
    task's time budget after the tests had passed); a turn with nothing run still gets the
    round."""
    return evidence.needed and evidence.proof() is not None and not open_steps(plan)


def _stumble(turn: ModelTurn) -> str | None:
    """Why a reply without tool calls is not an answer, or None when it is one."""
    if turn.tool_calls:
        return None
    if turn.finish_reason == "repetition":
        return "repetition"
    if turn.malformed_calls:
        return "malformed"
    if not turn.text.strip():
        return "empty"
    if turn.finish_reason == "length":
        return "length"
    return None


def _written_path(call: ToolCall) -> str | None:
    """The file a write_file call writes (None for other calls, or unreadable arguments)."""
    if call.name != "write_file":
        return None
    try:
        path = json.loads(call.arguments or "{}").get("file_path")
    except (ValueError, AttributeError):
        return None
    return path if isinstance(path, str) else None


def _differs(path: Any, content: str) -> bool:
    """Whether writing `content` would change the file (an answer that shows the file as
    it already is, as a summary, changes nothing)."""
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True

    def norm(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip().splitlines()]

    return norm(current) != norm(content)


def _text_item(kind: str, item_id: str, text: str) -> engine.TextItem:
    return engine.TextItem(id=item_id, kind="reasoning" if kind == "reasoning" else "message",
                           text=text)


def _history_message(turn: ModelTurn) -> dict[str, Any]:
    """The assistant message as stored: arguments that are not JSON are replaced by `{}` so
    strict providers accept the history; the tool result explains the error to the model."""
    message = turn.assistant_message()
    for tc in message.get("tool_calls", []):
        if len(tc["function"]["arguments"] or "") > MAX_ARGUMENT_CHARS:
            tc["function"]["arguments"] = "{}"  # refused by the registry; not resent each call
            continue
        try:
            json.loads(tc["function"]["arguments"] or "{}")
        except ValueError:
            tc["function"]["arguments"] = "{}"
    return message


def _tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _attachment_message(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The user message holding what a step's tools attached (None: nothing)."""
    return {"role": "user", "content": list(parts)} if parts else None

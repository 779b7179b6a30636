"""The whole-file probe: before the conversation, the task and its files without tools.

For the compact profile, when the task names its files and its test command: the task and
its files are sent without tools, asking for whole files, Aider's way; the files in the
reply are written (by the prose-code help, which this one needs) and the tests run. If they
pass, that is the answer (verified by evidence) and the exchange joins the history. If not,
the same is asked with the tests shown, then in repair rounds with the best attempt so far
and one of its failing tests (helps/probe_plan.py says why and when they stop), each
attempt starting from the files it was shown. If none passes, the files are put back as the
task had them, the probe's evidence is dropped and the turn goes on as the agent's own from
the unchanged task: a model that answers a short prompt well keeps that answer, and one
that does better with tools loses nothing but the probe's time. At temperature 0 the same
prompt gets the same reply, so no message is sent twice. The probe spends at most three
quarters of the turn's model calls (AGENT_SHARE), and writes only the files to change (never
a test file the reply repeats): what it writes is what it puts back.

Search with the tests: once a repair round repeats (passes no more tests than the best),
the later rounds draw several candidates each, sampled at `temperature` from prompts that
take turns (helps/probe_plan.py). Each is tested in a scratch copy of the workspace
(helps/scratch.py), never in the workspace; the first that passes is written to the
workspace and its tests run there (the evidence), else the round's best (most tests passed,
then the smaller change, then the earlier) may become the best attempt. A candidate whose
reply changes no file (on the dev set, four in ten: a sentence on why the test fails and no
code, or the code as it was) is asked for the changed file after its reply, as a repair
round's is: one more call on the same prefix, which the server's prompt cache serves.

The best attempt survives the turn: when the turn ends (an answer, its limits, a failure, a
cancel) with the files to change passing fewer tests than the probe's best attempt did (run
in a fresh scratch copy), the best attempt's files are written back and a notice says so.
The conversation itself starts from the task's files, as without the probe (docs/HELPS.md
says why).
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import PurePosixPath
from typing import Any

from baseagent.core.verification.evidence import is_test_file
from baseagent.helps.code_blocks import file_blocks, unchanged_blocks, written_path
from baseagent.helps.contract import (Enough, Message, ReplyRepeats, ReplyTooLong, TurnContext,
                                      TurnHelp)
from baseagent.helps.named_files import named_file_texts
from baseagent.helps.probe_plan import (MAX_REPAIR_ROUNDS, SEARCH_CANDIDATES, Attempt,
                                        ProbeMessage, ProbePlan, temperature_label)
from baseagent.helps.scratch import Scratch, ScratchError
from baseagent.helps.test_report import read_report
from baseagent.helps.test_time import TestClock, looping_report, timed_out
from baseagent.core.turn import history_message, tool_message
from baseagent.llm.repetition import RepetitionGuard
from baseagent.llm.types import ENOUGH_FINISH, ModelTurn, ToolCall
from baseagent.prompts.system import (PROBE_BEST_KEPT, PROBE_CANDIDATE_CHOSEN,
                                      PROBE_CANDIDATE_FOLLOW_UP, PROBE_CANDIDATE_NOT_TESTS,
                                      PROBE_CANDIDATE_NOTHING_NEW, PROBE_CANDIDATE_RESULT,
                                      PROBE_CUT_NOTICE, PROBE_FOLLOW_UP, PROBE_FOLLOW_UP_NOTICE,
                                      PROBE_NOT_TESTS, PROBE_NOT_TESTS_NOTICE, PROBE_PASSED,
                                      PROBE_REPEATS_NOTICE, PROBE_SCRATCH_FAILED,
                                      PROBE_SEARCH_KINDS, PROBE_SEARCH_NOTICE, PROBE_SYSTEM,
                                      PROBE_UNCHANGED)
from baseagent.tools.tool import DEFAULT_SHELL_TIMEOUT_MS

# The share of the turn's model calls the probe leaves to the agent's own conversation (a
# quarter). At 492682f the probe, held to half, spent its calls in the first 240 s of a
# 900 s task; the conversation then wrote three or four replies of 2,000-6,000 characters,
# a minute or three each, and neither solved nor improved a task in that run, while search
# candidates, 10-20 s each once replies stop after their files, went on finding better
# attempts until their calls ran out. An eighth (d6392c2) gained nothing on the dev set (15 of 20
# against 16, the cache's share 82.2% against 82.7%): the conversation still came, and solved none.
AGENT_SHARE = 4
# A reply may hold this many times the files of the task (those to change and the tests)
# and this much more; past that it is cut and counted as a miss.
REPLY_TIMES_FILES = 4
REPLY_SLACK_CHARS = 6_000


class Probe(TurnHelp):
    def __init__(self, max_rounds: int = MAX_REPAIR_ROUNDS,
                 clock: TestClock | None = None, candidates: int = SEARCH_CANDIDATES,
                 temperature: float | None = 0.7,
                 shell_timeout_ms: int = DEFAULT_SHELL_TIMEOUT_MS) -> None:
        self.max_rounds = max_rounds  # repair rounds at most
        self.candidates = candidates  # a search round's (0: no search)
        self.temperature = temperature  # the search candidates' (None: the run's)
        self.shell_timeout_ms = shell_timeout_ms
        self.scratch = Scratch()
        # The best attempt of a probe that did not pass, and the command that tested it:
        # put back at the end of the turn if the turn's files pass fewer tests.
        self.best: Attempt | None = None
        self.command = ""
        # Times the task's tests before the first message: the prose-code help, which
        # runs the tests of each reply, shares it (helps/test_time.py).
        self.clock = clock or TestClock()
        # The turn's messages and attempts; None when it cannot be sent alone (images, a
        # continued turn) or the task names no file to change.
        self.plan: ProbePlan | None = None

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        self.plan, self.best = None, None
        command = ctx.evidence.test_command
        if isinstance(message, str) and command is not None:
            named = named_file_texts(ctx.task, ctx.cwd)
            files = {name: text for name, text in named.items() if not is_test_file(name)}
            tests = {name: text for name, text in named.items() if is_test_file(name)}
            if files:
                self.plan = ProbePlan(message, files, tests, command,
                                      max_rounds=self.max_rounds, candidates=self.candidates)
        return message

    def before_first_step(self, ctx: TurnContext) -> str | None:
        plan, self.plan = self.plan, None
        if plan is None or not ctx.has_tool("write_file") or not ctx.has_tool("shell"):
            return None
        keep = max(1, ctx.calls_left // AGENT_SHARE)  # the agent's own
        ran, output = ctx.run_quiet(_call("shell", {"command": plan.test_command}))
        self.clock.saw(output)  # the task's own first test run
        declined = ran.item.get("exit_code") is None
        if declined:
            plan.candidates = 0  # the command did not run here (declined): no scratch runs
        while ctx.calls_left > keep and (message := plan.next_message()) is not None:
            self._put_back(ctx, message.start)
            if message.candidates:
                final = self._search(ctx, message, plan, keep)
                if final is not None:
                    return final
                continue
            exchange = [{"role": "user", "content": message.text}]
            final, attempt, turn = self._once(ctx, exchange, message.notice, plan)
            follow_up = self._follow_up(ctx, turn, plan) \
                if final is None and attempt is None and turn is not None \
                and (message.follow_up or _cut_at_tests(turn)) else None
            if turn is not None and follow_up is not None and ctx.calls_left > keep:
                # The reply began to copy the tests, said why the test fails but sent no
                # code, or sent the code as it was: asked for the file now, after it.
                exchange += [{"role": "assistant", "content": turn.text},
                             {"role": "user", "content": follow_up}]
                notice = PROBE_NOT_TESTS_NOTICE if _cut_at_tests(turn) \
                    else PROBE_FOLLOW_UP_NOTICE
                final, attempt, _ = self._once(ctx, exchange, notice, plan)
            if final is not None:
                return final
            plan.took(attempt)
        self._put_back(ctx, plan.files)  # the turn starts from the task's files
        ctx.restart_evidence()
        if plan.best is not None and plan.best.report.passed and not declined:
            self.best, self.command = plan.best, plan.test_command
        else:
            self.scratch.close()
        return None

    def end_turn(self, ctx: TurnContext, status: str) -> None:
        """The probe's best attempt put back when the files to change pass fewer tests now
        (tested in a fresh scratch copy of the workspace as the turn left it)."""
        best, self.best = self.best, None
        try:
            if best is None or _current(ctx, best.files) == best.files:
                return
            try:
                passed, report = self.scratch.test(
                    ctx, {}, self.command, self.clock.timeout_s(self.shell_timeout_ms),
                    self.clock.reference, fresh=True)
            except ScratchError as exc:
                ctx.notice(PROBE_SCRATCH_FAILED.format(error=exc))
                return
            if passed or report.score >= best.report.score:
                return
            self._put_back(ctx, best.files)
            ctx.notice(PROBE_BEST_KEPT.format(now=report.summary, best=best.report.summary,
                                              names=", ".join(best.files)))
        finally:
            self.scratch.close()

    def _search(self, ctx: TurnContext, message: ProbeMessage, plan: ProbePlan,
                keep: int) -> str | None:
        """A search round: each candidate drawn and tested in the scratch copy (the
        workspace holds the best attempt meanwhile); the first that passes is written to
        the workspace and tested there (the answer); else the round's best is taken."""
        best = plan.best
        assert best is not None
        tested: list[tuple[tuple[int, int, int], Attempt]] = []
        for index, candidate in enumerate(message.candidates):
            if ctx.calls_left <= keep:
                break
            exchange = [{"role": "user", "content": candidate.text}]
            notice = PROBE_SEARCH_NOTICE.format(
                n=plan.rounds, k=index + 1, of=len(message.candidates),
                kind=PROBE_SEARCH_KINDS[candidate.kind],
                temperature=temperature_label(self.temperature), summary=best.report.summary)
            turn, files = self._draw(ctx, exchange, notice, plan, best)
            follow_up = self._follow_up(ctx, turn, plan) \
                if turn is not None and files is None else None
            if follow_up is not None and ctx.calls_left > keep:
                # It began to copy the tests, said why the test fails but sent no code, or
                # sent the code as it was.
                exchange += [{"role": "assistant", "content": turn.text},
                             {"role": "user", "content": follow_up}]
                asked = PROBE_CANDIDATE_NOT_TESTS if _cut_at_tests(turn) \
                    else PROBE_CANDIDATE_FOLLOW_UP
                turn, files = self._draw(ctx, exchange,
                                         asked.format(n=plan.rounds, k=index + 1), plan, best)
            if turn is None:
                continue
            if files is None or not plan.is_new(files):
                ctx.notice(PROBE_CANDIDATE_NOTHING_NEW.format(n=plan.rounds, k=index + 1))
                continue
            try:
                passed, report = self.scratch.test(
                    ctx, files, plan.test_command, self.clock.timeout_s(self.shell_timeout_ms),
                    self.clock.reference)
            except ScratchError as exc:
                ctx.notice(PROBE_SCRATCH_FAILED.format(error=exc))
                plan.candidates = 0  # the repair rounds go on without the search
                break
            ctx.notice(PROBE_CANDIDATE_RESULT.format(n=plan.rounds, k=index + 1,
                                                     summary=report.summary))
            attempt = Attempt(files, report)
            if passed:
                ctx.notice(PROBE_CANDIDATE_CHOSEN.format(n=plan.rounds, k=index + 1))
                final, written = self._run_reply(ctx, turn, plan)
                if final is not None:
                    self.scratch.close()
                    return final
                attempt = written or attempt
            tested.append(((attempt.report.score, -plan.change_size(files), -index),
                           attempt))
        plan.took(max(tested, key=lambda t: t[0])[1] if tested else None)
        return None

    def _draw(self, ctx: TurnContext, exchange: list[dict[str, Any]], notice: str,
              plan: ProbePlan, best: Attempt) -> tuple[ModelTurn | None, dict[str, str] | None]:
        """A candidate's reply to the last message of `exchange` (sampled, without tools,
        nothing written) and the files it leaves: the best attempt's, with those the reply
        writes in full (None when they are the best attempt's)."""
        try:
            turn = ctx.ask_alone([{"role": "system", "content": PROBE_SYSTEM}, *exchange],
                                 notice, max_chars=_limit(plan), temperature=self.temperature,
                                 enough=_enough(plan, ctx))
        except ReplyTooLong as cut:
            ctx.notice(_cut_notice(cut, plan))
            return None, None
        cwd = ctx.cwd
        files = dict(best.files)
        by_path = {os.path.normpath(cwd / name): name for name in plan.files}
        for call in turn.tool_calls:
            path = written_path(call)
            name = by_path.get(os.path.normpath(cwd / path)) if path is not None else None
            if name is None:
                continue
            try:
                content = json.loads(call.arguments).get("content")
            except (ValueError, AttributeError):
                continue
            if isinstance(content, str):
                files[name] = content
        return turn, (files if files != best.files else None)

    def _follow_up(self, ctx: TurnContext, turn: ModelTurn, plan: ProbePlan) -> str | None:
        """What a reply that wrote nothing is told: the files when it was cut where it began
        to copy the tests; the file when it sent no code, and a change when it sent the code
        unchanged (a repair round's or a candidate's)."""
        names, reply = ", ".join(plan.files), turn.text
        if _cut_at_tests(turn):
            return PROBE_NOT_TESTS.format(names=names)
        if reply.strip() and "```" not in reply:
            return PROBE_FOLLOW_UP.format(names=names)
        if unchanged_blocks(reply, ctx.cwd, ctx.task):
            return PROBE_UNCHANGED.format(names=names)
        return None

    def _once(self, ctx: TurnContext, exchange: list[dict[str, Any]], notice: str,
              plan: ProbePlan) -> tuple[str | None, Attempt | None, ModelTurn | None]:
        """One probe message (the last of `exchange`): (its answer, None) if the tests pass;
        else (None, what the attempt left and what the tests said of it, or None when it
        wrote nothing); and the reply (None: cut as a miss)."""
        ctx.restart_evidence()
        limit = _limit(plan)
        try:
            turn = ctx.ask_alone([{"role": "system", "content": PROBE_SYSTEM}, *exchange], notice,
                                 max_chars=limit, enough=_enough(plan, ctx))
        except ReplyTooLong as cut:
            ctx.notice(_cut_notice(cut, plan))
            return None, None, None
        final, attempt = self._run_reply(ctx, turn, plan)
        return final, attempt, turn

    def _run_reply(self, ctx: TurnContext, turn: ModelTurn, plan: ProbePlan
                   ) -> tuple[str | None, Attempt | None]:
        """A probe reply's calls run in the workspace (the files to change written, the
        tests run): (its answer, None) if the tests pass; else (None, the attempt, or None
        when it wrote nothing)."""
        cwd = ctx.cwd
        allowed = {os.path.normpath(cwd / name) for name in plan.files}
        calls = [c for c in turn.tool_calls
                 if (path := written_path(c)) is None or os.path.normpath(cwd / path) in allowed]
        if not any(written_path(c) is not None for c in calls):
            return None, None
        turn.tool_calls = calls
        ctx.restart_evidence()
        results = [(call, *ctx.run_quiet(call)) for call in calls]
        evidence = ctx.evidence
        if evidence.missing() is None and evidence.edits:
            ctx.append(history_message(turn))
            for call, _, output in results:
                ctx.append(tool_message(call.id, output))
            written = [os.path.relpath(p, cwd) for p in evidence.edited]
            answer = PROBE_PASSED.format(files=", ".join(dict.fromkeys(written)) or "the files",
                                         command=evidence.summary().get("command"))
            ctx.say(answer)
            return answer, None
        runs = [result for call, result, _ in results if call.name == "shell"]
        if not runs:
            return None, None
        seconds = timed_out(runs[-1].output)
        report = read_report(runs[-1].output) if seconds is None \
            else looping_report(seconds, self.clock.reference)
        return None, Attempt(_current(ctx, plan.files), report)

    def _put_back(self, ctx: TurnContext, files: dict[str, str]) -> None:
        """Write the files that differ from these contents (the probe's starting points)."""
        for name, content in files.items():
            if _read(ctx, name) == content:
                continue
            ctx.run_quiet(_call("write_file", {"file_path": name, "content": content}))


def _limit(plan: ProbePlan) -> int:
    """The characters a probe reply may hold before it is cut."""
    return REPLY_TIMES_FILES * sum(map(len, [*plan.files.values(), *plan.tests.values()])) \
        + REPLY_SLACK_CHARS


def _cut_at_tests(turn: ModelTurn) -> bool:
    """Whether the reply was read no further where it began to copy the tests, before any
    file to change (a reply cut after its files writes them)."""
    return turn.finish_reason == ENOUGH_FINISH and not any(
        written_path(call) is not None for call in turn.tool_calls)


def _cut_notice(cut: ReplyTooLong, plan: ProbePlan) -> str:
    """What the run says of a probe reply it cut."""
    if isinstance(cut, ReplyRepeats):
        return PROBE_REPEATS_NOTICE.format(chars=cut.span)
    return PROBE_CUT_NOTICE.format(chars=_limit(plan))


def _enough(plan: ProbePlan, ctx: TurnContext) -> Enough:
    """Where a probe reply may stop: once it holds a whole block for each file to change
    and a further block opens, at that block's line. On the dev set the 1.5B model followed
    its file with a copy of the test file it was shown (3,000 characters, two to three
    minutes at this machine's speed, three times in a task); nothing after the files is
    written or read. A block that opens under a test file's name is where the reply stops
    too (nothing is written from it), and the probe asks for the files after it.

    A reply whose tail repeats one span with only its numbers changing is cut where the
    repeat began: the reply when the files came before it, else a miss (ReplyRepeats). On
    the dev set the model enumerated `if number == 41: return 179` for 6,000 characters
    instead of computing the n-th prime, 400 of its task's 900 s."""
    names, cwd, task = set(plan.files), ctx.cwd, ctx.task
    tests = {PurePosixPath(name).name for name in plan.tests}
    seen = [0]  # fences counted when last looked
    repeats = RepetitionGuard(blind_to_digits=True)  # a pattern with other numbers

    def holds_files(text: str) -> bool:
        return names <= {b.path for b in file_blocks(text, cwd, task)}

    def check(text: str) -> int | None:
        if repeats.runaway(len(text), lambda: text):
            start = len(text) - repeats.span  # where the repeat began
            if holds_files(text[:start]):  # the files came before it: they are the reply
                return start
            raise ReplyRepeats(repeats.span)
        fences = text.count("```")
        if fences == seen[0]:
            return None
        seen[0] = fences
        if fences % 2 == 0:  # a block closed: none opened
            return None
        at = text.rfind("```")
        line = text.rfind("\n", 0, at) + 1
        if text[line:at].strip():  # not a fence: ``` inside a line
            return None
        if fences >= 3 and holds_files(text[:line]):
            return line
        return line if _names_a_test(text[:line], tests) else None

    return check


def _names_a_test(before: str, tests: set[str]) -> bool:
    """Whether the last line of `before` (the line over a block that opens) names a test
    file: the task's, or one named as tests are. The 1.5B model named its file, then copied
    out the test file it was shown, then sent its code: 3,000 characters, two to three
    minutes on this CPU, before the code (dnd-character at 38cd230, 150 s a time)."""
    lines = before.rstrip().splitlines()
    name = lines[-1].strip().strip("`*#:").strip() if lines else ""
    return bool(name) and " " not in name and (PurePosixPath(name).name in tests
                                              or is_test_file(name))


def _current(ctx: TurnContext, files: dict[str, str]) -> dict[str, str]:
    """These files as they are on disk now (a file that cannot be read: as given)."""
    current = {name: _read(ctx, name) for name in files}
    return {name: text if text is not None else files[name] for name, text in current.items()}


def _read(ctx: TurnContext, name: str) -> str | None:
    try:
        return (ctx.cwd / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _call(name: str, arguments: dict[str, str]) -> ToolCall:
    return ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name,
                    arguments=json.dumps(arguments, ensure_ascii=False))

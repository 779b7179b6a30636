"""The repository probe: before the conversation, an issue and the code its names lead to,
answered with SEARCH/REPLACE edits and no tools (the compact profile).

The whole-file probe (helps/probe.py) needs a task that names its files, and files short
enough to send back whole. An issue in a repository names neither: it says what goes wrong,
in a module of two thousand lines. Here, for a task that names no file to change, in a
workspace of Python source, with a test command: the issue, the functions its names lead to
(helps/localise.py, shown as helps/localised_code.py shows them, lines as the files have
them) and what the issue's example gives now are sent once without tools, asking for
SEARCH/REPLACE blocks (helps/edit_form.py; a reply that sends the functions it was shown
whole, in plain code blocks, is merged by name: helps/function_edits.py). Before that
message the issue's example is run as a check (helps/reproduction.py: it should fail, which
confirms the bug; when it already passes it decides nothing) and the suite, which times the
later runs (helps/test_time.py).

The blocks that apply are written with write_file calls (`run_quiet`: the sandbox's path
policy holds; a test file is never written), then the example's check runs, then the suite.
The attempt is kept only when the example gives what the issue expects and the suite
passes: that is the answer, verified by evidence. Otherwise the files are put back and a
repair round sends the reply and what came of it (the check's output, the suite's failing
test, or the notes on refused blocks).

Search: at temperature 0 the same prompt gets the same reply, and a repair round that gets no
closer than the best attempt (or repeats an earlier reply or its edits) is most often the
model going round in circles. From then on each round draws `candidates` replies sampled at
`temperature`: the first from the best edits so far and what they gave, the others from a
fresh start (the opening alone: the issue and its code, without the failed edits; one
prompt, which a server's prompt cache serves), each tested as the first was (on the
exercises, 8 of 38 fresh starts beat the best attempt, 5 of 93 candidates from it:
helps/probe_plan.py); a reply or edits seen before are not tested again;
the best attempt so far (the example's expectations met, then the suite's tests passed) is
what the next round shows. Rounds stop at MAX_ROUNDS, when a round draws nothing new, and
so that the probe spends at most three quarters of the turn's model calls; without
candidates (0) they also stop after MAX_MISSES in a row that get no closer and at the first
repeat. After the first reply that misses, the line search asks for a line at a time
(helps/line_search.py). When none is kept, the files are as the task had them, the probe's
evidence is dropped and the conversation goes on from the task with the localised code
shown.

The end of the turn is held to the start (helps/turn_start.py): when the suite, run on a
copy of the workspace as the turn left it, passes fewer tests than it did at the start (or
than the probe's best attempt, when that passed more), the files the conversation changed
are put back as they were, then the best attempt's, and a notice says so. Files it added
are left.
"""
from __future__ import annotations

import json
import re
import shlex
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from baseagent.core.verification.evidence import is_test_file, runs_tests
from baseagent.helps.contract import (Enough, Message, ReplyRepeats, ReplyTooLong, TurnContext,
                                     TurnHelp)
from baseagent.helps.code_blocks import fences
from baseagent.helps.edit_form import EditCheck, check_edit_blocks, parse_edit_blocks
from baseagent.helps.function_edits import function_edits
from baseagent.helps.line_search import (LINES_PER_ANSWER, MAX_LINES, REWRITES_PER_LINE,
                                         TRACE_LINES, WHICH_ASKS, Line, changed_lines,
                                         lines_named, parses, rewrite_in, shown_lines,
                                         with_rewrite)
from baseagent.helps.localise import Localisation
from baseagent.helps.localised_code import LocalisedCode, Shown, shown_symbols
from baseagent.helps.probe_plan import temperature_label
from baseagent.helps.reproduction import (ReproResult, Reproduction, check_script, read_result,
                                          read_trace, reproduction_from)
from baseagent.helps.scratch import Scratch, ScratchError
from baseagent.helps.test_report import TestReport, read_report
from baseagent.helps.test_time import TestClock, looping_report, timed_out
from baseagent.helps.turn_start import TurnStart
from baseagent.llm.types import ToolCall
from baseagent.llm.repetition import RepetitionGuard
from baseagent.prompts.system import (PROBE_CUT_NOTICE, PROBE_REPEATS_NOTICE,
                                      PROBE_SCRATCH_FAILED, REPO_LINE_FIX, REPO_LINE_NOTICES,
                                      REPO_LINE_OPENING, REPO_LINE_SYSTEM, REPO_LINE_WHICH,
                                      REPO_PROBE_BEFORE, REPO_PROBE_CODE,
                                      REPO_PROBE_NO_BLOCKS, REPO_PROBE_NOTICES,
                                      REPO_PROBE_OPENING, REPO_PROBE_PASSED,
                                      REPO_PROBE_REFUSED, REPO_PROBE_REPRO_FAILED,
                                      REPO_PROBE_REPRO_MET, REPO_PROBE_RESULT,
                                      REPO_PROBE_SOURCES, REPO_PROBE_START_KEPT,
                                      REPO_PROBE_SUITE_FAILED, REPO_PROBE_SYSTEM)
from baseagent.tools.tool import DEFAULT_SHELL_TIMEOUT_MS

# The share of the turn's model calls left to the conversation after the probe (a quarter,
# as the whole-file probe leaves: helps/probe.py). Half through 1da1ee3; on the first
# real-model run of the repository set the conversation fixed none of the 11 tasks it
# reached (the two fixed were the probe's), and the line search's questions take seconds.
AGENT_SHARE = 4
# Repair rounds after the first message, and rounds in a row that may get no closer.
MAX_ROUNDS = 4
MAX_MISSES = 2
# The code sent: symbols and characters (the functions, not the modules).
MAX_SYMBOLS = 4
MAX_CODE_CHARS = 6_000
# What a reply may hold: this many times the code shown, and this much more: the functions
# sent back whole once, with a few sentences. At 49b4414 the 1.5B model's first reply to an
# 80-line method (5,000 characters shown) ran 13,000 characters in 8 minutes of a 900 s
# task; the line search that follows a miss asks for a line at a time.
REPLY_TIMES_CODE = 1
REPLY_SLACK_CHARS = 3_000
# What a line search reply may hold (a line or two of code, a sentence around it).
LINE_REPLY_CHARS = 2_000
# The output of a check or a failing test shown in a repair round, at most.
MAX_OUTPUT_CHARS = 3_000
# How a line that is a command (not a sentence naming one) begins.
_COMMAND_START = re.compile(r"^(?:env|cd|timeout|uv|poetry|hatch|tox|nox|make|npm|yarn|pnpm|"
                            r"go|cargo|python[\d.]*|pypy[\d.]*|pytest|py\.test)\b|^\w+=|^[./~]")
# What the shell tool puts before a command's output.
_SHELL_PREAMBLE = re.compile(r"\A(?:Exit code: .*\n)?(?:Wall time: .*\n)?(?:Output:\n)?")


@dataclass(frozen=True)
class Outcome:
    """What one reply led to: how close it got (the example's expectations met, then the
    suite's tests passed), whether it is kept, and what the next round shows; `report`:
    the suite's, when it ran."""

    score: tuple[int, int]
    kept: bool
    feedback: str
    report: TestReport | None = None


def code_shown(found: Localisation, root: Path) -> list[Shown]:
    """The functions the probe shows: the best MAX_SYMBOLS candidates that are not classes
    (a class's outline is no code to edit), as the files have them. Through 1da1ee3 a class
    took one of the places and was then left out: on croniter the class `croniter` ranked
    first and `_is_leap`, where the bug was, fifth, so it was not shown."""
    functions = replace(found, candidates=tuple(c for c in found.candidates
                                                if c.kind != "class"))
    return shown_symbols(functions, root, MAX_SYMBOLS, MAX_CODE_CHARS, numbers=False)


def test_command_in(task: str) -> str | None:
    """The last line of the task that is a command running a known test runner (a task's
    tail such as "Run the package's test suite with:\\n env PYTHONPATH=. python -m pytest")."""
    for line in reversed(task.splitlines()):
        line = line.strip().removeprefix("$ ").strip()
        if _COMMAND_START.match(line) and "`" not in line and runs_tests(line):
            try:
                shlex.split(line)
            except ValueError:
                continue
            return line
    return None


def interpreter_of(command: str) -> str:
    """The command that runs Python as `command` does: its environment and interpreter
    (`env PYTHONPATH=src /venv/bin/python -m pytest` -> `env PYTHONPATH=src /venv/bin/python`);
    `python3` when it names none (`pytest -q`)."""
    segments = [s.strip() for s in command.replace("&&", ";").split(";") if s.strip()]
    if not segments:
        return "python3"
    last = segments[-1]
    try:
        words = shlex.split(last)
    except ValueError:
        return "python3"
    before = " && ".join(segments[:-1])
    for i, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        if name.startswith(("python", "pypy")) and "=" not in word:
            runner = shlex.join(words[:i + 1])
            break
        if name in ("pytest", "py.test"):
            runner = shlex.join([*words[:i], "python3"])
            break
    else:
        runner = "python3"
    return f"{before} && {runner}" if before else runner


def heredoc(program: str) -> str:
    """A shell word feeding `program` to a command's stdin, with a delimiter it holds not."""
    delimiter = "REPRO_" + uuid.uuid4().hex[:12].upper()
    while delimiter in program:
        delimiter = "REPRO_" + uuid.uuid4().hex[:12].upper()
    return f"<<'{delimiter}'\n{program}\n{delimiter}"


class RepoProbe(TurnHelp):
    def __init__(self, localised: LocalisedCode, clock: TestClock | None = None,
                 max_rounds: int = MAX_ROUNDS,
                 shell_timeout_ms: int = DEFAULT_SHELL_TIMEOUT_MS, candidates: int = 0,
                 temperature: float | None = None) -> None:
        self.localised = localised  # the turn's localisation (its start_turn runs first)
        self.clock = clock or TestClock()
        self.max_rounds = max_rounds
        self.shell_timeout_ms = shell_timeout_ms
        self.candidates = candidates  # a search round's (0: no search)
        self.temperature = temperature  # the search candidates' (None: the run's)
        self.command: str | None = None  # the turn's test command, when the probe is on
        # The workspace the conversation began from, when no attempt was kept.
        self.start: TurnStart | None = None
        self.scratch = Scratch()  # where the end of the turn is tested

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        self.command = None
        self._close()
        if isinstance(message, str) and self.localised.found is not None:
            self.command = ctx.evidence.test_command or test_command_in(ctx.task)
        return message

    def before_first_step(self, ctx: TurnContext) -> str | None:
        command, self.command = self.command, None
        found = self.localised.found
        if command is None or found is None or not ctx.has_tool("write_file") \
                or not ctx.has_tool("shell"):
            return None
        shown = code_shown(found, ctx.cwd)
        if not shown:
            return None
        keep = max(1, ctx.calls_left // AGENT_SHARE)  # the agent's own
        run = _Runs(ctx, command, self.clock, self.shell_timeout_ms)
        repro = reproduction_from(ctx.task)
        if repro is not None and not repro.expectations:
            repro = None
        before = run.repro(repro) if repro is not None else None
        if before is not None and (before.passed or not before.finished):
            repro, before = None, None  # it does not show the bug: it decides nothing
        at_start, output = run.suite()
        self.clock.saw(output)  # the task's own first test run times the rest
        attempted: tuple[dict[str, str], TestReport] | None = None  # the suite's best

        def tried(new_texts: dict[str, str], outcome: Outcome) -> None:
            nonlocal attempted
            if outcome.report is not None and outcome.report.score > max(
                    at_start.score, attempted[1].score if attempted is not None else -1):
                attempted = (dict(new_texts), outcome.report)
        originals = {s.candidate.path: text for s in shown
                     if (text := _read(ctx.cwd / s.candidate.path)) is not None}
        opening = REPO_PROBE_OPENING.format(
            task=ctx.task, code="".join(_code(s) for s in shown),
            before=REPO_PROBE_BEFORE.format(output=_tail(before.output))
            if before is not None else "")
        limit = REPLY_TIMES_CODE * sum(len(s.text) for s in shown) + REPLY_SLACK_CHARS
        exchange: list[dict[str, Any]] = [{"role": "user", "content": opening}]
        replies: set[str] = set()
        edits: list[dict[str, str]] = []

        # Only files that exist, never a test: what the probe writes it can put back.
        def may_write(path: str) -> bool:
            return not is_test_file(path) and (ctx.cwd / path).is_file()

        before_text = REPO_PROBE_BEFORE.format(output=_tail(before.output)) \
            if before is not None else ""
        lines = shown_lines(shown, originals)
        first: dict[str, str] = {}  # the first reply's edits
        best: tuple[int, int] = (-1, -1)
        misses = rounds = 0
        searching = False
        shown_next: tuple[str, str] | None = None  # the best reply and what it gave
        while ctx.calls_left > keep:
            draws = self.candidates if searching else 1
            round_best: tuple[Outcome, str] | None = None  # None: the round drew nothing new
            for k in range(1, draws + 1):
                if ctx.calls_left <= keep:
                    break
                fresh = searching and k > 1  # the opening alone: a fresh start
                if searching:
                    notice = REPO_PROBE_NOTICES[2].format(
                        n=rounds, k=k, of=draws, temperature=temperature_label(self.temperature),
                        source=REPO_PROBE_SOURCES[fresh])
                else:
                    notice = REPO_PROBE_NOTICES[0] if rounds == 0 \
                        else REPO_PROBE_NOTICES[1].format(n=rounds)
                ctx.restart_evidence()
                try:
                    reply = ctx.ask_alone([{"role": "system", "content": REPO_PROBE_SYSTEM},
                                           *(exchange[:1] if fresh else exchange)], notice,
                                          max_chars=limit,
                                          temperature=self.temperature if searching
                                          else None, enough=_enough_blocks()).text
                except ReplyRepeats as cut:
                    ctx.notice(PROBE_REPEATS_NOTICE.format(chars=cut.span))
                    reply = ""
                except ReplyTooLong:
                    ctx.notice(PROBE_CUT_NOTICE.format(chars=limit))
                    reply = ""
                if reply.strip() and reply in replies:
                    continue  # the same reply again: nothing new to test
                replies.add(reply)
                blocks = parse_edit_blocks(reply)
                check = check_edit_blocks(ctx.cwd, blocks, may_write=may_write) if blocks \
                    else function_edits(reply, [s.candidate for s in shown], ctx.cwd,
                                        may_write)
                if check.new_texts and check.new_texts in edits:
                    continue  # the same edits again
                outcome = self._attempt(ctx, run, check, repro, originals)
                if outcome.kept:
                    return self._answer(ctx, run, check, command)
                tried(check.new_texts, outcome)
                if rounds == 0:
                    first = check.new_texts
                self._put_back(ctx, originals)
                if check.new_texts:
                    edits.append(check.new_texts)
                if round_best is None or outcome.score > round_best[0].score:
                    round_best = (outcome, reply)
            if rounds == 0 and lines:
                # the first reply missed: which line, and what it should be, asked apart
                line_opening = REPO_LINE_OPENING.format(
                    task=ctx.task, code="".join(_code(s) for s in shown), before=before_text)
                final = self._line_search(ctx, run, line_opening, shown, lines, first, repro,
                                          originals, keep, edits, may_write, tried, command)
                if final is not None:
                    return final
            if round_best is None and (searching or not self.candidates):
                break  # nothing new came of the round
            closer = round_best is not None and round_best[0].score > best
            misses = 0 if closer else misses + 1
            if round_best is not None and (shown_next is None or closer):
                outcome, reply = round_best
                best, shown_next = outcome.score, (reply, outcome.feedback)
            if self.candidates and rounds and not closer:
                searching = True  # a repair round got no closer or repeated: sample from here
            rounds += 1
            if rounds > self.max_rounds or (misses >= MAX_MISSES and not self.candidates):
                break
            assert shown_next is not None  # the first round's reply is never a repeat
            exchange = [exchange[0],
                        {"role": "assistant", "content": shown_next[0] or "(no reply)"},
                        {"role": "user", "content": shown_next[1]}]
        self._put_back(ctx, originals)
        ctx.restart_evidence()
        try:
            self.start = TurnStart.take(ctx.cwd, command, at_start)
            self.start.best = attempted
        except ScratchError as exc:
            ctx.notice(PROBE_SCRATCH_FAILED.format(error=exc))
        return None

    def end_turn(self, ctx: TurnContext, status: str) -> None:
        """The files the conversation changed put back when the suite passes fewer tests
        than at the start (or than the probe's best attempt), then the best attempt's."""
        start, self.start = self.start, None
        if start is None:
            return
        try:
            changed = [c for c in start.changes(ctx.cwd) if c.kind != "add"]
            if not changed and start.best is None:
                return
            timeout = self.clock.timeout_ms(self.shell_timeout_ms) or self.shell_timeout_ms
            passed, now = self.scratch.test(ctx, {}, start.command, timeout / 1000,
                                            self.clock.reference, fresh=True)
            if passed or now.score >= start.target.score:
                return
            put_back = {c.path: text for c in changed
                        if (text := start.text(c.path)) is not None}
            if start.best is not None:
                put_back.update(start.best[0])
            self._put_back(ctx, put_back)
            ctx.notice(REPO_PROBE_START_KEPT.format(
                now=now.summary or "no test known to pass", then=start.target.summary,
                which="the probe's best attempt" if start.best is not None else "the start",
                names=", ".join(sorted(put_back))))
        except ScratchError as exc:
            ctx.notice(PROBE_SCRATCH_FAILED.format(error=exc))
        finally:
            start.close()
            self.scratch.close()

    def _close(self) -> None:
        if self.start is not None:
            self.start.close()
            self.start = None
        self.scratch.close()

    def _line_search(self, ctx: TurnContext, run: _Runs, opening: str, shown: list[Shown],
                     lines: list[Line], first: dict[str, str], repro: Reproduction | None,
                     originals: dict[str, str], keep: int, edits: list[dict[str, str]],
                     may_write: Callable[[str], bool],
                     tried: Callable[[dict[str, str], Outcome], None],
                     command: str) -> str | None:
        """Which line is wrong (asked once as the run samples, then at the search's
        temperature; the first lines each answer names), with the last lines the issue's
        example ran (traced) and the lines the first reply changed; then, for each line in
        turn, a rewrite (the first as the run samples, the others at the search's
        temperature), each tested as any attempt. The answer when one is kept."""
        def ask(question: str, notice: str, temperature: float | None) -> str:
            try:
                return ctx.ask_alone([{"role": "system", "content": REPO_LINE_SYSTEM},
                                      {"role": "user", "content": opening + question}],
                                     notice, max_chars=LINE_REPLY_CHARS,
                                     temperature=temperature, enough=_first_block).text
            except ReplyTooLong:
                ctx.notice(PROBE_CUT_NOTICE.format(chars=LINE_REPLY_CHARS))
                return ""

        picked: list[Line] = []

        def pick(found: list[Line]) -> None:
            for line in found:
                if len(picked) < MAX_LINES and line not in picked and may_write(line.path):
                    picked.append(line)

        by_place = {(line.path, line.number): line for line in lines}
        ran_last: list[Line] = []  # the lines the example ran, the last first
        if repro is not None:
            places = list(dict.fromkeys((s.candidate.path, s.candidate.start, s.candidate.end)
                                        for s in shown))
            for place in reversed(run.trace(repro, places)):
                line = by_place.get(place)
                if line is not None and line not in ran_last:
                    ran_last.append(line)
        changed = [by_place[(path, n)] for path, text in first.items() if path in originals
                   for n in changed_lines(originals[path], text) if (path, n) in by_place]
        files = ", ".join(dict.fromkeys(line.path for line in lines))
        which = REPO_LINE_WHICH.format(files=files)
        for k in range(WHICH_ASKS):
            if ctx.calls_left <= keep:
                break
            temperature = None if k == 0 else self.temperature
            pick(lines_named(ask(which, REPO_LINE_NOTICES[0].format(
                temperature=temperature_label(temperature)), temperature),
                lines)[:LINES_PER_ANSWER])
            if k == 0:
                pick(ran_last[:TRACE_LINES])
                pick(changed[:LINES_PER_ANSWER])
        for k in range(REWRITES_PER_LINE):
            temperature = None if k == 0 else self.temperature
            for line in list(picked):
                if ctx.calls_left <= keep:
                    return None
                reply = ask(REPO_LINE_FIX.format(path=line.path, line=line.text.strip(),
                                                 language=_language(line.path)),
                            REPO_LINE_NOTICES[1].format(
                                place=f"{line.path}:{line.number}", k=k + 1,
                                of=REWRITES_PER_LINE,
                                temperature=temperature_label(temperature)), temperature)
                rewrite = rewrite_in(reply)
                text = with_rewrite(originals[line.path], line.number, rewrite) \
                    if rewrite is not None else None
                if text is None or not parses(line.path, text):
                    continue
                check = EditCheck(new_texts={line.path: text})
                if check.new_texts in edits:
                    continue  # tested before
                edits.append(check.new_texts)
                ctx.restart_evidence()
                outcome = self._attempt(ctx, run, check, repro, originals)
                tried(check.new_texts, outcome)
                if outcome.kept:
                    return self._answer(ctx, run, check, command)
                self._put_back(ctx, originals)
        return None

    def _attempt(self, ctx: TurnContext, run: _Runs, check: EditCheck,
                 repro: Reproduction | None, originals: dict[str, str]) -> Outcome:
        notes = "\n".join(f"- {note}" for note in check.refused)
        if not check.new_texts:
            feedback = REPO_PROBE_REFUSED.format(notes=notes) if check.refused \
                else REPO_PROBE_NO_BLOCKS
            return Outcome((-1, -1), False, feedback)
        for path, text in check.new_texts.items():
            if path not in originals and (old := _read(ctx.cwd / path)) is not None:
                originals[path] = old  # a file the code shown did not hold: put back too
            _, output = ctx.run_quiet(_call("write_file", {"file_path": path, "content": text}))
        files = ", ".join(check.new_texts)
        refused = f" (and these blocks were not: {'; '.join(check.refused)})" \
            if check.refused else ""
        met = 0
        if repro is not None:
            result = run.repro(repro)
            met = result.met
            if not result.passed:
                return Outcome((met, -1), False, REPO_PROBE_RESULT.format(
                    files=files, refused=refused, what=REPO_PROBE_REPRO_FAILED,
                    output=_tail(result.output)))
        report, output = run.suite()
        if ctx.evidence.missing() is None and ctx.evidence.edits and _exited_0(output):
            return Outcome((met, report.score), True, "", report)
        failure = report.failures[0].text if report.failures else _tail(output)
        return Outcome((met, report.score), False, REPO_PROBE_RESULT.format(
            files=files, refused=refused,
            what=REPO_PROBE_SUITE_FAILED.format(command=run.command, summary=report.summary),
            output=_tail(failure)), report)

    def _answer(self, ctx: TurnContext, run: _Runs, check: EditCheck, command: str) -> str:
        repro = run.last_repro
        said = REPO_PROBE_REPRO_MET.format(met=repro.met, total=repro.total) \
            if repro is not None and repro.passed else ""
        answer = REPO_PROBE_PASSED.format(files=", ".join(check.new_texts), repro=said,
                                          command=command)
        ctx.say(answer)
        return answer

    def _put_back(self, ctx: TurnContext, originals: dict[str, str]) -> None:
        for path, text in originals.items():
            if _read(ctx.cwd / path) != text:
                ctx.run_quiet(_call("write_file", {"file_path": path, "content": text}))


class _Runs:
    """The probe's shell runs: the issue's example as a check, and the suite, each timed
    by the clock."""

    def __init__(self, ctx: TurnContext, command: str, clock: TestClock,
                 shell_timeout_ms: int) -> None:
        self.ctx = ctx
        self.command = command
        self.clock = clock
        self.shell_timeout_ms = shell_timeout_ms
        self.last_repro: ReproResult | None = None

    def _shell(self, command: str) -> str:
        arguments: dict[str, Any] = {"command": command}
        timeout = self.clock.timeout_ms(self.shell_timeout_ms)
        if timeout is not None:
            arguments["timeout_ms"] = timeout
        return self.ctx.run_quiet(_call("shell", arguments))[1]

    def repro(self, repro: Reproduction) -> ReproResult:
        program = check_script(repro)
        output = self._shell(f"{interpreter_of(self.command)} - {heredoc(program)}")
        self.last_repro = read_result(output)
        return self.last_repro

    def trace(self, repro: Reproduction, places: list[tuple[str, int, int]]
              ) -> list[tuple[str, int]]:
        """The issue's example run once more, traced: the lines of `places` (path, first
        line, last line) it ran, (path, line) in the order they ran, the last of them."""
        program = check_script(repro, trace=places)
        output = self._shell(f"{interpreter_of(self.command)} - {heredoc(program)}")
        return [(places[i][0], n) for i, n in read_trace(output) if 0 <= i < len(places)]

    def suite(self) -> tuple[TestReport, str]:
        output = self._shell(self.command)
        seconds = timed_out(output)
        report = read_report(output) if seconds is None \
            else looping_report(seconds, self.clock.reference)
        return report, output


def _code(shown: Shown) -> str:
    c = shown.candidate
    return REPO_PROBE_CODE.format(path=c.path, kind=c.kind, symbol=c.symbol, start=c.start,
                                  end=c.end, language=_language(c.path), text=shown.text)


def _enough_blocks() -> Enough:
    """Where a SEARCH/REPLACE reply may stop: where one pattern began to repeat with only
    its numbers changing, when whole blocks came before it; with none, the reply is a miss
    (ReplyRepeats). At 49b4414 the 1.5B model, sending back an 80-line method, went on to
    enumerate `elif diff == self._SECS_PER_HOUR * 2 - 33:` with each number in turn for
    thousands of characters."""
    repeats = RepetitionGuard(blind_to_digits=True)

    def check(text: str) -> int | None:
        if not repeats.runaway(len(text), lambda: text):
            return None
        start = len(text) - repeats.span
        if parse_edit_blocks(text[:start]):
            return start
        raise ReplyRepeats(repeats.span)

    return check


def _first_block(text: str) -> int | None:
    """Where a line search reply may stop: after its first code block."""
    match = next(iter(fences(text)), None)
    return match.end() if match is not None else None


def _language(path: str) -> str:
    return "python" if path.endswith(".py") else Path(path).suffix.lstrip(".")


def _exited_0(output: str) -> bool:
    return output.startswith("Exit code: 0\n")


def _tail(output: str, most: int = MAX_OUTPUT_CHARS) -> str:
    """A shell result's output without the tool's preamble, its end when it is long."""
    text = _SHELL_PREAMBLE.sub("", output, count=1).strip()
    return text if len(text) <= most else "..." + text[-most:]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _call(name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name,
                    arguments=json.dumps(arguments, ensure_ascii=False))

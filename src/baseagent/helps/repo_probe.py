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
confirms the bug; when it already passes it decides nothing), then once more for where its
wrong value came from (the functions that made part of it, `origins`, are shown after the best
candidate), and the suite, which times the later runs (helps/test_time.py).

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
so that the probe spends at most seven eighths of the turn's model calls; without
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

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from baseagent.core.verification.evidence import is_test_file, runs_tests
from baseagent.helps.contract import (Enough, Message, ReplyRepeats, ReplyTooLong, TurnContext,
                                     TurnHelp)
from baseagent.helps.code_blocks import fences
from baseagent.helps.edit_form import (EditCheck, check_edit_blocks, parse_edit_blocks,
                                      tail_ends)
from baseagent.helps.function_edits import function_edits
from baseagent.helps.line_search import search_lines, shown_lines
from baseagent.helps.localise import MAX_FILE_BYTES, Candidate, Localisation, map_file
from baseagent.helps.localised_code import LocalisedCode, Shown, shown_symbols
from baseagent.helps.module_names import ModuleName, shown_names
from baseagent.helps.probe_plan import temperature_label
from baseagent.helps.repo_attempts import (Attempts, Outcome, RepoRuns, language_of, put_back,
                                           read_text, tail)
from baseagent.helps.reproduction import Origin, reproduction_from
from baseagent.helps.scratch import Scratch, ScratchError
from baseagent.helps.test_report import TestReport
from baseagent.helps.test_time import TestClock
from baseagent.helps.turn_start import TurnStart
from baseagent.llm.repetition import RepetitionGuard
from baseagent.prompts.system import (PROBE_CUT_NOTICE, PROBE_REPEATS_NOTICE,
                                      PROBE_SCRATCH_FAILED, REPO_LINE_OPENING,
                                      REPO_PROBE_BEFORE, REPO_PROBE_CODE, REPO_PROBE_NAMES,
                                      REPO_PROBE_NOTICES, REPO_PROBE_OPENING,
                                      REPO_PROBE_SOURCES, REPO_PROBE_START_KEPT,
                                      REPO_PROBE_SYSTEM)
from baseagent.tools.tool import DEFAULT_SHELL_TIMEOUT_MS

# The share of the turn's model calls left to the conversation after the probe (an eighth:
# 3 of 30). Half through 1da1ee3: on the first real-model run of the repository set the
# conversation fixed none of the 11 tasks it reached (the two fixed were the probe's), and
# the line search's questions take seconds. A quarter through 5c8bafe: in the runs at
# 1a80f63 and b5d2da2 it fixed none again (every fix was the probe's), its calls took one to
# five minutes each on prompts of 10,000 tokens, while the probe ran out of calls, not time
# (validators' after 5 of its 15 minutes; glom's two lines before the bug's in the sweep).
AGENT_SHARE = 8
# Repair rounds after the first message, and rounds in a row that may get no closer.
MAX_ROUNDS = 4
MAX_MISSES = 2
# The code sent: symbols and characters (the functions, not the modules).
MAX_SYMBOLS = 4
MAX_CODE_CHARS = 6_000
# Functions shown because the example showed a wrong value came from them (the
# origins: helps/repro_runtime.py), after the best candidate. At e049536 markdown's `slugify`
# (it returned the heading's id with its upper-case letters) was the only bug of the 12 the
# issue's names did not lead to.
ORIGINS_SHOWN = 2
ORIGIN_WHY = "the issue's example showed it returned part of the wrong result"
# What a reply may hold: this many times the code shown, and this much more: the functions
# sent back whole once, with a few sentences. At 49b4414 the 1.5B model's first reply to an
# 80-line method (5,000 characters shown) ran 13,000 characters in 8 minutes of a 900 s
# task; the line search that follows a miss asks for a line at a time.
REPLY_TIMES_CODE = 1
REPLY_SLACK_CHARS = 3_000
# And never more than this. At e049536 the two first replies past 3,000 characters (arrow,
# 6,201; markdown, 6,385) took 161 and 227 s and fixed nothing, and markdown's three later
# rounds 160 to 186 s each; the first replies that fixed a task (cachetools, 829) or came
# close (inflect, 2,389) were shorter, and a rewrite in the line search takes 2 to 3 s.
MAX_REPLY_CHARS = 4_000
# A reply this near its cap stops after its last whole block (`_enough_blocks`).
LIMIT_MARGIN_CHARS = 200
# How a line that is a command (not a sentence naming one) begins.
_COMMAND_START = re.compile(r"^(?:env|cd|timeout|uv|poetry|hatch|tox|nox|make|npm|yarn|pnpm|"
                            r"go|cargo|python[\d.]*|pypy[\d.]*|pytest|py\.test)\b|^\w+=|^[./~]")


def code_shown(found: Localisation, root: Path, made: Sequence[Candidate] = ()
               ) -> list[Shown]:
    """The functions the probe shows: the best MAX_SYMBOLS candidates that are not classes
    (a class's outline is no code to edit), as the files have them, with the functions the
    issue's example showed made part of its wrong value (`made`: origin_candidates, at most
    ORIGINS_SHOWN) after the first. Through 1da1ee3 a class took one of the places and was
    then left out: on croniter the class `croniter` ranked first and `_is_leap`, where the
    bug was, fifth, so it was not shown."""
    candidates = [c for c in found.candidates if c.kind != "class"]
    added = [c for c in made
             if not any(o.path == c.path and o.symbol == c.symbol for o in candidates)]
    functions = replace(found, candidates=tuple(
        [*candidates[:1], *added[:ORIGINS_SHOWN], *candidates[1:]]))
    return shown_symbols(functions, root, MAX_SYMBOLS, MAX_CODE_CHARS, numbers=False)


def origin_candidates(origins: Sequence[Origin], root: Path) -> list[Candidate]:
    """The functions of the repository the origins name (the innermost definition that
    holds each one's first line), as localisation's candidates."""
    out: list[Candidate] = []
    for origin in origins:
        path = root / origin.path
        if is_test_file(origin.path) or not path.resolve().is_relative_to(root.resolve()):
            continue
        try:
            text = read_text(path) if path.stat().st_size <= MAX_FILE_BYTES else None
        except OSError:
            continue
        mapped = map_file(origin.path, text) if text is not None else None
        holding = [d for d in (mapped.definitions if mapped is not None else ())
                   if d.kind != "class" and d.start <= origin.line <= d.end]
        if not holding:
            continue
        d = min(holding, key=lambda d: d.end - d.start)
        candidate = Candidate(origin.path, d.qualname, d.start, d.end, d.kind, 0.0,
                              (ORIGIN_WHY,))
        if candidate not in out:
            out.append(candidate)
    return out


def reply_limit(shown: Sequence[Shown]) -> int:
    """The characters a reply to the probe may hold, for the code it was shown."""
    return min(MAX_REPLY_CHARS,
               REPLY_TIMES_CODE * sum(len(s.text) for s in shown) + REPLY_SLACK_CHARS)


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


@dataclass(frozen=True)
class _Setting:
    """What the probe's rounds start from: the code shown and the files it is in as the task
    had them, the opening message (and its parts the line search reuses), and the attempts."""

    shown: list[Shown]
    originals: dict[str, str]
    made: list[Candidate]  # the functions that made part of the wrong value (origins)
    code: str
    before_text: str  # what the example gives now, as the opening says it
    opening: str
    limit: int  # a reply's characters
    attempts: Attempts
    at_start: TestReport  # the suite's before any change


def _set_up(ctx: TurnContext, found: Localisation, command: str, clock: TestClock,
            shell_timeout_ms: int) -> _Setting | None:
    """Run the issue's example (a check when it shows the bug, then for its origins) and the
    suite (which times the later runs), and build the opening; None when no code is shown."""
    shown = code_shown(found, ctx.cwd)
    if not shown:
        return None
    keep = max(1, ctx.calls_left // AGENT_SHARE)  # the agent's own
    runs = RepoRuns(ctx, command, clock, shell_timeout_ms)
    repro = reproduction_from(ctx.task)
    if repro is not None and not repro.expectations:
        repro = None
    before = runs.repro(repro) if repro is not None else None
    if before is not None and (before.passed or not before.finished):
        repro, before = None, None  # it does not show the bug: it decides nothing
    made: list[Candidate] = []
    if repro is not None:
        made = origin_candidates(runs.origins(repro), ctx.cwd)[:ORIGINS_SHOWN]
        if made:
            shown = code_shown(found, ctx.cwd, made)
    at_start, output = runs.suite()
    clock.saw(output)  # the task's own first test run times the rest
    originals = {s.candidate.path: text for s in shown
                 if (text := read_text(ctx.cwd / s.candidate.path)) is not None}
    before_text = REPO_PROBE_BEFORE.format(output=tail(before.output)) \
        if before is not None else ""
    names = shown_names([(s.candidate.path, s.candidate.start, s.candidate.end)
                         for s in shown], originals)
    code = "".join(_code(s, used) for s, used in zip(shown, names))
    return _Setting(shown=shown, originals=originals, made=made, code=code,
                    before_text=before_text,
                    opening=REPO_PROBE_OPENING.format(task=ctx.task, code=code,
                                                      before=before_text),
                    limit=reply_limit(shown),
                    attempts=Attempts(ctx, runs, repro, originals, keep, at_start),
                    at_start=at_start)


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
        setting = _set_up(ctx, found, command, self.clock, self.shell_timeout_ms)
        if setting is None:
            return None
        final = self._rounds(ctx, setting)
        if final is not None:
            return final
        setting.attempts.put_back()
        ctx.restart_evidence()
        try:
            self.start = TurnStart.take(ctx.cwd, command, setting.at_start)
            self.start.best = setting.attempts.best
        except ScratchError as exc:
            ctx.notice(PROBE_SCRATCH_FAILED.format(error=exc))
        return None

    def _rounds(self, ctx: TurnContext, setting: _Setting) -> str | None:
        """The first reply, the line search after it missed, then repair (and search)
        rounds: the answer of the first attempt kept, or None when none was."""
        attempts, shown = setting.attempts, setting.shown
        exchange: list[dict[str, Any]] = [{"role": "user", "content": setting.opening}]
        replies: set[str] = set()
        first: dict[str, str] = {}  # the first reply's edits
        best: tuple[int, int] = (-1, -1)
        misses = rounds = 0
        searching = False
        shown_next: tuple[str, str] | None = None  # the best reply and what it gave
        while attempts.calls_left():
            draws = self.candidates if searching else 1
            round_best: tuple[Outcome, str] | None = None  # None: the round drew nothing new
            for k in range(1, draws + 1):
                if not attempts.calls_left():
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
                reply = _reply(ctx, exchange[:1] if fresh else exchange, notice, setting.limit,
                               self.temperature if searching else None)
                if reply.strip() and reply in replies:
                    continue  # the same reply again: nothing new to test
                replies.add(reply)
                check = _edits(ctx, reply, shown, attempts)
                if check.new_texts and attempts.tested(check.new_texts):
                    continue  # the same edits again
                outcome = attempts.attempt(check)
                if outcome.kept:
                    return attempts.answer(check)
                if rounds == 0:
                    first = check.new_texts
                attempts.put_back()
                if round_best is None or outcome.score > round_best[0].score:
                    round_best = (outcome, reply)
            if rounds == 0 and shown_lines(shown, setting.originals):
                # the first reply missed: which line, and what it should be, asked apart
                final = search_lines(attempts, REPO_LINE_OPENING.format(
                    task=ctx.task, code=setting.code, before=setting.before_text), shown, first,
                    self.temperature, made={c.symbol for c in setting.made})
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
            passed, now = self.scratch.test(ctx, {}, start.command,
                                            self.clock.timeout_s(self.shell_timeout_ms),
                                            self.clock.reference, fresh=True)
            if passed or now.score >= start.target.score:
                return
            texts = {c.path: text for c in changed if (text := start.text(c.path)) is not None}
            if start.best is not None:
                texts.update(start.best[0])
            put_back(ctx, texts)
            ctx.notice(REPO_PROBE_START_KEPT.format(
                now=now.summary or "no test known to pass", then=start.target.summary,
                which="the probe's best attempt" if start.best is not None else "the start",
                names=", ".join(sorted(texts))))
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


def _whole_blocks_end(text: str) -> int | None:
    """Where the last whole block of a reply ends (a SEARCH/REPLACE block's last line, or a
    code block's closing fence), or None when it has none."""
    ends = [m.end() for m in fences(text)] + tail_ends(text)
    return max(ends) if ends else None


def _code(shown: Shown, names: Sequence[ModuleName] = ()) -> str:
    """A function shown, then the module-level names it reads (helps/module_names.py)."""
    c = shown.candidate
    code = REPO_PROBE_CODE.format(path=c.path, kind=c.kind, symbol=c.symbol, start=c.start,
                                  end=c.end, language=language_of(c.path), text=shown.text)
    if not names:
        return code
    return code + REPO_PROBE_NAMES.format(
        path=c.path, symbol=c.symbol, language=language_of(c.path),
        lines=", ".join(f"{n.start}-{n.end}" for n in names),
        text="\n\n".join(n.text for n in names))


def _reply(ctx: TurnContext, exchange: list[dict[str, Any]], notice: str, limit: int,
           temperature: float | None) -> str:
    """The model's reply to the probe's exchange, "" when it was cut (a notice says why)."""
    try:
        return ctx.ask_alone([{"role": "system", "content": REPO_PROBE_SYSTEM}, *exchange],
                             notice, max_chars=limit, temperature=temperature,
                             enough=_enough_blocks(limit)).text
    except ReplyRepeats as cut:
        ctx.notice(PROBE_REPEATS_NOTICE.format(chars=cut.span))
    except ReplyTooLong:
        ctx.notice(PROBE_CUT_NOTICE.format(chars=limit))
    return ""


def _edits(ctx: TurnContext, reply: str, shown: Sequence[Shown],
           attempts: Attempts) -> EditCheck:
    """What a reply's SEARCH/REPLACE blocks would make of the files, checked; without
    blocks, its whole functions merged by name."""
    blocks = parse_edit_blocks(reply)
    if blocks:
        return check_edit_blocks(ctx.cwd, blocks, may_write=attempts.may_write)
    return function_edits(reply, [s.candidate for s in shown], ctx.cwd, attempts.may_write)


def _enough_blocks(limit: int) -> Enough:
    """Where a SEARCH/REPLACE reply may stop: where one pattern began to repeat with only
    its numbers changing, when whole blocks came before it; with none, the reply is a miss
    (ReplyRepeats). At 49b4414 the 1.5B model, sending back an 80-line method, went on to
    enumerate `elif diff == self._SECS_PER_HOUR * 2 - 33:` with each number in turn for
    thousands of characters. And as it nears `limit`, after its last whole block (a
    SEARCH/REPLACE block or a code block: a function sent whole), when it has one; else it
    is cut at `limit` (ReplyTooLong) and is a miss."""
    repeats = RepetitionGuard(blind_to_digits=True)

    def check(text: str) -> int | None:
        if len(text) >= limit - LIMIT_MARGIN_CHARS:
            return _whole_blocks_end(text)
        if not repeats.runaway(len(text), lambda: text):
            return None
        start = len(text) - repeats.span
        if parse_edit_blocks(text[:start]):
            return start
        raise ReplyRepeats(repeats.span)

    return check

"""One repository probe turn's attempts: each one's edits written, the issue's example
checked, the suite run, then kept or put back.

The repository probe (helps/repo_probe.py) tries edits from whole replies, and its line
search (helps/line_search.py) tries a line at a time; both test what they try the same way
and share what the turn has tried so far. `Attempts` holds that state for one turn (the
files' texts at the start, the edits tested, the suite's best) and is passed to both, so
neither takes a dozen arguments. `RepoRuns` holds the shell runs: the example as a check
(helps/reproduction.py), its trace, and the suite, each timed by the turn's clock
(helps/test_time.py). Every write and run goes through `run_quiet`: the sandbox's path
policy holds and a test file is never written.
"""
from __future__ import annotations

import json
import re
import shlex
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baseagent.core.verification.evidence import is_test_file
from baseagent.helps.contract import TurnContext
from baseagent.helps.edit_form import EditCheck
from baseagent.helps.line_values import Saw, read_values
from baseagent.helps.reproduction import (Origin, ReproResult, Reproduction, check_script,
                                          read_origins, read_result, read_spectrum,
                                          read_trace)
from baseagent.helps.test_report import TestReport, read_report
from baseagent.helps.test_time import TestClock, looping_report, timed_out
from baseagent.llm.types import ToolCall
from baseagent.prompts.system import (REPO_PROBE_NO_BLOCKS, REPO_PROBE_PASSED,
                                      REPO_PROBE_REFUSED, REPO_PROBE_REPRO_FAILED,
                                      REPO_PROBE_REPRO_MET, REPO_PROBE_RESULT,
                                      REPO_PROBE_SUITE_FAILED)

# The output of a check or a failing test shown in a repair round, at most.
MAX_OUTPUT_CHARS = 3_000
# What the shell tool puts before a command's output.
_SHELL_PREAMBLE = re.compile(r"\A(?:Exit code: .*\n)?(?:Wall time: .*\n)?(?:Output:\n)?")


@dataclass(frozen=True)
class Outcome:
    """What one attempt led to: how close it got (the example's expectations met, then the
    suite's tests passed), whether it is kept, and what the next round shows; `report`:
    the suite's, when it ran."""

    score: tuple[int, int]
    kept: bool
    feedback: str
    report: TestReport | None = None


class RepoRuns:
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
        return self.ctx.run_quiet(tool_call("shell", arguments))[1]

    def _check(self, program: str) -> str:
        """A check program (helps/reproduction.py) run with the suite's interpreter."""
        return self._shell(f"{interpreter_of(self.command)} - {heredoc(program)}")

    def repro(self, repro: Reproduction) -> ReproResult:
        self.last_repro = read_result(self._check(check_script(repro)))
        return self.last_repro

    def trace(self, repro: Reproduction, places: list[tuple[str, int, int]]
              ) -> tuple[list[tuple[str, int]], dict[tuple[str, int], float]]:
        """The issue's example run once more, traced: the lines of `places` (path, first
        line, last line) it ran, (path, line) in the order they ran, the last of them; and
        each line's suspicion by the statements it ran in (`traced_lines`)."""
        return traced_lines(self._check(check_script(repro, trace=places)), places)

    def values(self, repro: Reproduction, lines: list[tuple[str, int, list[str]]]
               ) -> dict[int, Saw]:
        """The issue's example run once more, watching `lines` (path, line, the names it
        mentions): what each saw (helps/line_values.py), by its index in `lines`."""
        return read_values(self._check(check_script(repro, values=lines)))

    def origins(self, repro: Reproduction) -> list[Origin]:
        """The issue's example run once more, watching what the repository's functions
        return: those that returned part of a wrong result, the most telling first."""
        return read_origins(self._check(check_script(repro, origins=True)))

    def suite(self) -> tuple[TestReport, str]:
        output = self._shell(self.command)
        seconds = timed_out(output)
        report = read_report(output) if seconds is None \
            else looping_report(seconds, self.clock.reference)
        return report, output


def traced_lines(output: str, places: Sequence[tuple[str, int, int]]
                 ) -> tuple[list[tuple[str, int]], dict[tuple[str, int], float]]:
    """What a traced check printed: the lines of `places` it ran, (path, line) in order, and
    each line's suspicion (reproduction.Spectrum: higher when it ran in the statements
    whose expectations failed, not in those met)."""
    ran = [(places[i][0], n) for i, n in read_trace(output) if 0 <= i < len(places)]
    spectrum = read_spectrum(output)
    suspicion: dict[tuple[str, int], float] = {}
    for i, n in spectrum.counts:
        if 0 <= i < len(places):
            where = (places[i][0], n)
            suspicion[where] = max(suspicion.get(where, 0.0), spectrum.suspicion(i, n))
    return ran, suspicion


class Attempts:
    """What one turn of the repository probe tries, and with what: the files shown as they
    were (`originals`, put back after each attempt), the edits tested (never twice), the
    attempt whose suite passed the most tests beyond the start (`best`, what the end of the
    turn falls back on), and the model calls it leaves to the conversation (`keep`)."""

    def __init__(self, ctx: TurnContext, runs: RepoRuns, repro: Reproduction | None,
                 originals: dict[str, str], keep: int, at_start: TestReport) -> None:
        self.ctx = ctx
        self.runs = runs
        self.repro = repro
        self.originals = originals
        self.keep = keep
        self.at_start = at_start
        self.edits: list[dict[str, str]] = []
        self.best: tuple[dict[str, str], TestReport] | None = None

    @property
    def command(self) -> str:
        return self.runs.command

    def calls_left(self) -> bool:
        """Whether the probe may still ask the model (the conversation keeps its share)."""
        return self.ctx.calls_left > self.keep

    def may_write(self, path: str) -> bool:
        """Only files that exist, never a test: what the probe writes it can put back."""
        return not is_test_file(path) and (self.ctx.cwd / path).is_file()

    def tested(self, new_texts: dict[str, str]) -> bool:
        return new_texts in self.edits

    def attempt(self, check: EditCheck) -> Outcome:
        """Write the edits, check the example, run the suite; what came of it. The edits
        are recorded as tested; the files are left as the attempt wrote them."""
        if check.new_texts:
            self.edits.append(check.new_texts)
        outcome = self._attempt(check)
        report = outcome.report
        if not outcome.kept and report is not None and report.score > max(
                self.at_start.score, self.best[1].score if self.best is not None else -1):
            self.best = (dict(check.new_texts), report)
        return outcome

    def _attempt(self, check: EditCheck) -> Outcome:
        ctx = self.ctx
        notes = "\n".join(f"- {note}" for note in check.refused)
        if not check.new_texts:
            feedback = REPO_PROBE_REFUSED.format(notes=notes) if check.refused \
                else REPO_PROBE_NO_BLOCKS
            return Outcome((-1, -1), False, feedback)
        for path, text in check.new_texts.items():
            if path not in self.originals and (old := read_text(ctx.cwd / path)) is not None:
                self.originals[path] = old  # a file the code shown did not hold: put back too
            ctx.run_quiet(tool_call("write_file", {"file_path": path, "content": text}))
        files = ", ".join(check.new_texts)
        refused = f" (and these blocks were not: {'; '.join(check.refused)})" \
            if check.refused else ""
        met = 0
        if self.repro is not None:
            result = self.runs.repro(self.repro)
            met = result.met
            if not result.passed:
                return Outcome((met, -1), False, REPO_PROBE_RESULT.format(
                    files=files, refused=refused, what=REPO_PROBE_REPRO_FAILED,
                    output=tail(result.output)))
        report, output = self.runs.suite()
        if ctx.evidence.missing() is None and ctx.evidence.edits \
                and output.startswith("Exit code: 0\n"):
            return Outcome((met, report.score), True, "", report)
        failure = report.failures[0].text if report.failures else tail(output)
        return Outcome((met, report.score), False, REPO_PROBE_RESULT.format(
            files=files, refused=refused,
            what=REPO_PROBE_SUITE_FAILED.format(command=self.command, summary=report.summary),
            output=tail(failure)), report)

    def answer(self, check: EditCheck) -> str:
        """The turn's answer for the kept attempt, said to the person watching."""
        repro = self.runs.last_repro
        said = REPO_PROBE_REPRO_MET.format(met=repro.met, total=repro.total) \
            if repro is not None and repro.passed else ""
        answer = REPO_PROBE_PASSED.format(files=", ".join(check.new_texts), repro=said,
                                          command=self.command)
        self.ctx.say(answer)
        return answer

    def put_back(self) -> None:
        """The files as they were before the last attempt."""
        put_back(self.ctx, self.originals)


def put_back(ctx: TurnContext, texts: dict[str, str]) -> None:
    """Each file (path -> text) written back as `texts` has it, when it differs."""
    for path, text in texts.items():
        if read_text(ctx.cwd / path) != text:
            ctx.run_quiet(tool_call("write_file", {"file_path": path, "content": text}))


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


def language_of(path: str) -> str:
    """A code fence's language for a file."""
    return "python" if path.endswith(".py") else Path(path).suffix.lstrip(".")


def tail(output: str, most: int = MAX_OUTPUT_CHARS) -> str:
    """A shell result's output without the tool's preamble, its end when it is long."""
    text = _SHELL_PREAMBLE.sub("", output, count=1).strip()
    return text if len(text) <= most else "..." + text[-most:]


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def tool_call(name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name,
                    arguments=json.dumps(arguments, ensure_ascii=False))

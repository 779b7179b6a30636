"""What a test run's output says: how many tests passed, and each failure on its own.

The whole-file probe's repair rounds (helps/probe.py) compare attempts by the tests they
pass and show the model one failing test at a time: a small model shown fifty lines of
mixed failures fixes none of them; shown one failing test with its expected and actual
values, it often fixes that one. Read from the text the shell tool returns (pytest's and
unittest's formats; anything else is one failure, the output's tail), never by running
anything.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# pytest's counts ("3 failed, 5 passed, 1 error in 0.12s"), unittest's run ("Ran 8 tests")
# and its verdict ("FAILED (failures=2, errors=1)").
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|xfailed|xpassed|skipped)\b")
_TIMED = re.compile(r"\bin [\d.]+s\b")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)
_UNITTEST_VERDICT = re.compile(r"^FAILED \(([^)]*)\)", re.MULTILINE)
# pytest: "____ TestClass.test_name ____" opens a failure; a "====" rule ends the section.
_PYTEST_HEADER = re.compile(r"^_{2,} (.+?) _{2,}$")
_RULE = re.compile(r"^={3,}")
# unittest: "FAIL: test_name (module.Class.test_name)" after a "=====" rule.
_UNITTEST_HEADER = re.compile(r"^(?:FAIL|ERROR): (\S+)")
# What the shell tool puts before a command's output.
_SHELL_PREAMBLE = re.compile(r"\A(?:Exit code: .*\n)?(?:Wall time: .*\n)?(?:Output:\n)?")
# A failure shown to the model, at most (the start of it holds the test and the assertion).
MAX_FAILURE_LINES = 40
TAIL_LINES = 30


@dataclass(frozen=True)
class Failure:
    name: str
    text: str


@dataclass(frozen=True)
class TestReport:
    """`passed` is None when the output does not say (an unknown runner, a crash before
    any test ran); `failures` holds each failing test's section, in the output's order."""

    passed: int | None
    failed: int
    failures: tuple[Failure, ...]
    summary: str

    @property
    def score(self) -> int:
        """For comparing attempts: the tests passed; -1 when none is known to pass."""
        return self.passed if self.passed is not None else -1


def read_report(output: str) -> TestReport:
    """The counts and failures in a test command's output (as the shell tool returns it)."""
    text = _SHELL_PREAMBLE.sub("", output, count=1)
    lines = text.splitlines()
    passed, failed, summary = _counts(lines)
    failures = _pytest_failures(lines) or _unittest_failures(lines)
    if not failures and text.strip():
        failures = (Failure("", "\n".join(lines[-TAIL_LINES:])),)
    return TestReport(passed, failed, failures, summary)


def _counts(lines: list[str]) -> tuple[int | None, int, str]:
    text = "\n".join(lines)
    for line in reversed(lines):
        stripped = line.strip("= ").strip()
        if _COUNT.search(stripped) and _TIMED.search(stripped):
            counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
                      for n, kind in _COUNT.findall(stripped)}
            failed = counts.get("failed", 0) + counts.get("error", 0)
            summary = re.sub(r"\s+in [\d.]+s.*$", "", stripped)
            return counts.get("passed", 0), failed, summary
    ran = _UNITTEST_RAN.search(text)
    if ran:
        total = int(ran.group(1))
        verdict = _UNITTEST_VERDICT.search(text)
        failed = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)",
                                                 verdict.group(1))) if verdict else 0
        return total - failed, failed, f"{failed} failed, {total - failed} passed"
    return None, 0, (lines[-1].strip() if lines else "no output")


def _pytest_failures(lines: list[str]) -> tuple[Failure, ...]:
    found: list[Failure] = []
    name: str | None = None
    body: list[str] = []

    def close() -> None:
        if name is not None:
            found.append(Failure(name, _trim(body)))

    for line in lines:
        header = _PYTEST_HEADER.match(line)
        if header:
            close()
            name, body = header.group(1), []
        elif _RULE.match(line):
            close()
            name, body = None, []
        elif name is not None:
            body.append(line)
    close()
    return tuple(found)


def _unittest_failures(lines: list[str]) -> tuple[Failure, ...]:
    found: list[Failure] = []
    for index, line in enumerate(lines):
        header = _UNITTEST_HEADER.match(line)
        if not header or index == 0 or not _RULE.match(lines[index - 1]):
            continue
        body = []
        for rest in lines[index + 1:]:
            if _RULE.match(rest) or rest.startswith("Ran "):
                break
            body.append(rest)
        found.append(Failure(header.group(1), _trim([line, *body])))
    return tuple(found)


def _trim(body: list[str]) -> str:
    while body and not body[0].strip():
        body = body[1:]
    while body and not body[-1].strip():
        body = body[:-1]
    if len(body) > MAX_FAILURE_LINES:  # the test's first lines, and where it failed
        body = body[:8] + ["..."] + body[9 - MAX_FAILURE_LINES:]
    return "\n".join(body)

"""How long a test run inside the helps may take: a few times the task's own first run.

A candidate with an endless loop makes the test command run into the shell's timeout
(two minutes by default) every time it is tried, on a suite that passes or fails in a
fraction of a second. The helps time the task's tests once as the task has them (the
probe does, before its first message), or take the first run they see, and give their own
test runs MULTIPLE times that, never less than FLOOR_S and never more than the shell's
default. A run that is stopped is reported to the model as likely looping.
"""
from __future__ import annotations

import re

from baseagent.helps.test_report import Failure, TestReport
from baseagent.prompts.system import TESTS_BEFORE, TESTS_LOOPING, TESTS_LOOPING_NOTE

# The test runs' timeout: this many times the first run's wall time, within these bounds.
MULTIPLE = 5
FLOOR_S = 5.0
_WALL = re.compile(r"^Wall time: ([\d.]+) seconds$", re.MULTILINE)
_TIMED_OUT = re.compile(r"command timed out after (\d+) milliseconds")


def wall_seconds(output: str) -> float | None:
    """The wall time a shell result reports, or None."""
    match = _WALL.search(output[:200])
    return float(match.group(1)) if match else None


def timed_out(output: str) -> float | None:
    """The seconds after which a shell result says its command was stopped, or None."""
    match = _TIMED_OUT.search(output)
    return int(match.group(1)) / 1000 if match else None


class TestClock:
    """The turn's reference for test runs: the wall time of the first run that finished."""

    def __init__(self) -> None:
        self.reference: float | None = None

    def reset(self) -> None:
        self.reference = None

    def saw(self, output: str) -> None:
        """A run of the test command finished with this shell output."""
        wall = wall_seconds(output)
        if self.reference is None and wall is not None and timed_out(output) is None:
            self.reference = wall

    def timeout_ms(self, cap_ms: int) -> int | None:
        """The timeout for the next test run (None: the shell's default, no reference yet)."""
        if self.reference is None:
            return None
        return int(min(cap_ms, max(FLOOR_S, MULTIPLE * self.reference) * 1000))

    def timeout_s(self, cap_ms: int) -> float:
        """The next test run's timeout in seconds, the cap itself before any reference: the
        probes' own runs (in a scratch copy) always need one."""
        timeout = self.timeout_ms(cap_ms)
        return (timeout if timeout is not None else cap_ms) / 1000


def looping_report(seconds: float, reference: float | None) -> TestReport:
    """What a stopped test run says of its candidate (the probe's): likely looping."""
    text = TESTS_LOOPING.format(seconds=seconds, before=_before(reference))
    return TestReport(passed=None, failed=0, failures=(Failure("", text),), summary=text)


def looping_note(seconds: float, reference: float | None) -> str:
    """What the model is told of a stopped test run in the conversation."""
    return TESTS_LOOPING_NOTE.format(seconds=seconds, before=_before(reference))


def _before(reference: float | None) -> str:
    return TESTS_BEFORE.format(reference=reference) if reference is not None else ""

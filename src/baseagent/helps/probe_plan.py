"""The whole-file probe's messages: what to send next, and the best attempt so far.

The compact profile answers a task that names its files and its test command first the
way a small model answers best, without tools and with whole files (Aider's way); the probe
(helps/probe.py) sends each message, writes the files of the reply, runs the tests
and hands the attempt back here. The messages, in order:

1. the task and the files to change, as they are;
2. the same with the tests the task names shown (a model that missed a name or an error
   message the tests expect often finds it there);
3. repair rounds: the second message (the task, its files and tests: every message of the
   probe opens with the same text, which a server's prompt cache serves), then the best
   attempt so far (the one that passed the most tests) and one of its failing tests, asking
   first for one sentence on what in the code makes that test fail, then for the whole file
   again. A small model shown fifty lines of mixed failures fixes none; shown one failing
   test with the values it expected and got, it can fix that one. Asked only for the fixed
   file, the 1.5B model measured here sent its code back unchanged; asked first why the test
   fails, it names a cause and changes the code (and when it stops after that sentence, it
   is asked for the file, after it; when it sends the code as it was, for a change: one more
   message of the same round). An attempt that passes more tests becomes the one the next
   round starts from; one that does not is dropped, and the next round shows another failing
   test of the best (a different prompt: at temperature 0 the same prompt gets the same
   reply). Rounds stop after MAX_REPAIR_ROUNDS, or MAX_MISSES in a row that passed no more
   tests than the best.
4. search rounds: once a repair round misses (its reply passed no more tests than the best:
   most often the same code, or the same idea in new words), each later round draws
   `candidates` replies sampled above temperature 0, from prompts in turn: one failing test
   of the best (as a repair round), then twice a fresh start (the task, its files and
   tests, without the failed attempt; one prompt, so the second is served from the
   server's prompt cache; every other round takes them in reverse, so that a round opens
   with the prompt the one before closed with). On the dev set (d2b144f and 492682f) 8 of
   38 fresh starts beat the best attempt, 3 of 49 candidates shown one failing test, 2 of
   44 shown the best with its whole failure list (most sent the code back unchanged), so
   that third prompt is no longer drawn. The probe tests each in a scratch copy of the
   workspace and keeps the best (helps/probe.py). The first repair round stays one reply at
   the run's temperature: at temperature 0 it is the model's most likely fix, and when it
   works the turn spends one call, not a round of samples.
   Search rounds are not held to MAX_MISSES: sampled candidates differ where repair rounds
   repeat, and on the dev set the search found its passing or better files in its third
   to sixth round, after rounds that missed. They go on while the probe's share of the
   turn's calls lasts (helps/probe.py), at most MAX_SEARCH_ROUNDS, and stop after
   MAX_IDLE_SEARCHES rounds in a row that drew nothing new to test.

Nothing here runs or writes anything: helps/probe.py does, and keeps the files and the evidence.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from baseagent.helps.named_files import render_files
from baseagent.helps.test_report import Failure, TestReport
from baseagent.prompts.system import (PROBE_NOTICES, PROBE_REPAIR, PROBE_REPAIR_NOTICE,
                                      PROBE_TESTS_SECTION)

# The tests shown in the second message, in bytes.
MAX_PROBE_TEST_BYTES = 16 * 1024
# Repair rounds after the first two messages, and rounds in a row that may pass no more
# tests than the best attempt before they stop.
MAX_REPAIR_ROUNDS = 6
MAX_MISSES = 3
# Search rounds at most, and rounds in a row that drew no candidate new to test before the
# search stops (the probe's share of the turn's model calls bounds it first, most often).
MAX_SEARCH_ROUNDS = 12
MAX_IDLE_SEARCHES = 2
# A search round: candidates drawn, and the prompts they take in turn.
SEARCH_CANDIDATES = 3
SEARCH_KINDS = ("assertion", "fresh", "fresh")


def temperature_label(temperature: float | None) -> str:
    """A search round's sampling temperature as its notices say it (None: the run's own)."""
    return "the run's" if temperature is None else f"{temperature:g}"


@dataclass(frozen=True)
class Attempt:
    """What one probe message led to: the files to change as its reply left them, and what
    the test command said of them."""

    files: dict[str, str]
    report: TestReport


@dataclass(frozen=True)
class ProbeMessage:
    """A message to send: its text, the notice the run shows as it goes, and the files the
    attempt starts from (the task's, or the best attempt's for a repair round)."""

    text: str
    notice: str
    start: dict[str, str]
    # Whether a reply that writes nothing gets one more message, asking for the file (it
    # often stops after its sentence on why the test fails) or for a change (it sent the
    # code as it was): a repair round's.
    follow_up: bool = False
    # A search round's: the candidates to draw, each its own prompt (the text above is the
    # first one's).
    candidates: tuple[Candidate, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """One reply of a search round to draw: its prompt, and which kind it is."""

    text: str
    kind: str  # one of SEARCH_KINDS


@dataclass
class ProbePlan:
    """The probe of one turn. `files`: the files to change as the turn found them (what is
    put back when no attempt passes); `tests`: the test files the task names."""

    task: str
    files: dict[str, str]
    tests: dict[str, str]
    test_command: str
    max_rounds: int = MAX_REPAIR_ROUNDS
    # Candidates a search round draws; 0: no search rounds (repair rounds as before).
    candidates: int = 0
    best: Attempt | None = None
    searching: bool = False  # a repair round missed: the rounds from now on are searches
    drawn: int = 0  # search candidates drawn so far (their prompts take turns)
    # The files of every attempt tested so far, so that no candidate is tested twice.
    tried: set[tuple[tuple[str, str], ...]] = field(default_factory=set)
    sent: int = 0  # messages sent so far
    rounds: int = 0  # repair rounds sent so far
    misses: int = 0  # repair rounds in a row that did not beat the best
    searches: int = 0  # search rounds sent so far
    idle: int = 0  # search rounds in a row that tested no new candidate
    shown: int = 0  # which failing test of the best the next round shows
    openings: list[str] = field(init=False)

    def __post_init__(self) -> None:
        opening = self.task + render_files(self.files)
        shown = render_files(self.tests, PROBE_TESTS_SECTION, MAX_PROBE_TEST_BYTES)
        # First without the tests: a model shown a test file may copy it back instead.
        self.openings = [opening, opening + shown] if shown else [opening]

    def next_message(self) -> ProbeMessage | None:
        """The next message to send, or None: the probe is over."""
        if self.sent < len(self.openings):
            message = ProbeMessage(self.openings[self.sent], PROBE_NOTICES[self.sent],
                                   self.files)
        else:
            best = self.best
            if best is None or not best.report.failures:
                return None
            if self.searching and self.candidates > 0:
                if self.searches >= MAX_SEARCH_ROUNDS or self.idle >= MAX_IDLE_SEARCHES:
                    return None
                self.rounds += 1
                self.searches += 1
                self.sent += 1
                return self._search(best)
            if self.rounds >= self.max_rounds or self.misses >= MAX_MISSES:
                return None
            failure = best.report.failures[self.shown % len(best.report.failures)]
            self.rounds += 1
            message = ProbeMessage(
                self._repair(best, failure),
                PROBE_REPAIR_NOTICE.format(n=self.rounds, summary=best.report.summary),
                best.files, follow_up=True)
        self.sent += 1
        return message

    def _search(self, best: Attempt) -> ProbeMessage:
        """A search round from the best attempt: `candidates` prompts, the kinds in turn."""
        failures = best.report.failures
        drawn: list[Candidate] = []
        for index in range(self.candidates):
            kind = SEARCH_KINDS[(self.drawn + index) % len(SEARCH_KINDS)]
            if kind == "fresh":
                text = self.openings[-1]
            else:
                text = self._repair(best, failures[(self.shown + index) % len(failures)])
            drawn.append(Candidate(text, kind))
        self.drawn += self.candidates
        if self.searches % 2 == 0:
            # Every other round in reverse, so that a round opens with the kind of prompt
            # the one before it closed with. A one-slot server (llama-server) keeps only the
            # last prompt: a fresh start after a failing-test prompt is served from it (the
            # first is the start of the second), but the failing-test prompt after a fresh
            # start reads the best attempt and its failure anew. At 8884192 that was 707 of
            # 2,521 tokens in each of five rounds in a row of one task.
            drawn.reverse()
        return ProbeMessage(drawn[0].text, "", best.files, candidates=tuple(drawn))

    def _repair(self, best: Attempt, failure: Failure) -> str:
        """A repair prompt: the last opening (the task, its files and tests), then the best
        attempt and one of its failing tests. Every message of the probe starts with the
        same text, so a server's prompt cache serves it and reads only what differs: at
        492682f, when each repair prompt opened with the task alone, 30% of the input
        tokens were read anew, two thirds of them where a candidate's prompt left the
        previous one's."""
        return self.openings[-1] + PROBE_REPAIR.format(
            command=self.test_command, summary=best.report.summary,
            files=render_files(best.files, "{files}"),
            test=f" ({failure.name})" if failure.name else "",
            failure=failure.text, names=", ".join(best.files))

    def is_new(self, files: dict[str, str]) -> bool:
        """Whether no attempt with these files was tested yet (then it counts as tested)."""
        key = tuple(sorted(files.items()))
        if key in self.tried:
            return False
        self.tried.add(key)
        return True

    def change_size(self, files: dict[str, str]) -> int:
        """Lines added and removed against the files as the task had them (ties between
        candidates go to the smaller change)."""
        return sum(1 for name, text in files.items()
                   for line in difflib.ndiff(self.files.get(name, "").splitlines(),
                                             text.splitlines())
                   if line[:1] in "+-")

    def took(self, attempt: Attempt | None) -> None:
        """What the last message (or search round) led to (None: no file was written, or
        nothing new): the best attempt changes when this one passed more tests. A repair
        round that does not beat the best turns the later rounds into searches."""
        repairing = self.rounds > 0
        if self.searching and self.searches:
            self.idle = 0 if attempt is not None else self.idle + 1
        if attempt is not None:
            self.is_new(attempt.files)
        if attempt is not None and (self.best is None
                                    or attempt.report.score > self.best.report.score):
            self.best = attempt
            self.shown = 0
            self.misses = 0
        elif repairing:
            self.misses += 1
            self.shown += 1
            self.searching = True

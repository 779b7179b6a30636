"""The workspace as the repository probe handed it to the conversation, and what the suite
said there: what the end of the turn is compared with.

The repository probe (helps/repo_probe.py) puts its files back when none of its attempts is
kept, and the conversation goes on from the task's files. A small model's edits there can
leave a module that no longer imports: on the first real-model run of the repository set,
two turns that timed out left 167 and 40 failing tests where each began with 1 or none. The
whole-file probe puts its best attempt back when a turn ends worse (helps/probe.py); a
repository turn may edit any file, so here the whole workspace is kept as it was (a copy,
caches left out: helps/scratch.py `copy_of`) with a listing of its digests, and at the end
of the turn the files the conversation changed are known and can be put back.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from baseagent.core.verification.attempts import AttemptsError, Change, changes_between, listing
from baseagent.helps.scratch import ScratchError, copy_of
from baseagent.helps.test_report import TestReport


@dataclass
class TurnStart:
    """`command`: the suite; `report`: what it said at the start; `best`: the probe's
    attempt whose suite passed more tests than that (its files' texts and its report), if
    any."""

    root: Path
    copy: Path
    files: dict[str, str]
    command: str
    report: TestReport
    best: tuple[dict[str, str], TestReport] | None = field(default=None)

    @classmethod
    def take(cls, cwd: Path, command: str, report: TestReport) -> TurnStart:
        """The workspace as it is now. ScratchError when it cannot be copied."""
        root, copy = copy_of(cwd, "baseagent-start-")
        try:
            files = listing(copy)
        except (OSError, AttemptsError) as exc:
            shutil.rmtree(root, ignore_errors=True)
            raise ScratchError(str(exc)) from None
        return cls(root, copy, files, command, report)

    @property
    def target(self) -> TestReport:
        """What the end of the turn must match: the better of the start and the best
        attempt."""
        return self.best[1] if self.best is not None else self.report

    def changes(self, cwd: Path) -> list[Change]:
        """What the turn changed in the workspace since the start. ScratchError when it
        cannot be read."""
        try:
            return changes_between(self.files, listing(cwd))
        except (OSError, AttemptsError) as exc:
            raise ScratchError(str(exc)) from None

    def text(self, path: str) -> str | None:
        """A file's text at the start (None: it was not there, or is not text)."""
        try:
            return (self.copy / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

"""What a turn did that its answer can rest on: edits, and the commands run after them.

A model that says "the tests pass" has not shown it; a command that exited 0 after the last
edit has. The loop (core/loop.py) feeds every finished tool call in here, and before it
accepts an answer asks `missing()` whether the turn needs evidence it does not have: when
the task (or AGENTS.md) names a test command, or the turn edited files, an answer counts as
verified only if a command ran after the last edit and exited 0 (the named test command,
when there is one). The verdict travels on `turn.completed` as `verification`
(docs/INTEROP.md): verified by evidence, or by statement only.

It also notices edits to test files when the task says not to change the tests, so the
final answer can say so (a solution that passes only with rewritten tests is no solution).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal

# Test runners a task or AGENTS.md may name; the word that must appear in the command
# that counts as running them.
_RUNNERS = (r"pytest", r"unittest", r"nose2", r"tox", r"nox", r"(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test",
            r"go\s+test", r"cargo\s+(?:test|nextest)", r"make\s+(?:test|check)", r"ctest",
            r"mvn\s+(?:-\S+\s+)*(?:test|verify)", r"gradlew?\s+test", r"jest", r"vitest",
            r"mocha", r"rspec", r"phpunit", r"dotnet\s+test", r"mix\s+test", r"swift\s+test",
            r"bundle\s+exec\s+rake\s+test", r"deno\s+test")
_RUNNER = re.compile(r"\b(" + "|".join(_RUNNERS) + r")\b")
# "don't change the tests", "do not modify test files", "the tests are correct, don't try
# and change them": a negation, then (within a few words) an editing verb, near "test".
_KEEP_TESTS = re.compile(
    r"(?:don'?t|do\s+not|never|must\s+not|should\s+not|without)\s+(?:\w+\s+){0,3}?"
    r"(?:change|modify|edit|touch|alter|rewrite|update)\w*\b(?:[^.\n]|\.(?=\S)){0,40}?"
    r"\btests?\b"
    r"|\btests?\b(?:[^.\n]|\.(?=\S)){0,80}?(?:don'?t|do\s+not|never|must\s+not)\s+"
    r"(?:\w+\s+){0,3}?"
    r"(?:change|modify|edit|touch|alter|rewrite|update)",
    re.IGNORECASE)
# A shell command that edits code the way the file tools would: in place, by a patch, or
# by writing a source file (a log or a data file written by redirection is not an edit).
_CODE_SUFFIXES = ("py", "pyi", "js", "jsx", "mjs", "ts", "tsx", "go", "rs", "java", "kt", "scala",
                  "c", "cc", "cpp", "h", "hpp", "rb", "php", "cs", "swift", "sh", "lua", "ex",
                  "exs", "erl", "hs", "ml", "clj", "dart", "r", "jl", "pl", "zig", "sql")
_CODE_FILE = r"[\w./-]+\.(?:" + "|".join(_CODE_SUFFIXES) + r")\b"
_SHELL_EDIT = re.compile(r"(?:\bsed\s+(?:-\S+\s+)*-i|\bperl\s+-\S*i|\bgit\s+apply\b"
                         r"|\bpatch\s+-|(?<![<>&\d])>{1,2}\s*" + _CODE_FILE
                         + r"|\btee\s+(?:-a\s+)?" + _CODE_FILE + ")")
_TEST_FILE = re.compile(r"(?:^|/)(?:tests?/|test_[^/]*$|[^/]*_test\.\w+$|[^/]*\.(?:test|spec)\.\w+$"
                        r"|conftest\.py$)")

Verdict = Literal["evidence", "statement"]


def named_test_command(*texts: str) -> str | None:
    """The test command the texts name (a backquoted command with a test runner in it,
    else the first runner mentioned), or None."""
    for text in texts:
        for quoted in re.findall(r"`([^`\n]+)`", text or ""):
            if _RUNNER.search(quoted):
                return quoted.strip()
        match = re.search(r"(?:^|:\s*|\n\s*\$?\s*)((?:[\w./~-]*python[\d.]*\s+-m\s+)?(?:"
                          + "|".join(_RUNNERS) + r")\b[^\n`]*)", text or "")
        if match:
            return match.group(1).strip().rstrip(".")
    return None


def repository_notes(history: list[dict[str, Any]]) -> str:
    """What the repository says about itself to the model (AGENTS.md, in the opening
    environment context), where a test command may be named."""
    for message in history[:3]:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) \
                and "<INSTRUCTIONS>" in content:
            return content
    return ""


def runs_tests(command: str) -> bool:
    """Whether a command runs a known test runner."""
    return bool(_RUNNER.search(command))


def forbids_test_changes(text: str) -> bool:
    return bool(_KEEP_TESTS.search(text or ""))


def is_test_file(path: str) -> bool:
    return bool(_TEST_FILE.search(PurePath(path).as_posix()))


@dataclass
class CommandRun:
    command: str
    exit_code: int | None
    after_edit: int  # edits made before it ran


@dataclass
class Evidence:
    """The turn's record of edits and commands, in the order they finished."""

    test_command: str | None = None
    keep_tests: bool = False
    edits: int = 0
    edited: list[str] = field(default_factory=list)
    commands: list[CommandRun] = field(default_factory=list)
    tests_changed: list[str] = field(default_factory=list)

    @classmethod
    def for_turn(cls, instruction: str, repository_notes: str = "") -> "Evidence":
        """`repository_notes`: what the repository says about itself (AGENTS.md), which may
        name the test command."""
        return cls(test_command=named_test_command(instruction, repository_notes),
                   keep_tests=forbids_test_changes(instruction))

    # -- what the turn does ------------------------------------------------------------------

    def saw(self, item_type: str, success: bool, item: dict[str, Any]) -> None:
        """A tool call finished with this item payload. Only edits of code count as edits
        here (a text file written and read back needs no command to prove it)."""
        if item_type == "file_change" and success and item.get("diff") != "":
            paths = [c.get("path", "") for c in item.get("changes") or []]
            code = [p for p in paths if PurePath(p).suffix.lstrip(".").lower() in _CODE_SUFFIXES]
            if code:
                self._edited(code)
            self._note_tests(paths)
        elif item_type == "command_execution":
            command = str(item.get("command") or "")
            edits_before = self.edits
            if success and _SHELL_EDIT.search(command):
                self._edited([])  # a command that edits is not its own proof
            self.commands.append(CommandRun(command, item.get("exit_code"), edits_before))

    def _edited(self, paths: list[str]) -> None:
        self.edits += 1
        for path in paths:
            if path not in self.edited:
                self.edited.append(path)

    def _note_tests(self, paths: list[str]) -> None:
        for path in paths:
            if self.keep_tests and is_test_file(path) and path not in self.tests_changed:
                self.tests_changed.append(path)

    # -- what the answer can rest on ---------------------------------------------------------

    @property
    def needed(self) -> bool:
        return self.edits > 0 or self.test_command is not None

    def proof(self) -> CommandRun | None:
        """The last command after the last edit that exited 0 (and ran the named tests,
        when a test command is named)."""
        for run in reversed(self.commands):
            if run.after_edit < self.edits:
                break
            if run.exit_code == 0 and self._runs_tests(run.command):
                return run
        return None

    def _runs_tests(self, command: str) -> bool:
        """Whether `command` runs tests: any command when no test command is named, else one
        with a test runner in it (the named one or another: `python -m unittest` checks the
        same tests as `pytest`) or the named command itself."""
        if self.test_command is None:
            return True
        return bool(_RUNNER.search(command)) or self.test_command in command

    def stands(self, open_steps: list[Any] | None = None) -> bool:
        """Whether an answer already stands on evidence, so the verification round would
        only cost a model call: the turn edited code or names a test command, the tests ran
        after the last edit and exited 0, and the turn's plan has no `open_steps`. Asked
        again at that point, a small model restates its success at length (one such reply
        ran past a task's time budget after the tests had passed); a turn with nothing run
        still gets the round."""
        return self.needed and self.proof() is not None and not open_steps

    def verdict(self) -> Verdict:
        return "evidence" if self.proof() is not None else "statement"

    def missing(self) -> str | None:
        """What the answer lacks, in words for the model; None when nothing is missing."""
        if not self.needed or self.proof() is not None:
            return None
        what = f"`{self.test_command}`" if self.test_command else "the tests or the program"
        last = next((r for r in reversed(self.commands)
                     if r.after_edit == self.edits and self._runs_tests(r.command)), None)
        if last is not None:
            return (f"The last run of `{_short(last.command)}` after your last edit exited "
                    f"{last.exit_code}: it fails. Read its output, fix the code, and run "
                    f"{what} again until it passes.")
        if self.edits:
            return (f"No command has run successfully since your last edit, so nothing shows "
                    f"that the change works. Run {what} now and fix whatever fails.")
        return f"You have not run {what} in this turn. Run it now and fix whatever fails."

    def summary(self) -> dict[str, Any]:
        """The `verification` field of turn.completed."""
        proof = self.proof()
        if proof is not None:
            return {"by": "evidence", "command": proof.command, "exit_code": proof.exit_code}
        return {"by": "statement", "reason": "no command exited 0 after the last edit"
                if self.needed else "nothing to run: no edit and no test command"}

    def tests_note(self) -> str | None:
        """The sentence the final answer carries when test files were changed although the
        task said not to."""
        if not self.tests_changed:
            return None
        names = ", ".join(PurePath(p).name for p in self.tests_changed)
        return (f"Note: this run changed test files that the task said not to change: "
                f"{names}.")


def _short(command: str, limit: int = 120) -> str:
    command = " ".join(command.split())
    return command if len(command) <= limit else command[:limit - 1] + "…"

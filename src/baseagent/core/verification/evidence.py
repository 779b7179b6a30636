"""What a turn did that its answer can rest on: edits, and the commands run after them.

A model that says "the tests pass" has not shown it; a command that exercises the change
and exited 0 after the last edit has. The loop (core/loop.py) feeds every finished tool
call in here, and before it accepts an answer asks `missing()` whether the turn needs
evidence it does not have: when the task (or AGENTS.md) names a test command, or the turn
edited code, an answer counts as verified only if such a command ran after the last edit
and exited 0. What exercises a change (docs/LIBRARY.md, "What counts as evidence"): the
named test command or any known test runner (pytest, unittest, npm test, go test, cargo
test, make test, ...); without a named test command, also the edited program or module run
(`python3 app.py`, `python3 -c 'import app; ...'`, `node app.js`, `./run.sh`, `go run`,
`cargo run`). A command that only looks (`ls`, `cat`, `echo`, `true`, `git status`, a grep)
never counts. The verdict travels on `turn.completed` as `verification` (docs/INTEROP.md):
verified by evidence, or by statement only, naming any write that failed.

It also notices edits to test files when the task says not to change the tests, and writes
that failed (a read-only sandbox refusing write_file), so the final answer can say so.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Callable, Literal

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

# Programs that run code: one run on an edited file or module exercises the change.
_INTERPRETERS = re.compile(r"(?:python[\d.]*|pypy[\d.]*|node|deno|bun|ruby|perl|php|bash|sh|zsh|"
                           r"lua|luajit|Rscript|julia|elixir|swift|java|tsx|ts-node|npx)")
# Running the project's program without naming a file.
_RUN_PROGRAM = re.compile(r"\b(?:go\s+run|cargo\s+run|dotnet\s+run|(?:npm|yarn|pnpm)\s+start)\b")
# Programs that only look: a test runner's name in their arguments runs nothing.
_LOOKS = frozenset({"ls", "cat", "echo", "true", "false", ":", "printf", "head", "tail", "less",
                    "more", "grep", "egrep", "fgrep", "rg", "ag", "find", "wc", "git", "diff",
                    "stat", "file", "tree", "which", "type", "pwd", "sed", "awk",
                    "sort", "uniq", "cut", "test", "[", "cd", "sleep", "du", "df", "nl", "xxd"})
# What may stand before the program in a command: variables, and wrappers that run it.
_WRAPPERS = frozenset({"env", "time", "timeout", "nice", "nohup", "exec", "sudo", "command"})

# Why a file change failed when the environment refused it (the sandbox, permissions, a
# full disk), not the model's content (a patch whose lines do not match goes back to it).
_REFUSED = re.compile(r"\bsandbox is [\w-]+:|\bcannot write\b|\brefusing to write\b|"
                      r"Permission denied|Read-only file system|No space left|"
                      r"Failed to apply the patch: .*: ")

Verdict = Literal["evidence", "statement"]


def named_test_command(*texts: str) -> str | None:
    """The test command the texts name (a backquoted command with a test runner in it,
    else the first runner mentioned), or None."""
    for text in texts:
        for quoted in re.findall(r"`([^`\n]+)`", text or ""):
            if _RUNNER.search(quoted):
                return quoted.strip()
        # A command on a line of its own may set its environment first (`env A=1 B=2
        # python -m pytest`, `A=1 pytest`): that is part of the command.
        match = re.search(r"(?:^|:\s*|\n\s*\$?\s*)((?:env\s+)?(?:[A-Za-z_]\w*=\S*\s+)*"
                          r"(?:[\w./~-]*python[\d.]*\s+-m\s+)?(?:"
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
    return any(_RUNNER.search(" ".join(words)) for _, words in _programs(command))


def runs_edited(command: str, edited: list[str]) -> bool:
    """Whether a command runs one of the `edited` files (or its module, by name) with an
    interpreter, runs it itself, or runs the project's program (`go run`, `cargo run`)."""
    names = [PurePath(p) for p in edited]
    for program, words in _programs(command):
        rest = " ".join(words[1:])
        if _RUN_PROGRAM.search(" ".join(words)):
            return True
        if any(PurePath(words[0]).name == path.name for path in names):
            return True  # ./run.sh
        if _INTERPRETERS.fullmatch(program) and any(
                re.search(r"(?<![\w.-])" + re.escape(path.name) + r"\b", rest)
                or re.search(r"\b" + re.escape(path.stem) + r"\b", rest) for path in names):
            return True
    return False


def _programs(command: str) -> list[tuple[str, list[str]]]:
    """Each simple command of a command line that does more than look: (its program's name,
    its words from the program on). What follows a redirection is not a program."""
    found = []
    for words in _simple_commands(command):
        while words and (re.fullmatch(r"\w+=.*", words[0]) or words[0] in _WRAPPERS):
            wrapper = words[0] in _WRAPPERS
            words = words[1:]
            while wrapper and words and (words[0].startswith("-")
                                         or re.fullmatch(r"[\d.]+[smhd]?", words[0])):
                words = words[1:]  # the wrapper's own options (timeout -s KILL 30)
        if words and PurePath(words[0]).name not in _LOOKS:
            found.append((PurePath(words[0]).name, words))
    return found


def _simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command in a command line (split at newlines, `;`, `&&`,
    `||`, `|`, `&`; quotes respected)."""
    commands: list[list[str]] = []
    for line in command.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # an unclosed quote: words as they stand
            tokens = line.split()
        current: list[str] = []
        redirected = False
        for token in tokens:
            if token and set(token) <= set("&|;()"):
                commands.append(current)
                current, redirected = [], False
            elif token and set(token) <= set("<>"):
                redirected = True
            elif not redirected:
                current.append(token)
            else:
                redirected = False  # the redirection's target
        commands.append(current)
    return [c for c in commands if c]


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
class FailedWrite:
    path: str
    error: str  # the first line of what the tool said


@dataclass
class Evidence:
    """The turn's record of edits and commands, in the order they finished."""

    test_command: str | None = None
    keep_tests: bool = False
    edits: int = 0
    edited: list[str] = field(default_factory=list)
    commands: list[CommandRun] = field(default_factory=list)
    tests_changed: list[str] = field(default_factory=list)
    changed: int = 0  # file changes tried, of any kind (a text file too), shell edits
    failed_writes: list[FailedWrite] = field(default_factory=list)

    @classmethod
    def for_turn(cls, instruction: str, repository_notes: str = "") -> "Evidence":
        """`repository_notes`: what the repository says about itself (AGENTS.md), which may
        name the test command."""
        return cls(test_command=named_test_command(instruction, repository_notes),
                   keep_tests=forbids_test_changes(instruction))

    # -- what the turn does ------------------------------------------------------------------

    def saw(self, item_type: str, success: bool, item: dict[str, Any], output: str = "",
            named: Callable[[], list[dict[str, str]]] = list) -> None:
        """A tool call finished with this item payload (and `output`; `named`: the files a
        file change names, asked only when the environment refused it). Only edits of code
        count as edits here (a text file written and read back needs no command to prove
        it)."""
        if item_type == "file_change" and not success:
            self.changed += 1  # tried: the answer is worth the verification round
            error = (output.strip().splitlines() or [""])[0].removeprefix("Error: ")
            if not _REFUSED.search(error):
                return  # the model's own mistake: it reads the error and goes on
            for change in item.get("changes") or named():
                path = change.get("path", "")
                self.failed_writes = [w for w in self.failed_writes if w.path != path]
                self.failed_writes.append(FailedWrite(path, error))
        elif item_type == "file_change" and item.get("diff") != "":
            paths = [c.get("path", "") for c in item.get("changes") or []]
            self.changed += 1
            self.failed_writes = [w for w in self.failed_writes if w.path not in paths]
            code = [p for p in paths if PurePath(p).suffix.lstrip(".").lower() in _CODE_SUFFIXES]
            if code:
                self._edited(code)
            self._note_tests(paths)
        elif item_type == "command_execution":
            command = str(item.get("command") or "")
            edits_before = self.edits
            if success and _SHELL_EDIT.search(command):
                self.changed += 1
                # a command that edits is not its own proof; the code files it names
                self._edited(re.findall(_CODE_FILE, command))
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
        """The last command after the last edit that exited 0 and exercises the change."""
        for run in reversed(self.commands):
            if run.after_edit < self.edits:
                break
            if run.exit_code == 0 and self.exercises(run.command):
                return run
        return None

    def exercises(self, command: str) -> bool:
        """Whether `command` exercises the change: the named test command or any test runner
        (`python -m unittest` checks the same tests as `pytest`); when no test command is
        named, also the edited program or module run. Never a command that only looks."""
        if runs_tests(command) or (self.test_command is not None
                                   and self.test_command in command):
            return True
        return self.test_command is None and runs_edited(command, self.edited)

    def wants_round(self, open_steps: list[Any] | None = None) -> bool:
        """Whether the verification round is worth its model call: not when the answer
        already stands on evidence (the turn edited code or names a test command, and a
        command that exercises the change exited 0 after the last edit; asked again at that
        point, a small model restates its success at length, once past a task's time
        budget); nor when the turn changed no file, tried none and names no test (a
        question, `asks_nothing`): a question costs one model call. Always when the turn's
        plan has `open_steps`; a write that was refused or failed still wants it."""
        if open_steps:
            return True
        if self.asks_nothing:
            return False
        return not self.needed or self.proof() is None

    @property
    def asks_nothing(self) -> bool:
        """Whether the turn changed no file (nor tried to) and names no test command."""
        return not self.needed and not self.changed and not self.failed_writes

    def verdict(self) -> Verdict:
        return "evidence" if self.proof() is not None else "statement"

    def missing(self) -> str | None:
        """What the answer lacks, in words for the model; None when nothing is missing."""
        if not self.needed or self.proof() is not None:
            return None
        what = f"`{self.test_command}`" if self.test_command else "the tests or the program"
        last = next((r for r in reversed(self.commands)
                     if r.after_edit == self.edits and self.exercises(r.command)), None)
        if last is not None:
            return (f"The last run of `{_short(last.command)}` after your last edit exited "
                    f"{last.exit_code}: it fails. Read its output, fix the code, and run "
                    f"{what} again until it passes.")
        if self.edits:
            return (f"Nothing that runs the changed code has passed since your last edit "
                    f"(listing or reading files shows nothing), so nothing shows that the "
                    f"change works. Run {what} now and fix whatever fails.")
        return f"You have not run {what} in this turn. Run it now and fix whatever fails."

    def summary(self) -> dict[str, Any]:
        """The `verification` field of turn.completed."""
        proof = self.proof()
        failed = [w.path for w in self.failed_writes]
        if proof is not None:
            out: dict[str, Any] = {"by": "evidence", "command": proof.command,
                                   "exit_code": proof.exit_code}
        elif self.needed:
            out = {"by": "statement", "reason": "no command that exercises the change "
                                                "exited 0 after the last edit"}
        elif failed:
            out = {"by": "statement", "reason": "no file changed: a write failed"}
        else:
            out = {"by": "statement", "reason": "nothing to run: no edit and no test command"}
        if failed:
            out["failed_writes"] = failed
        return out

    def note(self) -> str | None:
        """The sentences the final answer carries: writes that failed, and test files
        changed although the task said not to."""
        notes = []
        if self.failed_writes:
            what = "; ".join(f"{PurePath(w.path).name} ({w.error})" if w.error
                             else PurePath(w.path).name for w in self.failed_writes)
            notes.append(f"Note: writing these files failed, so they were not changed: {what}.")
        if self.tests_changed:
            names = ", ".join(PurePath(p).name for p in self.tests_changed)
            notes.append(f"Note: this run changed test files that the task said not to "
                         f"change: {names}.")
        return " ".join(notes) or None


def _short(command: str, limit: int = 120) -> str:
    command = " ".join(command.split())
    return command if len(command) <= limit else command[:limit - 1] + "…"

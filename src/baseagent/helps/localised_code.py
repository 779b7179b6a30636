"""The code an issue's names lead to, shown with a task that names no file (the compact profile).

Asked to fix an issue in a repository ("`partition` drops the last chunk"), a small model
with a shell and read_file never opens the code: it describes a fix in prose and runs the
tests. Shown the few functions the issue's names lead to (helps/localise.py), with their
file paths and line numbers, the first reply can already point at the cause. What is shown
is bounded: a function or method in full (a long one cut, with the read_file call that shows
the rest), a class as its outline (each method's first line and line range), at most
MAX_SYMBOLS of them and MAX_CHARS in all, then the next few places by name and the tests
that use the names (to read, never to change).

Only for a task whose text names no file to change (a task that names its files gets them
shown by helps/named_files.py, exactly as before) in a workspace that holds Python source.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from baseagent.core.verification.evidence import is_test_file
from baseagent.helps.contract import Message, TurnContext, TurnHelp
from baseagent.helps.localise import Candidate, Localisation, RepoMap, localise
from baseagent.helps.named_files import inside, named_in
from baseagent.prompts.system import (LOCALISED_MORE, LOCALISED_OTHERS, LOCALISED_SECTION,
                                      LOCALISED_TESTS)

# What is shown: this many symbols in full (or as an outline), this many characters in all,
# a function's first lines up to this many, and this many more places by name.
MAX_SYMBOLS = 4
MAX_CHARS = 6_000
MAX_LINES = 80
MAX_OTHERS = 5
MAX_LINE_CHARS = 200
# The score the best candidate needs for anything to be shown: more than words of the prose
# that a definition's name shares (a task such as "add logging" is not an issue's names).
MIN_SCORE = 3.0
# Kept for the headers, the other places and the tests, out of MAX_CHARS.
TAIL_CHARS = 1_000


@dataclass(frozen=True)
class Shown:
    """A symbol as shown: where it is, and its text (numbered lines or an outline)."""

    candidate: Candidate
    text: str


def names_no_file(task: str, cwd: Path) -> bool:
    """Whether the task names no existing file to change, of any size (test files do not
    count)."""
    return not any(not is_test_file(name) and inside(cwd, name) and (cwd / name).is_file()
                   for name in named_in(task))


def shown_symbols(found: Localisation, root: Path, max_symbols: int = MAX_SYMBOLS,
                  max_chars: int = MAX_CHARS, numbers: bool = True) -> list[Shown]:
    """The best candidates as they will be shown, within the bounds (a class as its
    outline; a method of a class already shown stays, it is not in the outline). Without
    `numbers`, a function's lines are as the file has them (to be copied into an edit)."""
    shown: list[Shown] = []
    total = 0
    cache: dict[str, list[str] | None] = {}
    for candidate in found.candidates:
        if len(shown) >= max_symbols:
            break
        if any(s.candidate.path == candidate.path and s.candidate.kind != "class"
               and s.candidate.start <= candidate.start and candidate.end <= s.candidate.end
               for s in shown):
            continue  # inside a function already shown whole
        if candidate.path not in cache:
            cache[candidate.path] = _lines(root / candidate.path)
        lines = cache[candidate.path]
        if lines is None:
            continue
        text = outline(candidate, lines, found) if candidate.kind == "class" \
            else numbered(candidate, lines, max(0, max_chars - total), numbers)
        if not text or total + len(text) > max_chars:
            continue
        shown.append(Shown(candidate, text))
        total += len(text)
    return shown


def numbered(candidate: Candidate, lines: list[str], room: int, numbers: bool = True) -> str:
    """A function's lines as `L{n}: text` (read_file's form; without `numbers`, as they
    are), cut at MAX_LINES or `room` characters, with the read_file call that shows the
    rest."""
    out: list[str] = []
    used = 0
    last = min(candidate.end, len(lines))
    for number in range(candidate.start, last + 1):
        line = f"L{number}: {lines[number - 1][:MAX_LINE_CHARS]}" if numbers \
            else lines[number - 1]
        if len(out) >= MAX_LINES or used + len(line) + 200 > room:
            rest = last - number + 1
            out.append(f"... ({rest} more lines: read_file with file_path "
                       f"\"{candidate.path}\", offset {number}, limit {rest})")
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out) if len(out) > 1 or not out[0].startswith("...") else ""


def outline(candidate: Candidate, lines: list[str], found: Localisation) -> str:
    """A class as its first line and each method's first line with its line range (the
    methods the scan found inside it, in order)."""
    head = f"L{candidate.start}: {lines[candidate.start - 1][:MAX_LINE_CHARS]}" \
        if candidate.start <= len(lines) else ""
    if not head:
        return ""
    out = [head]
    for number in range(candidate.start + 1, min(candidate.end, len(lines)) + 1):
        text = lines[number - 1]
        stripped = text.lstrip()
        if stripped.startswith(("def ", "async def ", "class ")) \
                and len(text) - len(stripped) > 0:
            out.append(f"L{number}: {text[:MAX_LINE_CHARS]}")
        if len(out) > 60:
            out.append("...")
            break
    out.append(f"(the class is lines {candidate.start}-{candidate.end}: read a method with "
               f"read_file, file_path \"{candidate.path}\" and its line as the offset)")
    return "\n".join(out)


def render(found: Localisation, root: Path) -> str:
    """The section added to the task: the symbols shown, the other places, the tests, and
    how to see more; "" when nothing is found."""
    shown = shown_symbols(found, root, max_chars=MAX_CHARS - TAIL_CHARS)
    if not shown:
        return ""
    blocks = []
    for item in shown:
        c = item.candidate
        what = "class" if c.kind == "class" else c.kind
        blocks.append(f"\n{c.path}, {what} `{c.symbol}` (lines {c.start}-{c.end}):\n"
                      f"```text\n{item.text}\n```\n")
    listed = {(s.candidate.path, s.candidate.symbol) for s in shown}
    others = [c for c in found.candidates if (c.path, c.symbol) not in listed][:MAX_OTHERS]
    tail = []
    if others:
        tail.append(LOCALISED_OTHERS.format(places=", ".join(
            f"{c.path} `{c.symbol}` (lines {c.start}-{c.end})" for c in others)))
    if found.tests:
        tail.append(LOCALISED_TESTS.format(tests=", ".join(found.tests)))
    tail.append(LOCALISED_MORE)
    return LOCALISED_SECTION.format(blocks="".join(blocks)) + "\n" + "\n".join(tail)


def _lines(path: Path) -> list[str] | None:
    try:
        return path.read_bytes().decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None


class LocalisedCode(TurnHelp):
    """Shows the code an issue's names lead to with a task that names no file."""

    def __init__(self, repo_map: RepoMap | None = None) -> None:
        self.repo_map = repo_map or RepoMap()  # parsed files, kept between turns
        self.found: Localisation | None = None  # this turn's (the repository probe reads it)

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        self.found = None
        if not isinstance(message, str) or not names_no_file(ctx.task, ctx.cwd):
            return message
        found = localise(ctx.task, ctx.cwd, self.repo_map)
        if not found.candidates or found.candidates[0].score < MIN_SCORE:
            return message  # nothing, or only a word of the prose that a name shares
        self.found = found
        return message + render(found, ctx.cwd)

    def named(self) -> tuple[Candidate, ...]:
        """The symbols this turn's task led to, shown or named as other places (none: no
        localisation this turn): a reply that sends one of them whole is merged by name
        (helps/prose_code.py)."""
        return self.found.candidates if self.found is not None else ()

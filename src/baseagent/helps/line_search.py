"""The repository probe's line search: which line is wrong, then what it should be, asked as
two short questions, each answer a line or two of code, many of them tried with the tests.

On the first real-model run of the repository set, a reply to the probe's SEARCH/REPLACE
request often sent a long function back whole (four replies in a 900 s task, one of 18,000
characters), or named the culprit in prose and sent its line unchanged. The bugs themselves
were a line or two. A small model answers a narrow question in a few tokens, and a few
tokens cost seconds, so here the model is asked (helps/repo_probe.py, after its first reply
fails) which line of the code shown causes the issue, copied out, and then, for each such
line (with the last lines the issue's example ran, traced, and the lines the first reply
changed), to rewrite that line; each rewrite is put in
the file in place of the line, indented as the line was, and tested as any attempt is (the
issue's example, then the suite). Every question shares one prefix (the issue, the code,
what the example gives), so a server's prompt cache serves all but its end.

This module holds what does not talk to the model: where a copied line is in the code
shown, which lines an edit changed, a rewrite read from a reply and put into its file.
"""
from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from baseagent.helps.code_blocks import fences
from baseagent.helps.localised_code import Shown

# A rewrite longer than this is not a line's fix (the model sent a function).
MAX_REWRITE_LINES = 8
# Times the model is asked which line (the first as the run samples, the other sampled),
# and the lines taken from each answer (the first it copies; a block of two names both).
WHICH_ASKS = 2
LINES_PER_ANSWER = 2
# The last lines of the code shown that the example ran (a traced run of it), tried
# after the first answer's: a wrong value comes from the path the code took. On arrow at
# b12633c the answers named lines of argument handling, 20 lines above the branch that
# returned the wrong words.
TRACE_LINES = 2
# Lines tried at most, and rewrites drawn for each. On arrow at 1da1ee3 a rewrite took 2 to
# 3 s, its check 0.1 s; the first answer named two lines of the wrong branch.
MAX_LINES = 5
REWRITES_PER_LINE = 3


@dataclass(frozen=True)
class Line:
    """A line of a file shown to the model: its path, number (1-based) and text."""

    path: str
    number: int
    text: str


def shown_lines(shown: Sequence[Shown], texts: dict[str, str]) -> list[Line]:
    """Every line of the functions shown, as the files have them (`texts`: path -> text),
    in the order shown."""
    out: list[Line] = []
    for s in shown:
        c = s.candidate
        lines = texts.get(c.path, "").splitlines()
        shown_count = sum(1 for line in s.text.splitlines() if not line.startswith("... ("))
        for number in range(c.start, min(c.end, c.start + shown_count - 1, len(lines)) + 1):
            out.append(Line(c.path, number, lines[number - 1]))
    return out


def lines_named(reply: str, lines: Sequence[Line]) -> list[Line]:
    """The shown lines that `reply` copies out, in the reply's order: each non-blank line of
    its code blocks (or of the reply, when it has none) matched to the shown lines with the
    same text, spaces at either end aside. A text that more than one shown line has names
    each of them. Lines that hold no code (a bare bracket, a docstring's quote) name none."""
    blocks = [m.group("code") for m in fences(reply)] or [reply]
    by_text: dict[str, list[Line]] = {}
    for line in lines:
        by_text.setdefault(line.text.strip(), []).append(line)
    out: list[Line] = []
    for block in blocks:
        for raw in block.splitlines():
            key = raw.strip()
            if len(re.sub(r"[\W_]", "", key)) < 3:
                continue
            for line in by_text.get(key, ()):
                if line not in out:
                    out.append(line)
    return out


def changed_lines(before: str, after: str) -> list[int]:
    """The numbers (1-based) of the lines of `before` that `after` changes or removes; for
    lines only added, the line before them."""
    out: list[int] = []
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(),
                                      autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            out.extend(range(i1 + 1, i2 + 1))
        elif tag == "insert" and i1 > 0:
            out.append(i1)
    return out


def rewrite_in(reply: str) -> list[str] | None:
    """The code a reply gives for a line: its first code block's lines (or, without one, a
    reply of a few lines with no prose around it); None when it gives none, or too many."""
    match = next(iter(fences(reply)), None)
    code = match.group("code") if match is not None else reply.strip().strip("`")
    lines = [line.rstrip() for line in code.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or len(lines) > MAX_REWRITE_LINES:
        return None
    return lines


def with_rewrite(text: str, number: int, rewrite: Sequence[str]) -> str | None:
    """`text` with its line `number` replaced by `rewrite`, shifted so that its first line
    is indented as the line was (the others keep their indentation relative to it); None
    when that changes nothing, or (a Python file's text, `python`) it would no longer
    parse."""
    lines = text.splitlines(keepends=True)
    if not 1 <= number <= len(lines):
        return None
    old = lines[number - 1]
    ending = old[len(old.rstrip("\r\n")):] or "\n"
    indent = old[:len(old) - len(old.lstrip())].rstrip("\r\n")
    first = rewrite[0]
    shift = len(first) - len(first.lstrip())
    new = []
    for line in rewrite:
        lead = len(line) - len(line.lstrip())
        body = line[min(lead, shift):] if line.strip() else ""
        new.append((indent + body if body else "") + ending)
    if "".join(new) == old:
        return None
    return "".join(lines[:number - 1] + new + lines[number:])


def parses(path: str, text: str) -> bool:
    """Whether `text` parses, for a Python file (any other file: True)."""
    if not path.endswith((".py", ".pyi")):
        return True
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True

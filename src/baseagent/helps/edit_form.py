"""Edits that fit big files: SEARCH/REPLACE blocks in a reply, checked before anything is written.

A model cannot send a 2,000-line module back whole to change three lines of it (Aider switches
to its search/replace edit format for such files). It names the file, then the lines to find
and the lines to put in their place:

    pkg/core.py
    <<<<<<< SEARCH
        if n > limit:
    =======
        if n >= limit:
    >>>>>>> REPLACE

`parse_edit_blocks` reads such blocks from a reply's text, tolerant of what small models do
(the block inside a ``` fence or not, the path in the fence's info string or as a `# path`
comment, a block with no path taking the previous block's). `check_edit_blocks` works out what
each file would become, writing nothing: a block applies when its SEARCH text occurs exactly
once in the file as the earlier blocks left it (or, failing that, once when each line is
compared without its leading and trailing whitespace); any other block is refused with one
note for the model saying why (not found, ambiguous, a Python file that would no longer
parse, a path outside the workspace or into .git).
"""
from __future__ import annotations

import ast
import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from baseagent.helps.named_files import inside

# Bounds: a reply's blocks, and the files they may edit.
MAX_BLOCKS = 64
MAX_FILE_CHARS = 4_000_000
# How much of a block's text a note quotes.
_QUOTE_CHARS = 160

_HEAD = re.compile(r"^\s*<{5,9}\s*SEARCH\b.*$", re.IGNORECASE)
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_TAIL = re.compile(r"^\s*>{5,9}\s*(?:REPLACE|UPDATED)\b.*$", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^\s*(?:`{3,}|~{3,})\s*(?P<info>[^`]*)$")
# A file name as a label: `pkg/core.py`, `Makefile` is not taken (no dot, no slash).
_PATH = re.compile(r"^(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.[\w]+$|^(?:[\w.@+-]+/)+[\w@+-][\w.@+-]*$")
_LABEL_PREFIX = re.compile(r"^(?:#+|//|--|\*+|-|>)?\s*(?:(?:file(?:name)?|path|in)\s*[:=]?\s+)?",
                           re.IGNORECASE)


@dataclass(frozen=True)
class EditBlock:
    path: str  # as the reply names it, relative to the workspace ("" when it names none)
    search: str  # the exact text to replace; "" creates a new file
    replace: str


@dataclass
class EditCheck:
    new_texts: dict[str, str] = field(default_factory=dict)  # path -> whole new text
    refused: list[str] = field(default_factory=list)  # one note per refused block
    applied: list[EditBlock] = field(default_factory=list)  # the blocks that apply, in order


def has_edit_blocks(text: str) -> bool:
    """Whether `text` holds the head of a SEARCH/REPLACE block (cheap; before parsing)."""
    return "SEARCH" in text.upper() and any(_HEAD.match(line) for line in text.splitlines())


def parse_edit_blocks(text: str) -> list[EditBlock]:
    """The SEARCH/REPLACE blocks in a reply, in order. A block is a head line
    (`<<<<<<< SEARCH`), the text to find, a divider (`=======`), the text to put in, and a
    tail line (`>>>>>>> REPLACE`); its file is named on a line just before it (`path`,
    `**path**`, `# path`, `File: path`), in the info string of the fence around it
    (```` ```python path ````), or else it is the previous block's. An unfinished block (no
    divider or tail) is left out."""
    lines = text.splitlines(keepends=True)
    blocks: list[EditBlock] = []
    previous = ""
    start = 0  # where the lines a label may be on begin (after the previous block)
    i = 0
    while i < len(lines) and len(blocks) < MAX_BLOCKS:
        if not _HEAD.match(lines[i]):
            i += 1
            continue
        divider = _next(lines, i + 1, _DIVIDER)
        tail = _next(lines, divider + 1, _TAIL) if divider is not None else None
        if divider is None or tail is None or _next(lines, i + 1, _HEAD, tail) is not None:
            # Unfinished, or another head inside it: not a block; a later one in the run
            # may still be, with this one's path.
            previous = _label(lines[start:i]) or previous
            start = i = i + 1
            continue
        path = _label(lines[start:i]) or previous
        search = "".join(lines[i + 1:divider])
        replace = "".join(lines[divider + 1:tail])
        blocks.append(EditBlock(path, search, replace))
        previous = path
        start = i = tail + 1
    return blocks


def _next(lines: list[str], start: int, pattern: re.Pattern[str],
          stop: int | None = None) -> int | None:
    for j in range(start, len(lines) if stop is None else stop):
        if pattern.match(lines[j]):
            return j
    return None


def _label(before: list[str]) -> str | None:
    """The file named on the last few non-blank lines before a block's head: a fence's info
    string, or a line that is only a path (decorated as models do)."""
    candidates = [line.strip() for line in before if line.strip()][-3:]
    for line in reversed(candidates):
        fence = _FENCE_OPEN.match(line)
        if fence is not None:
            for word in reversed(fence.group("info").split()):
                if _PATH.match(word.strip("`'\":")):
                    return _clean(word.strip("`'\":"))
            continue
        name = _LABEL_PREFIX.sub("", line, count=1).strip().strip("*_`'\":").strip()
        if _PATH.match(name):
            return _clean(name)
        if line.endswith(":"):
            # "Change the loop in pkg/core.py:": the last path-like word of the sentence
            words = [w.strip("*_`'\":,.()") for w in line.split()]
            found = [w for w in words if _PATH.match(w) and "." in Path(w).name]
            if found:
                return _clean(found[-1])
        return None
    return None


def _clean(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path


def check_edit_blocks(root: Path, blocks: list[EditBlock], *,
                      may_write: Callable[[str], bool] | None = None) -> EditCheck:
    """What each file would become with these blocks applied in order, writing nothing.
    `new_texts` holds the whole new text of every file a block changes (by the path the
    reply gave, `./` dropped); `refused` one note per block that does not apply, saying why,
    for the model."""
    check = EditCheck()
    texts: dict[str, tuple[str | None, str | None]] = {}  # path -> (text so far, unreadable)
    for number, block in enumerate(blocks[:MAX_BLOCKS], 1):
        where = f"{block.path or 'a block'} (SEARCH/REPLACE block {number})"
        why = _refused_path(root, block.path, may_write)
        if why is not None:
            check.refused.append(f"{where} was not applied: {why}.")
            continue
        path = os.path.normpath(block.path)
        if path not in texts:
            texts[path] = _read(root / path)
        current, unreadable = texts[path]
        if unreadable is not None:
            check.refused.append(f"{where} was not applied: {unreadable}.")
            continue
        new, why = _apply(current, block, path)
        if why is not None:
            check.refused.append(f"{where} was not applied: {why}")
            continue
        assert new is not None
        broken = _syntax_error(path, current, new)
        if broken is not None:
            check.refused.append(f"{where} was not applied: {path} would no longer parse "
                                 f"as Python ({broken}). Send the block again with the "
                                 "edit's indentation and brackets complete.")
            continue
        texts[path] = new, None
        check.new_texts[path] = new
        check.applied.append(block)
    for path, text in list(check.new_texts.items()):
        try:
            if (root / path).read_text(encoding="utf-8") == text:
                del check.new_texts[path]  # blocks that undo each other change nothing
        except (OSError, UnicodeDecodeError):
            pass
    return check


def _refused_path(root: Path, path: str, may_write: Callable[[str], bool] | None) -> str | None:
    if not path:
        return ("it names no file; put the file's path on the line just before "
                "`<<<<<<< SEARCH`")
    parts = Path(path).parts
    if Path(path).is_absolute() or ".." in parts or not inside(root, path):
        return f"{path} is outside the workspace"
    if ".git" in parts:
        return "files under .git are not edited"
    if may_write is not None and not may_write(path):
        return f"writing {path} is not allowed here"
    return None


def _read(path: Path) -> tuple[str | None, str | None]:
    """The file's text (None when there is no such file), or why it cannot be edited."""
    if not path.exists():
        return None, None
    if not path.is_file():
        return None, f"{path.name} is not a file"
    try:
        if path.stat().st_size > MAX_FILE_CHARS:
            return None, f"{path.name} is too large to edit this way"
        return path.read_text(encoding="utf-8"), None
    except UnicodeDecodeError:
        return None, f"{path.name} is not UTF-8 text"
    except OSError as exc:
        return None, f"{path.name} cannot be read ({exc.strerror or exc})"


def _apply(current: str | None, block: EditBlock, path: str) -> tuple[str | None, str | None]:
    """The file's text with the block applied, or why it does not apply (a note)."""
    search, replace = block.search, block.replace
    if current is None:
        if search.strip():
            return None, (f"{path} does not exist. To create it, leave the SEARCH section "
                          "empty; to edit a file, name its path as it is in the workspace.")
        return _with_newline(replace), None
    if not search.strip():
        return None, (f"{path} already exists and the SEARCH section is empty. Copy the "
                      "lines to change, exactly as the file has them, into SEARCH.")
    if search == replace:
        return None, "its SEARCH and REPLACE sections are the same: nothing would change."
    count = _occurrences(current, search)
    if count == 1:
        return current.replace(search, replace, 1), None
    if count > 1:
        return None, (f"ambiguous: {count} matches of the SEARCH text in {path}; include "
                      "more lines around the change, so that it matches exactly once.")
    loose = _loose_apply(current, search, replace)
    if isinstance(loose, int):
        if loose > 1:
            return None, (f"ambiguous: {loose} matches of the SEARCH text in {path}; "
                          "include more lines around the change, so that it matches "
                          "exactly once.")
        return None, _not_found(current, search, path)
    return loose, None


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _occurrences(text: str, search: str, most: int = 100) -> int:
    count, at = 0, text.find(search)
    while at >= 0 and count < most:
        count += 1
        at = text.find(search, at + 1)
    return count


def _loose_apply(current: str, search: str, replace: str) -> str | int:
    """The text with `search` replaced where its lines match whole lines of the file, each
    compared without leading and trailing whitespace, when that happens exactly once; the
    replacement's lines get the indentation the match shows the model dropped or added.
    Otherwise the number of such matches (0 or more than 1)."""
    wanted = [line.strip() for line in search.strip("\n").split("\n")]
    while wanted and not wanted[0]:
        wanted.pop(0)
    while wanted and not wanted[-1]:
        wanted.pop()
    if not wanted:
        return 0
    lines = current.splitlines(keepends=True)
    stripped = [line.strip() for line in lines]
    n = len(wanted)
    matches = [i for i in range(len(lines) - n + 1)
               if stripped[i] == wanted[0] and stripped[i:i + n] == wanted]
    if len(matches) != 1:
        return len(matches)
    at = matches[0]
    shift = _indent_shift(search, lines[at:at + n])
    new_lines = [_reindent(line, shift) for line in replace.strip("\n").split("\n")] \
        if replace.strip("\n") else []
    ending = "\r\n" if lines[at].endswith("\r\n") else "\n"
    block = "".join(line + ending for line in new_lines)
    return "".join(lines[:at]) + block + "".join(lines[at + n:])


def _indent_shift(search: str, found: list[str]) -> tuple[str, str]:
    """(remove, add): the leading whitespace to take off each replacement line and to put
    before it, when every non-blank SEARCH line differs from the file's by the same prefix;
    ("", "") otherwise."""
    shown = [line for line in search.strip("\n").split("\n") if line.strip()]
    real = [line for line in found if line.strip()]
    pairs = list(zip(shown, real))
    if not pairs:
        return "", ""
    indents = [(_indent(a), _indent(b)) for a, b in pairs]
    a0, b0 = indents[0]
    if b0.endswith(a0) and all(b == b0[:len(b0) - len(a0)] + a for a, b in indents):
        return "", b0[:len(b0) - len(a0)]
    if a0.endswith(b0) and all(a == a0[:len(a0) - len(b0)] + b for a, b in indents):
        return a0[:len(a0) - len(b0)], ""
    return "", ""


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def _reindent(line: str, shift: tuple[str, str]) -> str:
    remove, add = shift
    line = line.rstrip("\r")
    if not line.strip():
        return ""
    if remove and line.startswith(remove):
        line = line[len(remove):]
    return add + line


def _not_found(current: str, search: str, path: str) -> str:
    note = (f"its SEARCH text was not found in {path}. SEARCH must copy the file's lines "
            "exactly, including indentation and comments.")
    first = next((line.strip() for line in search.splitlines() if line.strip()), "")
    lines = current.splitlines()
    if first and len(lines) <= 50_000:
        close = difflib.get_close_matches(first, [line.strip() for line in lines], n=1,
                                          cutoff=0.6)
        if close:
            number = next(i for i, line in enumerate(lines) if line.strip() == close[0]) + 1
            note += f" The closest line is {number}: `{_quote(lines[number - 1].strip())}`."
    return note


def _quote(text: str) -> str:
    return text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "..."


def _syntax_error(path: str, before: str | None, after: str) -> str | None:
    """Why `after` (a Python file's new text) does not parse, when `before` did (or the
    file is new); None when it parses or is not Python."""
    if not path.endswith((".py", ".pyi")):
        return None
    if before is not None and _parse_error(before) is not None:
        return None  # it did not parse before either: no worse
    return _parse_error(after)


def _parse_error(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        where = f"line {exc.lineno}: {exc.msg}" if exc.lineno else exc.msg
        return where + (f": `{_quote(line)}`" if line else "")
    except (ValueError, RecursionError, MemoryError) as exc:
        return str(exc) or type(exc).__name__
    return None

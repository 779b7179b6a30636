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

`merge_by_name` is the function-level form, for a code block that holds a few functions or
methods of a big Python file: they replace the definitions of the same names, the rest of
the file kept.
"""
from __future__ import annotations

import ast
import bisect
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
# Line comparisons a whitespace-tolerant match may make (the file's lines times SEARCH's).
MAX_LOOSE_WORK = 20_000_000
# How much of a block's text a note quotes.
_QUOTE_CHARS = 160

_HEAD = re.compile(r"^\s*<{5,9}\s*SEARCH\b.*$", re.IGNORECASE)
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_TAIL = re.compile(r"^\s*>{5,9}\s*(?:REPLACE|UPDATED)\b.*$", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"^\s*(?:`{3,}|~{3,})\s*$")
_FENCE_OPEN = re.compile(r"^\s*(?:`{3,}|~{3,})\s*(?P<info>[^`]*)$")
# A file name as a label: `pkg/core.py`, `Makefile` is not taken (no dot, no slash).
_PATH = re.compile(r"^(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.[\w]+$|^(?:[\w.@+-]+/)+[\w@+-][\w.@+-]*$")
_LABEL_PREFIX = re.compile(r"^(?:#+|//|--|\*+|-|>|\d+[.)])?\s*"
                           r"(?:(?:file(?:name)?|path|in)\s*[:=]?\s+)?", re.IGNORECASE)
_QUOTED = re.compile(r"`([^`\s]+)`")


@dataclass(frozen=True)
class EditBlock:
    path: str  # as the reply names it, relative to the workspace ("" when it names none)
    search: str  # the exact text to replace; "" creates a new file
    replace: str
    # Where the block is in the reply (its head to its tail line, a fence's closing line
    # after it included), in characters; not part of what the block is.
    span: tuple[int, int] = field(default=(0, 0), compare=False)


@dataclass
class EditCheck:
    new_texts: dict[str, str] = field(default_factory=dict)  # path -> whole new text
    refused: list[str] = field(default_factory=list)  # one note per refused block
    applied: list[EditBlock] = field(default_factory=list)  # those that apply (their files' paths)


def has_edit_blocks(text: str) -> bool:
    """Whether `text` holds the head of a SEARCH/REPLACE block (cheap; before parsing)."""
    return "SEARCH" in text.upper() and any(_HEAD.match(line) for line in text.splitlines())


def tail_ends(text: str) -> list[int]:
    """Where each line that closes a SEARCH/REPLACE block (`>>>>>>> REPLACE`) ends in
    `text`, as parse_edit_blocks reads those lines."""
    ends, offset = [], 0
    for line in text.splitlines(keepends=True):
        offset += len(line)
        if _TAIL.match(line):
            ends.append(offset - (len(line) - len(line.rstrip("\r\n"))))
    return ends


def parse_edit_blocks(text: str) -> list[EditBlock]:
    """The SEARCH/REPLACE blocks in a reply, in order. A block is a head line
    (`<<<<<<< SEARCH`), the text to find, a divider (`=======`), the text to put in, and a
    tail line (`>>>>>>> REPLACE`); its file is named on a line just before it (`path`,
    `**path**`, `# path`, `File: path`), in the info string of the fence around it
    (```` ```python path ````), or else it is the previous block's. An unfinished block (no
    divider or tail) is left out."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    # Where each marker is, so that finding a block's next one is a search, not a scan (a
    # reply of many heads without tails stays linear).
    heads = [j for j, line in enumerate(lines) if _HEAD.match(line)]
    dividers = [j for j, line in enumerate(lines) if _DIVIDER.match(line)]
    tails = [j for j, line in enumerate(lines) if _TAIL.match(line)]
    blocks: list[EditBlock] = []
    previous = ""
    start = 0  # where the lines a label may be on begin (after the previous block)
    for i in heads:
        if i < start:
            continue  # inside a block already read
        if len(blocks) >= MAX_BLOCKS:
            break
        divider = _after(dividers, i)
        tail = _after(tails, divider) if divider is not None else None
        inner = _after(heads, i)
        if divider is None or tail is None or (inner is not None and inner < tail):
            # Unfinished, or another head inside it: not a block; a later one in the run
            # may still be, with this one's path.
            previous = _label(lines[start:i]) or previous
            start = i + 1
            continue
        path = _label(lines[start:i]) or previous
        search = "".join(lines[i + 1:divider])
        replace = "".join(lines[divider + 1:tail])
        end = tail + 1
        if end < len(lines) and _FENCE_CLOSE.match(lines[end]):
            end += 1
        blocks.append(EditBlock(path, search, replace, (offsets[i], offsets[end])))
        previous = path
        start = tail + 1
    return blocks


def _after(indices: list[int], at: int) -> int | None:
    """The first of the sorted `indices` after `at`."""
    k = bisect.bisect_right(indices, at)
    return indices[k] if k < len(indices) else None


def _label(before: list[str]) -> str | None:
    """The file named on the last few non-blank lines before a block's head: a fence's info
    string, a line that is only a path (decorated as models do), the one path a line quotes
    in backticks, or the last path of a sentence ending with a colon."""
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
        quoted = {q for q in _QUOTED.findall(line) if _PATH.match(q) and "." in Path(q).name}
        if len(quoted) == 1:
            return _clean(quoted.pop())  # "1. In `pkg/core.py`, the loop"
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
    `new_texts` holds the whole new text of every file a block changes, by its path in the
    workspace (the reply's, `./` dropped; or, for a file the reply named by the end of its
    path, the one file that fits); `refused` one note per block that does not apply, saying
    why, for the model; `applied` the blocks that apply, with those paths."""
    check = EditCheck()
    texts: dict[str, tuple[str | None, str | None]] = {}  # path -> (text so far, unreadable)
    aliases: dict[str, str] = {}  # a path the reply gave -> the file it was found to mean
    for number, block in enumerate(blocks[:MAX_BLOCKS], 1):
        where = f"{block.path or 'a block'} (SEARCH/REPLACE block {number})"
        why = _refused_path(root, block.path, may_write)
        if why is not None:
            check.refused.append(f"{where} was not applied: {why}.")
            continue
        path = os.path.normpath(block.path)
        path = aliases.get(path, path)
        if path not in texts and not (root / path).exists() and block.search.strip():
            found, why = _found_as(root, path, block.search)
            if why is not None:
                check.refused.append(f"{where} was not applied: {why}")
                continue
            if found is not None:  # `core.py` for `src/pkg/core.py`, when only one fits
                why = _refused_path(root, found, may_write)
                if why is not None:
                    check.refused.append(f"{where} was not applied: {why}.")
                    continue
                path = aliases[path] = found
        if path not in texts:
            texts[path] = _read(root / path)
        current, unreadable = texts[path]
        if unreadable is not None:
            check.refused.append(f"{where} was not applied: {unreadable}.")
            continue
        new, why = _apply(current, _without_line_numbers(block), path)
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
        check.applied.append(EditBlock(path, block.search, block.replace, block.span))
    for path, text in list(check.new_texts.items()):
        try:
            if (root / path).read_text(encoding="utf-8") == text:
                del check.new_texts[path]  # blocks that undo each other change nothing
        except (OSError, UnicodeDecodeError):
            pass
    return check


# read_file's numbering (`L12: text`), which a small model copies from what it was shown.
_LINE_NUMBER = re.compile(r"^L\d+: ?")


def _without_line_numbers(block: EditBlock) -> EditBlock:
    """The block without read_file's `L{n}: ` prefixes, when every line of its SEARCH text
    that is not blank carries one (no file's code looks like that); REPLACE lines lose the
    prefix where they have it."""
    lines = [line for line in block.search.splitlines() if line.strip()]
    if not lines or not all(_LINE_NUMBER.match(line) for line in lines):
        return block

    def strip(text: str) -> str:
        return "".join(_LINE_NUMBER.sub("", line, count=1)
                       for line in text.splitlines(keepends=True))

    return EditBlock(block.path, strip(block.search), strip(block.replace), block.span)


# Folders never searched for a file a block names by the end of its path.
_SKIPPED_DIRS = {"node_modules", "__pycache__", "venv", ".venv", "env", "build", "dist",
                 "site-packages"}
MAX_WALK_FILES = 20_000


def _found_as(root: Path, path: str, search: str) -> tuple[str | None, str | None]:
    """The workspace file a missing `path` means, by the end of its path (`core.py` or
    `pkg/core.py` for `src/pkg/core.py`): the only one, or the only one of several that
    holds the SEARCH text. (None, None) when no file fits; (None, why) when several do."""
    tail = "/" + Path(path).as_posix()
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in files:
            seen += 1
            relative = os.path.relpath(os.path.join(folder, name), root)
            if ("/" + Path(relative).as_posix()).endswith(tail) and inside(root, relative):
                found.append(relative)
        if seen > MAX_WALK_FILES:
            break
    if len(found) == 1:
        return found[0], None
    holding = [f for f in found if search in (_read(root / f)[0] or "")]
    if len(holding) == 1:
        return holding[0], None
    if len(found) > 1:
        names = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        return None, (f"{path} does not exist, and {len(found)} files end with that name "
                      f"({names}): name the file by its whole path in the workspace.")
    return None, None


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


def _occurrences(text: str, search: str) -> int:
    """How often `search` occurs in `text`, overlapping occurrences counted apart."""
    count = text.count(search)
    if count == 1 and text.find(search, text.find(search) + 1) >= 0:
        return 2  # "aa" in "aaa": once without overlaps, twice with
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
    n = len(wanted)
    if len(lines) * n > MAX_LOOSE_WORK:
        return 0  # a long SEARCH in a long file: the exact match or nothing
    stripped = [line.strip() for line in lines]
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
    first = next((line.strip() for line in search.splitlines() if line.strip()), "")[:200]
    lines = current.splitlines()
    if first and len(lines) <= 20_000:
        close = difflib.get_close_matches(first, [line.strip()[:200] for line in lines], n=1,
                                          cutoff=0.6)
        if close:
            number = next(i for i, line in enumerate(lines)
                          if line.strip()[:200] == close[0]) + 1
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


# A line that stands for code left out ("# ... rest of the method unchanged", a bare `...`):
# a definition holding one is not the whole definition.
_ELIDED = re.compile(r"^\s*(?:#.*(?:\.\.\.|…|\brest of\b|\bunchanged\b|"
                     r"\bexisting (?:code|logic)\b|\bsame as before\b|\bomitted\b|"
                     r"\bas before\b)|\.\.\.\s*$)", re.IGNORECASE | re.MULTILINE)


@dataclass
class Merge:
    """A Python file with definitions a reply sent put in by name (`merge_by_name`)."""
    text: str
    names: list[str]  # what was replaced: `f`, `Engine.ordinal`


def merge_by_name(current: str, code: str) -> Merge | str:
    """`current` (a Python module) with each function, class method or class in `code`
    replacing the one of the same name (Aider's function-level edit for files too long to
    send whole): a top-level function replaces the file's top-level one, or the one method
    of that name in the file's classes when it takes `self` or `cls`; a class replaces the
    methods it holds in the file's class of that name. Imports `code` adds go to the top;
    other statements (a demo call, a print) are left out. Why not, as a note for the model,
    when a definition is new, elided (`# ... rest unchanged`), or either text does not
    parse."""
    try:
        old_tree, new_tree = ast.parse(current), ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"it does not parse as Python ({exc.__class__.__name__})"
    old_lines = current.splitlines(keepends=True)
    new_lines = code.splitlines(keepends=True)
    top = {n.name: n for n in old_tree.body if isinstance(n, _DEFS)}
    methods: dict[str, list[tuple[ast.ClassDef, ast.stmt]]] = {}
    for node in old_tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    methods.setdefault(item.name, []).append((node, item))
    spans: dict[tuple[int, int], tuple[str, str]] = {}  # old span -> (new text, name)
    imports: list[str] = []
    for node in new_tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            text = _text(new_lines, node)
            if text.strip() not in current:
                imports.append(text)
            continue
        if not isinstance(node, _DEFS):
            continue
        if isinstance(node, ast.ClassDef) and isinstance(top.get(node.name), ast.ClassDef):
            old_class = top[node.name]
            old_methods = {m.name: m for m in old_class.body
                           if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for item in node.body:
                if _is_filler(item):
                    continue
                if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                        or item.name not in old_methods:
                    what = getattr(item, "name", None) or f"line {item.lineno}"
                    return (f"`{node.name}` in the file has no method `{what}` to replace; "
                            "send whole methods the class already has")
                spans[_span(old_methods[item.name])] = (
                    _reindent_to(_text(new_lines, item), old_methods[item.name], old_lines),
                    f"{node.name}.{item.name}")
            continue
        if node.name in top and not isinstance(node, ast.ClassDef):
            spans[_span(top[node.name])] = (_text(new_lines, node), node.name)
            continue
        owners = methods.get(node.name, [])
        if not isinstance(node, ast.ClassDef) and len(owners) == 1 and node.args.args \
                and node.args.args[0].arg in ("self", "cls"):
            owner, method = owners[0]
            spans[_span(method)] = (_reindent_to(_text(new_lines, node), method, old_lines),
                                    f"{owner.name}.{node.name}")
            continue
        return (f"the file has no {'class' if isinstance(node, ast.ClassDef) else 'function'} "
                f"`{node.name}` to replace" + (f" (several classes have a method `{node.name}`)"
                                                if len(owners) > 1 else ""))
    if not spans:
        return "it holds no function or class of the file"
    if _ELIDED.search(code):  # the whole block: a trailing comment is no node's
        return ("it leaves code out (a comment or `...` stands for it); send whole "
                "definitions")
    out: list[str] = []
    last = 0
    ordered = sorted(spans)
    for (start, end), following in zip(ordered, ordered[1:] + [(len(old_lines), 0)]):
        if end > following[0]:
            return "two of its definitions replace overlapping parts of the file"
        out += old_lines[last:start]
        text = spans[(start, end)][0]
        out.append(text if text.endswith("\n") else text + "\n")
        last = end
    out += old_lines[last:]
    result = "".join(out)
    if imports:
        head = _after_docstring(old_tree)
        lines = result.splitlines(keepends=True)
        result = "".join(lines[:head]) + "".join(imports) + "".join(lines[head:])
    broken = _parse_error(result)
    if broken is not None:
        return f"the file would no longer parse ({broken})"
    if result == current:
        return "it is the same as the file's definitions: nothing would change"
    return Merge(result, [name for _, name in (spans[s] for s in ordered)])


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_filler(node: ast.stmt) -> bool:
    """A docstring, `pass` or `...` in a class body sent with its methods."""
    return isinstance(node, ast.Pass) or (isinstance(node, ast.Expr)
                                          and isinstance(node.value, ast.Constant))


def _span(node: ast.stmt) -> tuple[int, int]:
    """The statement's lines, 0-based and end-exclusive, decorators included."""
    decorators = getattr(node, "decorator_list", [])
    start = min([d.lineno for d in decorators] + [node.lineno])
    return start - 1, node.end_lineno or node.lineno


def _text(lines: list[str], node: ast.stmt) -> str:
    start, end = _span(node)
    text = "".join(lines[start:end])
    return text if text.endswith("\n") else text + "\n"


def _reindent_to(text: str, old: ast.stmt, old_lines: list[str]) -> str:
    """A definition's text re-indented to where the one it replaces stands."""
    start, _ = _span(old)
    want = _indent(old_lines[start])
    lines = text.splitlines(keepends=True)
    have = _indent(lines[0]) if lines else ""
    if have == want:
        return text
    out = []
    for line in lines:
        if not line.strip():
            out.append(line)
        elif line.startswith(have):
            out.append(want + line[len(have):])
        else:
            out.append(line)
    return "".join(out)


def _after_docstring(tree: ast.Module) -> int:
    """The line after a module docstring and the `from __future__` imports (0: none)."""
    head = 0
    for node in tree.body:
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str) and head == 0) \
                or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            head = node.end_lineno or head
            continue
        break
    return head

"""Turn patch text (Codex `*** Begin Patch` format or a unified diff) into one common model.

Both formats end up as a list of AddFile / DeleteFile / UpdateFile hunks so the matcher and
the applier never need to know which syntax the model chose. The Codex format is primary (the
models are trained on it); unified diffs are accepted because models produce them anyway.
Parsing is lenient where intent is unambiguous (padded markers, heredoc or fence wrappers,
CRLF patch text) and strict, with the reference wording, where it is not.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from baseagent.tools.tool import ToolError

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File:"
DELETE_FILE = "*** Delete File:"
UPDATE_FILE = "*** Update File:"
MOVE_TO = "*** Move to:"
END_OF_FILE = "*** End of File"
CHANGE_CONTEXT = "@@"

# The exact list the reference prints, so models trained on it recognise the error.
VALID_HEADERS = ("Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
                 "'*** Update File: {path}'")
# `apply_patch <<'EOF'` (also <<EOF, <<"EOF", <<-EOF): models copy the shell invocation.
_HEREDOC_OPEN = re.compile(
    r"""^(?:apply_patch|applypatch)?\s*<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1\s*$""")
# ```diff ... ``` around the patch: chat habits leak into tool arguments.
_FENCE_OPEN = re.compile(r"^```[\w+-]*\s*$")
# A unified hunk header; in Codex format its numbers are used only as a position hint.
_UNIFIED_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
DEV_NULL = "/dev/null"


class PatchError(ToolError):
    """A patch that cannot be parsed or applied; the message goes to the model verbatim."""


@dataclass(frozen=True)
class Chunk:
    """One contiguous change inside an Update: old lines to find, new lines to put there."""

    old_lines: list[str]
    new_lines: list[str]
    # `@@ line` headers, sought in order before the old lines (usually zero or one).
    contexts: tuple[str, ...] = ()
    # `*** End of File`: the old lines must be the last lines of the file.
    end_of_file: bool = False
    # 0-based line index suggested by a unified header; the nearest match wins when set.
    hint: int | None = None
    # For each new line: the index of the old line it repeats (a context line), else None.
    # Lets a fuzzy match keep the file's own spelling of lines the patch did not change.
    sources: tuple[int | None, ...] = ()


@dataclass(frozen=True)
class AddFile:
    path: str
    contents: str


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None = None
    chunks: list[Chunk] = field(default_factory=list)


Hunk = AddFile | DeleteFile | UpdateFile


def parse_patch(text: str) -> list[Hunk]:
    """Parse either supported syntax; raise PatchError naming the first problem found."""
    return parse_patch_with_notes(text)[0]


def parse_patch_with_notes(text: str) -> tuple[list[Hunk], list[str]]:
    """Parse either syntax, repairing the slips whose intent is plain (text around the
    patch, several Begin/End blocks in one input, a missing `*** End Patch`); returns the
    hunks and one sentence per repair, for the tool result to tell the model."""
    lines, base = _unwrap(text.split("\n"))
    first = lines[0].strip() if lines else ""
    if first != BEGIN_PATCH and _looks_unified(lines):
        return _UnifiedParser(lines, base).parse(), []
    lines, base, notes = _mend_codex(lines, base)
    return _parse_codex(lines, base), notes


def _mend_codex(lines: list[str], base: int) -> tuple[list[str], int, list[str]]:
    """The Codex-format slips small models make, mended where the intent is plain. Line
    numbers in later errors still count from the text the model sent (`base`)."""
    notes: list[str] = []
    marks = [i for i, line in enumerate(lines) if line.strip() == BEGIN_PATCH]
    if not marks:
        return lines, base, notes
    if marks[0] > 0:
        notes.append(f"the text before '{BEGIN_PATCH}' was left out")
        base += marks[0]
        lines = lines[marks[0]:]
        marks = [m - marks[0] for m in marks]
    ends = [i for i, line in enumerate(lines) if line.strip() == END_PATCH]
    if ends and ends[-1] < len(lines) - 1 and ends[-1] > marks[-1]:
        tail = [line for line in lines[ends[-1] + 1:] if line.strip()]
        if tail and not any(line.strip() == BEGIN_PATCH for line in tail):
            notes.append(f"the text after the last '{END_PATCH}' was left out")
            lines = lines[:ends[-1] + 1]
    if len(marks) > 1:
        inner = set(marks[1:]) | {e for e in ends if e != len(lines) - 1 and
                                  any(m > e for m in marks[1:])}
        lines = [line for i, line in enumerate(lines) if i not in inner]
        notes.append(f"the input held {len(marks)} '{BEGIN_PATCH}' blocks; they were applied "
                     f"as one patch (send one block with every file in it)")
    if lines[-1].strip() != END_PATCH:
        lines = [*lines, END_PATCH]
        notes.append(f"the patch did not end with '{END_PATCH}'; it was read as if it did")
    return lines, base, notes


# ---------------------------------------------------------------- shared pre-processing


def _strip_blank_edges(lines: list[str], base: int) -> tuple[list[str], int]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end], base + start


def _unwrap(raw: list[str]) -> tuple[list[str], int]:
    """Drop CRs, surrounding blank lines and a heredoc or markdown-fence wrapper.

    Returns the remaining lines and how many lines were cut from the top, so error messages
    can still cite line numbers of the text the model sent.
    """
    lines = [line[:-1] if line.endswith("\r") else line for line in raw]
    lines, base = _strip_blank_edges(lines, 0)
    if lines:
        opener = _HEREDOC_OPEN.match(lines[0].strip())
        if opener:
            delimiter = opener.group(2)
            lines = lines[1:-1] if len(lines) > 1 and lines[-1].strip() == delimiter else lines[1:]
            lines, base = _strip_blank_edges(lines, base + 1)
    if len(lines) >= 2 and _FENCE_OPEN.match(lines[0].strip()) and lines[-1].strip() == "```":
        lines, base = _strip_blank_edges(lines[1:-1], base + 1)
    return lines, base


def _looks_unified(lines: list[str]) -> bool:
    for i, line in enumerate(lines):
        if line.startswith("diff --git "):
            return True
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            return True
    return False


def _hunk_error(line_number: int, message: str) -> PatchError:
    return PatchError(f"invalid hunk at line {line_number}, {message}")


def _unified_hint(header: str) -> int | None:
    """0-based index where a `@@ -l,n ...` hunk starts (for n == 0: the line after l)."""
    m = _UNIFIED_HUNK.match(header)
    if not m:
        return None
    start, count = int(m.group(1)), int(m.group(2)) if m.group(2) is not None else 1
    return start if count == 0 else max(start - 1, 0)


def _context(old: list[str], new: list[str], sources: list[int | None], text: str) -> None:
    """An unchanged line: present on both sides, the new side remembering where it came from."""
    sources.append(len(old))
    old.append(text)
    new.append(text)


# ---------------------------------------------------------------- Codex format


def _parse_codex(lines: list[str], base: int) -> list[Hunk]:
    if not lines or lines[0].strip() != BEGIN_PATCH:
        raise PatchError(f"invalid patch: The first line of the patch must be '{BEGIN_PATCH}'")
    if len(lines) < 2 or lines[-1].strip() != END_PATCH:
        raise PatchError(f"invalid patch: The last line of the patch must be '{END_PATCH}'")
    parser = _CodexParser(lines[1:-1], base + 2)
    hunks = parser.parse()
    if not hunks:
        raise PatchError("No files were modified: the patch contains no file operations.")
    return hunks


class _CodexParser:
    """Cursor over the lines between the Begin/End markers."""

    def __init__(self, lines: list[str], first_line_number: int) -> None:
        self.lines = lines
        self.offset = first_line_number  # 1-based number of lines[0] in the sent text
        self.i = 0

    def lineno(self) -> int:
        return self.i + self.offset

    def parse(self) -> list[Hunk]:
        hunks: list[Hunk] = []
        while self.i < len(self.lines):
            stripped = self.lines[self.i].strip()
            if not stripped:  # blank lines between hunks carry no meaning
                self.i += 1
            elif stripped.startswith(ADD_FILE):
                hunks.append(self._add(self._path(stripped, ADD_FILE)))
            elif stripped.startswith(DELETE_FILE):
                hunks.append(DeleteFile(self._path(stripped, DELETE_FILE)))
                self.i += 1
            elif stripped.startswith(UPDATE_FILE):
                hunks.append(self._update(self._path(stripped, UPDATE_FILE)))
            else:
                raise _hunk_error(self.lineno(),
                                  f"'{stripped}' is not a valid hunk header. {VALID_HEADERS}")
        return hunks

    def _path(self, stripped: str, marker: str) -> str:
        path = stripped[len(marker):].strip()
        if not path:
            raise _hunk_error(self.lineno(), f"'{stripped}' is missing the file path")
        return path

    def _add(self, path: str) -> AddFile:
        self.i += 1
        content: list[str] = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.startswith("+"):
                content.append(line[1:])
                self.i += 1
            elif not line.strip() and self._blank_run_continues_add():
                content.append("")  # an empty file line whose '+' the model dropped
                self.i += 1
            else:
                break
        return AddFile(path, "".join(f"{line}\n" for line in content))

    def _blank_run_continues_add(self) -> bool:
        j = self.i
        while j < len(self.lines) and not self.lines[j].strip():
            j += 1
        return j < len(self.lines) and self.lines[j].startswith("+")

    def _update(self, path: str) -> UpdateFile:
        header_line = self.lineno()
        self.i += 1
        move_to = None
        if self.i < len(self.lines) and self.lines[self.i].strip().startswith(MOVE_TO):
            move_to = self._path(self.lines[self.i].strip(), MOVE_TO)
            self.i += 1
        chunks: list[Chunk] = []
        while self.i < len(self.lines):
            stripped = self.lines[self.i].strip()
            if not stripped:
                self.i += 1
                continue
            if stripped.startswith("***") and stripped != END_OF_FILE:
                break  # the next file operation
            chunks.append(self._chunk(allow_missing_context=not chunks))
        if not chunks:
            raise _hunk_error(header_line, f"Update file hunk for path '{path}' is empty")
        return UpdateFile(path, move_to, chunks)

    def _chunk(self, allow_missing_context: bool) -> Chunk:
        contexts: list[str] = []
        hint: int | None = None
        saw_header = False
        while self.i < len(self.lines):
            head = self.lines[self.i].strip()
            if head != CHANGE_CONTEXT and not head.startswith(CHANGE_CONTEXT + " "):
                break
            saw_header = True
            unified = _unified_hint(head)
            if unified is not None:
                hint = unified  # line numbers are a hint, never a context line to find
            else:
                text = self.lines[self.i].lstrip()[len(CHANGE_CONTEXT) + 1:].rstrip()
                if text.strip():
                    contexts.append(text)
            self.i += 1
        if not saw_header and not allow_missing_context:
            raise _hunk_error(self.lineno(), "Expected update hunk to start with a @@ context "
                              f"marker, got: '{self.lines[self.i]}'")
        old: list[str] = []
        new: list[str] = []
        sources: list[int | None] = []
        end_of_file = False
        parsed = 0
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() == END_OF_FILE:
                if parsed == 0:
                    raise _hunk_error(self.lineno(), "Update hunk does not contain any lines")
                end_of_file = True
                self.i += 1
                break
            if not line.strip() or line[0] == " ":
                _context(old, new, sources, line[1:] if line.startswith(" ") else "")
            elif line[0] == "+":
                new.append(line[1:])
                sources.append(None)
            elif line[0] == "-":
                old.append(line[1:])
            elif line.startswith("\\"):
                self.i += 1  # "\ No newline at end of file": updated files end with one anyway
                continue
            elif parsed == 0:
                raise _hunk_error(
                    self.lineno(),
                    f"Unexpected line found in update hunk: '{line}'. Every line should start "
                    "with ' ' (context line), '+' (added line), or '-' (removed line)")
            else:
                break
            parsed += 1
            self.i += 1
        if parsed == 0:
            raise _hunk_error(self.lineno(), "Update hunk does not contain any lines")
        return Chunk(old, new, tuple(contexts), end_of_file, hint, tuple(sources))


# ---------------------------------------------------------------- unified diff


@dataclass
class _FileDiff:
    old: str | None = None
    new: str | None = None
    git: bool = False
    has_header: bool = False  # saw the ---/+++ pair
    bare_paths: bool = False  # paths came from `rename from/to`, which never carry a/ b/
    new_file: bool = False
    deleted_file: bool = False
    chunks: list[Chunk] = field(default_factory=list)
    line_number: int = 0


class _UnifiedParser:
    """`diff -u` / `git diff` output, tolerant of the wrong hunk counts models often write."""

    def __init__(self, lines: list[str], base: int) -> None:
        self.lines = lines
        self.base = base
        self.i = 0
        self.files: list[_FileDiff] = []

    def lineno(self) -> int:
        return self.i + self.base + 1

    def parse(self) -> list[Hunk]:
        current: _FileDiff | None = None
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.startswith("diff --git "):
                current = self._start(git=True)
                current.old, current.new = _git_header_paths(line[len("diff --git "):])
            elif self._is_file_header(self.i):
                if current is None or current.has_header or current.chunks:
                    current = self._start(git=False)
                current.old = _diff_path(line[4:])
                current.new = _diff_path(self.lines[self.i + 1][4:])
                current.has_header = True
                current.bare_paths = False
                self.i += 1
            elif _UNIFIED_HUNK.match(line):
                if current is None or (current.old is None and current.new is None):
                    raise PatchError(f"invalid patch: hunk header at line {self.lineno()} "
                                     "comes before any '--- a/path' / '+++ b/path' file header")
                current.chunks.append(self._hunk())
                continue
            elif current is not None and current.git and not current.has_header:
                self._git_extended(current, line)
            self.i += 1
        return [self._to_hunk(f) for f in self.files]

    def _start(self, git: bool) -> _FileDiff:
        diff = _FileDiff(git=git, line_number=self.lineno())
        self.files.append(diff)
        return diff

    def _is_file_header(self, i: int) -> bool:
        return (self.lines[i].startswith("--- ") and i + 1 < len(self.lines)
                and self.lines[i + 1].startswith("+++ "))

    def _is_boundary(self, i: int) -> bool:
        line = self.lines[i]
        return (line.startswith("diff --git ") or bool(_UNIFIED_HUNK.match(line))
                or self._is_file_header(i))

    def _git_extended(self, diff: _FileDiff, line: str) -> None:
        if line.startswith("new file mode"):
            diff.new_file = True
        elif line.startswith("deleted file mode"):
            diff.deleted_file = True
        elif line.startswith(("rename from ", "rename to ")):
            if not diff.bare_paths:  # the first rename line: both git-header paths are stale
                diff.old, diff.new = _strip_prefixes(diff.old, diff.new)
                diff.bare_paths = True
            path = _unquote(line.split(" ", 2)[2].strip())
            if line.startswith("rename from "):
                diff.old = path
            else:
                diff.new = path
        elif line.startswith(("Binary files ", "GIT binary patch")):
            raise PatchError(f"invalid patch: binary diffs are not supported (line "
                             f"{self.lineno()}); write binary files another way")

    def _hunk(self) -> Chunk:
        header = self.lines[self.i]
        m = _UNIFIED_HUNK.match(header)
        assert m is not None
        old_left = int(m.group(2)) if m.group(2) is not None else 1
        new_left = int(m.group(4)) if m.group(4) is not None else 1
        hint = _unified_hint(header)
        self.i += 1
        old: list[str] = []
        new: list[str] = []
        sources: list[int | None] = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if self._is_boundary(self.i):
                break
            if line.startswith("\\"):
                self.i += 1
                continue
            within_counts = old_left > 0 or new_left > 0
            if not within_counts and not self._more_body_follows():
                break  # counts are used up and nothing hunk-like follows
            if not line.strip() or line[0] == " ":
                _context(old, new, sources, line[1:] if line.startswith(" ") else "")
                old_left, new_left = old_left - 1, new_left - 1
            elif line[0] == "-":
                old.append(line[1:])
                old_left -= 1
            elif line[0] == "+":
                new.append(line[1:])
                sources.append(None)
                new_left -= 1
            else:
                break  # commentary between hunks
            self.i += 1
        return Chunk(old, new, (), False, hint, tuple(sources))

    def _more_body_follows(self) -> bool:
        """After the declared counts: is this (blank-led) run still part of the hunk?"""
        j = self.i
        while j < len(self.lines) and not self.lines[j].strip():
            j += 1
        if j >= len(self.lines) or self._is_boundary(j):
            return False
        return self.lines[j][:1] in (" ", "+", "-", "\\")

    def _to_hunk(self, diff: _FileDiff) -> Hunk:
        old, new = (diff.old, diff.new) if diff.bare_paths else _strip_prefixes(diff.old, diff.new)
        if old is None and new is None:
            raise PatchError(f"invalid patch: no file paths in the diff header at line "
                             f"{diff.line_number}")
        if old is None or diff.new_file:
            lines = [line for chunk in diff.chunks for line in chunk.new_lines]
            return AddFile(new or old or "", "".join(f"{line}\n" for line in lines))
        if new is None or diff.deleted_file:
            return DeleteFile(old)
        move_to = new if new != old else None
        if not diff.chunks and move_to is None:
            raise PatchError(f"invalid patch: the diff for '{old}' (line {diff.line_number}) "
                             "has no hunks; mode-only changes are not supported")
        return UpdateFile(old, move_to, diff.chunks)


def _diff_path(raw: str) -> str | None:
    """The path of a ---/+++ line: drop a tab-separated timestamp, unquote, map /dev/null."""
    path = raw.split("\t", 1)[0].strip()
    path = _unquote(path)
    return None if path == DEV_NULL else path


def _strip_prefixes(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Drop git's a/ and b/ only when the pair uses them, so a real dir named `a` survives."""
    if (old is None or old.startswith("a/")) and (new is None or new.startswith("b/")):
        old = old[2:] if old is not None else None
        new = new[2:] if new is not None else None
    return old, new


def _git_header_paths(rest: str) -> tuple[str | None, str | None]:
    """Paths of `diff --git a/x b/x`; only a fallback when no ---/+++ lines follow."""
    rest = rest.strip()
    if rest.startswith('"'):
        end = _closing_quote(rest)
        old, remainder = _unquote(rest[:end + 1]), rest[end + 1:].strip()
        return old, _unquote(remainder)
    parts = rest.split(" ")
    if len(parts) == 2:
        return parts[0], parts[1]
    # Paths with spaces: both sides name the same file, so split where the halves agree.
    for k in range(1, len(parts)):
        left, right = " ".join(parts[:k]), " ".join(parts[k:])
        if left[2:] == right[2:]:
            return left, right
    return None, None


def _closing_quote(text: str) -> int:
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return len(text) - 1


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths ("tab\\there", octal UTF-8 bytes)."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.match(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
        out.extend(ch.encode("utf-8"))
        i += 1
    return out.decode("utf-8", errors="replace")

"""Changes as a person (or `git apply`) reads them: a unified diff per file, with git's
headers, and a one-line summary per file."""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from baseagent.checkpoints.manifest import Change, Entry

# Larger files are named, not shown line by line (difflib is quadratic at worst).
MAX_TEXT_BYTES = 1 << 20
GIT_MODES = {"file": "100644", "exec": "100755", "link": "120000"}


@dataclass(frozen=True)
class FileDiff:
    """One changed path: `kind` add | delete | update; `binary` when it is not text (then
    `added`/`removed` are 0); `text`: its part of the unified diff."""

    path: str
    kind: str
    added: int
    removed: int
    binary: bool
    text: str

    def summary(self) -> str:
        letter = {"add": "A", "delete": "D", "update": "M"}[self.kind]
        counts = " (binary)" if self.binary else f" (+{self.added} -{self.removed})"
        return f"{letter} {self.path}{counts}"


def file_diff(change: Change, contents: Mapping[str, bytes]) -> FileDiff:
    """The diff of one change; `contents` holds the bytes of its entries by id."""
    old, new = change.before, change.after
    a = _bytes(old, contents)
    b = _bytes(new, contents)
    header = [f"diff --git a/{change.path} b/{change.path}"]
    if old is None and new is not None:
        header.append(f"new file mode {GIT_MODES[new.kind]}")
    elif new is None and old is not None:
        header.append(f"deleted file mode {GIT_MODES[old.kind]}")
    elif old is not None and new is not None and old.kind != new.kind:
        header += [f"old mode {GIT_MODES[old.kind]}", f"new mode {GIT_MODES[new.kind]}"]
    from_name = f"a/{change.path}" if old is not None else "/dev/null"
    to_name = f"b/{change.path}" if new is not None else "/dev/null"
    a_text, b_text = _text(a), _text(b)
    if a_text is None or b_text is None:
        if a != b:
            header.append(f"Binary files {from_name} and {to_name} differ")
        return FileDiff(change.path, change.kind, 0, 0, True, "\n".join(header) + "\n")
    a_lines, b_lines = a_text.splitlines(keepends=True), b_text.splitlines(keepends=True)
    lines = header
    added = removed = 0
    if a_lines != b_lines:
        lines += [f"--- {from_name}", f"+++ {to_name}"]
        for line in list(difflib.unified_diff(a_lines, b_lines, n=3))[2:]:
            if line.startswith("+"):
                added += 1
            elif line.startswith("-"):
                removed += 1
            if line.endswith("\n"):
                lines.append(line[:-1])
            else:  # the file's last line has no newline
                lines += [line, "\\ No newline at end of file"]
    return FileDiff(change.path, change.kind, added, removed, False, "\n".join(lines) + "\n")


def _bytes(entry: Entry | None, contents: Mapping[str, bytes]) -> bytes:
    return b"" if entry is None else contents.get(entry.oid, b"")


def _text(data: bytes) -> str | None:
    if len(data) > MAX_TEXT_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None

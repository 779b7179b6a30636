"""Apply parsed hunks: compute every resulting file in memory first, then write them.

Why two phases: the reference applies hunk by hunk and leaves a half-applied tree when a
later hunk fails, which the model then has to untangle. Here nothing touches the disk until
every hunk of every file has been located and every path cleared by the sandbox. The write
phase replaces each file atomically (temp file + os.replace in the same directory) and, if
the OS still fails midway, puts back what it had already changed.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from baseagent.fsutil import atomic_write
from baseagent.tools.patch.matcher import LineIndex, locate_chunks, splice
from baseagent.tools.patch.parser import AddFile, DeleteFile, Hunk, PatchError, UpdateFile

ChangeKind = Literal["add", "delete", "update"]
# surrogateescape round-trips bytes that are not UTF-8, so untouched lines keep them exactly.
_ENCODING, _ERRORS = "utf-8", "surrogateescape"
_BOM = "\ufeff"


# ---------------------------------------------------------------- text transformation


def update_text(original: str, hunk: UpdateFile, display: str) -> str:
    """New file text for an Update: line endings and a BOM are kept, a final newline added."""
    bom = original.startswith(_BOM)
    text = original[1:] if bom else original
    crlf = _uses_crlf(text)
    lines = text.split("\n")
    if crlf:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if lines and lines[-1] == "":
        lines.pop()  # the empty string after the final newline is not a line
    index = LineIndex(lines)
    new_lines = splice(lines, locate_chunks(index, hunk.chunks, display))
    if not new_lines:
        return _BOM if bom else ""
    eol = "\r\n" if crlf else "\n"
    return (_BOM if bom else "") + eol.join(new_lines) + eol


def _uses_crlf(text: str) -> bool:
    """A file is CRLF when most of its line breaks are; such files stay CRLF."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 >= text.count("\n")


# ---------------------------------------------------------------- planning (no disk writes)


@dataclass
class _Slot:
    """The planned final state of one file on disk, plus what to restore on rollback."""

    path: Path  # where to write, or what to unlink
    data: bytes | None  # None: the file is deleted
    original: bytes | None  # None: did not exist before the patch
    original_mode: int | None
    was_symlink_to: str | None = None  # restore a deleted symlink as a symlink
    mode: int | None = None  # mode for the written file; None keeps/uses the default


@dataclass
class Plan:
    """Everything the commit phase needs, computed without touching the disk."""

    slots: dict[str, _Slot] = field(default_factory=dict)
    summary: list[tuple[str, str]] = field(default_factory=list)  # ("A"|"M"|"D", path)
    changes: list[dict[str, str]] = field(default_factory=list)


class _Planner:
    def __init__(self, resolve: Callable[[str], Path]) -> None:
        self.resolve = resolve
        self.plan = Plan()
        self._targets: dict[str, Path] = {}
        self._disk: dict[str, bytes] = {}  # files read once even when looked at twice

    # -- view of the tree as it will be after the hunks planned so far

    def _key(self, path: Path) -> str:
        return os.path.realpath(path)

    def _state(self, path: Path) -> tuple[str, bytes | None]:
        """("missing" | "dir" | "file", bytes of the file) as earlier hunks left it."""
        slot = self.plan.slots.get(self._key(path))
        if slot is not None:
            return ("missing", None) if slot.data is None else ("file", slot.data)
        if os.path.isdir(path):
            return "dir", None
        if not os.path.lexists(path):
            return "missing", None
        return "file", self._read(Path(self._key(path)))

    def _read(self, real: Path) -> bytes:
        key = str(real)
        if key not in self._disk:
            try:
                self._disk[key] = real.read_bytes()
            except OSError as exc:
                raise PatchError(f"Failed to read {real}: {exc.strerror or exc}") from exc
        return self._disk[key]

    def _slot(self, path: Path, follow: bool = True) -> _Slot:
        """The slot for `path`, recording the on-disk original the first time it is touched."""
        key = self._key(path)
        slot = self.plan.slots.get(key)
        if slot is None:
            target = Path(key) if follow else Path(os.path.abspath(path))
            original, mode, link = None, None, None
            if os.path.lexists(target):
                st = os.lstat(target)
                if stat.S_ISLNK(st.st_mode):
                    link = os.readlink(target)
                else:
                    original, mode = self._read(target), stat.S_IMODE(st.st_mode)
            slot = _Slot(target, original, original, mode, link, mode)
            self.plan.slots[key] = slot
        return slot

    def _check_writable(self, path: Path, display: str) -> None:
        kind, _ = self._state(path)
        if kind == "dir":
            raise PatchError(f"Failed to write file {display}: it is a directory")
        parent = Path(os.path.abspath(path)).parent
        while True:
            slot = self.plan.slots.get(self._key(parent))
            planned_file = slot is not None and slot.data is not None
            if planned_file or (slot is None and os.path.lexists(parent)
                                and not os.path.isdir(parent)):
                raise PatchError(f"Failed to create parent directories for {display}: "
                                 f"{parent} is a file")
            if (slot is None and os.path.isdir(parent)) or parent.parent == parent:
                return
            parent = parent.parent

    # -- hunks

    def resolve_all(self, hunks: list[Hunk]) -> None:
        """Clear every path with the sandbox before anything else happens."""
        for hunk in hunks:
            for path in (hunk.path, getattr(hunk, "move_to", None)):
                if path is not None and path not in self._targets:
                    self._targets[path] = self.resolve(path)

    def add(self, hunk: AddFile) -> None:
        target = self._targets[hunk.path]
        self._check_writable(target, hunk.path)
        self._slot(target).data = hunk.contents.encode(_ENCODING, _ERRORS)
        self._record("A", hunk.path, "add")

    def delete(self, hunk: DeleteFile) -> None:
        target = self._targets[hunk.path]
        kind, _ = self._state(target)
        if kind == "dir":
            raise PatchError(f"Failed to delete file {hunk.path}: it is a directory, and "
                             "apply_patch only deletes files")
        if kind == "missing":
            raise PatchError(f"Failed to delete file {hunk.path}: no such file")
        self._slot(target, follow=False).data = None
        self._record("D", hunk.path, "delete")

    def update(self, hunk: UpdateFile) -> None:
        source = self._targets[hunk.path]
        kind, data = self._state(source)
        if kind == "dir":
            raise PatchError(f"Failed to read file to update {hunk.path}: it is a directory")
        if kind == "missing" or data is None:
            raise PatchError(f"Failed to read file to update {hunk.path}: no such file "
                             "(use '*** Add File:' to create it)")
        if hunk.chunks:
            text = update_text(data.decode(_ENCODING, _ERRORS), hunk, hunk.path)
            new_data = text.encode(_ENCODING, _ERRORS)
        else:
            new_data = data  # a pure rename from a unified diff keeps the bytes as they are
        source_slot = self._slot(source)
        if hunk.move_to is None:
            source_slot.data = new_data
            self._record("M", hunk.path, "update")
            return
        dest = self._targets[hunk.move_to]
        if self._key(dest) == self._key(source):  # moving a file onto itself is an update
            source_slot.data = new_data
            self._record("M", hunk.move_to, "update")
            return
        self._check_writable(dest, hunk.move_to)
        dest_slot = self._slot(dest)
        dest_slot.data = new_data
        if source_slot.original_mode is not None:  # the moved file keeps its permissions
            dest_slot.mode = source_slot.original_mode
        source_slot.data = None
        self._record("M", hunk.move_to, "update")
        self.plan.changes.append({"path": hunk.path, "kind": "delete"})

    def _record(self, letter: str, display: str, kind: ChangeKind) -> None:
        self.plan.summary.append((letter, display))
        change = {"path": display, "kind": kind}
        if change not in self.plan.changes:
            self.plan.changes.append(change)


def plan_patch(hunks: list[Hunk], resolve: Callable[[str], Path]) -> Plan:
    """Validate and compute the whole patch; raises PatchError (or the resolver's ToolError)
    before anything is written."""
    planner = _Planner(resolve)
    planner.resolve_all(hunks)
    for hunk in hunks:
        if isinstance(hunk, AddFile):
            planner.add(hunk)
        elif isinstance(hunk, DeleteFile):
            planner.delete(hunk)
        else:
            planner.update(hunk)
    return planner.plan


# ---------------------------------------------------------------- commit


def commit(plan: Plan, guard: Callable[[Path], None] = lambda _path: None) -> None:
    """Delete, then write every changed file; on an OS error undo what was done and raise.
    `guard(path)` runs just before each delete and write (the sandbox's last look: it
    raises to stop the patch, and what was done is undone the same way).

    Deletes go first so a patch may replace a file by a directory of the same name.
    """
    undo: list[tuple[Callable[[], None], str]] = []
    slots = [s for s in plan.slots.values() if s.data != s.original or s.was_symlink_to]
    try:
        for slot in slots:
            if slot.data is None and (slot.original is not None or slot.was_symlink_to):
                _guarded(guard, slot.path)
                os.unlink(slot.path)
                undo.append((_restorer(slot), str(slot.path)))
        for slot in slots:
            if slot.data is not None:
                _guarded(guard, slot.path)
                for directory in _make_parents(slot.path.parent):
                    undo.append((lambda d=directory: os.rmdir(d), str(directory)))
                atomic_write(slot.path, slot.data, slot.mode)
                undo.append((_restorer(slot), str(slot.path)))
    except OSError as exc:
        problems = []
        for action, what in reversed(undo):
            try:
                action()
            except OSError:
                problems.append(what)
        message = f"Failed to apply the patch: {exc.filename or 'a file'}: {exc.strerror or exc}."
        if problems:
            message += " Rolling back also failed for: " + ", ".join(problems)
        else:
            message += " No file was changed."
        raise PatchError(message) from exc


def _guarded(guard: Callable[[Path], None], path: Path) -> None:
    """The guard's refusal as an OSError, so that commit undoes what it did before it."""
    try:
        guard(path)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - the guard's own error type (ToolError)
        raise OSError(None, str(exc), str(path)) from exc


def _restorer(slot: _Slot) -> Callable[[], None]:
    """An action putting back what `slot.path` was before the patch."""
    def restore() -> None:
        if slot.was_symlink_to is not None:
            if os.path.lexists(slot.path):
                os.unlink(slot.path)
            os.symlink(slot.was_symlink_to, slot.path)
        elif slot.original is None:
            os.unlink(slot.path)
        else:
            atomic_write(slot.path, slot.original, slot.original_mode)
    return restore


def _make_parents(directory: Path) -> list[Path]:
    """mkdir -p that reports which directories it created, outermost first."""
    missing: list[Path] = []
    while not os.path.isdir(directory):
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    created: list[Path] = []
    for d in reversed(missing):
        os.mkdir(d)
        created.append(d)
    return created

"""Putting files back: the changes from a turn's end state to its start, applied to disk.

Only the paths the turn changed are touched. Removals come first (deepest first, then the
directories they leave empty, unless the earlier state has files there), then each file
is written whole (fsutil.atomic_write: a reader never sees half a file) or its symlink
made, never through a symlink: a parent that is not a plain directory stops that path.
"""
from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from baseagent.checkpoints.manifest import Change, Entry, safe_path
from baseagent.fsutil import atomic_write

Contents = Callable[[str, Entry], bytes]


def apply(root: Path, plan: list[Change], contents: Contents) -> list[str]:
    """Make each path of `plan` what its `after` says (absent when None); `contents`
    gives an entry's bytes. Returns the problems (one line per path that could not be
    put back); the other paths are done."""
    problems: list[str] = []
    wanted = {c.path for c in plan if c.after is not None}
    kept_dirs = {p.rsplit("/", 1)[0] for p in wanted if "/" in p}
    removed: list[str] = []
    for change in sorted(plan, key=lambda c: c.path.count("/"), reverse=True):
        if not safe_path(change.path):
            problems.append(f"{change.path}: not a path inside the workspace")
            continue
        if change.after is None or change.before is not None and \
                (change.before.kind == "link") != (change.after.kind == "link"):
            try:
                _remove(root, change.path)
                removed.append(change.path)
            except OSError as exc:
                problems.append(f"{change.path}: could not remove it ({exc.strerror or exc})")
    _prune_dirs(root, removed, kept_dirs)
    umask = _umask()
    for change in sorted(plan, key=lambda c: c.path):
        if change.after is None or not safe_path(change.path):
            continue
        try:
            parent = _parent(root, change.path)
            target = parent / change.path.rsplit("/", 1)[-1]
            data = contents(change.path, change.after)
            if change.after.kind == "link":
                _symlink(os.fsdecode(data), target)
            else:
                atomic_write(target, data, _mode(target, change.after, umask))
        except (OSError, KeyError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            problems.append(f"{change.path}: could not write it ({reason})")
    return problems


def _remove(root: Path, path: str) -> None:
    target = root / path
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        os.rmdir(target)  # only when empty: a directory's files are changes of their own
    else:
        os.unlink(target)


def _prune_dirs(root: Path, removed: list[str], kept: set[str]) -> None:
    """Remove the directories the removals left empty, up to the root, except those the
    restored state has files in."""
    for path in removed:
        parts = path.split("/")[:-1]
        while parts:
            rel = "/".join(parts)
            if any(k == rel or k.startswith(rel + "/") for k in kept):
                break
            try:
                os.rmdir(root / rel)
            except OSError:
                break  # not empty (someone's files), or gone
            parts.pop()


def _parent(root: Path, path: str) -> Path:
    """The directory `path` goes in, made where missing; OSError when a component is not
    a plain directory (a symlink the turn left would lead the write elsewhere)."""
    current = root
    for part in path.split("/")[:-1]:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(0, f"{current.relative_to(root)} is not a directory")
    return current


def _symlink(target_text: str, path: Path) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        os.rmdir(path)
    temp = path.parent / f".{path.name[:64]}.{secrets.token_hex(4)}.tmp"
    os.symlink(target_text, temp)
    try:
        os.replace(temp, path)
    except OSError:
        os.unlink(temp)
        raise


def _mode(target: Path, entry: Entry, umask: int) -> int:
    """The file's permissions now, with the execute bits the entry says; a new file's as
    a checkout makes it."""
    try:
        st = os.lstat(target)
        base = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o666 & ~umask
    except FileNotFoundError:
        base = 0o666 & ~umask
    if entry.kind == "exec":
        return base | (0o111 & ~umask) | 0o100
    return base & ~0o111


def _umask() -> int:
    """This process's umask, read without changing it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022

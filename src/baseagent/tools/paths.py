"""Path resolution and sandbox checks shared by every file tool.

One place decides whether a path may be written, so write_file and apply_patch cannot drift
apart on what `workspace-write` and `read-only` mean.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from baseagent.tools.tool import ToolContext, ToolError


def writable_roots(ctx: ToolContext) -> list[Path]:
    """Where workspace-write may write: the workspace, its extra roots and the temp dirs
    (the same list the kernel enforces, sandbox/policy.py)."""
    return list(ctx.policy().writable)


def check_path(path: str) -> None:
    """Refuse what no system call can take, with the reason, before anything uses it."""
    if not path:
        raise ToolError("path must not be empty")
    if "\0" in path:
        raise ToolError(f"path {path!r} contains a NUL byte")


def resolve_read(ctx: ToolContext, path: str) -> Path:
    """Reads are allowed anywhere in every mode: the sandbox protects the disk, not secrets."""
    check_path(path)
    return ctx.resolve(path)


def resolve_write(ctx: ToolContext, path: str) -> Path:
    """Resolve a path the tool is about to create, change or delete, enforcing the sandbox."""
    check_path(path)
    target = ctx.resolve(path)
    if ctx.sandbox == "read-only":
        raise ToolError(f"sandbox is read-only: refusing to write {path}")
    if ctx.sandbox == "workspace-write" and not ctx.policy().allows_write(target):
        raise ToolError(
            f"sandbox is workspace-write: {path} resolves to {os.path.realpath(target)}, "
            f"outside the workspace {ctx.cwd} and its writable roots"
        )
    return target


def display_path(ctx: ToolContext, path: Path) -> str:
    """Workspace-relative when inside it (what the model wrote), absolute otherwise."""
    try:
        return str(path.relative_to(ctx.cwd))
    except ValueError:
        return str(path)


def event_path(ctx: ToolContext, path: str | Path) -> str:
    """The absolute path an event item shows for a changed file, as Codex's file_change
    items do: resolved against the workspace, `..` folded, symlinks left as named."""
    return os.path.normpath(ctx.resolve(str(path)))


def stat_regular(path: Path, on_directory: str) -> os.stat_result:
    """The stat of a regular file the model asked to read, or ToolError saying why not
    (`on_directory`: what to say when it is a directory). A FIFO or a device would block or
    never end, so only regular files pass."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolError(f"file not found: {path}") from None
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{path} is a directory{on_directory}")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{path} is not a regular file")
    return st

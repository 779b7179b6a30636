"""Path resolution and sandbox checks shared by every file tool.

One place decides whether a path may be written, so write_file and apply_patch cannot drift
apart on what `workspace-write` and `read-only` mean.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from baseagent.tools.base import ToolContext, ToolError


def _real(path: Path) -> Path:
    """Resolve symlinks (also of a not-yet-existing tail) so a link cannot smuggle a write out."""
    return Path(os.path.realpath(path))


def writable_roots(ctx: ToolContext) -> list[Path]:
    """Workspace, its extra roots and the system temp dir: where workspace-write may write."""
    roots = [ctx.cwd, *ctx.writable_roots, Path(tempfile.gettempdir())]
    return [_real(r) for r in roots]


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
    if ctx.sandbox == "workspace-write":
        real = _real(target)
        if not any(real == root or root in real.parents for root in writable_roots(ctx)):
            raise ToolError(
                f"sandbox is workspace-write: {path} resolves to {real}, outside the "
                f"workspace {ctx.cwd} and its writable roots"
            )
    return target


def display_path(ctx: ToolContext, path: Path) -> str:
    """Workspace-relative when inside it (what the model wrote), absolute otherwise."""
    try:
        return str(path.relative_to(ctx.cwd))
    except ValueError:
        return str(path)

"""Create or replace a whole file, atomically and inside the sandbox.

Atomic replacement (temp file in the same directory, fsync, rename) means a crash or a
concurrent reader never sees a half-written file, and a failed write leaves the old one intact.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from pydantic import BaseModel, Field

from baseagent.fsutil import atomic_write
from baseagent.sandbox.policy import confine
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolError, ToolResult
from baseagent.tools.diff import MAX_DIFF_INPUT_BYTES, render_diff, too_large
from baseagent.tools.paths import (confirm_writes, display_path, event_path, held_parent,
                                   resolve_write)

NAME = "write_file"
ITEM_TYPE = "file_change"
DESCRIPTION = (
    "Write `content` to a file, creating it (and missing parent directories) or replacing "
    "its whole content. Prefer apply_patch for small edits to existing files."
)


class Args(BaseModel):
    file_path: str = Field(
        ..., description="Path of the file, absolute or relative to the workspace."
    )
    content: str = Field(..., description="The complete new content of the file (UTF-8).")


# Mode of a brand-new file before the umask, the same as open(..., "w") would use.
NEW_FILE_MODE = 0o666


def planned_changes(args: Args, ctx: ToolContext) -> list[dict[str, str]]:
    """The file this call will create or overwrite (none if the path is refused)."""
    try:
        target = resolve_write(ctx, args.file_path)
        exists = os.path.lexists(target)
    except (ToolError, OSError, ValueError):
        return []  # run() reports why
    return [{"path": event_path(ctx, target), "kind": "update" if exists else "add"}]


def named_changes(args: Args, ctx: ToolContext) -> list[dict[str, str]]:
    """The file the call names, refused or not: what a failed item reports as its path."""
    if not args.file_path:
        return []
    try:
        target = ctx.resolve(args.file_path)
        exists = os.path.lexists(target)
    except (OSError, ValueError):
        return []
    return [{"path": event_path(ctx, target), "kind": "update" if exists else "add"}]


# read_file shows lines as `L{n}: text`; models copy those numbers into what they write.
_LINE_NUMBER = re.compile(r"^L(\d+): ?")


def without_line_numbers(content: str) -> str | None:
    """`content` without read_file's `L{n}: ` prefixes, when every line carries one and the
    numbers count up from 1 (then they are the display's, not the file's); else None."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        return None
    stripped = []
    for number, line in enumerate(lines, 1):
        match = _LINE_NUMBER.match(line)
        if match is None or int(match.group(1)) != number:
            return None
        stripped.append(line[match.end():])
    return "\n".join(stripped) + ("\n" if content.endswith("\n") else "")


def run(args: Args, ctx: ToolContext) -> ToolResult:
    target = resolve_write(ctx, args.file_path)
    # Write through a symlink to its target (resolve_write has checked where it points), so
    # replacing the file does not replace the link with a regular file.
    real = Path(os.path.realpath(target))
    if real != Path(os.path.normpath(target)):
        resolve_write(ctx, str(real))  # where it leads now, held below (held_parent)
    # Under `untrusted`, outside the workspace or into .git: the user's yes first.
    confirm_writes(ctx, NAME, [real])
    content, note = args.content, ""
    if (plain := without_line_numbers(content)) is not None:
        content = plain
        note = ("\nNote: every line began with read_file's line number (`L1: `, `L2: `, "
                "...); those numbers were left out of the file. Write the file's own text only.")
    # Lone surrogates (possible in JSON strings) cannot be UTF-8; they become "?".
    data = content.encode("utf-8", errors="replace")
    try:
        existing = _stat_or_none(real)
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise ToolError(f"{target} is a directory; refusing to write a file over it")
        mode = stat.S_IMODE(existing.st_mode) if existing else NEW_FILE_MODE & ~_umask()
        big = existing is not None and existing.st_size > MAX_DIFF_INPUT_BYTES
        old = real.read_bytes() if existing is not None and not big else None

        def write() -> None:
            with held_parent(real) as path:
                atomic_write(path, data, mode)

        # Under the kernel sandbox, into the directory that was checked, held open: a
        # symlink swapped in since resolve_write checked the path can carry the write
        # neither outside the writable roots nor into .git.
        confine(ctx.policy(), write)
    except OSError as exc:
        raise ToolError(f"cannot write {target}: {exc.strerror or exc}") from None
    shown = display_path(ctx, target)
    verb, kind = ("Overwrote", "update") if existing else ("Created", "add")
    if old is not None and old.rstrip() == data.rstrip():
        # A small model often writes back the file it was shown (the stub, unchanged) and
        # takes "Overwrote" for progress: say plainly that nothing changed.
        note += (f"\nNote: no change: this is the content {shown} already had"
                 + (" (apart from whitespace at its end)" if old != data else "")
                 + ". The code is the same as before; write the changed code.")
    return ToolResult(
        output=f"{verb} {shown} ({len(data)} bytes)" + note,
        item={"changes": [{"path": event_path(ctx, target), "kind": kind}],
              "diff": too_large(shown) if big else render_diff(shown, old, data)},
    )


def _stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _umask() -> int:
    """Current umask without the set-and-restore race of ``os.umask`` (Linux /proc first)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# The tool as the registry sees it (tools/tool.py).
TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=run,
                 item_type=ITEM_TYPE, planner=planned_changes, namer=named_changes)

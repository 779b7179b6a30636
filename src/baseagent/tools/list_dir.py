"""List a directory as an indented tree, bounded in depth and entry count.

The walk is depth-first in name order, which is also the output order, so it stops as soon as
the requested page is full: a huge tree costs no more than the entries actually shown (plus
sorting the directories on the way).
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, Field

from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolError, ToolResult
from baseagent.tools.paths import resolve_read

NAME = "list_dir"
ITEM_TYPE = "mcp_tool_call"
DESCRIPTION = (
    "List a directory as a tree: entries sorted by name, indented two spaces per level, "
    "`/` after directories, `@` after symbolic links. `depth` limits how deep it goes; "
    "`offset` (1-based) and `limit` page through long listings. `.git` is hidden and bulky "
    "directories such as node_modules or .venv are shown but not expanded unless "
    "`include_ignored` is true."
)


class Args(BaseModel):
    dir_path: str = Field(
        ..., description="Directory to list, absolute or relative to the workspace."
    )
    offset: int = Field(1, ge=1, description="1-based number of the first entry to return.")
    limit: int = Field(25, ge=1, description="Maximum number of entries to return.")
    depth: int = Field(2, ge=1, description="How many directory levels to descend (1 = only "
                       "the directory's own entries).")
    include_ignored: bool = Field(
        False, description="Also list .git and expand bulky directories (node_modules, ...)."
    )


# Never interesting to browse and usually huge.
HIDDEN_DIRS = frozenset({".git"})
# Shown (so the model knows they exist) but not expanded: generated or vendored content.
BULKY_DIRS = frozenset({
    "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".tox", ".nox", ".hg", ".svn",
})
INDENT = "  "
# Longest a listing may take: a directory with millions of entries or a hung network mount
# must not hold the run (the walk runs on a worker thread, so even a blocked system call
# is left behind, not waited for).
TIMEOUT_S = 30.0
POLL_SECONDS = 0.05


class _Stopped(Exception):
    """The caller gave up on the walk (timeout or interrupt)."""


def run(args: Args, ctx: ToolContext) -> ToolResult:
    """List on a worker thread; give up after TIMEOUT_S or when the run is interrupted."""
    outcome: list[ToolResult | BaseException] = []
    stop = threading.Event()

    def work() -> None:
        try:
            outcome.append(_list(args, ctx, stop))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            outcome.append(exc)

    worker = threading.Thread(target=work, name="list_dir", daemon=True)
    worker.start()
    deadline = time.monotonic() + TIMEOUT_S
    while worker.is_alive():
        worker.join(POLL_SECONDS)
        if worker.is_alive() and (time.monotonic() >= deadline or ctx.cancelled()):
            stop.set()
            if ctx.cancelled():
                raise ToolError("listing interrupted")
            raise ToolError(f"listing {args.dir_path} timed out after {TIMEOUT_S:g} seconds; "
                            "list a smaller directory or a lower depth")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _list(args: Args, ctx: ToolContext, stop: threading.Event) -> ToolResult:
    root = Path(os.path.abspath(resolve_read(ctx, args.dir_path)))
    if not root.exists():
        raise ToolError(f"directory not found: {root}")
    if not root.is_dir():
        raise ToolError(f"{root} is not a directory; use read_file to read a file")
    if not os.access(root, os.R_OK | os.X_OK):
        raise ToolError(f"permission denied: {root}")

    first = args.offset - 1
    wanted = first + args.limit  # entries needed, plus one more tells whether more remain
    shown: list[str] = []
    count = 0
    more = False
    for line in _walk(root, 0, args.depth, args.include_ignored):
        if stop.is_set():
            raise _Stopped()
        if count >= wanted:
            more = True
            break
        if count >= first:
            shown.append(line)
        count += 1
    if args.offset > 1 and count <= first:
        raise ToolError(
            f"offset {args.offset} is past the end of the listing: {root} has {count} "
            f"entries within depth {args.depth}"
        )
    lines = [f"Absolute path: {root}", *shown]
    if more:
        lines.append(f"More than {args.limit} entries found")
    return ToolResult(output="\n".join(lines))


def _walk(directory: Path, level: int, depth: int, include_ignored: bool) -> Iterator[str]:
    """Yield formatted entries depth-first; only the dirent type is used, nothing is stat'ed."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return  # unreadable subdirectory: listed by its parent, contents unknown
    for entry in entries:
        if entry.name in HIDDEN_DIRS and not include_ignored:
            continue
        is_dir = False
        try:
            if entry.is_symlink():
                suffix = "@"  # never followed: no loops, no escaping the tree
            elif entry.is_dir(follow_symlinks=False):
                suffix, is_dir = "/", True
            elif entry.is_file(follow_symlinks=False):
                suffix = ""
            else:
                suffix = "?"  # socket, FIFO, device
        except OSError:
            suffix = "?"
        yield f"{INDENT * level}{_printable(entry.name)}{suffix}"
        if is_dir and level + 1 < depth and (include_ignored or entry.name not in BULKY_DIRS):
            yield from _walk(Path(entry.path), level + 1, depth, include_ignored)


def _printable(name: str) -> str:
    """Undecodable file names (surrogate-escaped by os) shown lossily, valid for JSON."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# The tool as the registry sees it (tools/tool.py).
TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=run,
                 item_type=ITEM_TYPE)

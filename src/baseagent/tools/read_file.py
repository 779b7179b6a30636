"""Show a window of a text file with line numbers, streaming so file size does not matter.

Line numbers let the model cite and patch precisely; the window (offset/limit) and the
per-line cap keep one call from flooding the context with a log file or minified bundle.
"""
from __future__ import annotations

import os
import io
from collections.abc import Iterator

from pydantic import BaseModel, Field

from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolError, ToolResult
from baseagent.tools.paths import resolve_read, stat_regular
from baseagent.tools.view_image import image_type

NAME = "read_file"
ITEM_TYPE = "mcp_tool_call"
DESCRIPTION = (
    "Read a text file and return its lines numbered as `L{n}: text`. Use `offset` (1-based "
    "line number) and `limit` to page through large files. Lines longer than 500 bytes are "
    "cut. Binary files are refused; use `list_dir` for directories."
)


class Args(BaseModel):
    file_path: str = Field(
        ..., description="Path of the file, absolute or relative to the workspace."
    )
    offset: int = Field(1, ge=1, description="1-based line number to start reading from.")
    limit: int = Field(2000, ge=1, description="Maximum number of lines to return.")


# Per-line cap: long enough for any hand-written code line, short enough that a minified
# bundle or a data line cannot eat the context.
MAX_LINE_BYTES = 500
# How much of the file's start is checked for a NUL byte, like git's binary detection.
BINARY_SNIFF_BYTES = 8192
# Block size for skipping lines before the offset and over the rest of a long line.
BLOCK_BYTES = 1 << 20


def run(args: Args, ctx: ToolContext) -> ToolResult:
    path = resolve_read(ctx, args.file_path)
    st = stat_regular(path, ", not a file; use list_dir to see its contents")
    try:
        with open(path, "rb") as fh:
            return ToolResult(output=_read_window(fh, path, st.st_size, args.offset, args.limit))
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None


def _read_window(fh: io.BufferedReader, path: object, size: int, offset: int, limit: int) -> str:
    sniff = fh.read(BINARY_SNIFF_BYTES)
    mime = image_type(sniff)
    if mime is not None:
        raise ToolError(
            f"{path} is an image ({mime}, {size} bytes); read_file only shows text. Use "
            "view_image to see it (where this run offers it), or a shell command such as "
            "`file` for its size and format."
        )
    if b"\0" in sniff:
        raise ToolError(
            f"{path} is a binary file ({size} bytes); read_file only shows text. "
            "Inspect it with a shell command (e.g. `file`, `xxd | head`) instead."
        )
    if not sniff:  # st_size is not trusted: /proc files report 0 yet have content
        if offset == 1:
            return "(the file is empty)"
        raise ToolError(f"offset {offset} is past the end of {path}: the file is empty")
    fh.seek(0)
    skipped = _skip_lines(fh, offset - 1)
    if skipped < offset - 1 or (offset > 1 and not fh.peek(1)):
        raise ToolError(
            f"offset {offset} is past the end of {path}: the file has {skipped} lines"
        )
    lines: list[str] = []
    for number, raw in enumerate(_iter_line_prefixes(fh), start=offset):
        if len(lines) >= limit:
            break
        lines.append(f"L{number}: {_render_line(raw)}")
    return "\n".join(lines)


def _skip_lines(fh: io.BufferedReader, count: int) -> int:
    """Advance past ``count`` lines by counting newlines in blocks; return lines skipped.

    A file whose last line has no trailing newline still counts that line.
    """
    if count <= 0:
        return 0
    seen = 0
    pending = False  # bytes after the last newline read so far (an unterminated line)
    while True:
        block = fh.read(BLOCK_BYTES)
        if not block:
            return seen + (1 if pending else 0)
        newlines = block.count(b"\n")
        if seen + newlines >= count:
            # The target line starts inside this block: find its start and seek there.
            pos = -1
            for _ in range(count - seen):
                pos = block.index(b"\n", pos + 1)
            fh.seek(pos + 1 - len(block), os.SEEK_CUR)
            return count
        seen += newlines
        pending = not block.endswith(b"\n")


def _iter_line_prefixes(fh: io.BufferedReader) -> Iterator[bytes]:
    """Yield each line (without its ending) up to a little over the cap, skipping the rest.

    ``readline`` with a size bound means a single 50 MB line is never held in memory.
    """
    cap = MAX_LINE_BYTES + 4  # room to find a UTF-8 boundary at the cap
    while True:
        line = fh.readline(cap)
        if not line:
            return
        if not line.endswith(b"\n"):
            rest = fh.readline(BLOCK_BYTES)
            while rest and not rest.endswith(b"\n"):
                rest = fh.readline(BLOCK_BYTES)
        yield line.rstrip(b"\n").removesuffix(b"\r")


def _render_line(raw: bytes) -> str:
    if len(raw) > MAX_LINE_BYTES:
        cut = MAX_LINE_BYTES
        # Back up over continuation bytes so a multi-byte character is not split.
        while cut > 0 and raw[cut] & 0xC0 == 0x80:
            cut -= 1
        raw = raw[:cut]
    return raw.decode("utf-8", errors="replace")


# The tool as the registry sees it (tools/tool.py).
TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=run,
                 item_type=ITEM_TYPE)

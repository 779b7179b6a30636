"""Show the model a local image (Codex's `view_image`): a screenshot, a diagram, a plot.

A tool message carries text only on most wires (OpenAI's chat completions refuse an image
in one), so the tool hands the image back beside its text (`ToolResult.attachments`) and the
loop adds it to the conversation as a user message right after the step's tool messages,
where every provider takes it: the model sees it on its next call, and in every call after
(it is part of the history, and of the session record).

What the repository holds is untrusted: the file must be a regular file whose bytes are a
PNG, JPEG, GIF or WebP image (the type is read from the bytes, never from the name: a
mislabelled file in the history would make every later request of the thread fail), no
larger than MAX_IMAGE_BYTES. Reads follow read_file's rule (tools/paths.py resolve_read).

A model that cannot see images gets a clear refusal instead (`vision=False`, decided by
compose/ from litellm's model map); a model the map does not know is given the
image (llm/model_map.py `supports_vision`).
"""
from __future__ import annotations

import base64
from typing import Any

from pydantic import BaseModel, Field

from baseagent.tools.paths import display_path, resolve_read, stat_regular
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolError, ToolResult

NAME = "view_image"
ITEM_TYPE = "mcp_tool_call"
DESCRIPTION = (
    "Attach a local image (png, jpeg, gif or webp) to the conversation so you can see it: "
    "a screenshot, a diagram, a rendered plot. You see it in the next message. Use it for "
    "image files instead of read_file."
)
# The largest image attached: its base64 (4/3 larger) stays within the 5 MB Anthropic
# allows per image, and it is resent with every later request of the thread.
MAX_IMAGE_BYTES = 5 * 1024 * 1024 * 3 // 4
# File names read_file points to this tool for (by extension: read_file never opens them
# as images, it only says where to look).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


class Args(BaseModel):
    path: str = Field(..., description="Path of the image file, absolute or relative to the "
                                       "workspace.")


def image_type(data: bytes) -> str | None:
    """The MIME type the bytes are (their signature), or None when they are none of the
    four types providers take."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_url_part(mime: str, data: bytes) -> dict[str, Any]:
    """An OpenAI `image_url` content part with the image as a data URL (as --image sends
    it: core/turn_input.py)."""
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def read_image(ctx: ToolContext, path_text: str) -> tuple[str, str, bytes]:
    """(the path as shown, its MIME type, its bytes), or ToolError saying why not."""
    path = resolve_read(ctx, path_text)
    st = stat_regular(path, "; use list_dir to find the image")
    if st.st_size > MAX_IMAGE_BYTES:
        raise ToolError(f"{path} is {st.st_size} bytes, over the {MAX_IMAGE_BYTES} bytes an "
                        f"image may have; make a smaller copy (e.g. scaled down) and view that")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_IMAGE_BYTES + 1)  # the file may have grown since stat
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolError(f"{path} is over the {MAX_IMAGE_BYTES} bytes an image may have")
    mime = image_type(data)
    if mime is None:
        raise ToolError(f"{path} is not a png, jpeg, gif or webp image (by its content); "
                        "view_image shows only those")
    return display_path(ctx, path), mime, data


def run(args: Args, ctx: ToolContext) -> ToolResult:
    shown, mime, data = read_image(ctx, args.path)
    return ToolResult(
        output=f"Attached {shown} ({mime}, {len(data)} bytes): you see it in the next "
               "message.",
        attachments=[{"type": "text", "text": f"{NAME} {shown}:"}, image_url_part(mime, data)])


def refuse(args: Args, ctx: ToolContext) -> ToolResult:
    """The tool for a model that cannot see images: nothing is read or attached."""
    raise ToolError(f"cannot show {args.path}: the model of this run does not take images "
                    "(litellm's model map says it has no vision); describe the image with "
                    "other tools (e.g. `file`, image metadata) instead")


# The tool as the registry sees it (tools/tool.py), and the same for a model without vision.
TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=run,
                 item_type=ITEM_TYPE)
REFUSING_TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=refuse,
                          item_type=ITEM_TYPE)

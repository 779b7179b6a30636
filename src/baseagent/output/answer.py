"""The final answer drawn as Markdown (rich), the way a person reads it on a terminal.

Models write their answers in Markdown; printed raw, a reader sees `**bold**` and code
fences. rich's renderer is used with two changes for a terminal transcript:
- a single newline is a line break (`softbreak` becomes `hardbreak`): models break lines
  on purpose (a list of files, a short report) and CommonMark would join them into one
  paragraph;
- links show their address (no OSC 8 hyperlinks, which many terminals and tmux drop),
  and the spaces rich pads each line with up to the full width are stripped, so a copied
  answer has no trailing blanks (a code block's background keeps its width).
With no colour (NO_COLOR, TERM=dumb) the layout stays: lists, indented code, headings.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment, Segments


def markdown(text: str) -> Markdown:
    """`text` as rich Markdown, with a single newline kept as a line break."""
    md = Markdown(text, hyperlinks=False)
    _hard_breaks(md.parsed)
    return md


def print_markdown(console: Console, text: str) -> None:
    """Print `text` rendered as Markdown, each line without its trailing padding."""
    keep_backgrounds = console.color_system is not None
    for line in console.render_lines(markdown(text), console.options, pad=False):
        console.print(Segments([*_rstrip(line, keep_backgrounds), Segment.line()]))


def _hard_breaks(tokens: Iterable[Any]) -> None:
    for token in tokens:
        if token.type == "softbreak":
            token.type = "hardbreak"
        if token.children:
            _hard_breaks(token.children)


def _rstrip(line: list[Segment], keep_backgrounds: bool) -> list[Segment]:
    """The line without trailing blanks that show nothing (no background colour drawn)."""
    line = list(line)
    while line:
        last = line[-1]
        if last.control or (keep_backgrounds and last.style is not None
                            and last.style.bgcolor is not None):
            break
        text = last.text.rstrip(" ")
        if text:
            line[-1] = Segment(text, last.style)
            break
        line.pop()
    return line

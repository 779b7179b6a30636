"""What the terminal a person watches can do: decided once, at the entry point.

The entry points (runner.py, interactive/repl.py) read the environment and whether the
stream is a terminal, and hand the renderer (output/pretty.py) and the header
(output/header.py) a `TerminalCaps`; nothing below them reads NO_COLOR or TERM. Standard
library only: the header uses it before anything heavy is imported.

- `live`: the cursor may move (a spinner, output redrawn in place). Only on a terminal that
  is not `TERM=dumb`: a dumb terminal and a pipe get plain lines, printed once.
- `colors`: the colour system (rich's names), None for no colour at all (`NO_COLOR` set to
  anything non-empty, https://no-color.org; `TERM=dumb`; not a terminal).
- `width` / `height`: `COLUMNS` / `LINES` when set (None: ask the terminal, at each draw,
  so a resized window is followed).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# TERM values that mean "no escape codes" (what rich and most programs take as dumb).
DUMB_TERMS = frozenset({"dumb", "unknown"})


@dataclass(frozen=True)
class TerminalCaps:
    """What the renderer may do on its stream (see the module docstring)."""

    live: bool = False
    colors: str | None = None
    width: int | None = None
    height: int | None = None

    @property
    def color(self) -> bool:
        return self.colors is not None


def terminal_caps(env: Mapping[str, str], is_tty: bool) -> TerminalCaps:
    """The capabilities of a stream that `is_tty` or not, under the environment `env`."""
    term = env.get("TERM", "")
    live = is_tty and term.lower() not in DUMB_TERMS
    colors: str | None = None
    if live and not env.get("NO_COLOR"):
        if env.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
            colors = "truecolor"
        elif "256" in term:
            colors = "256"
        else:
            colors = "standard"
    return TerminalCaps(live=live, colors=colors, width=_size(env.get("COLUMNS")),
                        height=_size(env.get("LINES")))


def _size(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else None

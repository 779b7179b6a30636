"""The parts of the terminal that move: the spinner, the frame each redraw is written in,
and the rows of the live block (output/pretty.py) that sits under the scrollback.

On a terminal whose cursor can move (output/term.py `live`), what is still changing is
drawn at the bottom of the screen, one screen row per line, and redrawn in place: the
unfinished line of streamed reasoning, the answer as it streams, the last lines of a
running command, a retry notice counting up, the plan, and under all of it the spinner on
a row of its own. So the spinner never writes over text, and nothing is erased but the
block itself. Every row fits the width (one row each, never wrapped by the terminal), so
the block can always be lifted by moving the cursor up as many rows as were drawn; the
block never grows past the screen's height for the same reason.
"""
from __future__ import annotations

import re
import threading
from typing import Callable, TextIO

from rich.cells import cell_len

# Spinner: frames and redraw interval.
FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPIN_INTERVAL_S = 0.1
# Terminal control: back to column 0 and clear the line; one line up and clear it.
CLEAR_LINE = "\r\x1b[2K"
UP_AND_CLEAR = "\x1b[1A\x1b[2K"
# A notice that counts (`Reconnecting... 3/5 after ...`): the text before the count says
# which notices are the same one counting up.
_COUNTED = re.compile(r"\b(\d+)/(\d+)\b")


class Frame:
    """The file the renderer's console writes to: text is collected and written to the
    stream in one piece (`commit`), so a redraw (lift the block, print, draw it again)
    reaches the terminal at once and does not flicker. rich flushes after each print;
    that flush does nothing here."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.encoding = stream.encoding or "utf-8"  # a StringIO has None
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        self._parts.append(text)
        return len(text)

    def flush(self) -> None:
        """rich's flush after each print: the frame is written by `commit`."""

    def isatty(self) -> bool:
        return False  # what the console may do is decided by TerminalCaps, not asked here

    def commit(self) -> None:
        """Write what was collected to the stream and flush it."""
        if self._parts:
            text, self._parts = "".join(self._parts), []
            self.stream.write(text)
        self.stream.flush()


class Spinner:
    """A status line with the elapsed time, redrawn every SPIN_INTERVAL_S on a daemon
    thread (`tick`, which the renderer runs under its lock) while `label` is set."""

    def __init__(self, write: Callable[[str], None], tick: Callable[[], None],
                 clock: Callable[[], float], color: bool) -> None:
        self._write = write
        self._tick = tick
        self._clock = clock
        self._color = color
        self.label: str | None = None
        self.since = 0.0
        self.shown = False
        self._frame = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def set(self, label: str | None, restart: bool = True) -> None:
        """Show `label` (None hides it; call with the renderer's lock held). `restart`
        resets the elapsed time."""
        if label is not None and (restart or self.label is None):
            self.since = self._clock()
        self.label = label
        if label is None:
            self.clear()
        elif self._thread is None:
            self._thread = threading.Thread(target=self._spin, name="baseagent-spinner",
                                            daemon=True)
            self._thread.start()

    def clear(self) -> None:
        """Erase the status line (with the lock held, before anything else is drawn)."""
        if self.shown:
            self._write(CLEAR_LINE)
            self.shown = False

    def draw(self, width: int) -> None:
        """Draw the status line in `width` columns at most (with the lock held)."""
        if self.label is None:
            return
        elapsed = self._clock() - self.since
        frame = FRAMES[self._frame % len(FRAMES)]
        self._frame += 1
        hint = f"{elapsed:.1f}s · Ctrl-C to cancel"
        plain = f"{frame} {self.label} {hint}"
        if cell_len(plain) > width:
            line = fit(plain, width)
        elif self._color:
            line = f"\x1b[36m{frame}\x1b[0m {self.label} \x1b[2m{hint}\x1b[0m"
        else:
            line = plain
        self._write(CLEAR_LINE + line)
        self.shown = True

    def _spin(self) -> None:
        while not self._stop.wait(SPIN_INTERVAL_S):
            try:
                self._tick()
            except (OSError, ValueError):
                return

    def stop(self) -> None:
        """No more redraws (the caller clears the line under its lock)."""
        self._stop.set()
        self.label = None


def fit(text: str, width: int) -> str:
    """`text` cut to `width` cells, with an ellipsis when something was cut."""
    if cell_len(text) <= width:
        return text
    out = ""
    for char in text:
        if cell_len(out + char) > width - 1:
            break
        out += char
    return out + "…"


def full_rows(text: str, width: int) -> tuple[list[str], str]:
    """Word-wrap one line of text that is still growing: the rows already full (they stay
    as they are whatever comes next) and the last row, still open. A word longer than the
    row is cut at the width."""
    rows: list[str] = []
    while cell_len(text) > width:
        cut = _fitting(text, width)
        space = text.rfind(" ", 0, cut + 1)
        if space > 0:
            cut = space
        rows.append(text[:cut].rstrip(" "))
        text = text[cut:].lstrip(" ")
    return rows, text


def wrap(text: str, width: int) -> list[str]:
    """All of `text` as rows of `width` cells at most, broken between words."""
    rows: list[str] = []
    for line in text.expandtabs(4).split("\n"):
        full, last = full_rows(line, width)
        rows.extend(full)
        rows.append(last)
    return rows


def tail_lines(output: str, count: int) -> list[str]:
    """The last `count` lines of a command's output (tabs expanded)."""
    lines = output.rstrip("\n").expandtabs(4).split("\n")
    return lines[-count:] if output.strip() else []


def counted(message: str) -> str | None:
    """The identity of a notice that counts (`Reconnecting... 3/5 ...` -> `Reconnecting... `):
    the same notice counting up replaces itself on a terminal. None for other notices."""
    match = _COUNTED.search(message)
    return message[:match.start()] if match else None


def _fitting(text: str, width: int) -> int:
    """How many characters of `text` fit in `width` cells (at least one)."""
    used = 0
    for index, char in enumerate(text):
        used += cell_len(char)
        if used > width:
            return max(1, index)
    return len(text)

"""The terminal's echo, switched for a while: hidden while a turn runs (typeahead is not
printed into the output: interactive/repl.py), shown while an approval answer is read
(interactive/approver.py)."""
from __future__ import annotations

from typing import Callable, TextIO


def echo(stream: TextIO, *, shown: bool) -> Callable[[], None]:
    """Show (with line editing) or hide what is typed on `stream`'s terminal; returns the
    function that puts the terminal back as it was (a no-op where there is no terminal)."""
    try:
        import termios

        fd = stream.fileno()
        saved = termios.tcgetattr(fd)
        mode = termios.tcgetattr(fd)
        if shown:
            mode[3] |= termios.ECHO | termios.ICANON
        else:
            mode[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except (ImportError, OSError, ValueError, AttributeError):
        return lambda: None

    def restore() -> None:
        try:
            termios.tcsetattr(fd, termios.TCSANOW, saved)
        except (OSError, ValueError):
            pass
    return restore

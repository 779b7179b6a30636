"""The terminal header: what a session works with, drawn the moment the command starts.

Plain ANSI and no imports beyond the standard library: it is printed before the rest of
the agent (pydantic event models, rich, litellm) is even imported, so a person sees within
a fraction of a second which thread, model, workspace and sandbox the run will use.
Colour only when the entry point says the terminal takes it (`color`: output/term.py, from
NO_COLOR, TERM and whether it is a terminal at all). A line wider than the terminal breaks
between its fields (`width`), never inside a word, a path or the thread id where they fit.
"""
from __future__ import annotations

import re
from typing import Sequence, TextIO

from baseagent.textsafe import inert_line

BOLD, DIM, CYAN, YELLOW, RESET = "\x1b[1m", "\x1b[2m", "\x1b[36m", "\x1b[33m", "\x1b[0m"
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def header_lines(*, version: str, thread_id: str, model: str, cwd: str, sandbox: str,
                 api_base: str | None = None, resumed_turns: int | None = None,
                 notes: Sequence[str] = (), color: bool = True,
                 width: int | None = None) -> list[str]:
    """The header as lines (no trailing newlines), ANSI-coloured when `color`, each line
    broken between its fields to fit `width` columns (None: never broken). What the run
    was given (model, address, workspace path, notes) is drawn inert (textsafe.py): a
    directory name holding an escape shows it, never acts on the terminal."""
    thread_id, model, cwd = inert_line(thread_id), inert_line(model), inert_line(cwd)
    api_base = inert_line(api_base) if api_base else api_base
    notes = [inert_line(note) for note in notes]
    if resumed_turns is None:
        state = "new thread"
    else:
        state = f"resumed thread, {resumed_turns} earlier turn{'s' * (resumed_turns != 1)}"
    who = [f"{BOLD}baseagent{RESET} {DIM}{version}{RESET}",
           f"{DIM}thread{RESET} {CYAN}{thread_id}{RESET} {DIM}({state}){RESET}"]
    where = [f"{DIM}model{RESET} {BOLD}{model}{RESET}"]
    if api_base:
        where.append(f"{DIM}api{RESET} {api_base}")
    where += [f"{DIM}workspace{RESET} {cwd}", f"{DIM}sandbox{RESET} {sandbox}"]
    lines = _fit(who, width) + _fit(where, width)
    lines.extend(f"{YELLOW}! {note}{RESET}" for note in notes)
    return lines if color else [_SGR.sub("", line) for line in lines]


def _fit(fields: list[str], width: int | None) -> list[str]:
    """Fields joined by two spaces, a new line where the next would pass `width`."""
    lines = [fields[0]]
    for field in fields[1:]:
        joined = f"{lines[-1]}  {field}"
        if width is not None and len(_SGR.sub("", joined)) > width:
            lines.append(field)
        else:
            lines[-1] = joined
    return lines


def print_header(stream: TextIO, **fields: object) -> None:
    """Write the header and flush (a terminal that went away is not an error here)."""
    try:
        stream.write("".join(line + "\n" for line in header_lines(**fields)))  # type: ignore[arg-type]
        stream.flush()
    except (OSError, ValueError):
        pass

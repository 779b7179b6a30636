"""The person at the terminal answers approval questions (tools/approval.py).

The terminal renderer (output/pretty.py) has drawn the question (the command, why it waits,
the choices) when the approver is called; this reads the answer line: `y` runs it once, `p`
allows its prefix for the rest of the session (offered, `[y/p/n]`, only when the question
has a prefix; else `[y/n]`), `n` declines, and `n NOTE` (or `n: NOTE`) declines with a note
the model reads. Anything else is answered with what is accepted, and asked again; end of
input declines.

The interactive session hides typed characters while a turn runs (so typeahead is not
echoed into the output); while an answer is read they are shown again.
"""
from __future__ import annotations

import re
import sys
from typing import Callable, TextIO

from baseagent.tools.approval import ApprovalAnswer, ApprovalRequest

PROMPT = "  answer [y/p/n]: "
PROMPT_NO_PREFIX = "  answer [y/n]: "
# After this many answers that are none of the choices, the command is declined.
MAX_UNCLEAR = 3
_DENY = re.compile(r"^(?:n|no|d|deny|decline)\b[:\s]*(?P<note>.*)$", re.IGNORECASE | re.DOTALL)


class TerminalApprover:
    """Reads answers from the terminal; `read_line(prompt)` returns one line (raises
    EOFError at end of input)."""

    def __init__(self, read_line: Callable[[str], str] | None = None,
                 write: Callable[[str], None] | None = None) -> None:
        self._read_line = read_line or read_with_echo
        self._write = write or _say

    def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        has_prefix = bool(request.prefix)
        for attempt in range(MAX_UNCLEAR):
            try:
                line = self._read_line(PROMPT if has_prefix else PROMPT_NO_PREFIX)
            except (EOFError, KeyboardInterrupt):
                return ApprovalAnswer("denied", "the user gave no answer")
            answer = parse_answer(line, has_prefix)
            if answer is not None:
                return answer
            if attempt + 1 < MAX_UNCLEAR:
                self._write(accepted(line, has_prefix))
        self._write("  no clear answer: declined")
        return ApprovalAnswer("denied", "the user gave no clear answer")


def parse_answer(line: str, has_prefix: bool) -> ApprovalAnswer | None:
    """An answer line as a decision (None: not one of the choices; `p` is one only when a
    prefix is offered)."""
    text = line.strip()
    word = text.lower()
    if word in ("y", "yes", "a", "allow", "approve"):
        return ApprovalAnswer("approved")
    if word in ("p", "prefix", "s", "session", "always"):
        return ApprovalAnswer("approved_for_session") if has_prefix else None
    match = _DENY.match(text)
    if match is not None:
        return ApprovalAnswer("denied", match.group("note").strip())
    return None


def accepted(line: str, has_prefix: bool) -> str:
    """What the approver says to an answer that is none of the choices."""
    from baseagent.textsafe import inert_line

    said = line.strip()
    what = f"{inert_line(said[:40])!r} is not an answer" if said else "no answer given"
    prefix = "p (this command's prefix, for the session), " if has_prefix else ""
    return f"  {what}: type y (run it once), {prefix}n (decline) or n NOTE (decline, " \
           "telling the model why)"


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def read_with_echo(prompt: str, stream_in: TextIO | None = None,
                   stream_out: TextIO | None = None) -> str:
    """input() with the terminal's echo on while it reads (and as it was after)."""
    stream_in = stream_in or sys.stdin
    stream_out = stream_out or sys.stdout
    restore = _echo_on(stream_in)
    try:
        stream_out.write(prompt)
        stream_out.flush()
        line = stream_in.readline()
    finally:
        restore()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def _echo_on(stream: TextIO) -> Callable[[], None]:
    """Typed characters shown, line by line, while the answer is read."""
    from baseagent.interactive.terminal_mode import echo

    return echo(stream, shown=True)

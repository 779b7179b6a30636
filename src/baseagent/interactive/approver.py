"""The person at the terminal answers approval questions (tools/approval.py).

The terminal renderer (output/pretty.py) has drawn the question (the command, why it waits,
the choices) when the approver is called; this reads the answer line: `y` runs it once, `p`
allows its prefix for the rest of the session, `n` declines, and `n NOTE` (or `n: NOTE`)
declines with a note the model reads. Anything else asks again; end of input declines.

The interactive session hides typed characters while a turn runs (so typeahead is not
echoed into the output); while an answer is read they are shown again.
"""
from __future__ import annotations

import re
import sys
from typing import Callable, TextIO

from baseagent.tools.approval import ApprovalAnswer, ApprovalRequest

PROMPT = "  answer [y/p/n]: "
# After this many answers that are none of the choices, the command is declined.
MAX_UNCLEAR = 3
_DENY = re.compile(r"^(?:n|no|d|deny|decline)\b[:\s]*(?P<note>.*)$", re.IGNORECASE | re.DOTALL)


class TerminalApprover:
    """Reads answers from the terminal; `read_line(prompt)` returns one line (raises
    EOFError at end of input)."""

    def __init__(self, read_line: Callable[[str], str] | None = None) -> None:
        self._read_line = read_line or read_with_echo

    def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        for _ in range(MAX_UNCLEAR):
            try:
                line = self._read_line(PROMPT)
            except (EOFError, KeyboardInterrupt):
                return ApprovalAnswer("denied", "the user gave no answer")
            answer = parse_answer(line, bool(request.prefix))
            if answer is not None:
                return answer
        return ApprovalAnswer("denied", "the user gave no clear answer")


def parse_answer(line: str, has_prefix: bool) -> ApprovalAnswer | None:
    """An answer line as a decision (None: not one of the choices)."""
    text = line.strip()
    word = text.lower()
    if word in ("y", "yes", "a", "allow", "approve"):
        return ApprovalAnswer("approved")
    if word in ("p", "prefix", "s", "session", "always"):
        return ApprovalAnswer("approved_for_session" if has_prefix else "approved")
    match = _DENY.match(text)
    if match is not None:
        return ApprovalAnswer("denied", match.group("note").strip())
    return None


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

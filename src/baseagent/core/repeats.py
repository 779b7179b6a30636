"""Calls a model repeats unchanged, expecting a different result.

At temperature 0 a model that sends the same call twice will often send it a third and a
thirtieth time (the same patch refused again and again, the same file written with the
same content, the same failing test run with nothing changed), until --max-iterations. The
second identical call with the identical result gets that result restated with a different
way forward; a third is not run at all (its result says why, and a notice shows it); a
model that still insists ends the turn. A command that succeeded is only ever noted, never
refused: it may act each time it runs. A change to the files clears the memory: after the
code changed, the same command (a test run) may well give a different answer.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

# After this many identical results the call is refused without running.
REFUSE_AFTER = 2
# Refused calls the model may still send in one turn before the turn ends.
MAX_REFUSED = 3
# Tools whose successful calls may act each time they run (a command that polls, appends,
# counts): the same output does not prove a repeat did nothing, so those are only noted.
SIDE_EFFECTS = frozenset({"shell"})

# A different way forward, by tool: what to do instead of sending the call again.
_FAILED = {
    "apply_patch": ("Do not send this patch again. Read the file (read_file) to see its "
                    "exact current lines, then either send a corrected patch or, simpler, "
                    "write the whole new file with write_file."),
    "write_file": "Check the path and the arguments against the error before trying again.",
    "shell": ("Running the same command again gives the same result. Change something first "
              "(fix the code the error points at), or run a different command."),
    "read_file": "Check the path (list_dir or `ls` shows what exists) instead of reading it again.",
}
_SUCCEEDED = {
    "write_file": ("The file already holds exactly this content: writing it again changes "
                   "nothing. Run the tests or the program to check it, or change the code."),
    "shell": "Nothing changed since, so the result is the same: change the code, or move on.",
    "read_file": "The file has not changed since you read it: use what you read.",
}
_DEFAULT = "Change the arguments, or use another tool, instead of repeating it."
_WALL_TIME = re.compile(r"^Wall time: [\d.]+ seconds$", re.MULTILINE)
# A tool's own notes on a result (write_file's "Note: no change: ...") are commentary, not
# the result: a repeat is judged without them.
_NOTE = re.compile(r"^Note: .*$", re.MULTILINE)


@dataclass
class _Seen:
    output: str
    success: bool
    count: int = 1


class RepeatedCalls:
    """The turn's calls since the files last changed, by tool and arguments."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], _Seen] = {}
        self.refused = 0

    @staticmethod
    def _key(name: str, arguments: str) -> tuple[str, str]:
        try:
            canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True)
        except (ValueError, RecursionError):  # not JSON, or nested past what json reads
            canonical = arguments
        return name, canonical

    def refusal(self, name: str, arguments: str) -> str | None:
        """The result text for a call that must not run again (it gave the same result
        REFUSE_AFTER times), or None to run it."""
        seen = self._seen.get(self._key(name, arguments))
        if seen is None or seen.count < REFUSE_AFTER:
            return None
        if name in SIDE_EFFECTS and seen.success:
            return None  # it may do something each time (poll, append, count): only noted
        self.refused += 1
        first = seen.output.strip().splitlines()[0] if seen.output.strip() else ""
        how = "failed" if not seen.success else "ran"
        return (f"Error: not run: this exact {name} call already {how} {seen.count} times "
                f"with the same result ({first[:200]}). {_way_forward(name, seen.success)}")

    def exhausted(self) -> bool:
        """The model keeps sending refused calls: the turn should end."""
        return self.refused >= MAX_REFUSED

    def after(self, name: str, arguments: str, success: bool, output: str) -> str | None:
        """Record a finished call; returns a note to add to its result when the same call
        gave the same result before."""
        key = self._key(name, arguments)
        output = _NOTE.sub("", _WALL_TIME.sub("", output)).strip()
        seen = self._seen.get(key)
        if seen is None or seen.output != output or seen.success != success:
            self._seen[key] = _Seen(output, success)
            return None
        seen.count += 1
        what = "already failed" if not success else "was already made"
        return (f"\n\nNote: this exact call {what} with the same result; sending it again "
                f"will not change that. {_way_forward(name, success)}")

    def forget(self) -> None:
        """Files changed: earlier results may not repeat."""
        self._seen.clear()


def _way_forward(name: str, success: bool) -> str:
    return (_SUCCEEDED if success else _FAILED).get(name, _DEFAULT)

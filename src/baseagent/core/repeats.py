"""Calls a model repeats after they failed, unchanged, expecting a different result.

At temperature 0 a model that sends the same failing call twice will often send it a third
and a thirtieth time, each refused the same way, until --max-iterations. The second
identical failure gets the error restated with a different way forward; a third identical
call is not run at all (its result says why, and a notice shows it); a model that still
insists ends the turn. Any successful edit clears the memory: after the code changed, the
same command (a test run) may well give a different answer.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

# After this many identical failures the call is refused without running.
REFUSE_AFTER = 2
# Refused calls the model may still send in one turn before the turn ends.
MAX_REFUSED = 3

# A different way forward, by tool: what to do instead of sending the call again.
_ALTERNATIVES = {
    "apply_patch": ("Do not send this patch again. Read the file (read_file) to see its "
                    "exact current lines, then either send a corrected patch or, simpler, "
                    "write the whole new file with write_file."),
    "write_file": "Check the path and the arguments against the error before trying again.",
    "shell": ("Running the same command again gives the same result. Change something first "
              "(fix the code the error points at), or run a different command."),
    "read_file": "Check the path (list_dir shows what exists) instead of reading it again.",
}
_DEFAULT_ALTERNATIVE = "Change the arguments, or use another tool, instead of repeating it."
_WALL_TIME = re.compile(r"^Wall time: [\d.]+ seconds$", re.MULTILINE)


@dataclass
class _Failure:
    output: str
    count: int = 1


class RepeatedFailures:
    """The turn's failed calls, by tool and arguments."""

    def __init__(self) -> None:
        self._failures: dict[tuple[str, str], _Failure] = {}
        self.refused = 0

    @staticmethod
    def _key(name: str, arguments: str) -> tuple[str, str]:
        try:
            canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True)
        except ValueError:
            canonical = arguments
        return name, canonical

    def refusal(self, name: str, arguments: str) -> str | None:
        """The result text for a call that must not run again (it failed identically
        REFUSE_AFTER times), or None to run it."""
        failure = self._failures.get(self._key(name, arguments))
        if failure is None or failure.count < REFUSE_AFTER:
            return None
        self.refused += 1
        first = failure.output.strip().splitlines()[0] if failure.output.strip() else ""
        return (f"Error: not run: this exact {name} call already failed {failure.count} times "
                f"with the same result ({first[:200]}). "
                f"{_ALTERNATIVES.get(name, _DEFAULT_ALTERNATIVE)}")

    def exhausted(self) -> bool:
        """The model keeps sending refused calls: the turn should end."""
        return self.refused >= MAX_REFUSED

    def after(self, name: str, arguments: str, success: bool, output: str) -> str | None:
        """Record a finished call; returns a note to add to its result when it failed
        exactly as the same call did before."""
        key = self._key(name, arguments)
        output = _comparable(output)
        if success:
            self._failures.pop(key, None)
            return None
        failure = self._failures.get(key)
        if failure is None or failure.output != output:
            self._failures[key] = _Failure(output)
            return None
        failure.count += 1
        return (f"\n\nNote: this is the same call that already failed with the same result; "
                f"sending it again will not change that. "
                f"{_ALTERNATIVES.get(name, _DEFAULT_ALTERNATIVE)}")

    def forget(self) -> None:
        """Files changed: earlier failures may not repeat."""
        self._failures.clear()


def _comparable(output: str) -> str:
    """A result as compared between calls: the shell's wall time differs every run."""
    return _WALL_TIME.sub("", output)

"""The values a line saw when the issue's example ran it, for the line search's rewrite question.

At b5d2da2 on funcy and furl the line search picked the bug's line first, and every rewrite
the 1.5B model drew was wrong (`len(seq) - 1`, `- step`; an inverted test): it read the line
without knowing what it was working on. A person debugging prints the values; so does this.
The issue's example runs once more with the lines about to be rewritten watched
(helps/repro_values.py, `values_start`): for each, the names the line mentions as they
were before it ran (then the function's other locals, as a debugger lists them: at b5d2da2
iso8601's bug left `minutes` unnegated beside `hours = -hours`, and no rewrite of that line
thought of it), and after (the names it changed, what it returned, what it raised), in the
first statement of the example that ran it and went wrong (else in the example's own set-up,
else where it went right). The rewrite question then says, in one sentence, what the line
saw.

Only locals, the module's names and the attributes objects hold themselves (`self.x`,
`link.expires`) are shown, and only values made of exact built-in types (numbers, strings,
None, small lists, tuples, sets and dicts of them), so watching runs no code of the
repository (no __repr__, no property, no __getattr__). Bounds: the lines watched
(MAX_WATCHED), the names per line and a value's characters (the runtime's VALUE_NAMES,
VALUE_CHARS), the report (VALUES_REPORT_CHARS) and the sentence (MAX_SAW_CHARS).
"""
from __future__ import annotations

import builtins
import json
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from baseagent.helps.reproduction import Reproduction

# Lines watched in one run (the first ones of the rewrite order).
MAX_WATCHED = 12
# The sentence shown in a question, and the example's line in it, at most.
MAX_SAW_CHARS = 600
MAX_SOURCE_CHARS = 120
_STRING = re.compile(r"""(?:[rbuf]{0,2})("[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\]*(?:\\.[^'\\]*)*')""",
                     re.IGNORECASE)
_NAME = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?:\s*\.\s*([A-Za-z_]\w*))?(\s*\()?")
_VALUES = re.compile(r"^REPRO VALUES (?P<i>\d+) (?P<json>\{.*\})$", re.MULTILINE)
_BUILTINS = frozenset(dir(builtins))


def names_in(line: str) -> list[str]:
    """The names a line of Python mentions that may be local values, in order: plain names
    (not keywords or built-ins) and a name's attribute (`self.x`, `link.expires`: the
    attribute of an attribute is not followed; of a method called, `nth.get(k)`, the name
    itself); strings and the comment left out."""
    code = _STRING.sub('""', line).split("#", 1)[0]
    out: list[str] = []
    for match in _NAME.finditer(code):
        base, attr, called = match.groups()
        if keyword.iskeyword(base) or base in _BUILTINS:
            continue
        name = f"{base}.{attr}" if attr and not called else base
        if name not in out and name != "self":
            out.append(name)
    return out


@dataclass(frozen=True)
class Saw:
    """What a watched line saw: the statement of the example it ran in (its number, 0 for
    the example's own set-up) and whether its expectation was met; the names' values before
    the line (None: a value not shown, being no plain built-in), after it (those it changed),
    what it returned or raised."""

    statement: int
    met: bool | None
    before: dict[str, str | None] = field(default_factory=dict)
    after: dict[str, str | None] = field(default_factory=dict)
    returned: str | None = None
    raised: str | None = None
    line: int = 0  # the example's line that ran it (0: unknown)
    also: dict[str, str | None] = field(default_factory=dict)  # the function's other locals


def read_values(output: str) -> dict[int, Saw]:
    """What a values check printed: watched line index -> what it saw (lines the example
    never ran are absent; anything malformed is left out)."""
    out: dict[int, Saw] = {}
    for match in _VALUES.finditer(output):
        try:
            data = json.loads(match.group("json"))
            saw = Saw(int(data.get("statement") or 0), data.get("met"),
                      _texts(data.get("before")), _texts(data.get("after")),
                      _text(data.get("returned")), _text(data.get("raised")),
                      int(data.get("line") or 0), _texts(data.get("also")))
        except (ValueError, TypeError, AttributeError):
            continue
        out[int(match.group("i"))] = saw
    return out


def _text(value: object) -> str | None:
    return value[:200] if isinstance(value, str) else None


def _texts(value: object) -> dict[str, str | None]:
    if not isinstance(value, dict):
        return {}
    return {str(k)[:60]: _text(v) for k, v in list(value.items())[:8]}


def saw_sentence(saw: Saw, statement_source: str | None) -> str:
    """One sentence for the rewrite question: where the example ran the line, the values it
    had, and what it made of them; "" when there is nothing to show."""
    had = [f"{name} = {text}" for name, text in saw.before.items() if text is not None]
    others = [f"{name} = {text}" for name, text in saw.also.items() if text is not None]
    made = [f"{name} = {text}" for name, text in saw.after.items() if text is not None]
    ended = f"it raised {saw.raised}" if saw.raised is not None else \
        f"it returned {saw.returned}" if saw.returned is not None else ""
    if not had and not made and not ended:
        return ""  # the other locals alone say nothing of the line
    where = "When the issue's example ran this line"
    if statement_source:
        how = {False: ", which went wrong", True: ", which gave what it should"}.get(saw.met, "")
        where += f" (in `{statement_source}`{how})"
    clauses = []
    if had:
        clauses.append("it had " + ", ".join(had) +
                       (f" (and {', '.join(others)})" if others else ""))
    elif others:
        clauses.append("it had " + ", ".join(others))
    if made:
        clauses.append("after it, " + ", ".join(made))
    if ended:
        clauses.append(ended)
    sentence = where + ", " + "; ".join(clauses) + "."
    return sentence if len(sentence) <= MAX_SAW_CHARS else sentence[:MAX_SAW_CHARS] + "..."


def statement_of(saw: Saw, repro: Reproduction) -> str | None:
    """The example's statement that ran the line, as the issue writes it: the checked
    statement's, else the script's line (the example's own set-up), one line, bounded."""
    n = saw.statement
    if 0 < n <= len(repro.expectations):
        return repro.expectations[n - 1].source
    lines = repro.script.splitlines()
    if 0 < saw.line <= len(lines) and lines[saw.line - 1].strip():
        text = lines[saw.line - 1].strip()
        return text if len(text) <= MAX_SOURCE_CHARS else text[:MAX_SOURCE_CHARS] + "..."
    return None


def watched(lines: Sequence[tuple[str, int, str]]) -> list[tuple[str, int, list[str]]]:
    """The lines to watch ((path, number, text), in the rewrite order), each with the names
    it mentions; MAX_WATCHED at most, lines that mention none left out."""
    out = []
    for path, number, text in lines:
        names = names_in(text.strip())
        if names:
            out.append((path, number, names))
    return out[:MAX_WATCHED]

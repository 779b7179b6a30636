"""An issue's reproduction turned into a check the agent runs before and after its change.

Users file issues with a few lines of Python and what they should give, written the ways
people write it: `print(f(x))  # 11st -- expected 11th`, `# prints "an hour", expected "2
hours"`, `print(cache[1])  # expected KeyError`, a comment line after the print with
`# expected: ...`, `should be X`, `assert f(x) == 3`, or a `>>> f(x)` session with the output
under it. `reproduction_from` reads the issue's Python blocks into one script and those
expectations (a statement and what it should give; a line with no expectation just runs);
`check_script` makes the program that runs it (helps/repro_runtime.py; with what the code did
while it ran, helps/repro_trace.py or helps/repro_values.py after it), printing one line
per expectation, met or not with what it got, and a summary; `read_result` reads that output
back. The caller runs the program with its shell tool, under that tool's timeout.

Bounds: the issue read is cut at MAX_ISSUE_CHARS, the script at MAX_SCRIPT_CHARS, the
expectations at MAX_EXPECTATIONS; the program keeps at most 8,000 characters of the script's
own output and 200 of any value it shows (repro_runtime.py); `read_result` reads at most
MAX_RESULT_CHARS. A check may also print the lines it ran of given places (`read_trace`) or
the functions a wrong value came from (`read_origins`, 10 at most).
"""
from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

MAX_ISSUE_CHARS = 100_000
MAX_SCRIPT_CHARS = 20_000
MAX_EXPECTATIONS = 50
MAX_RESULT_CHARS = 200_000
MAX_COMMENT_CHARS = 1_000

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})(?P<info>[^\n`]*)\n"
                    r"(?P<code>.*?)^(?P=indent)(?P=ticks)[ \t]*$", re.DOTALL | re.MULTILINE)
_PYTHON = {"python", "py", "python3", "pycon", "ipython", "doctest", "pytb3"}
# "expected X", "expect X", "should be X", "should give X", "want X" (the last one wins).
_EXPECTED = re.compile(r"\b(?:expected|expecting|expect|should\s+(?:be|give|return|print|"
                       r"output|raise)|want(?:ed)?|correct(?:\s+is)?)\b\s*(?:is\b|:|=|to\s+be\b)?"
                       r"\s*(?P<x>.+)$", re.IGNORECASE)
# An exception named as what should happen: "KeyError", "a KeyError", "raises ValueError".
_EXCEPTION = re.compile(r"^(?:(?:it\s+)?(?:to\s+)?(?:raises?|raising|an?|the)\s+)*"
                        r"(?P<name>[A-Z]\w*(?:Error|Exception|Invalid|Warning|Exit|Interrupt|"
                        r"Iteration))(?:\s*(?:\(.*\)|to be raised|raised|exception|:.*)?)?"
                        r"\s*[.!]?$")
# A line shown as fine: "21st (fine)", "[[0, 1]]  (iterators are fine)".
_FINE = re.compile(r"\s*\((?:[^()]*\b(?:fine|correct|correctly|ok|okay|works|right|good|"
                   r"as expected)\b[^()]*)\)\s*$", re.IGNORECASE)
_PARENTHETICAL = re.compile(r"\s+\([^()]*\)\s*$")  # a remark after a space, not a call


@dataclass(frozen=True)
class Expectation:
    line: int  # the statement's first line in the script
    source: str  # the statement, as the issue writes it (one line, bounded)
    kind: str  # "value" (it should give or print `expected`), "raises", "assert", "output"
    # (everything the script prints should hold the lines of `expected`; line 0)
    expected: str  # what it should give (an exception's name for "raises"; "" for "assert")
    observed: str = ""  # what the issue says it gives now, when it says
    candidates: tuple[str, ...] = ()  # the readings of `expected` a result may equal


@dataclass(frozen=True)
class Reproduction:
    script: str  # python code from the issue
    expectations: list[Expectation] = field(default_factory=list)


@dataclass
class ExpectationResult:
    n: int
    met: bool
    line: str  # the result line as printed


@dataclass
class ReproResult:
    met: int
    total: int
    output: str  # what the program printed (bounded)
    finished: bool = False  # the summary line was printed (the program was not stopped)
    ended: str = ""  # how the script ended, as the summary says
    results: list[ExpectationResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every expectation met (and there was at least one), and the program finished."""
        return self.finished and self.total > 0 and self.met == self.total

    def report(self) -> str:
        """The result lines and the summary alone, for a message to the model (the script's
        own output left out); a program that did not finish says so."""
        lines = [r.line for r in self.results]
        lines.append(f"REPRO SUMMARY: {self.met} of {self.total} met; {self.ended}"
                     if self.finished else
                     f"REPRO SUMMARY: {self.met} of {self.total} met; the program did not "
                     "finish (stopped at its timeout?)")
        return "\n".join(lines)


def reproduction_from(issue: str) -> Reproduction | None:
    """The issue's Python code blocks as one script, with what the issue says they should
    give; None when it has no Python code. A block of output after the code, introduced as
    what should happen ("Expected output:"), is an expectation on everything the script
    prints."""
    issue = issue[:MAX_ISSUE_CHARS]
    parts: list[str] = []
    outputs: dict[int, str] = {}  # line -> the output a `>>>` session shows for it
    printed: str | None = None  # the output the whole script should print
    size, last = 0, 0
    for match in _FENCE.finditer(issue):
        info = match.group("info").strip().lower()
        language = info.split()[0] if info else ""
        code = match.group("code")
        before, last = issue[last:match.start()], match.end()
        if language and language not in _PYTHON:
            if parts and printed is None and language in _OUTPUT and _introduces(before):
                printed = code
            continue
        if re.search(r"^\s*>>> ", code, re.MULTILINE):
            code, shown = _from_session(code)
        else:
            shown = {}
            if not language and not re.search(r"^\s*(?:import|from)\s|\bprint\(|^\s*assert\b",
                                               code, re.MULTILINE):
                if parts and printed is None and _introduces(before):
                    printed = code  # an untagged block of output, said to be expected
                continue  # an untagged block of output or prose
        if not _parses(code) or not code.strip():
            continue
        if size + len(code) > MAX_SCRIPT_CHARS:
            break
        offset = sum(part.count("\n") for part in parts)
        parts.append(code if code.endswith("\n") else code + "\n")
        outputs.update({line + offset: text for line, text in shown.items()})
        size += len(code)
    if not parts:
        return None
    script = "".join(parts)
    expectations = _expectations(script, outputs)
    if printed is not None and printed.strip() and len(expectations) < MAX_EXPECTATIONS:
        text = _cut(printed.strip("\n"), 2_000)
        expectations.append(Expectation(0, "the script's output", "output", text, "", (text,)))
    return Reproduction(script, expectations)


# Fence languages of a block of output.
_OUTPUT = {"text", "txt", "console", "output", "plain", "plaintext", "none"}


def _introduces(prose: str) -> bool:
    """Whether the prose just before a block introduces it as what should happen
    ("Expected output:", "It should print:"), not as what happens now ("Actual:")."""
    lines = [line.strip() for line in prose.splitlines() if line.strip()]
    if not lines:
        return False
    line = lines[-1].lower()
    return re.search(r"\b(?:expect\w*|should|want\w*|correct)\b", line) is not None \
        and re.search(r"\b(?:actual\w*|got|instead|currently|but)\b", line) is None


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _from_session(code: str) -> tuple[str, dict[int, str]]:
    """A `>>>` session as a script, and the output it shows under each statement (by the
    statement's line in that script)."""
    lines: list[str] = []
    shown: dict[int, list[str]] = {}
    last: int | None = None
    margin = ""
    for raw in code.splitlines():
        stripped = raw.strip()
        if raw.lstrip().startswith(">>>"):
            margin = raw[:len(raw) - len(raw.lstrip())]
            lines.append(raw.lstrip()[4:] if raw.lstrip()[3:4] == " " else raw.lstrip()[3:])
            last = len(lines)
        elif raw.lstrip().startswith("...") and last is not None and not shown.get(last):
            rest = raw.lstrip()[3:]
            lines.append(rest[1:] if rest.startswith(" ") else rest)
        elif stripped and last is not None:
            shown.setdefault(last, []).append(raw[len(margin):] if raw.startswith(margin)
                                              else stripped)
        else:
            last = None if not stripped else last
    return "\n".join(lines) + "\n", {k: "\n".join(v) for k, v in shown.items()}


def _comments(script: str) -> tuple[dict[int, str], set[int]]:
    """The comment on each line (without `#`), and the lines holding code."""
    comments: dict[int, str] = {}
    code: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(script).readline):
            if token.type == tokenize.COMMENT:  # bounded: the patterns read it whole
                comments[token.start[0]] = token.string[1:MAX_COMMENT_CHARS].strip()
            elif token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                    tokenize.DEDENT, tokenize.ENDMARKER):
                code.update(range(token.start[0], token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return comments, code


def _expectations(script: str, outputs: dict[int, str]) -> list[Expectation]:
    tree = ast.parse(script)
    comments, code = _comments(script)
    lines = script.splitlines()
    found: dict[int, Expectation] = {}
    statements = sorted((node for node in ast.walk(tree)
                         if isinstance(node, (ast.Expr, ast.Assign, ast.Assert))),
                        key=lambda node: node.lineno)
    for node in statements:
        if len(found) >= MAX_EXPECTATIONS:
            break
        if isinstance(node, ast.Assign) and not (len(node.targets) == 1
                                                  and isinstance(node.targets[0], ast.Name)):
            continue
        end = node.end_lineno or node.lineno
        source = _one_line(lines[node.lineno - 1:end])
        if isinstance(node, ast.Assert):
            found[node.lineno] = Expectation(node.lineno, source, "assert", "")
            continue
        # Its own comments, then the comment-only lines right under it.
        said = [comments[n] for n in range(node.lineno, end + 1) if n in comments]
        after = end + 1
        while after in comments and after not in code:
            said.append(comments[after])
            after += 1
        expectation = _read_comments(node, source, said)
        if expectation is None and node.lineno in outputs:
            expectation = _from_output(node, source, outputs[node.lineno])
        if expectation is not None:
            found[node.lineno] = expectation
    return sorted(found.values(), key=lambda e: e.line)


def _one_line(lines: list[str], most: int = 120) -> str:
    text = " ".join(line.strip() for line in lines)
    text = re.sub(r"\s+#.*$", "", text) if "#" in text else text
    return text if len(text) <= most else text[:most] + "..."


def _read_comments(node: ast.stmt, source: str, said: list[str]) -> Expectation | None:
    for number, comment in enumerate(said):
        match = _EXPECTED.search(comment)
        if match is not None and not re.search(r"\b(?:not|un)expected\b", comment, re.I):
            observed = comment[:match.start()].rstrip(" -,;:").lstrip(" ,;:")
            observed = re.sub(r"^(?:prints?|gives?|returns?|got|outputs?|is|shows?)\s+", "",
                              observed, flags=re.IGNORECASE)
            if not observed and number > 0:
                observed = said[0]  # the output on the line above "expected: ..."
            return _expectation(node, source, match.group("x"), observed)
        fine = _FINE.search(comment)
        if number == 0 and fine is not None and comment[:fine.start()].strip():
            return _expectation(node, source, comment[:fine.start()], "")
    return None


def _from_output(node: ast.stmt, source: str, output: str) -> Expectation | None:
    """A `>>>` statement's shown output as its expectation."""
    last = output.strip().splitlines()[-1] if output.strip() else ""
    if output.lstrip().startswith("Traceback"):
        name = re.match(r"^(?:[\w.]+\.)?(?P<name>\w+)", last)
        return Expectation(node.lineno, source, "raises", name.group("name"), "",
                           (name.group("name"),)) if name else None
    return Expectation(node.lineno, source, "value", output, "", (output,))


def _expectation(node: ast.stmt, source: str, text: str, observed: str) -> Expectation:
    text = text.strip()
    exception = _EXCEPTION.match(text)
    if exception is not None and not re.match(r"^\w+\(", text):
        name = exception.group("name")
        return Expectation(node.lineno, source, "raises", name, observed, (name,))
    return Expectation(node.lineno, source, "value", _cut(text), observed, _candidates(text))


def _cut(text: str, most: int = 500) -> str:
    return text if len(text) <= most else text[:most]


def _candidates(text: str) -> tuple[str, ...]:
    """The readings of an expected value a result may equal: as written; without a
    closing remark in brackets or a full stop; inside its quotes; the quoted value at its
    start (`"abc": its length is 3`)."""
    text = _cut(text)
    found = [text]
    for reading in list(found):
        bare = _PARENTHETICAL.sub("", reading).strip()
        found += [bare, bare.rstrip(".").strip()]
    for reading in list(found):
        quoted = re.match(r"^(['\"])(.*?)\1", reading)
        if quoted is not None:
            found += [quoted.group(0), quoted.group(2)]
        backticks = re.match(r"^`([^`]+)`", reading)
        if backticks is not None:
            found.append(backticks.group(1))
    return tuple(dict.fromkeys(r for r in found if r))


def check_script(repro: Reproduction,
                 trace: Sequence[tuple[str, int, int]] | None = None,
                 origins: bool = False,
                 values: Sequence[tuple[str, int, Sequence[str]]] | None = None) -> str:
    """A Python program that runs the reproduction in the current directory (the
    repository) and prints one line per expectation, `REPRO n/total MET|NOT MET line L:
    statement -> what it got; expected X`, then `REPRO SUMMARY: m of total met; how the
    script ended`. With no expectation it just runs the script and prints the summary.
    `trace`: places (path, first line, last line) whose lines run are then printed in the
    order they ran, the last TRACE_KEEP of them (`REPRO TRACE place:line ...`: read_trace),
    and which statements checked each ran in (`REPRO SPECTRUM ...`: read_spectrum).
    `origins`: the functions that returned part of a wrong result are then printed
    (`REPRO ORIGINS ...`: read_origins). `values`: lines (path, line, the names it
    mentions) whose values are then printed (`REPRO VALUES ...`: line_values.read_values)."""
    here = Path(__file__).parent
    parts = ["repro_runtime.py", *(["repro_trace.py"] if trace is not None or origins else []),
             *(["repro_values.py"] if values is not None else [])]
    runtime = "\n\n".join((here / name).read_text(encoding="utf-8") for name in parts)
    expectations = [{"n": n, "line": e.line, "kind": e.kind, "expected": e.expected,
                     "candidates": list(e.candidates), "source": e.source}
                     for n, e in enumerate(repro.expectations[:MAX_EXPECTATIONS], 1)]
    script = repro.script[:MAX_SCRIPT_CHARS]
    run = f"main({script!r},\n         {expectations!r})"
    if trace is not None:
        places = [[path, start, end] for path, start, end in trace]
        body = (f"    traced = trace_start({places!r}, _RUNNING)\n    checks = {run}\n"
                "    trace_report(traced, checks)\n")
    elif values is not None:
        watched = [[path, line, list(names)] for path, line, names in values]
        body = (f"    recorded = values_start({watched!r}, _RUNNING)\n    checks = {run}\n"
                "    values_report(recorded, checks)\n")
    elif origins:
        body = (f"    returned = origins_start()\n    checks = {run}\n"
                "    origins_report(returned, checks.wrong)\n")
    else:
        body = f"    {run}\n"
    return runtime + "\n\nif __name__ == \"__main__\":\n" + body


_LINE = re.compile(r"^REPRO (?P<n>\d+)/(?P<total>\d+) (?P<met>MET|NOT MET) line \d+:.*$",
                   re.MULTILINE)
_SUMMARY = re.compile(r"^REPRO SUMMARY: (?P<met>\d+) of (?P<total>\d+) met; (?P<ended>.*)$",
                      re.MULTILINE)


_TRACE = re.compile(r"^REPRO TRACE (?P<lines>(?:\d+:\d+ ?)*)$", re.MULTILINE)


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The last match of `pattern` in `text` (a check's line printed last stands)."""
    found = None
    for found in pattern.finditer(text):
        pass
    return found


def read_trace(output: str) -> list[tuple[int, int]]:
    """The (place, line) pairs a traced check printed, in the order they ran."""
    found = _last(_TRACE, output[-MAX_RESULT_CHARS:])
    if found is None:
        return []
    return [(int(a), int(b)) for a, b in
            (pair.split(":") for pair in found.group("lines").split())]


_SPECTRUM = re.compile(r"^REPRO SPECTRUM (?P<failed>\d+) (?P<passed>\d+)"
                       r"(?P<counts>(?: \d+:\d+:\d+:\d+)*) ?$", re.MULTILINE)


@dataclass(frozen=True)
class Spectrum:
    """Which statements of the issue's example a line ran in: of the `failed` statements
    checked (their expectations not met) and the `passed` ones, how many of each, by
    (place, line). A line run only where the example gives what it should is less likely
    the cause than one run where it does not (spectrum-based fault localisation)."""

    failed: int = 0
    passed: int = 0
    counts: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)

    def suspicion(self, place: int, line: int) -> float:
        """Ochiai's score: f / sqrt(failed * (f + p)); 0 for a line no failed statement
        ran, and for every line when nothing failed or the line was not recorded."""
        f, p = self.counts.get((place, line), (0, 0))
        return f / math.sqrt(self.failed * (f + p)) if f and self.failed else 0.0


def read_spectrum(output: str) -> Spectrum:
    """The spectrum a traced check printed; empty when it printed none."""
    found = _last(_SPECTRUM, output[-MAX_RESULT_CHARS:])
    if found is None:
        return Spectrum()
    counts = {}
    for word in found.group("counts").split():
        place, line, f, p = (int(part) for part in word.split(":"))
        counts[(place, line)] = (f, p)
    return Spectrum(int(found.group("failed")), int(found.group("passed")), counts)


_ORIGINS = re.compile(r"^REPRO ORIGINS (?P<found>.*)$", re.MULTILINE)
_ORIGIN = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<name>[^:\s]+):(?P<length>\d+)$")


@dataclass(frozen=True)
class Origin:
    """A function of the repository that returned part of a wrong result: its file
    (relative to the repository), first line, qualified name, and the value's length."""

    path: str
    line: int
    name: str
    length: int


def read_origins(output: str) -> list[Origin]:
    """The origins an origins check printed, the most telling first (at most 10)."""
    found = _last(_ORIGINS, output[-MAX_RESULT_CHARS:])
    if found is None:
        return []
    out = []
    for word in found.group("found").split()[:10]:
        match = _ORIGIN.match(word)
        if match is not None and ".." not in match.group("path").split("/"):
            out.append(Origin(match.group("path"), int(match.group("line")),
                              match.group("name"), int(match.group("length"))))
    return out


def read_result(output: str) -> ReproResult:
    """What a check program's output says: its expectations met out of how many, each
    result line, and whether it finished (a program stopped at its timeout prints no
    summary: the expectations it did not report count as not met)."""
    output = output[:MAX_RESULT_CHARS]
    results = {int(m.group("n")): ExpectationResult(int(m.group("n")), m.group("met") == "MET",
                                                    m.group(0))
               for m in _LINE.finditer(output)}
    totals = [int(m.group("total")) for m in _LINE.finditer(output)]
    summary = _last(_SUMMARY, output)
    if summary is not None:
        return ReproResult(int(summary.group("met")), int(summary.group("total")), output,
                           True, summary.group("ended").strip(),
                           [results[n] for n in sorted(results)])
    return ReproResult(sum(r.met for r in results.values()), max(totals, default=0), output,
                       False, "", [results[n] for n in sorted(results)])

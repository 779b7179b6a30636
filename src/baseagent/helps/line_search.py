"""The repository probe's line search: which line is wrong, then what it should be, asked as
two short questions, each answer a line or two of code, many of them tried with the tests.

On the first real-model run of the repository set, a reply to the probe's SEARCH/REPLACE
request often sent a long function back whole (four replies in a 900 s task, one of 18,000
characters), or named the culprit in prose and sent its line unchanged. The bugs themselves
were a line or two. A small model answers a narrow question in a few tokens, and a few
tokens cost seconds, so here the model is asked (helps/repo_probe.py, after its first reply
fails) which line of the code shown causes the issue, copied out, and then, for each such
line (with the last lines the issue's example ran, traced, and the lines the first reply
changed), to rewrite that line, then each other line the example ran, once (the lines that
ran where the example goes wrong, not where it goes right, first: `suspect_first`); each rewrite is
put in the file in place of the line, indented as the line was, and tested as any attempt
is (the issue's example, then the suite). Every question shares one prefix (the issue, the code,
what the example gives), so a server's prompt cache serves all but its end.

`search_lines` asks the questions and tests the rewrites (with the turn's `Attempts`:
helps/repo_attempts.py); the functions below it do not talk to the model: where a copied
line is in the code shown, which lines an edit changed, a rewrite read from a reply and put
into its file.
"""
from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

from baseagent.helps.code_blocks import fences
from baseagent.helps.contract import ReplyTooLong
from baseagent.helps.edit_form import EditCheck
from baseagent.helps.line_values import saw_sentence, statement_of, watched
from baseagent.helps.localised_code import Shown
from baseagent.helps.probe_plan import temperature_label
from baseagent.helps.repo_attempts import Attempts, language_of
from baseagent.prompts.system import (PROBE_CUT_NOTICE, REPO_LINE_FIX, REPO_LINE_NOTICES,
                                      REPO_LINE_SYSTEM, REPO_LINE_TRIED, REPO_LINE_WHICH)

# A rewrite longer than this is not a line's fix (the model sent a function).
MAX_REWRITE_LINES = 8
# Times the model is asked which line (the first as the run samples, the other sampled),
# and the lines taken from each answer (the first it copies; a block of two names both).
WHICH_ASKS = 2
LINES_PER_ANSWER = 2
# The last lines of the code shown that the example ran (a traced run of it), tried
# after the first answer's: a wrong value comes from the path the code took. On arrow at
# b12633c the answers named lines of argument handling, 20 lines above the branch that
# returned the wrong words.
TRACE_LINES = 2
# Lines tried at most, and rewrites drawn for each. On arrow at 1da1ee3 a rewrite took 2 to
# 3 s, its check 0.1 s; the first answer named two lines of the wrong branch.
MAX_LINES = 5
REWRITES_PER_LINE = 3
# After the first rewrite of each of those lines, one rewrite of each other line the example
# ran (the last run first), up to this many, before the sampled rewrites. At e049536 on
# croniter the bug's line (`_is_leap`'s return) ran, but neither answer named it and the
# trace's last two lines were elsewhere; on inflect it was the third last line to run, after
# a line of typeguard's inserted checks. A rewrite takes 2 to 3 s, its check about 1 s.
SWEEP_LINES = 16
# Lines that are no line's fix: a decorator, a class's header and a bare keyword (at
# 1a80f63 on furl an answer copied `@property` and two decorators took six rewrites); and,
# of the lines a trace names, a function's header too (a trace records one for code a
# decorator instruments: inflect's typeguard checks). A `def` line an answer names may hold
# a wrong default.
_NOT_A_FIX = re.compile(r"^(?:@|class\s|(?:try|else|finally|pass|break|"
                        r"continue)\b\s*:?\s*(?:#.*)?$|except\b.*:\s*(?:#.*)?$)")
_DEF = re.compile(r"^(?:async\s+)?def\s")
# A line asked for again is shown the rewrites tried in its place (the last this many). At
# e049536 on validators the sampled rewrites of the bug's line gave the line unchanged, then
# a wrong one; on furl all three were the same wrong rewrite.
MAX_TRIED = 3
# What a reply may hold (a line or two of code, a sentence around it).
LINE_REPLY_CHARS = 2_000


@dataclass(frozen=True)
class Line:
    """A line of a file shown to the model: its path, number (1-based) and text."""

    path: str
    number: int
    text: str


def search_lines(attempts: Attempts, opening: str, shown: Sequence[Shown],
                 first: dict[str, str], temperature: float | None,
                 made: Collection[str] = ()) -> str | None:
    """Which line is wrong (asked once as the run samples, then at `temperature`; the first
    lines each answer names), with the last lines the issue's example ran (traced) and the
    lines the first reply changed (`first`: its edits); then a rewrite of each (as the run
    samples), one of each other line the example ran (the sweep), and more of each line
    picked (at `temperature`): `_rewrites`' order; the sweep takes first the lines of the
    functions shown that made part of the wrong result (`made`: their symbols, the origins).
    Each is tested as any attempt. `opening`: the prefix every question shares. The answer
    when one is kept."""
    ctx, originals = attempts.ctx, attempts.originals
    lines = shown_lines(shown, originals)

    def ask(question: str, notice: str, temperature: float | None) -> str:
        try:
            return ctx.ask_alone([{"role": "system", "content": REPO_LINE_SYSTEM},
                                  {"role": "user", "content": opening + question}],
                                 notice, max_chars=LINE_REPLY_CHARS,
                                 temperature=temperature, enough=_first_block).text
        except ReplyTooLong:
            ctx.notice(PROBE_CUT_NOTICE.format(chars=LINE_REPLY_CHARS))
            return ""

    picked: list[Line] = []

    def pick(found: list[Line]) -> None:
        for line in found:
            if len(picked) < MAX_LINES and line not in picked and \
                    worth_rewriting(line, traced=False) and attempts.may_write(line.path):
                picked.append(line)

    by_place = {(line.path, line.number): line for line in lines}
    ran_last: list[Line] = []
    if attempts.repro is not None:
        ran_last = traced_order(*attempts.runs.trace(attempts.repro, trace_places(shown)),
                                lines)
    changed = [by_place[(path, n)] for path, text in first.items() if path in originals
               for n in changed_lines(originals[path], text) if (path, n) in by_place]
    files = ", ".join(dict.fromkeys(line.path for line in lines))
    which = REPO_LINE_WHICH.format(files=files)
    for k in range(WHICH_ASKS):
        if not attempts.calls_left():
            break
        sampled = None if k == 0 else temperature
        pick(without_header(lines_named(ask(which, REPO_LINE_NOTICES[0].format(
            temperature=temperature_label(sampled)), sampled), lines))[:LINES_PER_ANSWER])
        if k == 0:
            pick([line for line in ran_last if worth_rewriting(line)][:TRACE_LINES])
            pick(changed[:LINES_PER_ANSWER])
    swept = sweep(ran_last, shown, made, lambda line: line not in picked
                  and attempts.may_write(line.path))
    saw = values_seen(attempts, [*picked, *swept])
    tried: dict[Line, list[str]] = {}  # each line's rewrites that were no fix
    for line, notice, sampled in _rewrites(picked, swept, temperature):
        if not attempts.calls_left():
            return None
        language = language_of(line.path)
        question = REPO_LINE_FIX.format(path=line.path, line=line.text.strip(),
                                        language=language,
                                        saw=saw[line] + "\n" if saw.get(line) else "")
        if tried.get(line):
            question += REPO_LINE_TRIED.format(language=language,
                                               tried="\n".join(tried[line][-MAX_TRIED:]))
        rewrite = rewrite_in(ask(question, notice, sampled))
        if rewrite is not None:
            said = "\n".join(rewrite).strip()
            if said not in tried.setdefault(line, []):
                tried[line].append(said)
        text = with_rewrite(originals[line.path], line.number, rewrite) \
            if rewrite is not None else None
        if text is None or not parses(line.path, text):
            continue
        check = EditCheck(new_texts={line.path: text})
        if attempts.tested(check.new_texts):
            continue
        ctx.restart_evidence()
        outcome = attempts.attempt(check)
        if outcome.kept:
            return attempts.answer(check)
        attempts.put_back()
    return None


def values_seen(attempts: Attempts, lines: Sequence[Line]) -> dict[Line, str]:
    """What each line to be rewritten saw when the issue's example ran it, as the sentence
    its rewrite question carries (helps/line_values.py); one more run of the example, for
    the first MAX_WATCHED lines, none without the example."""
    repro = attempts.repro
    if repro is None or not lines:
        return {}
    watch = watched([(line.path, line.number, line.text) for line in dict.fromkeys(lines)])
    by_place = {(line.path, line.number): line for line in lines}
    sentences: dict[Line, str] = {}
    for i, saw in attempts.runs.values(repro, watch).items():
        if not 0 <= i < len(watch):
            continue
        path, number, _ = watch[i]
        sentence = saw_sentence(saw, statement_of(saw, repro))
        if sentence:
            sentences[by_place[(path, number)]] = sentence
    return sentences


def trace_places(shown: Sequence[Shown]) -> list[tuple[str, int, int]]:
    """The places a trace of the example watches: the functions shown (path, lines)."""
    return list(dict.fromkeys((s.candidate.path, s.candidate.start, s.candidate.end)
                              for s in shown))


def lines_ran_last(trace: Sequence[tuple[str, int]], lines: Sequence[Line]) -> list[Line]:
    """The lines shown that a trace ((path, line) in the order they ran) holds, each once,
    the last run first."""
    by_place = {(line.path, line.number): line for line in lines}
    out: list[Line] = []
    for place in reversed(trace):
        line = by_place.get(place)
        if line is not None and line not in out:
            out.append(line)
    return out


def traced_order(trace: Sequence[tuple[str, int]], suspicion: Mapping[tuple[str, int], float],
                 lines: Sequence[Line]) -> list[Line]:
    """The lines shown that a traced run of the example ran, in the order the line search
    takes them: suspect first, then the last run first (bench/repos.py localise shares it)."""
    return suspect_first(lines_ran_last(trace, lines), suspicion)


def suspect_first(lines: Sequence[Line], suspicion: Mapping[tuple[str, int], float]
                  ) -> list[Line]:
    """`lines` with those that ran where the issue's example goes wrong, and not where it
    goes right, first (their suspicion: reproduction.Spectrum), the order kept otherwise.
    At 1a80f63 funcy's example printed two wrong results and one right: the bug's line ran
    in the two only and was 8th to run last, after lines all three ran."""
    return sorted(lines, key=lambda line: -suspicion.get((line.path, line.number), 0.0))


def sweep(ran_last: Sequence[Line], shown: Sequence[Shown], made: Collection[str],
          allowed: Callable[[Line], bool]) -> list[Line]:
    """The lines the sweep rewrites, in order: those the example ran that are worth a
    rewrite and `allowed`, the lines of the functions that made part of the wrong result
    (`made`: their symbols) first, then the last run first; SWEEP_LINES at most."""
    in_made = {(s.candidate.path, n) for s in shown if s.candidate.symbol in made
               for n in range(s.candidate.start, s.candidate.end + 1)}
    return sorted((line for line in ran_last if worth_rewriting(line) and allowed(line)),
                  key=lambda line: (line.path, line.number) not in in_made)[:SWEEP_LINES]


def _rewrites(picked: Sequence[Line], swept: Sequence[Line], temperature: float | None
              ) -> Iterator[tuple[Line, str, float | None]]:
    """The rewrites asked for, in order, each with its notice and temperature: the first of
    each line picked (as the run samples), one of each line swept (as the run samples), then
    the others of each line picked (at `temperature`)."""
    def notice(line: Line, k: int, sampled: float | None) -> str:
        return REPO_LINE_NOTICES[1].format(place=f"{line.path}:{line.number}", k=k,
                                           of=REWRITES_PER_LINE,
                                           temperature=temperature_label(sampled))
    for line in picked:
        yield line, notice(line, 1, None), None
    for line in swept:
        yield line, REPO_LINE_NOTICES[2].format(place=f"{line.path}:{line.number}"), None
    for k in range(2, REWRITES_PER_LINE + 1):
        for line in picked:
            yield line, notice(line, k, temperature), temperature


def worth_rewriting(line: Line, traced: bool = True) -> bool:
    """Whether a line may be a line's fix: not a decorator, a class's header or a bare
    keyword; of the lines a trace names (`traced`), not a function's header either."""
    text = line.text.strip()
    return not _NOT_A_FIX.match(text) and not (traced and _DEF.match(text))


def shown_lines(shown: Sequence[Shown], texts: dict[str, str]) -> list[Line]:
    """Every line of the functions shown, as the files have them (`texts`: path -> text),
    in the order shown."""
    out: list[Line] = []
    for s in shown:
        c = s.candidate
        lines = texts.get(c.path, "").splitlines()
        shown_count = sum(1 for line in s.text.splitlines() if not line.startswith("... ("))
        for number in range(c.start, min(c.end, c.start + shown_count - 1, len(lines)) + 1):
            out.append(Line(c.path, number, lines[number - 1]))
    return out


def without_header(named: Sequence[Line]) -> list[Line]:
    """The lines an answer names, a definition's header left out when it names other lines
    too: it copied the function from its header. At b5d2da2 on funcy both answers copied
    `_cut_seq` whole; its `def` line took three rewrites (one a whole other function) before
    the bug's line below it. A header named alone stays (it may hold a wrong default)."""
    body = [line for line in named if not _DEF.match(line.text.strip())]
    return body if body else list(named)


def lines_named(reply: str, lines: Sequence[Line]) -> list[Line]:
    """The shown lines that `reply` copies out, in the reply's order: each non-blank line of
    its code blocks (or of the reply, when it has none) matched to the shown lines with the
    same text, spaces at either end aside. A text that more than one shown line has names
    each of them. Lines that hold no code (a bare bracket, a docstring's quote) name none."""
    blocks = [m.group("code") for m in fences(reply)] or [reply]
    by_text: dict[str, list[Line]] = {}
    for line in lines:
        by_text.setdefault(line.text.strip(), []).append(line)
    out: list[Line] = []
    for block in blocks:
        for raw in block.splitlines():
            key = raw.strip()
            if len(re.sub(r"[\W_]", "", key)) < 3:
                continue
            for line in by_text.get(key, ()):
                if line not in out:
                    out.append(line)
    return out


def changed_lines(before: str, after: str) -> list[int]:
    """The numbers (1-based) of the lines of `before` that `after` changes or removes; for
    lines only added, the line before them."""
    out: list[int] = []
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(),
                                      autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            out.extend(range(i1 + 1, i2 + 1))
        elif tag == "insert" and i1 > 0:
            out.append(i1)
    return out


def rewrite_in(reply: str) -> list[str] | None:
    """The code a reply gives for a line: its first code block's lines (or, without one, a
    reply of a few lines with no prose around it); None when it gives none, or too many."""
    match = next(iter(fences(reply)), None)
    code = match.group("code") if match is not None else reply.strip().strip("`")
    lines = [line.rstrip() for line in code.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or len(lines) > MAX_REWRITE_LINES:
        return None
    return lines


def with_rewrite(text: str, number: int, rewrite: Sequence[str]) -> str | None:
    """`text` with its line `number` replaced by `rewrite`, shifted so that its first line
    is indented as the line was (the others keep their indentation relative to it); None
    when that changes nothing, or (a Python file's text, `python`) it would no longer
    parse."""
    lines = text.splitlines(keepends=True)
    if not 1 <= number <= len(lines):
        return None
    old = lines[number - 1]
    ending = old[len(old.rstrip("\r\n")):] or "\n"
    indent = old[:len(old) - len(old.lstrip())].rstrip("\r\n")
    first = rewrite[0]
    shift = len(first) - len(first.lstrip())
    new = []
    for line in rewrite:
        lead = len(line) - len(line.lstrip())
        body = line[min(lead, shift):] if line.strip() else ""
        new.append((indent + body if body else "") + ending)
    if "".join(new) == old:
        return None
    return "".join(lines[:number - 1] + new + lines[number:])


def _first_block(text: str) -> int | None:
    """Where a reply may stop: after its first code block."""
    match = next(iter(fences(text)), None)
    return match.end() if match is not None else None


def parses(path: str, text: str) -> bool:
    """Whether `text` parses, for a Python file (any other file: True)."""
    if not path.endswith((".py", ".pyi")):
        return True
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True

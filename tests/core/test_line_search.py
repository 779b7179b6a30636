"""The line search's pieces that do not talk to the model (helps/line_search.py): a line
copied out of the code shown found again, the lines an edit changed, a rewrite read from a
reply and put in its line's place, the lines worth a rewrite and the order they are asked
in."""
from __future__ import annotations

from baseagent.helps.line_search import (MAX_REWRITE_LINES, Line, _rewrites, changed_lines,
                                         lines_named, lines_ran_last, parses, rewrite_in,
                                         shown_lines, suspect_first, sweep, trace_places,
                                         with_rewrite, without_header, worth_rewriting)
from baseagent.helps.localise import Candidate
from baseagent.helps.localised_code import Shown

TEXT = """import math


def round_half(value):
    if value < 0:
        return -round_half(-value)
    return math.floor(value + 0.4)


def clamp(value):
    if value < 0:
        return 0
    return value
"""


def candidate(symbol: str, start: int, end: int) -> Candidate:
    return Candidate(path="m.py", symbol=symbol, kind="function", start=start, end=end,
                     score=1.0, why=())


def test_the_lines_shown_are_those_of_the_functions_shown_up_to_a_cut():
    lines = TEXT.splitlines()
    cut = "\n".join(lines[9:11]) + "\n... (2 more lines: read_file with file_path \"m.py\")"
    shown = [Shown(candidate("round_half", 4, 7), "\n".join(lines[3:7])),
             Shown(candidate("clamp", 10, 13), cut)]
    got = shown_lines(shown, {"m.py": TEXT})
    assert [line.number for line in got] == [4, 5, 6, 7, 10, 11]
    assert got[3] == Line("m.py", 7, "    return math.floor(value + 0.4)")


def test_a_copied_line_is_found_by_its_text_and_a_common_one_names_each_place():
    whole = TEXT.splitlines()
    lines = shown_lines([Shown(candidate("round_half", 4, 7), "\n".join(whole[3:7])),
                         Shown(candidate("clamp", 10, 13), "\n".join(whole[9:13]))],
                        {"m.py": TEXT})
    reply = "The culprit:\n```python\nreturn math.floor(value + 0.4)\n```"
    assert [line.number for line in lines_named(reply, lines)] == [7]
    assert [line.number for line in lines_named("```\n  if value < 0:\n```", lines)] == [5, 11]
    # a line that holds no code names nothing; nor does a line that is not there
    assert lines_named("```\n)\n```", lines) == []
    assert lines_named("```\nreturn value + 1\n```", lines) == []
    # without a code block, the reply's own lines
    assert [line.number for line in lines_named("return value", lines)] == [13]


def test_the_lines_an_edit_changed_are_those_of_the_text_before_it():
    after = TEXT.replace("value + 0.4", "value + 0.5")
    assert changed_lines(TEXT, after) == [7]
    added = TEXT.replace("        return 0\n", "        return 0\n    value = int(value)\n")
    assert changed_lines(TEXT, added) == [12]  # only added: the line before them
    assert changed_lines(TEXT, TEXT) == []


def test_a_rewrite_is_the_first_code_block_or_a_bare_line_and_never_a_whole_function():
    assert rewrite_in("Here:\n```python\n\nx = 1\ny = 2\n\n```\n```\nz\n```") == ["x = 1", "y = 2"]
    assert rewrite_in("`x = 1`") == ["x = 1"]
    assert rewrite_in("") is None and rewrite_in("```\n\n```") is None
    body = "\n".join(f"x{i} = {i}" for i in range(MAX_REWRITE_LINES + 1))
    assert rewrite_in(f"```\n{body}\n```") is None


def test_a_rewrite_takes_the_lines_indentation_and_keeps_its_own_shape():
    new = with_rewrite(TEXT, 7, ["return math.floor(value + 0.5)"])
    assert new == TEXT.replace("value + 0.4", "value + 0.5")
    # two lines, the second nested: shifted together
    two = with_rewrite(TEXT, 5, ["        if value < 0:", "            value = -value"])
    assert two is not None
    assert two.splitlines()[4:6] == ["    if value < 0:", "        value = -value"]
    # the same line again, or a line that is not there: nothing
    assert with_rewrite(TEXT, 7, ["  return math.floor(value + 0.4)"]) is None
    assert with_rewrite(TEXT, 99, ["x"]) is None
    # a file with CRLF endings keeps them
    crlf = TEXT.replace("\n", "\r\n")
    assert with_rewrite(crlf, 7, ["return 1"]).splitlines(keepends=True)[6] == "    return 1\r\n"


def test_a_python_file_must_still_parse():
    assert parses("m.py", TEXT)
    assert not parses("m.py", with_rewrite(TEXT, 5, ["if value < 0 and:"]))
    assert parses("notes.txt", "if (")


def test_a_definitions_header_and_a_bare_keyword_are_no_lines_fix():
    """A trace records a `def` line for code a decorator instruments (typeguard's checks,
    on inflect); a decorator or a keyword alone is nothing to rewrite."""
    def fix(text: str) -> bool:
        return worth_rewriting(Line("m.py", 1, text))

    for text in ("@typechecked", "def f(x=1):", "    async def g():", "class A(B):", "try:",
                 "else:", "finally:", "except (A, B) as e:  # why", "pass", "break  # done"):
        assert not fix(text), text
    for text in ("return x % 10", "post = nth[abs(n) % 10]", "elif x > 0:", "passing = 1",
                 "trying()", "raise ValueError(x)"):
        assert fix(text), text
    # a `def` line an answer names may hold a wrong default; one a trace names is a header
    named = Line("m.py", 1, "def f(x, strict=False):")
    assert worth_rewriting(named, traced=False) and not worth_rewriting(named)
    assert not worth_rewriting(Line("m.py", 1, "@property"), traced=False)


def test_rewrites_are_asked_first_of_each_line_picked_then_of_the_lines_swept_then_sampled():
    picked = [Line("m.py", 8, "a"), Line("m.py", 6, "b")]
    swept = [Line("m.py", 5, "c")]
    order = [(line.number, notice[notice.find("("):notice.find(")") + 1] or "swept",
              temperature) for line, notice, temperature in _rewrites(picked, swept, 0.7)]
    assert order == [(8, "(1 of 3)", None), (6, "(1 of 3)", None), (5, "swept", None),
                     (8, "(2 of 3)", 0.7), (6, "(2 of 3)", 0.7),
                     (8, "(3 of 3)", 0.7), (6, "(3 of 3)", 0.7)]
    notice = list(_rewrites([], swept, 0.7))[0][1]
    assert notice.startswith("line search: a rewrite of m.py:5, a line the issue's example ran")


def test_the_sweep_takes_the_lines_ran_the_last_first_those_of_an_origin_before_the_rest():
    """round_half (L4-7) then clamp (L10-13) ran; clamp's lines ran last, but round_half made
    part of the wrong result: its lines come first. The `def` lines are no fix, and a line
    not allowed (picked before) is left out."""
    whole = TEXT.splitlines()
    shown = [Shown(candidate("round_half", 4, 7), "\n".join(whole[3:7])),
             Shown(candidate("clamp", 10, 13), "\n".join(whole[9:13]))]
    lines = shown_lines(shown, {"m.py": TEXT})
    ran = lines_ran_last([("m.py", n) for n in (4, 5, 7, 10, 11, 13, 99)], lines)
    assert [line.number for line in ran] == [13, 11, 10, 7, 5, 4]
    assert trace_places(shown) == [("m.py", 4, 7), ("m.py", 10, 13)]
    assert [line.number for line in sweep(ran, shown, (), lambda line: True)] == [13, 11, 7, 5]
    made = sweep(ran, shown, {"round_half"}, lambda line: line.number != 5)
    assert [line.number for line in made] == [7, 13, 11]


def test_the_lines_run_where_the_example_goes_wrong_come_first_the_order_kept_otherwise():
    ran = [Line("m.py", n, "x") for n in (13, 11, 7, 5)]
    suspicion = {("m.py", 7): 1.0, ("m.py", 13): 0.5, ("m.py", 11): 0.5}
    assert [line.number for line in suspect_first(ran, suspicion)] == [7, 13, 11, 5]
    assert suspect_first(ran, {}) == ran


def test_an_answer_that_copies_a_function_names_its_body_not_its_header():
    header, body = Line("m.py", 4, "def round_half(value):"), Line("m.py", 5, "    if value < 0:")
    assert without_header([header, body]) == [body]
    assert without_header([header]) == [header]  # named alone: it may hold a wrong default
    assert without_header([]) == []

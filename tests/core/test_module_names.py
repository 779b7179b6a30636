"""The module-level names a function shown reads, shown beside it (helps/module_names.py):
at 1a80f63 on inflect the model rewrote `post = nth[abs(n) % 10]` six times without seeing
the table `nth`."""
from __future__ import annotations

import textwrap

from baseagent.helps.module_names import MAX_LINES, names_used, shown_names

MODULE = textwrap.dedent('''\
    import re

    NTH = {
        0: "th", 1: "st", 2: "nd", 3: "rd",
        11: "th", 12: "th", 13: "th",
    }
    LIMIT: int = 3
    SEP = "-"
    HUGE = [
    ''') + "".join(f"    {i},\n" for i in range(MAX_LINES + 5)) + textwrap.dedent('''\
    ]


    def helper():
        return 1


    def ordinal(n, sep=SEP):
        post = NTH[abs(n) % 10]
        LOCAL = 1
        return f"{n}{post}{LOCAL}{HUGE[0]}{re.escape(sep)}" + str(helper())


    def other():
        return LIMIT
    ''')


def _lines_of(name: str) -> tuple[int, int]:
    lines = MODULE.splitlines()
    start = next(i for i, line in enumerate(lines, 1) if line.startswith(f"def {name}("))
    end = next((i - 1 for i, line in enumerate(lines, 1) if i > start and line
                and not line.startswith(" ")), len(lines))
    while not lines[end - 1].strip():
        end -= 1
    return start, end


def test_a_function_reads_the_tables_its_module_assigns_and_they_are_shown_whole():
    start, end = _lines_of("ordinal")
    found = names_used(MODULE, start, end)
    # NTH whole (its lines) and SEP (a default), in the module's order; not HUGE (past
    # MAX_LINES), the import, the function or the local name
    assert [n.name for n in found] == ["NTH", "SEP"]
    assert found[0].text.startswith("NTH = {") and found[0].text.endswith("}")
    assert (found[0].start, found[0].end) == (3, 6)
    assert names_used(MODULE, *_lines_of("other"))[0].text == "LIMIT: int = 3"
    assert names_used("def (:\n", 1, 1) == []


def test_a_name_two_functions_read_is_shown_once_and_the_whole_is_bounded():
    places = [("m.py", *_lines_of("ordinal")), ("m.py", *_lines_of("ordinal")),
              ("m.py", *_lines_of("other"))]
    found = shown_names(places, {"m.py": MODULE})
    assert [[n.name for n in names] for names in found] == [["NTH", "SEP"], [], ["LIMIT"]]
    assert shown_names([("gone.py", 1, 5)], {}) == [[]]


def test_a_name_read_only_in_an_annotation_is_no_value_the_code_uses():
    module = textwrap.dedent('''\
        import typing
        T = typing.TypeVar("T")
        K = 3


        def f(x: T, y: int = K) -> T:
            z: T = x

            def inner(w: T = K) -> T:
                return w
            return z
        ''')
    assert [n.name for n in names_used(module, 6, 11)] == ["K"]

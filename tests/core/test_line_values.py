"""The values a line saw when the issue's example ran it (helps/line_values.py and the
runtime's values_start/values_report), as the line search's rewrite question shows them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from baseagent.helps.line_values import (MAX_SAW_CHARS, Saw, names_in, read_values,
                                         saw_sentence, statement_of, watched)
from baseagent.helps.repro_values import VALUE_CHARS, VALUES_REPORT_CHARS
from baseagent.helps.reproduction import check_script, reproduction_from

MODULE = '''\
def cut(drop_tail, n, step, seq):
    limit = len(seq)-n if drop_tail else len(seq)
    return [seq[i:i+n] for i in range(0, limit, step)]


class Path:
    def __init__(self, segments):
        self.segments = segments

    @property
    def isdir(self):
        return bool(self.segments and self.segments[-1] == '')


class Loud:
    """Any code of the repository that watching could run leaves a mark."""

    def __repr__(self):
        open("MARK", "w").write("repr")
        return "Loud()"

    @property
    def segments(self):
        open("MARK", "w").write("property")
        return []

    def isdir(self):
        return False and self.segments  # the property is never read


def half(x, items=None):
    loud = Loud()
    text = "x" * 500
    y = x // 2
    return y


def pick(d, k):
    return d[k]


def unused(a):
    return a + 1
'''
EXAMPLE = """\
from pkg import cut, Path, Loud, half, pick
print(half(4, list(range(30))))  # expected 2
print(cut(True, 2, 2, [0, 1, 2, 3]))  # expected [[0, 1], [2, 3]]
print(Path([]).isdir)  # expected True
print(Loud().isdir())  # expected True
print(half(5))  # expected 3
print(pick({"a": 1}, "b"))  # expected 1
"""


def _watch(tmp_path: Path, lines: list[int]) -> tuple[str, dict[int, Saw], list]:
    """The example run with `lines` of the package watched: (output, what each saw, the
    watched lines)."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(MODULE)
    repro = reproduction_from(f"```python\n{EXAMPLE}```\n")
    assert repro is not None
    source = MODULE.splitlines()
    watch = watched([("pkg/__init__.py", n, source[n - 1]) for n in lines])
    program = tmp_path / "check.py"
    program.write_text(check_script(repro, values=watch))
    done = subprocess.run([sys.executable, str(program)], cwd=root, capture_output=True,
                          text=True, timeout=60)
    assert "REPRO SUMMARY: 1 of 6 met" in done.stdout, done.stdout + done.stderr
    assert not (root / "MARK").exists(), "watching ran the repository's code"
    return done.stdout, read_values(done.stdout), watch


def test_a_watched_line_shows_its_names_before_and_what_it_made_where_the_example_went_wrong(
        tmp_path):
    output, saw, watch = _watch(tmp_path, [2, 12, 33, 34, 39])
    assert [(n, names) for _, n, names in watch] == [
        (2, ["limit", "seq", "n", "drop_tail"]), (12, ["self.segments"]), (33, ["text"]),
        (34, ["y", "x"]), (39, ["d", "k"])]
    # an assignment: the names it read, then the name it set
    assert saw[0] == Saw(2, False, {"seq": "[0, 1, 2, 3]", "n": "2", "drop_tail": "True"},
                         {"limit": "2"}, line=3, also={"step": "2"})
    # an instance's own attribute; the statement that went wrong, not the one that ran it
    # first (Loud's isdir, whose `segments` is a property: never read)
    assert saw[1] == Saw(3, False, {"self.segments": "[]"}, {}, returned="False", line=4)
    # a long string is cut
    assert saw[2].after == {"text": repr("x" * 500)[:VALUE_CHARS] + "..."}
    # run where the example went right (half(4)), then wrong (half(5)): the wrong one
    # the function's other plain locals beside (`loud`, a Loud, is not shown)
    assert saw[3] == Saw(5, False, {"x": "5"}, {"y": "2"}, line=6, also={
        "items": "None", "text": repr("x" * 500)[:VALUE_CHARS] + "..."})
    assert saw[4] == Saw(6, False, {"d": "{'a': 1}", "k": "'b'"}, {}, raised="KeyError",
                         line=7)
    sentence = saw_sentence(saw[0], "print(cut(True, 2, 2, [0, 1, 2, 3]))")
    assert sentence == ("When the issue's example ran this line (in `print(cut(True, 2, 2, "
                        "[0, 1, 2, 3]))`, which went wrong), it had seq = [0, 1, 2, 3], n = 2, "
                        "drop_tail = True (and step = 2); after it, limit = 2.")
    assert saw_sentence(saw[4], "print(pick({'a': 1}, 'b'))").endswith(
        "it had d = {'a': 1}, k = 'b'; it raised KeyError.")


def test_a_line_the_example_never_ran_and_a_line_without_names_show_nothing(tmp_path):
    _, saw, watch = _watch(tmp_path, [16, 43, 28])
    # L16 (a docstring) names nothing; L43 never runs
    assert [n for _, n, _ in watch] == [43, 28] and 0 not in saw
    # L28 reads no value watching may show (`segments` is Loud's property, no attribute of
    # the instance's own): what it gave
    assert saw[1] == Saw(4, False, {}, {}, returned="False", line=5)
    assert saw_sentence(saw[1], "print(Loud().isdir())") == (
        "When the issue's example ran this line (in `print(Loud().isdir())`, which went "
        "wrong), it returned False.")
    assert saw_sentence(Saw(1, None), "x") == ""


def test_names_a_line_mentions_leave_out_keywords_builtins_strings_and_attributes():
    assert names_in("return self.segments == [] or (self.segments and x.y.z[-1] == 'a b')"
                    "  # self.note") == ["self.segments", "x.y"]
    assert names_in("even_sum = sum(sum(divmod(2 * d, 10)) for d in digits[-3::-2])") == [
        "even_sum", "d", "digits"]
    assert names_in('raise ValueError(f"bad {value}")') == []
    assert names_in("") == []


def test_what_a_values_check_printed_is_read_within_bounds():
    """The report is the repository's code's output: malformed lines are left out, the last
    line for a watched line stands (the report comes after the script's own output), texts
    are cut, and the sentence is bounded."""
    output = ('REPRO VALUES 0 {"statement": 1, "met": false, "before": {"a": "1"}}\n'
              'REPRO VALUES 0 {"statement": 2, "met": false, "before": {"a": "2"}}\n'
              'REPRO VALUES 1 {not json}\n'
              'REPRO VALUES 2 ["a list"]\n'
              f'REPRO VALUES 3 {{"statement": 1, "before": {{"v": "{"z" * 900}"}}}}\n')
    saw = read_values(output)
    assert sorted(saw) == [0, 3]
    assert saw[0].before == {"a": "2"}
    assert len(saw[3].before["v"]) == 200
    assert len(saw_sentence(saw[3], "s" * 2_000)) <= MAX_SAW_CHARS + 3


def test_the_values_report_is_bounded_first_lines_first(tmp_path):
    """Many watched lines with long values: the report keeps VALUES_REPORT_CHARS, the first
    lines watched kept."""
    body = "".join(f"    v{i} = s + '{i}'\n" for i in range(60))
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(f"def many(s):\n{body}    return 1\n")
    repro = reproduction_from("```python\nfrom pkg import many\n"
                              "print(many('q' * 70))  # expected 2\n```\n")
    assert repro is not None
    watch = [("pkg/__init__.py", i + 2, [f"v{i}", "s"]) for i in range(60)]
    program = tmp_path / "check.py"
    program.write_text(check_script(repro, values=watch))
    done = subprocess.run([sys.executable, str(program)], cwd=root, capture_output=True,
                          text=True, timeout=60)
    report = [line for line in done.stdout.splitlines() if line.startswith("REPRO VALUES")]
    assert 5 < len(report) < 60
    assert sum(len(line) + 1 for line in report) <= VALUES_REPORT_CHARS
    assert sorted(read_values(done.stdout)) == list(range(len(report)))


def test_the_examples_own_set_up_and_attributes_kept_in_slots_or_the_class_are_shown(tmp_path):
    """A value made in the example's set-up (an assignment the issue checks nothing of) is
    shown with that line of the example, before a statement that went right; an attribute
    of any local is read as the object keeps it: its own __dict__, its __slots__, its class
    (a constant), never through a property."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text('''\
class Link:
    __slots__ = ("expires", "unset")

    def __init__(self, expires):
        self.expires = expires


class Timer:
    LIMIT = 10

    @property
    def now(self):
        open("MARK", "w").write("property")
        return 5


def offset(sign, hours, link, timer):
    hours = -hours if sign == "-" else hours
    return hours * 60 + link.expires + link.unset * 0 if timer.LIMIT and False else hours
''')
    repro = reproduction_from("```python\nfrom pkg import offset, Link, Timer\n"
                              "d = offset('-', 3, Link(7), Timer())\n"
                              "print(offset('+', 2, Link(7), Timer()))  # expected 2\n"
                              "print(d)  # expected -4\n```\n")
    assert repro is not None
    watch = watched([("pkg/__init__.py", 18, "    hours = -hours if sign == '-' else hours"),
                     ("pkg/__init__.py", 19, "    return hours * 60 + link.expires + "
                      "link.unset * 0 if timer.LIMIT and timer.now else hours")])
    assert watch[1][2] == ["hours", "link.expires", "link.unset", "timer.LIMIT", "timer.now"]
    program = tmp_path / "check.py"
    program.write_text(check_script(repro, values=watch))
    done = subprocess.run([sys.executable, str(program)], cwd=root, capture_output=True,
                          text=True, timeout=60)
    assert "REPRO SUMMARY: 1 of 2 met" in done.stdout, done.stdout + done.stderr
    assert not (root / "MARK").exists()
    saw = read_values(done.stdout)
    assert saw[0] == Saw(0, None, {"hours": "3", "sign": "'-'"}, {"hours": "-3"}, line=2)
    assert saw_sentence(saw[0], statement_of(saw[0], repro)) == (
        "When the issue's example ran this line (in `d = offset('-', 3, Link(7), Timer())`), "
        "it had hours = 3, sign = '-'; after it, hours = -3.")
    # `unset` is a slot never set, `now` a property: neither shown
    assert saw[1].before == {"hours": "-3", "link.expires": "7", "timer.LIMIT": "10"}
    assert saw[1].returned == "-3"


def test_an_object_that_runs_code_when_read_is_never_read(tmp_path):
    """Proxies and mocks run code on `__dict__`, `__class__` or a missing attribute: a
    watched line that mentions their attributes shows nothing of them, and none of that
    code runs."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text('''\
def mark(what):
    open("MARK", "a").write(what)


class Proxy:
    @property
    def __dict__(self):
        mark("__dict__")
        return {"size": 1}

    @property
    def __class__(self):
        mark("__class__")
        return int

    def __getattr__(self, name):
        mark("__getattr__")
        return 1


def size(proxy, n):
    total = n + 1 if proxy is None else n + 2
    return total
''')
    repro = reproduction_from("```python\nfrom pkg import size, Proxy\n"
                              "print(size(Proxy(), 1))  # expected 2\n```\n")
    assert repro is not None
    watch = watched([("pkg/__init__.py", 22, "    total = n + proxy.size if proxy.other "
                      "else proxy.__dict__ and proxy.__class__")])
    program = tmp_path / "check.py"
    program.write_text(check_script(repro, values=watch))
    done = subprocess.run([sys.executable, str(program)], cwd=root, capture_output=True,
                          text=True, timeout=60)
    assert "REPRO SUMMARY: 0 of 1 met" in done.stdout, done.stdout + done.stderr
    assert not (root / "MARK").exists(), (root / "MARK").read_text()
    assert read_values(done.stdout)[0] == Saw(1, False, {"n": "1"}, {"total": "3"}, line=2)


def test_a_table_of_the_module_the_line_reads_is_shown(tmp_path):
    """`post = nth[abs(n) % 10]` (inflect's bug): the module-level table is what tells the
    model that 11 has a key of its own."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(
        'nth = {0: "th", 1: "st", 2: "nd", 3: "rd", 11: "th"}\n\n\n'
        'def ordinal(n):\n    post = nth.get(abs(n) % 10, "th")\n    return f"{n}{post}"\n')
    repro = reproduction_from("```python\nfrom pkg import ordinal\n"
                              "print(ordinal(11))  # expected 11th\n```\n")
    assert repro is not None
    watch = watched([("pkg/__init__.py", 5, '    post = nth.get(abs(n) % 10, "th")')])
    assert watch[0][2] == ["post", "nth", "n"]  # a method called: its object
    program = tmp_path / "check.py"
    program.write_text(check_script(repro, values=watch))
    done = subprocess.run([sys.executable, str(program)], cwd=root, capture_output=True,
                          text=True, timeout=60)
    saw = read_values(done.stdout)[0]
    assert saw_sentence(saw, statement_of(saw, repro)) == (
        "When the issue's example ran this line (in `print(ordinal(11))`, which went wrong), "
        "it had nth = {0: 'th', 1: 'st', 2: 'nd', 3: 'rd', 11: 'th'}, n = 11; after it, "
        "post = 'st'.")

"""The reproduction check (helps/reproduction.py): an issue's Python turned into a program that
says, per expectation the issue writes, whether it is met. Every issue of the repository dev
set (bench/repos/*/issue.md) is read, and its check run against a small stand-in of its
package, once with the bug (it must fail) and once fixed (it must pass)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from baseagent.helps.reproduction import (Origin, Reproduction, Spectrum, check_script,
                                          read_origins, read_result, read_spectrum, read_trace,
                                          reproduction_from)
from helpers import REPO

ISSUES = sorted((REPO / "bench" / "repos").glob("*/issue.md"))

# A stand-in of each package: just enough of its API for the issue's reproduction, with the
# injected bug when BUG is true.
FAKES: dict[str, dict[str, str]] = {
    "arrow-humanize-hours": {"arrow.py": """
        class Arrow:
            def __init__(self, t): self.t = t
            def shift(self, hours=0): return Arrow(self.t + hours * 3600)
            def humanize(self, other):
                d = self.t - other.t
                h = abs(d) // 3600
                word = "an hour" if h < 2 or (BUG and abs(d) == 7200) else f"{h} hours"
                return f"in {word}" if d > 0 else f"{word} ago"
        def utcnow(): return Arrow(0)
        """},
    "cachetools-ttl-expiry": {"cachetools.py": """
        class TTLCache(dict):
            def __init__(self, maxsize, ttl, timer):
                self.ttl, self.timer, self.t = ttl, timer, {}
            def __setitem__(self, k, v):
                self.t[k] = self.timer()
                super().__setitem__(k, v)
            def __contains__(self, k):
                return super().__contains__(k) and self.timer() < self.t[k] + self.ttl
            def __getitem__(self, k):
                expired = self.timer() > self.t[k] + self.ttl if BUG \\
                    else self.timer() >= self.t[k] + self.ttl
                if expired:
                    raise KeyError(k)
                return super().__getitem__(k)
        """},
    "croniter-leap-century": {"croniter.py": """
        from datetime import datetime
        class croniter:
            def __init__(self, expr, start): self.start = start
            def get_next(self, kind):
                y = self.start.year
                leap = y % 4 == 0 and (y % 100 != 0 or (y % 400 == 0 and not BUG))
                return datetime(y, 2, 29 if leap else 28)
        """},
    "funcy-partition-last": {"funcy.py": """
        def lpartition(n, step, seq=None):
            if seq is None:
                seq, step = step, n
            sliced = isinstance(seq, (list, str))
            seq = list(seq)
            end = len(seq) - n + 1 - (1 if BUG and sliced else 0)
            return [seq[i:i + n] for i in range(0, end, step)]
        partition = lpartition
        """},
    "furl-path-isdir": {"furl.py": """
        class _Path:
            def __init__(self, p): self.p = p
            @property
            def isdir(self): return self.p.endswith("/") or (self.p == "" and not BUG)
            @property
            def isfile(self): return not self.isdir
        class furl:
            def __init__(self, url):
                host, slash, rest = url.split("://", 1)[1].partition("/")
                self.path = _Path(slash + rest)
        """},
    "glom-path-index": {"glom.py": """
        class _T:
            def __init__(self, parts=()): self.parts = parts
            def __getattr__(self, name):
                if name.startswith("__"):
                    raise AttributeError(name)
                return _T(self.parts + (name,))
        T = _T()
        class Path:
            def __init__(self, *parts):
                if len(parts) == 1 and isinstance(parts[0], _T):
                    parts = parts[0].parts
                self.parts = tuple(parts)
            def __getitem__(self, i):
                return Path() if BUG and i == 0 else Path(self.parts[i])
            def __eq__(self, other): return isinstance(other, Path) and other.parts == self.parts
            def __repr__(self): return "Path(%s)" % ", ".join(map(repr, self.parts))
        """},
    "inflect-ordinal-teens": {"inflect.py": """
        class engine:
            def ordinal(self, n):
                if n % 100 in (11, 12, 13) and not BUG:
                    return f"{n}th"
                return f"{n}" + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        """},
    "iso8601-negative-offset": {"iso8601.py": """
        from datetime import datetime, timedelta, timezone
        def parse_date(s):
            sign = -1 if s[-6] == "-" else 1
            h, m = int(s[-5:-3]), int(s[-2:])
            off = timedelta(hours=-h, minutes=m) if BUG and sign < 0 \\
                else sign * timedelta(hours=h, minutes=m)
            return datetime(2013, 10, 15, 15, tzinfo=timezone(off))
        """},
    "markdown-toc-slug-case": {"markdown.py": """
        def markdown(text, extensions=()):
            title = text.lstrip("# ").strip()
            slug = title.replace(" ", "-")
            return f'<h1 id="{slug if BUG else slug.lower()}">{title}</h1>'
        """},
    "marshmallow-length-max": {
        "marshmallow/__init__.py": """
        from . import validate
        from .validate import ValidationError
        """,
        "marshmallow/validate.py": """
        class ValidationError(Exception):
            pass
        class Length:
            def __init__(self, min=None, max=None): self.min, self.max = min, max
            def __call__(self, v):
                if len(v) < self.min or (len(v) >= self.max if BUG else len(v) > self.max):
                    raise ValidationError(f"Length must be between {self.min} and {self.max}.")
                return v
        """},
    "validators-card-checksum": {"validators.py": """
        class ValidationError(Exception):
            def __bool__(self): return False
        def _luhn(s):
            digits = [int(c) for c in reversed(s)]
            total = sum(digits[0::2]) + sum(sum(divmod(2 * d, 10)) for d in digits[1::2])
            return total % 10 == (1 if BUG else 0)
        def card_number(s): return True if _luhn(s) else ValidationError("card_number")
        def visa(s): return card_number(s) if s.startswith("4") else ValidationError("visa")
        """},
    "voluptuous-range-max": {"voluptuous.py": """
        class MultipleInvalid(Exception):
            pass
        class Range:
            def __init__(self, min=None, max=None): self.min, self.max = min, max
            def __call__(self, v):
                if v < self.min or (v >= self.max if BUG else v > self.max):
                    raise MultipleInvalid(f"value must be at most {self.max}")
                return v
        class Schema:
            def __init__(self, s): self.s = s
            def __call__(self, v): return self.s(v)
        """},
}


def run_check(repro: Reproduction, cwd: Path):
    program = cwd.parent / f"{cwd.name}-check.py"
    program.write_text(check_script(repro))
    done = subprocess.run([sys.executable, str(program)], cwd=cwd, capture_output=True,
                          text=True, timeout=60)
    return read_result(done.stdout)


def stand_in(tmp_path: Path, task: str, bug: bool) -> Path:
    root = tmp_path / ("buggy" if bug else "fixed")
    for name, source in FAKES[task].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"BUG = {bug}\n" + textwrap.dedent(source))
    return root


def test_every_dev_set_issue_has_a_stand_in():
    assert len(ISSUES) >= 12
    assert {p.parent.name for p in ISSUES} == set(FAKES)


@pytest.mark.parametrize("issue", ISSUES, ids=[p.parent.name for p in ISSUES])
def test_each_issue_gives_a_check_that_fails_with_the_bug_and_passes_fixed(tmp_path, issue):
    repro = reproduction_from(issue.read_text(encoding="utf-8"))
    assert repro is not None and repro.expectations
    buggy = run_check(repro, stand_in(tmp_path, issue.parent.name, bug=True))
    assert buggy.finished and buggy.total == len(repro.expectations)
    assert buggy.met < buggy.total and not buggy.passed, buggy.output
    fixed = run_check(repro, stand_in(tmp_path, issue.parent.name, bug=False))
    assert fixed.passed, fixed.output
    assert "REPRO SUMMARY" in fixed.output.splitlines()[-1]


def issue(code: str, language: str = "python") -> str:
    return f"# Something is wrong\n\nSee:\n\n```{language}\n{textwrap.dedent(code)}```\n"


FORMS = [
    # name, issue, [(kind, expected)]
    ("got -- expected", issue("print(f(1))  # 2 -- expected 3\n"), [("value", "3")]),
    ("prints X, expected Y", issue('print(f(1))  # prints "a", expected "b"\n'),
     [("value", '"b"')]),
    ("should be", issue("x = f(1)  # should be 3\n"), [("value", "3")]),
    ("expected an exception", issue("print(d['k'])  # 1, expected a KeyError\n"),
     [("raises", "KeyError")]),
    ("raises X should be", issue("f(1)  # should raise ValueError\n"), [("raises", "ValueError")]),
    ("the expected output on the next comment line",
     issue("print(f(1))\n# 2\n# expected: 3\n"), [("value", "3")]),
    ("an assert line", issue("assert f(1) == 3\n"), [("assert", "")]),
    ("a line shown as fine", issue("print(f(2))  # 4 (fine)\n"), [("value", "4")]),
    ("a bare comment is not an expectation", issue("print(f(1))  # 2\n"), []),
    ("unexpected is not expected", issue("print(f(1))  # unexpected 2\n"), []),
    ("a >>> session", issue(">>> f(1)\n3\n>>> d['k']\nTraceback (most recent call last):\n"
                            "  ...\nKeyError: 'k'\n", "pycon"),
     [("value", "3"), ("raises", "KeyError")]),
    ("an untagged block with code", issue("import m\nprint(m.f())  # expected 1\n", ""),
     [("value", "1")]),
]


@pytest.mark.parametrize("name,text,expected", FORMS, ids=[f[0] for f in FORMS])
def test_expectations_read_the_ways_users_write_them(name, text, expected):
    repro = reproduction_from(text)
    assert repro is not None
    assert [(e.kind, e.expected) for e in repro.expectations] == expected


NOT_CODE = [
    ("no code", "It gives 2 where the docs say 3."),
    ("a traceback", issue("Traceback (most recent call last):\n  File x\nKeyError: 1\n", "")),
    ("a shell block", issue("pip install m\n", "bash")),
    ("output only", issue("in an hour\n", "")),
]


@pytest.mark.parametrize("name,text", NOT_CODE, ids=[n[0] for n in NOT_CODE])
def test_an_issue_without_python_has_no_reproduction(name, text):
    assert reproduction_from(text) is None


FUNCTIONS = "def f(x):\n    return x + 1\n"


def test_several_blocks_make_one_script_and_the_lines_stay_the_issues(tmp_path):
    (tmp_path / "m.py").write_text(FUNCTIONS)
    text = (issue("from m import f\n") + "and then\n"
            + issue("print(f(1))  # expected 2\nprint(f(2))  # 4, expected 3\n"
                    "assert f(0) == 1\n"))
    repro = reproduction_from(text)
    assert repro is not None and repro.script.splitlines()[1] == "print(f(1))  # expected 2"
    result = run_check(repro, tmp_path)
    assert (result.met, result.total, result.finished) == (3, 3, True), result.output
    assert "REPRO 2/3 MET line 3: print(f(2)) -> gave 3; expected 3" in result.output
    assert result.report() == "\n".join(
        [line for line in result.output.splitlines() if line.startswith("REPRO ")])


EXPECTED_OUTPUT = """# f is off by one

```python
from m import f
print(f(1))
print(f(2))
```

Expected output:

```
2
3
```

Actual output:

```
2
4
```
"""


def test_a_block_of_expected_output_checks_what_the_script_prints(tmp_path):
    repro = reproduction_from(EXPECTED_OUTPUT)
    assert repro is not None
    assert [(e.kind, e.expected, e.line) for e in repro.expectations] == [("output", "2\n3", 0)]
    (tmp_path / "m.py").write_text(FUNCTIONS)
    assert run_check(repro, tmp_path).passed
    (tmp_path / "m.py").write_text("def f(x):\n    return x + x\n")
    result = run_check(repro, tmp_path)
    assert (result.met, result.total) == (0, 1)
    assert "REPRO 1/1 NOT MET line 0: the script's output -> printed 2 / 4; expected 2 / 3" \
        in result.output
    # An output block introduced as what happens now is not an expectation.
    actual_only = EXPECTED_OUTPUT.replace("Expected output:", "What I get:")
    assert reproduction_from(actual_only).expectations == []


def test_a_script_without_expectations_still_runs_and_reports_how_it_ended(tmp_path):
    (tmp_path / "m.py").write_text(FUNCTIONS)
    repro = reproduction_from(issue("from m import f\nprint(f(1))\nf('x')\n"))
    assert repro is not None and repro.expectations == []
    result = run_check(repro, tmp_path)
    assert (result.met, result.total, result.finished) == (0, 0, True)
    assert "2\n" in result.output and "stopped at line 3: raised TypeError" in result.ended
    assert not result.passed


def test_an_expectation_after_a_crash_is_not_reached(tmp_path):
    (tmp_path / "m.py").write_text(FUNCTIONS)
    repro = reproduction_from(issue("from m import f\ny = f('x')  # expected 2\n"
                                    "print(f(1))  # expected 2\n"))
    result = run_check(repro, tmp_path)
    assert (result.met, result.total) == (0, 2)
    assert "REPRO 1/2 NOT MET line 2: y = f('x') -> raised TypeError" in result.output
    assert "REPRO 2/2 NOT MET line 3: print(f(1)) -> not reached" in result.output


def test_the_scripts_own_output_is_bounded(tmp_path):
    repro = reproduction_from(issue("for i in range(10**5):\n    print('x' * 100)\n"
                                    "print(1)  # expected 1\n"))
    result = run_check(repro, tmp_path)
    assert result.passed and len(result.output) < 10_000
    assert "output was cut" in result.output


def test_a_program_stopped_at_its_timeout_reads_as_unfinished():
    output = ("REPRO 1/3 MET line 2: f(1) -> gave 2; expected 2\n"
              "REPRO 2/3 NOT MET line 3: f(2) -> gave 2; expected 3\n")
    result = read_result(output)
    assert (result.met, result.total, result.finished, result.passed) == (1, 3, False, False)
    assert [r.met for r in result.results] == [True, False]
    assert result.report().splitlines()[-1] == ("REPRO SUMMARY: 1 of 3 met; the program did "
                                                "not finish (stopped at its timeout?)")
    assert read_result("").total == 0


def test_the_script_and_the_expectations_are_bounded():
    long = issue("".join(f"print({i})  # expected {i}\n" for i in range(3_000)))
    repro = reproduction_from(long)
    assert repro is None or len(repro.expectations) <= 50
    # Comments built to make the patterns backtrack are read only in part.
    hostile = issue("print(1)  # " + "(" * 5_000 + " " * 5_000 + "expected\n"
                    "print(2)  # " + "xError" * 1_500 + "\n")
    assert reproduction_from(hostile) is not None
    few = issue("".join(f"print({i})  # expected {i}\n" for i in range(200)))
    repro = reproduction_from(few)
    assert repro is not None and len(repro.expectations) == 50


def _traced(tmp_path: Path, module: str, example: str, lines: tuple[int, int]
            ) -> subprocess.CompletedProcess[str]:
    """The check of an issue's example (`from pkg import half`, then `example`) run traced
    on `lines` of a package whose __init__ is `module`."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(module)
    repro = reproduction_from(f"```python\nfrom pkg import half\n{example}```\n")
    assert repro is not None
    program = tmp_path / "check.py"
    program.write_text(check_script(repro, trace=[("pkg/__init__.py", *lines)]))
    return subprocess.run([sys.executable, str(program)], cwd=root, capture_output=True,
                          text=True, timeout=60)


def test_a_traced_check_prints_the_lines_of_the_places_it_ran_in_order(tmp_path):
    """The line search's trace: the lines of the places given that the example ran, in the
    order they ran (a function called twice, twice), and nothing of code outside them."""
    done = _traced(tmp_path, "def helper(x):\n    return x\n\n\ndef half(x):\n    if x < 0:\n"
                   "        return 0\n    return helper(x) // 2\n",
                   "print(half(5))  # expected 3\nprint(half(-1))  # expected 0\n", (5, 8))
    assert read_result(done.stdout).total == 2
    assert "REPRO TRACE 0:6 0:8 0:6 0:7\n" in done.stdout
    assert read_trace(done.stdout) == [(0, 6), (0, 8), (0, 6), (0, 7)]
    assert read_trace("REPRO SUMMARY: 1 of 1 met; the script ran to its end\n") == []
    # the spectrum: half(5) gives 2 (not met) and runs L6, L8; half(-1) gives 0 (met): L6, L7
    assert "REPRO SPECTRUM 1 1 0:6:1:1 0:8:1:0 0:7:0:1\n" in done.stdout
    spectrum = read_spectrum(done.stdout)
    assert (spectrum.failed, spectrum.passed) == (1, 1)
    assert spectrum.suspicion(0, 8) == 1.0 and spectrum.suspicion(0, 7) == 0.0
    assert 0 < spectrum.suspicion(0, 6) < 1 and spectrum.suspicion(0, 99) == 0.0
    assert read_spectrum("REPRO TRACE 0:6\n") == Spectrum()


def test_a_line_the_examples_own_set_up_ran_counts_as_run_in_every_statement(tmp_path):
    """`x = half(4)` has no expectation: the lines it runs may feed any statement after."""
    done = _traced(tmp_path, "def half(x):\n    if x < 0:\n        return 0\n    return x // 2\n",
                   "x = half(4)\nprint(half(-1))  # expected 0\nprint(x)  # expected 3\n", (1, 4))
    assert "REPRO SPECTRUM 1 1 0:1:1:1 0:2:1:1 0:4:1:1 0:3:0:1\n" in done.stdout


def test_an_origins_check_names_the_function_that_returned_part_of_the_wrong_result(tmp_path):
    """The repository probe's origins: `slug` returned "Hello-World", a part of the wrong
    heading and of nothing it should be; `heading` returned the wrong result whole (what
    carries it, not where it came from), `title` a part the right one holds too, and the
    tests' helper is no origin."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text(textwrap.dedent("""\
        def slug(value):
            return "-".join(value.split())


        def title(value):
            return value.strip()


        def heading(text):
            text = title(text)
            return f'<h1 id="{slug(text)}">{text}</h1>'
        """))
    (root / "tests" / "helpers.py").write_text("def slug_of(x):\n    return x.split('\"')[1]\n")
    repro = reproduction_from(textwrap.dedent("""\
        ```python
        import sys; sys.path.insert(0, "tests")
        from helpers import slug_of
        from pkg import heading
        slug_of(heading("Hello World "))
        print(heading("Hello World "))
        # expected: <h1 id="hello-world">Hello World</h1>
        print(heading("ok"))  # expected <h1 id="ok">ok</h1>
        ```
        """))
    assert repro is not None
    program = tmp_path / "check.py"
    program.write_text(check_script(repro, origins=True))
    done = subprocess.run([sys.executable, str(program)], cwd=root, capture_output=True,
                          text=True, timeout=60)
    assert read_result(done.stdout).met == 1, done.stdout + done.stderr
    assert read_origins(done.stdout) == [Origin("pkg/__init__.py", 1, "slug", 11)]
    assert read_origins("REPRO ORIGINS ../x.py:1:f:3 a.py:2:g:4 junk\n") == \
        [Origin("a.py", 2, "g", 4)]
    assert read_origins("REPRO SUMMARY: 1 of 1 met; the script ran to its end\n") == []

"""Reading a test run's output: counts, and each failure on its own (helps/test_report.py).
The outputs are real runs of pytest and unittest on a small module."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from baseagent.helps.test_report import MAX_FAILURE_LINES, read_report

TESTS = """\
import unittest

from mod import f


class T(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(f(1), 1)

    def test_bad(self):
        self.assertEqual(f(2), 3)

    def test_raises(self):
        with self.assertRaises(ValueError) as err:
            f(-1)
        self.assertEqual(err.exception.args[0], "negative")
"""


def _run(tmp_path: Path, *command: str) -> str:
    (tmp_path / "mod.py").write_text("def f(x):\n    return x\n")
    (tmp_path / "mod_test.py").write_text(TESTS)
    proc = subprocess.run([sys.executable, *command], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    return proc.stdout + proc.stderr


def test_pytest_counts_and_one_section_per_failing_test(tmp_path):
    output = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "mod_test.py")
    report = read_report("Exit code: 1\nWall time: 0.4 seconds\nOutput:\n" + output)
    assert (report.passed, report.failed) == (1, 2) and report.score == 1
    assert report.summary == "2 failed, 1 passed"
    assert [f.name for f in report.failures] == ["T.test_bad", "T.test_raises"]
    bad = report.failures[0].text
    assert "self.assertEqual(f(2), 3)" in bad and "AssertionError: 2 != 3" in bad
    assert "test_raises" not in bad  # each failure alone
    assert "AssertionError: ValueError not raised" in report.failures[1].text


def test_unittest_counts_and_failures(tmp_path):
    output = _run(tmp_path, "-m", "unittest", "mod_test")
    report = read_report(output)
    assert (report.passed, report.failed) == (1, 2)
    assert {f.name for f in report.failures} == {"test_bad", "test_raises"}
    assert any("2 != 3" in f.text for f in report.failures)


def test_a_run_that_collects_nothing_scores_below_any_that_passes(tmp_path):
    (tmp_path / "mod.py").write_text("def f(x:\n")  # a syntax error: collection fails
    (tmp_path / "mod_test.py").write_text(TESTS)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "mod_test.py"], cwd=tmp_path, capture_output=True, text=True)
    report = read_report(proc.stdout)
    assert report.passed == 0 and report.failed == 1 and report.score == 0
    assert report.failures and "SyntaxError" in report.failures[0].text
    unknown = read_report("make: *** [all] Error 2\nsomething broke\n")
    assert unknown.passed is None and unknown.score == -1
    assert unknown.failures[0].name == "" and "something broke" in unknown.failures[0].text
    assert read_report("").failures == ()


def test_a_long_failure_keeps_its_start_and_where_it_failed():
    body = "\n".join(f"    line {i}" for i in range(200))
    output = f"____ test_long ____\n{body}\nE   AssertionError: the end\n==== 1 failed in 0.1s ===="
    text = read_report(output).failures[0].text
    assert len(text.splitlines()) <= MAX_FAILURE_LINES + 1
    assert "line 0" in text and "AssertionError: the end" in text and "line 100" not in text

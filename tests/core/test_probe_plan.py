"""The whole-file probe's plan (helps/probe_plan.py): which message comes next, which attempt is
the best, and when the repair rounds stop. No model, no files: the loop's tests
(test_loop_recovery.py) run it end to end."""
from __future__ import annotations

from baseagent.helps.probe_plan import (MAX_IDLE_SEARCHES, MAX_MISSES, MAX_SEARCH_ROUNDS,
                                        Attempt, ProbePlan)
from baseagent.helps.test_report import Failure
from baseagent.helps.test_report import TestReport as Report


def attempt(passed: int, *failing: str) -> Attempt:
    report = Report(passed, len(failing), tuple(Failure(n, f"E  {n} failed") for n in failing),
                        f"{len(failing)} failed, {passed} passed")
    return Attempt({"m.py": f"# passes {passed}\n"}, report)


def plan(**kw) -> ProbePlan:
    return ProbePlan("Implement m.py. Run: pytest -q m_test.py", {"m.py": "pass\n"},
                     {"m_test.py": "def test_a(): ...\n"}, "pytest -q m_test.py", **kw)


def test_the_openings_then_rounds_on_the_best_attempt():
    p = plan()
    first, second = p.next_message(), p.next_message()
    assert "m_test.py\n```py" not in first.text and "m_test.py\n```py" in second.text
    assert first.start == second.start == {"m.py": "pass\n"} and not first.follow_up
    p.took(attempt(1, "test_b", "test_c"))
    p.took(attempt(0, "test_a", "test_b", "test_c"))  # worse: the best stays
    round_one = p.next_message()
    assert round_one.follow_up and round_one.start == {"m.py": "# passes 1\n"}
    assert "(test_b)" in round_one.text and "gives: 2 failed, 1 passed" in round_one.text
    p.took(None)  # wrote nothing: a miss, and the next round shows the next failing test
    assert "(test_c)" in p.next_message().text
    p.took(attempt(2, "test_c"))  # better: the best, and its first failing test next
    assert "(test_c)" in p.next_message().text and p.misses == 0


def test_rounds_stop_after_misses_or_the_most_rounds():
    p = plan()
    p.next_message(), p.next_message()
    p.took(attempt(1, "test_b"))
    for _ in range(MAX_MISSES):
        assert p.next_message() is not None
        p.took(attempt(1, "test_b"))  # as good as the best is not better
    assert p.next_message() is None
    capped = plan(max_rounds=1)
    capped.next_message(), capped.next_message()
    capped.took(attempt(1, "test_b"))
    assert capped.next_message() is not None
    capped.took(attempt(2, "test_c"))
    assert capped.next_message() is None
    never = plan()
    never.next_message(), never.next_message()
    never.took(None), never.took(None)
    assert never.next_message() is None  # nothing to repair


def test_a_repair_round_that_misses_turns_the_next_rounds_into_searches():
    p = plan(candidates=3)
    p.next_message(), p.next_message()
    p.took(attempt(1, "test_b", "test_c"))
    assert not p.next_message().candidates  # the first repair round: one reply, as before
    p.took(attempt(1, "test_b", "test_c"))  # no better: a miss
    search = p.next_message()
    assert search.start == {"m.py": "# passes 1\n"} and not search.follow_up
    assert [c.kind for c in search.candidates] == ["assertion", "fresh", "fresh"]
    one, fresh, again = (c.text for c in search.candidates)
    assert "(test_c)" in one and "passes 1" in one
    assert fresh == again == p.openings[-1] and "passes 1" not in fresh  # one prompt, twice
    # every prompt opens with the first message, and each after the second with the second:
    # a server's prompt cache serves that prefix and reads only what differs
    assert p.openings[-1].startswith(p.openings[0]) and one.startswith(p.openings[-1])
    p.took(None)
    again = p.next_message()  # another search round, its prompts in reverse: it opens
    assert [c.kind for c in again.candidates] == ["fresh", "fresh", "assertion"]  # as the
    assert again.text == fresh  # last closed, so a one-slot server's cache serves it
    p.took(None)
    assert p.next_message() is None  # two search rounds in a row drew nothing new
    unchanged = plan()  # candidates=0: the repair rounds alone
    unchanged.next_message(), unchanged.next_message()
    unchanged.took(attempt(1, "test_b"))
    unchanged.next_message()
    unchanged.took(None)
    assert not unchanged.next_message().candidates


def test_each_search_round_opens_with_the_kind_of_prompt_the_one_before_closed_with():
    p = plan(candidates=3)
    p.next_message(), p.next_message()
    p.took(attempt(1, "test_b"))
    p.next_message()
    p.took(attempt(1, "test_b"))  # the repair round (a failing-test prompt) misses
    kinds = []
    for n in range(4):
        kinds.append([c.kind for c in p.next_message().candidates])
        p.took(attempt(1, "test_b") if n % 2 else attempt(1, "test_b", f"test_{n}"))
    assert kinds[0][0] == "assertion"  # as the repair round before it
    assert all(before[-1] == after[0] for before, after in zip(kinds, kinds[1:]))
    assert all(sorted(k) == ["assertion", "fresh", "fresh"] for k in kinds)


def test_no_attempt_is_tested_twice_and_ties_go_to_the_smaller_change():
    p = plan(candidates=2)
    assert p.is_new({"m.py": "x\n"}) and not p.is_new({"m.py": "x\n"})
    assert p.change_size({"m.py": "pass\n"}) == 0
    assert p.change_size({"m.py": "a\nb\n"}) > p.change_size({"m.py": "a\n"})


def test_search_rounds_go_on_past_the_misses_while_they_find_something_new_to_test():
    """Repair rounds stop after MAX_MISSES; search rounds do not: sampled candidates differ
    where repair rounds repeat. They stop after MAX_IDLE_SEARCHES rounds in a row that drew
    nothing new, or after MAX_SEARCH_ROUNDS (the probe's share of the calls comes first)."""
    p = plan(candidates=3)
    p.next_message(), p.next_message()
    p.took(attempt(1, "test_b", "test_c"))
    p.next_message()
    p.took(attempt(1, "test_b", "test_c"))  # the repair round misses: searches from now on
    for _ in range(MAX_MISSES + 2):  # tested, no better: past the repair rounds' limit
        assert p.next_message().candidates
        p.took(attempt(1, "test_b", "test_c"))
    for _ in range(MAX_IDLE_SEARCHES - 1):
        assert p.next_message().candidates
        p.took(None)
    assert p.next_message().candidates
    p.took(attempt(1, "test_c", "test_b"))  # something new to test: the idle count starts over
    assert p.next_message().candidates
    p.took(None)
    assert p.next_message().candidates
    p.took(None)
    assert p.next_message() is None
    capped = plan(candidates=3)
    capped.next_message(), capped.next_message()
    capped.took(attempt(1, "test_b"))
    capped.next_message()
    capped.took(attempt(1, "test_b"))
    for _ in range(MAX_SEARCH_ROUNDS):
        assert capped.next_message().candidates
        capped.took(attempt(1, "test_b"))
    assert capped.next_message() is None


def test_a_probe_reply_is_enough_once_it_holds_each_file_and_opens_another_block(tmp_path):
    from types import SimpleNamespace

    from baseagent.helps.probe import _enough

    (tmp_path / "m.py").write_text("def f():\n    pass\n")
    ctx = SimpleNamespace(cwd=tmp_path, task="Implement f in m.py. Run: pytest -q m_test.py")
    p = ProbePlan(ctx.task, {"m.py": "def f():\n    pass\n"}, {}, "pytest -q m_test.py")
    whole = "m.py\n```python\ndef f():\n    return 1\n```\n\n"
    enough = _enough(p, ctx)
    assert enough(whole) is None  # the file, and nothing opened after it
    assert enough(whole + "m_test.py\n```python\nfrom m") == len(whole + "m_test.py\n")
    copy = "m_test.py\n```python\nfrom m import f\n\ndef test_f():\n    assert f() == 1\n```\n"
    for named in ("m_test.py", "path/to/m_test.py", "**m_test.py**", "tests/test_m.py:"):
        tests_first = _enough(p, ctx)  # a test file's block opens first: no further
        assert tests_first(f"m.py\n\n{named}\n```python\nfrom m") == len(f"m.py\n\n{named}\n")
    prose = _enough(p, ctx)  # a sentence over a block names no file
    assert prose("Here is the test_m.py fix:\n```python\n") is None
    after = _enough(p, ctx)  # the file, then the tests: the file is the reply
    assert after(whole + copy[:20]) == len(whole + "m_test.py\n")
    inline = _enough(p, ctx)  # a fence inside a line is no block
    assert inline(whole + "Run it with ```pytest```") is None
    excerpt = _enough(p, ctx)  # a piece of the file is not the file
    part = "m.py\n```python\nx = 1\n```\n"
    assert excerpt(part + "```python\n") is None

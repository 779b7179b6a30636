"""End to end: a task that names no file, in a repository (issue 45), through the CLI and the
scripted server with the compact profile: the code the issue's names lead to is shown with
it (helps/localised_code.py), the right file first."""
from __future__ import annotations

import textwrap
from pathlib import Path

from baseagent.helps.line_values import Saw, read_values
from helpers import run_agent

# A package whose function lives in a nested module, re-exported by both __init__ files,
# with a bug (2.5 rounds to 2) and a test suite that finds it.
REPOSITORY = {
    "shapes/__init__.py": "from .geometry import *\nfrom .legacy import scale\n",
    "shapes/geometry/__init__.py": "from .rounding import round_half, round_all\n\n"
                                   "__all__ = ['round_half', 'round_all']\n",
    "shapes/geometry/rounding.py": """\
        import math


        def round_half(value):
            \"\"\"Round to the nearest integer, halves away from zero: 2.5 -> 3.\"\"\"
            if value < 0:
                return -round_half(-value)
            return math.floor(value + 0.4)


        def round_all(values):
            return [round_half(v) for v in values]
        """,
    "shapes/legacy.py": "def scale(value, factor):\n    return value * factor\n\n\n"
                        "def round_half(value):  # unused, kept for old imports\n"
                        "    return round(value)\n",
    "tests/__init__.py": "",
    "tests/test_rounding.py": """\
        from shapes import round_all, round_half


        def test_halves_round_up():
            assert round_half(2.5) == 3


        def test_below_half():
            assert round_half(2.4) == 2


        def test_negative():
            assert round_half(-2.5) == -3


        def test_all():
            assert round_all([0.5, 1.5]) == [1, 2]
        """,
}
ISSUE = """# round_half(2.5) gives 2

`round_half(2.5)` gives 2 where the docs say 3:

```python
from shapes import round_half
print(round_half(2.5))   # 2, expected 3
```
"""


# The line search after a first reply that misses (helps/line_search.py): asked which line
# is wrong (as the run samples, then sampled), these replies name none; the two lines the
# issue's example ran (traced: L8, then L6) get three rewrites each, which these fail to give.
NAMES_NO_LINE = [{"content": "Nothing."}] * 2
NO_REWRITES = [{"content": "Nothing."}] * 6


def outside_line_search(requests: list[dict]) -> list[dict]:
    """The requests that are not the line search's (its system prompt asks no blocks)."""
    return [r for r in requests if "tools" in r or "SEARCH" in r["messages"][0]["content"]]


def notices(run) -> str:
    """The run's notices (error events), one a line."""
    return "\n".join(e.get("message", "") for e in run.events if e["type"] == "error")


def make_repository(root: Path, files: dict[str, str] = REPOSITORY) -> Path:
    """`files` (path: text, dedented) written under `root`."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_the_code_the_issue_leads_to_is_shown_with_it(scripted_server, workspace, home):
    make_repository(workspace)
    server = scripted_server([{"content": "The cause is the 0.4 in round_half."},
                              {"content": "That is all."}])
    run = run_agent(["-i", ISSUE, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    first = server.requests[0]["messages"][-1]["content"]
    assert first.startswith(ISSUE)
    shown = first[len(ISSUE):]
    # the right file first, the function with its lines numbered as read_file numbers them
    headers = [line for line in shown.splitlines() if ", function `" in line]
    assert headers[0] == "shapes/geometry/rounding.py, function `round_half` (lines 4-8):"
    assert "L8:     return math.floor(value + 0.4)" in shown
    assert "shapes/legacy.py" not in headers[0]
    assert "tests/test_rounding.py" in shown  # a hint, never shown as code to change
    assert "def test_halves_round_up" not in shown
    assert "call read_file with its file_path, an offset" in shown
    assert len(shown) <= 6_000


def test_a_task_that_names_its_file_is_sent_as_before(scripted_server, workspace, home):
    make_repository(workspace)
    task = "Fix round_half in shapes/geometry/rounding.py: 2.5 should round to 3."
    server = scripted_server([{"content": "Done."}, {"content": "Checked."}])
    run = run_agent(["-i", task, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    first = server.requests[0]["messages"][-1]["content"]
    assert "most likely lead to" not in first  # the named file is shown, as it always was
    assert first.startswith(task + "\n\nThe files named above, as they are now:")


def test_the_full_profile_shows_nothing_more(scripted_server, workspace, home):
    make_repository(workspace)
    server = scripted_server([{"content": "Done."}, {"content": "Checked."}])
    run = run_agent(["-i", ISSUE], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert server.requests[0]["messages"][-1]["content"] == ISSUE


# The repository probe (helps/repo_probe.py): the same issue with the suite's command.
TESTED_ISSUE = ISSUE + "\nThe tests are correct; don't change them. Run them with:\n" \
                       "python3 -m pytest -q tests\n"
FIX = """The 0.4 should be 0.5.

shapes/geometry/rounding.py
<<<<<<< SEARCH
    return math.floor(value + {old})
=======
    return math.floor(value + {new})
>>>>>>> REPLACE
"""


def test_a_search_replace_reply_fixes_the_issue_and_the_suite_proves_it(scripted_server,
                                                                       workspace, home):
    make_repository(workspace)
    server = scripted_server([{"content": FIX.format(old="0.4", new="0.5")}])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert len(server.requests) == 1
    probe = server.requests[0]
    assert "tools" not in probe and [m["role"] for m in probe["messages"]] == ["system", "user"]
    sent = probe["messages"][1]["content"]
    assert sent.startswith(TESTED_ISSUE)
    # the right file first, the function as the file has it (to copy into SEARCH)
    headers = [line for line in sent.splitlines() if ", function `" in line]
    assert headers[0] == "shapes/geometry/rounding.py, function `round_half` (lines 4-8):"
    assert "```python\ndef round_half(value):\n" in sent
    assert "\n    return math.floor(value + 0.4)\n" in sent
    # the issue's example run first: it shows the bug
    assert "REPRO 1/1 NOT MET line 2: print(round_half(2.5)) -> gave 2; expected 3" in sent
    assert "Wall time" not in sent
    assert "math.floor(value + 0.5)" in (workspace / "shapes/geometry/rounding.py").read_text()
    assert run.final_message == (
        "Edited shapes/geometry/rounding.py; the issue's example now gives what it expects "
        "(1 of 1); the tests pass (`python3 -m pytest -q tests` exited 0).")
    assert run.events[-1]["verification"]["by"] == "evidence"
    commands = [i["command"] for i in run.completed_items("command_execution")]
    # the example, where its wrong value came from and the suite before, then after the edit
    assert len(commands) == 5 and "pytest" in commands[2] and "pytest" in commands[4]


def test_refused_blocks_and_failing_tests_go_back_in_repair_rounds(scripted_server, workspace,
                                                                  home):
    make_repository(workspace)
    create = "\nshapes/helper.py\n<<<<<<< SEARCH\n=======\nHALF = 0.5\n>>>>>>> REPLACE\n"
    server = scripted_server([{"content": FIX.format(old="0.45", new="0.5") + create},
                              *NAMES_NO_LINE, *NO_REWRITES,
                              {"content": FIX.format(old="0.4", new="0.6")},  # breaks 2.4
                              {"content": FIX.format(old="0.4", new="0.5")}])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    requests = outside_line_search(server.requests)  # its own tests are below
    assert len(requests) == 3
    refused = requests[1]["messages"][-1]["content"]
    assert "its SEARCH text was not found in shapes/geometry/rounding.py" in refused
    # a new file is never written by the probe (what it writes, it puts back)
    assert "writing shapes/helper.py is not allowed here" in refused
    assert not (workspace / "shapes/helper.py").exists()
    failing = requests[2]["messages"][-1]["content"]
    assert "gives: 1 failed, 3 passed" in failing and "test_below_half" in failing
    assert [m["role"] for m in requests[2]["messages"]] == ["system", "user",
                                                                  "assistant", "user"]
    assert "math.floor(value + 0.5)" in (workspace / "shapes/geometry/rounding.py").read_text()
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_a_probe_that_fixes_nothing_puts_the_files_back_and_the_turn_goes_on(scripted_server,
                                                                            workspace, home):
    """...and at the end of the turn its best attempt is put back."""
    make_repository(workspace)
    before = (workspace / "shapes/geometry/rounding.py").read_text()
    # The first reply, the same again (the search starts), a search round that draws one new
    # reply (no blocks) and two repeats, then a round that draws nothing new: the probe ends.
    server = scripted_server([{"content": FIX.format(old="0.4", new="0.6")},
                              *NAMES_NO_LINE, *NO_REWRITES,
                              {"content": FIX.format(old="0.4", new="0.6")},
                              *[{"content": "Nothing."}] * 6,
                              {"content": "I could not find it."}, {"content": "Nothing."},
                              {"content": "Nothing."}, {"content": "Nothing."}])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    requests = outside_line_search(server.requests)  # its own tests are below
    # The conversation changed nothing; the probe's best attempt (0.6: the example met, 3
    # of 4 tests pass, where 1 did at the start) is what the turn leaves.
    assert (workspace / "shapes/geometry/rounding.py").read_text() \
        == before.replace("0.4", "0.6")
    assert "than the probe's best attempt (1 failed, 3 passed)" in notices(run)
    assert all("tools" not in r for r in requests[:8])
    assert [r.get("temperature") for r in requests[2:8]] == [0.7] * 6
    turn = requests[8]
    assert "tools" in turn  # the conversation, with the localised code shown
    assert "L8:     return math.floor(value + 0.4)" in turn["messages"][-1]["content"]
    assert not any("0.6" in str(m.get("content")) for m in turn["messages"])
    assert run.events[-1].get("verification", {}).get("by") != "evidence"


def test_a_turn_that_leaves_the_suite_worse_than_it_began_puts_the_files_back(scripted_server,
                                                                              workspace, home):
    make_repository(workspace)
    rounding = workspace / "shapes/geometry/rounding.py"
    before = rounding.read_text()
    # The probe: a reply with no blocks, a line search that names no line, the same reply
    # again, a search round of repeats (it ends).
    # The conversation then writes a module that no longer imports and stops.
    broken = {"tool_calls": [{"name": "write_file", "arguments": {
        "file_path": "shapes/geometry/rounding.py", "content": "def round_half(value:\n"}}]}
    server = scripted_server([*[{"content": "Nothing."}] * 13, broken,
                              *[{"content": "Done."}] * 4])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert "tools" in server.requests[13] and "tools" not in server.requests[12]
    assert rounding.read_text() == before
    assert "than the start (3 failed, 1 passed): its files were put back " \
           "(shapes/geometry/rounding.py)" in notices(run)
    writes = [c for i in run.completed_items("file_change") for c in i["changes"]]
    assert [c["path"].endswith("rounding.py") for c in writes[-1:]] == [True]


def test_a_turn_that_ends_no_worse_than_it_began_keeps_its_edits(scripted_server, workspace,
                                                                 home):
    make_repository(workspace)
    rounding = workspace / "shapes/geometry/rounding.py"
    fixed = rounding.read_text().replace("0.4", "0.5")
    edit = {"tool_calls": [{"name": "write_file", "arguments": {
        "file_path": "shapes/geometry/rounding.py", "content": fixed}}]}
    server = scripted_server([*[{"content": "Nothing."}] * 13, edit,
                              *[{"content": "Done."}] * 4])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert rounding.read_text() == fixed
    assert "put back" not in notices(run)


def test_when_a_repair_round_repeats_candidates_are_sampled_and_one_that_passes_is_kept(
        scripted_server, workspace, home):
    """At temperature 0 the model sends the same wrong fix again; from then on each round
    draws candidates at the repair temperature: the first from the best attempt and what it
    gave, the others from a fresh start (the opening alone: one prefix for the server's
    cache), and the first that passes wins."""
    make_repository(workspace)
    server = scripted_server([{"content": FIX.format(old="0.4", new="0.6")},
                              *NAMES_NO_LINE, *NO_REWRITES,
                              {"content": FIX.format(old="0.4", new="0.6")},  # the same
                              {"content": "I could not find it."},
                              {"content": FIX.format(old="0.4", new="0.5")}])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    requests = outside_line_search(server.requests)  # its own tests are below
    assert len(requests) == 4
    assert [r.get("temperature") for r in requests] == [None, None, 0.7, 0.7]
    shown, fresh = requests[2]["messages"], requests[3]["messages"]
    assert [m["role"] for m in shown] == ["system", "user", "assistant", "user"]
    assert "new})" not in shown[2]["content"] and "0.6" in shown[2]["content"]
    assert "gives: 1 failed, 3 passed" in shown[3]["content"]
    assert fresh == requests[0]["messages"]  # the opening alone
    assert "math.floor(value + 0.5)" in (workspace / "shapes/geometry/rounding.py").read_text()
    assert run.events[-1]["verification"]["by"] == "evidence"
    notices = [e["message"] for e in run.of_type("error")]  # notices travel as `error` items
    assert sum(m.startswith("repair round 1:") for m in notices) == 1
    assert any(m.startswith("search round 2: candidate 2 of 3 at temperature 0.7, a fresh "
                            "start from the issue and its code") for m in notices), notices


WHOLE_FUNCTION = """The bug is the 0.4 in `round_half`. SEARCH/REPLACE blocks to fix it:

shapes/geometry/rounding.py, function `round_half` (lines 4-8):
```python
    def round_half(value):
        \"\"\"Round to the nearest integer, halves away from zero: 2.5 -> 3.\"\"\"
        if value < 0:
            return -round_half(-value)
        return math.floor(value + 0.5)
```
"""


def test_a_reply_with_the_whole_function_instead_of_blocks_is_merged_by_name(
        scripted_server, workspace, home):
    """Seen with the 1.5B model on a repository task: asked for SEARCH/REPLACE blocks, it
    sends the function it was shown, fixed, as a plain (indented) block after naming its
    file; it is merged into that file by name, and the suite judges it."""
    make_repository(workspace)
    server = scripted_server([{"content": WHOLE_FUNCTION}])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert len(server.requests) == 1
    fixed = (workspace / "shapes/geometry/rounding.py").read_text()
    assert "math.floor(value + 0.5)" in fixed and fixed.startswith("import math\n")
    assert "def round_all(values):" in fixed  # the rest of the file as it was
    assert (workspace / "shapes/legacy.py").read_text() == REPOSITORY["shapes/legacy.py"]
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_in_the_conversation_a_function_sent_whole_is_merged_into_its_file(scripted_server,
                                                                          workspace, home):
    """No test command: no probe, the conversation. The model sends the function it was
    shown, fixed, in a plain block after naming its file (a piece of the file, not all of
    it): merged by name, the rest of the file kept, and it is told so (not that the block
    was left out)."""
    make_repository(workspace)
    reply = WHOLE_FUNCTION.replace("SEARCH/REPLACE blocks to fix it", "The fix")
    server = scripted_server([{"content": reply}, {"content": "Fixed round_half."},
                              {"content": "Done: 2.5 now rounds to 3."}])
    run = run_agent(["-i", ISSUE, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    fixed = (workspace / "shapes/geometry/rounding.py").read_text()
    assert "math.floor(value + 0.5)" in fixed and "def round_all(values):" in fixed
    assert (workspace / "shapes/legacy.py").read_text() == REPOSITORY["shapes/legacy.py"]
    told = str(server.requests[1]["messages"])
    assert "Wrote shapes/geometry/rounding.py: the definitions in your code block replaced " \
        "those of the same names" in told
    assert "was not written" not in told and "leaves out" not in told
    changes = run.completed_items("file_change")
    assert [c["path"] for item in changes for c in item["changes"]] == [
        str(workspace / "shapes/geometry/rounding.py")]


LINE_FIX_OPENING = "Which line of the code shown above"


def test_after_a_first_reply_that_misses_the_line_search_asks_for_a_line_then_its_rewrite(
        scripted_server, workspace, home):
    """Which line is wrong (once as the run samples, once sampled), with the last lines the
    issue's example ran (L8, then L6), then a rewrite of each line in turn: one that would
    not parse is never written; one given without its indentation is put in at the line's
    own."""
    make_repository(workspace)
    rounding = workspace / "shapes/geometry/rounding.py"
    server = scripted_server([
        {"content": "Nothing to change."},  # the probe's first reply: no blocks
        {"content": "The check of negatives:\n```python\n    if value < 0:\n```"},
        {"content": "```python\nreturn math.floor(value + 0.4)\n```\nIt rounds down."},
        {"content": "```python\nif value < 0 and:\n```"},  # L6: does not parse
        {"content": "```python\nreturn math.floor(value + 0.5)\n```"}])  # L8, fixed
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert len(server.requests) == 5 and all("tools" not in r for r in server.requests)
    assert [r.get("temperature") for r in server.requests] == [None, None, 0.7, None, None]
    which = server.requests[1]["messages"]
    assert which[0]["content"].startswith("Act as an expert software developer. You are "
                                          "given an issue") and "SEARCH" not in which[0]["content"]
    assert which[1]["content"].startswith(TESTED_ISSUE)
    assert which[1]["content"].endswith(
        "Which line of the code shown above (of shapes/geometry/rounding.py, shapes/legacy.py, "
        "not of the issue's "
        "example) most likely causes the issue? Reply with that one line of the code, copied "
        "exactly as it is there, in one code block.")
    # every question shares the prefix up to its own end (a server's prompt cache)
    prefix = which[1]["content"][:which[1]["content"].index(LINE_FIX_OPENING)]
    for request in server.requests[2:]:
        assert request["messages"][0] == which[0]
        assert request["messages"][1]["content"].startswith(prefix)
    # each rewrite question says what the line saw where the example went wrong
    assert "```python\nif value < 0:\n```\nWhen the issue's example ran this line (in " \
        "`print(round_half(2.5))`, which went wrong), it had value = 2.5.\nRewrite it" in \
        server.requests[3]["messages"][1]["content"]
    assert "```python\nreturn math.floor(value + 0.4)\n```\nWhen the issue's example ran " \
        "this line (in `print(round_half(2.5))`, which went wrong), it had value = 2.5; it " \
        "returned 2.\nRewrite it" in server.requests[4]["messages"][1]["content"]
    assert rounding.read_text().splitlines()[7] == "    return math.floor(value + 0.5)"
    commands = [i["command"] for i in run.completed_items("command_execution")]
    # the example, its origins and the suite before, the example traced, then watched (the
    # values its lines saw), then the example and the suite after L8's rewrite only
    assert len(commands) == 7
    assert run.events[-1]["verification"]["by"] == "evidence"
    assert "line search: a rewrite of shapes/geometry/rounding.py:8 (1 of 3)" in notices(run)


def test_the_line_search_tries_the_last_lines_the_issues_example_ran(scripted_server,
                                                                     workspace, home):
    """Asked which line, the model names none; the example, run once more traced, ran L6
    then L8 of the code shown: L8 (the last) is rewritten first, and the rewrite that
    repeats the first reply's edit is not tested again; asked again, shown that rewrite as
    tried, a sampled one the tests pass is kept."""
    make_repository(workspace)
    server = scripted_server([{"content": FIX.format(old="0.4", new="0.6")}, *NAMES_NO_LINE,
                              {"content": "```python\n    return math.floor(value + 0.6)\n```"},
                              {"content": "Nothing."},  # L6
                              {"content": "```python\n    return math.floor(value + 0.5)\n```"}])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert [r.get("temperature") for r in server.requests] == [None, None, 0.7, None, None, 0.7]
    commands = [i["command"] for i in run.completed_items("command_execution")]
    # before, the first reply's, the trace, the values the lines saw, L8's
    assert len(commands) == 3 + 2 + 1 + 1 + 2
    traced = run.completed_items("command_execution")[5]["aggregated_output"]
    assert "REPRO TRACE 0:6 0:8" in traced
    watched = run.completed_items("command_execution")[6]["aggregated_output"]
    assert read_values(watched) == {  # L8 (rewritten first), then L6
        0: Saw(1, False, {"value": "2.5"}, {}, returned="2", line=2),
        1: Saw(1, False, {"value": "2.5"}, {}, line=2)}
    assert "line search: a rewrite of shapes/geometry/rounding.py:8 (2 of 3)" in notices(run)
    # asked again, L8 is shown what was tried in its place
    assert server.requests[-1]["messages"][1]["content"].endswith(
        "These were tried in its place and did not fix the issue:\n```python\n"
        "return math.floor(value + 0.6)\n```\nReply with a different rewrite.")
    assert "tried in its place" not in server.requests[3]["messages"][1]["content"]
    assert "math.floor(value + 0.5)" in (workspace / "shapes/geometry/rounding.py").read_text()


def test_a_first_reply_that_repeats_one_pattern_with_other_numbers_is_cut_and_the_search_goes_on(
        scripted_server, workspace, home):
    """Sending back a method, the 1.5B model went on to enumerate `elif diff == ... - 33:`
    with each number in turn: the reply is cut once one pattern (its numbers aside) repeats,
    counted as a miss, and the line search follows."""
    make_repository(workspace)
    table = "".join(f"    elif value == {i}.5:\n        return {i + 1}\n" for i in range(150))
    server = scripted_server([
        {"content": f"shapes/geometry/rounding.py\n```python\ndef round_half(value):\n{table}"},
        {"content": "```python\n    return math.floor(value + 0.4)\n```"}, {"content": "No."},
        {"content": "```python\n    return math.floor(value + 0.5)\n```"}])
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert "the reply repeated one pattern with only its numbers changing" in notices(run)
    assert len(server.requests) == 4
    assert "math.floor(value + 0.5)" in (workspace / "shapes/geometry/rounding.py").read_text()


# A function whose example runs five lines, the bug in the third last (`% 10` for `% 100`).
ORDINALS = {
    "words/__init__.py": "from .numbers import ordinal\n",
    "words/numbers.py": """\
        SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


        def ordinal(n):
            \"\"\"The ordinal of n: 1st, 2nd, 3rd, 4th, 11th, 21st.\"\"\"
            number = int(n)
            last = number % 10
            teen = number % 10 in (11, 12, 13)
            suffix = "th" if teen else SUFFIXES.get(last, "th")
            return f"{number}{suffix}"
        """,
    "tests/__init__.py": "",
    "tests/test_numbers.py": """\
        from words import ordinal


        def test_teens():
            assert [ordinal(n) for n in (11, 12, 13, 111)] == ["11th", "12th", "13th", "111th"]


        def test_others():
            assert [ordinal(n) for n in (1, 2, 3, 4, 21)] == ["1st", "2nd", "3rd", "4th", "21st"]
        """,
}
ORDINAL_ISSUE = """# ordinal(11) gives 11st

```python
from words import ordinal
print(ordinal(11))   # 11st, expected 11th
```

The tests are correct; don't change them. Run them with:
python3 -m pytest -q tests
"""


def test_after_the_lines_picked_each_other_line_the_example_ran_gets_one_rewrite(
        scripted_server, workspace, home):
    """The answers name no line; the trace's last two lines (L10, then L9) get a rewrite
    each that fails; then the other lines the example ran, the last run first (L8, the
    bug's), get one rewrite each, before any sampled one: L8's is kept."""
    make_repository(workspace, ORDINALS)
    server = scripted_server([
        {"content": "Nothing to change."}, *NAMES_NO_LINE,
        {"content": "```python\nreturn f\"{number}th\"\n```"},  # L10: fails the suite
        {"content": "Nothing."},  # L9
        {"content": "```python\nteen = number % 100 in (11, 12, 13)\n```"}])  # L8
    run = run_agent(["-i", ORDINAL_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert [r.get("temperature") for r in server.requests] == [None, None, 0.7, None, None,
                                                                None]
    traced = run.completed_items("command_execution")[3]["aggregated_output"]
    assert "REPRO TRACE 0:6 0:7 0:8 0:9 0:10" in traced
    # the table the function reads is shown after it (helps/module_names.py)
    assert "words/numbers.py, the module-level names `ordinal` reads (lines 1-1):\n```python\n" \
        'SUFFIXES = {1: "st", 2: "nd", 3: "rd"}\n```' in server.requests[0]["messages"][-1]["content"]
    said = notices(run)
    assert "line search: a rewrite of words/numbers.py:10 (1 of 3)" in said
    assert "line search: a rewrite of words/numbers.py:8, a line the issue's example ran" in said
    assert "teen = number % 100 in (11, 12, 13)" in (workspace / "words/numbers.py").read_text()
    assert run.events[-1]["verification"]["by"] == "evidence"


# Chunks of a list: the bug's line (L4) runs only for drop_tail=True, which the issue's
# example shows wrong; its second statement, right, runs the other branch.
CHUNKS = {
    "seqs/__init__.py": "from .cut import chunks\n",
    "seqs/cut.py": """\
        def chunks(seq, n, drop_tail=False):
            \"\"\"Lists of n items of seq; with drop_tail, the last one only when whole.\"\"\"
            if drop_tail:
                limit = len(seq) - n
            else:
                limit = len(seq)
            return [seq[i:i + n] for i in range(0, limit, n)]
        """,
    "tests/__init__.py": "",
    "tests/test_cut.py": """\
        from seqs import chunks


        def test_whole_chunks():
            assert chunks([1, 2, 3, 4], 2, drop_tail=True) == [[1, 2], [3, 4]]
            assert chunks([1, 2, 3], 2, drop_tail=True) == [[1, 2]]


        def test_all_chunks():
            assert chunks([1, 2, 3], 2) == [[1, 2], [3]]
        """,
}
CHUNKS_ISSUE = """# chunks(..., drop_tail=True) drops a whole last chunk

```python
from seqs import chunks
print(chunks([1, 2, 3, 4], 2, drop_tail=True))   # expected [[1, 2], [3, 4]]
print(chunks([1, 2, 3], 2))                      # [[1, 2], [3]] (fine)
```

The tests are correct; don't change them. Run them with:
python3 -m pytest -q tests
"""


def test_the_lines_run_only_where_the_example_goes_wrong_are_rewritten_first(
        scripted_server, workspace, home):
    """The answers name no line. The example's last lines to run were the right statement's
    (L7, L6); the line only the wrong one ran (L4, the bug's) gets the first rewrite."""
    make_repository(workspace, CHUNKS)
    server = scripted_server([
        {"content": "Nothing to change."}, *NAMES_NO_LINE,
        {"content": "```python\nlimit = len(seq) - n + 1\n```"}])
    run = run_agent(["-i", CHUNKS_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    traced = run.completed_items("command_execution")[3]["aggregated_output"]
    assert "REPRO TRACE 0:1 0:3 0:4 0:7 0:7 0:7 0:3 0:6 0:7 0:7 0:7 0:7" in traced
    assert "REPRO SPECTRUM 1 1 0:1:1:1 0:3:1:1 0:4:1:0 0:7:1:1 0:6:0:1" in traced
    assert "line search: a rewrite of seqs/cut.py:4 (1 of 3)" in notices(run)
    assert "limit = len(seq) - n + 1" in (workspace / "seqs/cut.py").read_text()
    assert run.events[-1]["verification"]["by"] == "evidence"


# A heading whose id comes from a function reached through a table, which no name of the
# issue leads to; it drops the lower-casing.
HEADINGS = {
    "textkit/__init__.py": "from .page import heading\n",
    "textkit/page.py": """\
        from .ids import RULES


        def heading(text, rule="dashed"):
            \"\"\"An <h1> with an id for links to it.\"\"\"
            return f'<h1 id="{RULES[rule](text)}">{text}</h1>'
        """,
    "textkit/ids.py": """\
        def _dashed(value):
            return "-".join(value.split())


        RULES = {"dashed": _dashed}
        """,
    "tests/__init__.py": "",
    "tests/test_page.py": """\
        from textkit import heading


        def test_ids_are_lower_case():
            assert heading("Hello World") == '<h1 id="hello-world">Hello World</h1>'
        """,
}
HEADING_ISSUE = """# Heading ids keep upper-case letters

```python
from textkit import heading
print(heading("Hello World"))
# expected: <h1 id="hello-world">Hello World</h1>
```

The tests are correct; don't change them. Run them with:
python3 -m pytest -q tests
"""


def test_the_function_a_wrong_value_came_from_is_shown_though_no_name_leads_to_it(
        scripted_server, workspace, home):
    """The issue's names lead to `heading` alone; run once more, the example shows that
    `_dashed` returned "Hello-World", part of the wrong heading and of nothing it should
    be: it is shown after `heading`, and the reply that fixes it is kept."""
    from baseagent.helps.localise import localise
    from baseagent.helps.repo_probe import code_shown

    make_repository(workspace, HEADINGS)
    static = code_shown(localise(HEADING_ISSUE, workspace), workspace)
    assert [s.candidate.symbol for s in static] == ["heading"]
    server = scripted_server([{"content": "It drops the lower-casing.\n\ntextkit/ids.py\n"
                               "<<<<<<< SEARCH\n    return \"-\".join(value.split())\n=======\n"
                               "    return \"-\".join(value.lower().split())\n"
                               ">>>>>>> REPLACE\n"}])
    run = run_agent(["-i", HEADING_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    opening = server.requests[0]["messages"][-1]["content"]
    assert opening.index("def heading(") < opening.index("def _dashed(value):")
    origins = run.completed_items("command_execution")[1]["aggregated_output"]
    assert "REPRO ORIGINS textkit/ids.py:1:_dashed:11" in origins
    assert "value.lower().split()" in (workspace / "textkit/ids.py").read_text()
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_a_reply_that_runs_on_past_its_cap_keeps_the_blocks_it_finished(scripted_server,
                                                                        workspace, home):
    """A fix, then prose that would run past what a reply may hold: the reply stops after
    its last whole block, which is tested and kept (through 0609f0d it was cut at the cap,
    a miss, and the line search followed)."""
    import hashlib

    make_repository(workspace)
    words = " ".join(hashlib.sha256(str(i).encode()).hexdigest()[:8].translate(
        str.maketrans("0123456789", "ghijklmnop")) for i in range(900))
    server = scripted_server([{"content": FIX.format(old="0.4", new="0.5") + "\n" + words,
                               "chunk_size": 16}])  # streamed as a server streams tokens
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert len(server.requests) == 1
    assert "math.floor(value + 0.5)" in (workspace / "shapes/geometry/rounding.py").read_text()
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_the_repository_probe_leaves_an_eighth_of_the_calls_to_the_conversation(
        scripted_server, workspace, home):
    """Of 8 calls the probe and its line search take 7 (its rewrites still to ask), the
    conversation the last: the conversation after the probe fixed nothing in three runs of
    the repository set, while the line search ran out of calls, not time."""
    make_repository(workspace)
    server = scripted_server([{"content": "Nothing."}] * 7 + [{"content": "Done."}] * 3)
    run = run_agent(["-i", TESTED_ISSUE, "--prompt-profile", "compact", "--max-iterations", "8"],
                    cwd=workspace, home=home, api_base=server.api_base)
    assert ["tools" in r for r in server.requests] == [False] * 7 + [True], notices(run)
    assert "line search: a rewrite of shapes/geometry/rounding.py:6 (2 of 3)" in notices(run)

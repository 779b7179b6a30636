"""End to end: edits that fit big files (issue 45), through the CLI and the scripted server. A
small model changes three lines of a 1,000-line module with a SEARCH/REPLACE block in its
reply (helps/edit_form.py): it is checked, written with write_file, and the model told; an
ambiguous block is refused and the model told why; a code block that would cut a big file to
a piece of it is never written."""
from __future__ import annotations

import json

from helpers import run_agent

BIG = "".join(f"def f{i}(a, b):\n    \"\"\"Step {i} of the calculation, as the spec says.\"\"\"\n"
              f"    total = a - b\n    return total + {i}\n\n"
              for i in range(200))  # 1,000 lines, 29 KB: too big to be shown with the task
FIXED = BIG.replace("Step 137 of the calculation, as the spec says.\"\"\"\n    total = a - b\n",
                    "Step 137 of the calculation, as the spec says.\"\"\"\n    total = a + b\n")
DOC = "    \"\"\"Step 137 of the calculation, as the spec says.\"\"\"\n"
TASK = "In calc.py, f137 subtracts b where it should add it; fix it."


def block(path: str, search: str, replace: str) -> str:
    return (f"{path}\n```python\n<<<<<<< SEARCH\n{search}=======\n{replace}"
            ">>>>>>> REPLACE\n```\n")


def sent(request: dict) -> str:
    return json.dumps(request["messages"])


def test_a_search_replace_block_edits_a_1000_line_file(scripted_server, workspace, home):
    (workspace / "calc.py").write_text(BIG)
    assert BIG.count("\n") == 1000
    edit = block("calc.py", f"def f137(a, b):\n{DOC}    total = a - b\n",
                 f"def f137(a, b):\n{DOC}    total = a + b\n")
    check = "python3 -c 'import calc; print(calc.f137(1, 2), calc.f138(1, 2))'"
    server = scripted_server([
        {"content": f"The sign is wrong in f137.\n\n{edit}"},
        {"tool_calls": [{"name": "shell", "arguments": {"command": check}}]},
        {"content": "Fixed: f137(1, 2) is 140 now."},
        {"content": "Checked: f137(1, 2) printed 140."}])
    run = run_agent(["-i", TASK, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "calc.py").read_text() == FIXED != BIG
    [change] = run.completed_items("file_change")
    assert change["status"] == "completed" and change["changes"][0]["path"].endswith("calc.py")
    [command] = run.completed_items("command_execution")
    assert "140 137" in command["aggregated_output"]
    after = server.requests[1]["messages"]
    assert after[-1]["role"] == "user"
    assert after[-1]["content"] == "Applied the SEARCH/REPLACE edit in your reply to calc.py."
    # The history holds the model's edit, not the whole file as a call's argument.
    assert "<<<<<<< SEARCH" in after[-2]["content"] and "tool_calls" not in after[-2]
    assert "def f150" not in sent(server.requests[1]) and len(sent(server.requests[1])) < 8_000


def test_an_ambiguous_block_is_refused_and_the_model_told(scripted_server, workspace, home):
    (workspace / "calc.py").write_text(BIG)
    # Only the line to change: every function has it.
    ambiguous = block("calc.py", "    total = a - b\n", "    total = a + b\n")
    fixed = block("calc.py", f"{DOC}    total = a - b\n", f"{DOC}    total = a + b\n")
    server = scripted_server([
        {"content": f"Change the sign:\n\n{ambiguous}"},
        {"content": f"Here is a longer SEARCH:\n\n{fixed}"},
        {"content": "Fixed."}, {"content": "Checked."}, {"content": "Done."}])
    run = run_agent(["-i", TASK, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    told = server.requests[1]["messages"][-1]
    assert told["role"] == "user"
    assert "calc.py (SEARCH/REPLACE block 1) was not applied: ambiguous: 200 matches" \
        in told["content"]
    assert "include more lines" in told["content"]
    # Nothing was written for the refused block; the second, exact one applied.
    assert len(run.completed_items("file_change")) == 1
    assert (workspace / "calc.py").read_text() == FIXED != BIG
    assert server.requests[2]["messages"][-1]["content"].startswith("Applied the SEARCH/REPLACE")


def test_an_edit_that_breaks_the_syntax_is_refused(scripted_server, workspace, home):
    (workspace / "calc.py").write_text(BIG)
    broken = block("calc.py", f"{DOC}    total = a - b\n", f"{DOC}    total = (a + b\n")
    server = scripted_server([{"content": broken}, {"content": "I see."},
                              {"content": "Checked."}, {"content": "Done."}])
    run = run_agent(["-i", TASK, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "calc.py").read_text() == BIG and not run.completed_items("file_change")
    told = server.requests[1]["messages"][-1]["content"]
    assert "calc.py would no longer parse as Python (line 688: '(' was never closed" in told


ENGINE = "class Engine:\n" + "".join(f"    def m{i}(self, n):\n        return n + {i}\n\n"
                                     for i in range(100))


def test_a_piece_of_a_big_files_class_is_merged_by_name(scripted_server, workspace, home):
    """The block defines the file's one top-level name, so it reads as a whole file, but it
    is a piece of a 300-line class: written as the file it would delete the other 99
    methods; its one method replaces the class's method of that name instead."""
    (workspace / "engine.py").write_text(ENGINE)
    piece = "class Engine:\n    def m7(self, n):\n        return n + 8\n"
    server = scripted_server([{"content": f"engine.py\n```python\n{piece}```"},
                              {"content": "Fixed."}, {"content": "Checked."},
                              {"content": "Done."}])
    run = run_agent(["-i", "Fix m7 in engine.py: it should add 8.", "--prompt-profile",
                     "compact"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "engine.py").read_text() == ENGINE.replace("return n + 7\n",
                                                                   "return n + 8\n")
    assert len(run.completed_items("file_change")) == 1
    told = server.requests[1]["messages"][-1]["content"]
    assert told == ("Wrote engine.py: `Engine.m7` from your code block replaced the "
                    "definitions of the same names, and the rest of the file was kept.")


def test_a_code_block_that_would_cut_a_big_file_is_not_written(scripted_server, workspace,
                                                               home):
    """A piece of the class with a method the class does not have: it cannot be merged by
    name, and written as the file it would delete the rest."""
    (workspace / "engine.py").write_text(ENGINE)
    piece = "class Engine:\n    def m700(self, n):\n        return n + 8\n"
    server = scripted_server([{"content": f"engine.py\n```python\n{piece}```"},
                              {"content": "I see."}, {"content": "Checked."},
                              {"content": "Done."}])
    run = run_agent(["-i", "Add m700 to engine.py.", "--prompt-profile", "compact"],
                    cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "engine.py").read_text() == ENGINE
    assert not run.completed_items("file_change")
    told = server.requests[1]["messages"][-1]["content"]
    assert "engine.py was not written: it has 3 lines and engine.py has 301" in told
    assert "<<<<<<< SEARCH" in told


def test_a_function_sent_alone_for_a_big_file_is_merged_by_name(scripted_server, workspace,
                                                                home):
    (workspace / "calc.py").write_text(BIG)
    piece = f"def f137(a, b):\n{DOC}    total = a + b\n    return total + 137\n"
    server = scripted_server([{"content": f"calc.py\n```python\n{piece}```"},
                              {"content": "Fixed."}, {"content": "Checked."},
                              {"content": "Done."}])
    run = run_agent(["-i", TASK, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "calc.py").read_text() == FIXED
    assert server.requests[1]["messages"][-1]["content"].startswith(
        "Wrote calc.py: `f137` from your code block replaced")


def test_an_elided_function_for_a_big_file_gets_the_edit_form(scripted_server, workspace,
                                                              home):
    """A function whose body stands for code it leaves out (`# ... rest unchanged`) is not
    merged: not written (as for any file that loses names), and for a big file the model is
    shown the SEARCH/REPLACE form rather than asked for the whole file again."""
    (workspace / "calc.py").write_text(BIG)
    piece = f"def f137(a, b):\n{DOC}    total = a + b\n    # ... rest unchanged\n"
    server = scripted_server([{"content": f"calc.py\n```python\n{piece}```"},
                              {"content": "I see."}, {"content": "Checked."},
                              {"content": "Done."}])
    run = run_agent(["-i", TASK, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "calc.py").read_text() == BIG
    told = server.requests[1]["messages"][-1]["content"]
    assert told.startswith("Your code block for calc.py was not written: it leaves out `f0`")
    assert "`f4` and 194 more, which calc.py defines" in told  # f137 itself is there
    assert "<<<<<<< SEARCH" in told and "send the whole file again" not in told


def test_the_full_profile_is_told_its_edit_changed_nothing(scripted_server, workspace, home):
    (workspace / "calc.py").write_text(BIG)
    edit = block("calc.py", f"{DOC}    total = a - b\n", f"{DOC}    total = a + b\n")
    server = scripted_server([{"content": edit}, {"content": "I see."},
                              {"content": "Checked."}, {"content": "Done."}])
    run = run_agent(["-i", TASK], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "calc.py").read_text() == BIG
    told = server.requests[1]["messages"][-1]["content"]
    assert "SEARCH/REPLACE edits for calc.py, but no file was changed" in told


def test_a_search_replace_block_in_a_reply_without_tools_is_applied_and_judged(
        scripted_server, workspace, home):
    """A reply to messages sent alone (the whole-file probe's, and any help's that asks
    without tools) may answer with an edit: its file becomes a write_file call the help runs,
    and the tests judge it."""
    small = BIG[:BIG.index("def f20(")]  # 100 lines: shown with the task, so the probe runs
    (workspace / "calc.py").write_text(small)
    (workspace / "test_calc.py").write_text(
        "from calc import f7, f8\n\n\ndef test_f7():\n    assert f7(1, 2) == 10\n\n\n"
        "def test_f8():\n    assert f8(1, 2) == 7\n")
    task = ("Fix f7 in calc.py: it should add b. The tests are in test_calc.py; they are "
            "correct, don't change them. Run them with: python3 -m pytest -q test_calc.py")
    doc = DOC.replace("137", "7")
    edit = block("calc.py", f"{doc}    total = a - b\n", f"{doc}    total = a + b\n")
    server = scripted_server([{"content": edit}])
    run = run_agent(["-i", task, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert "Act as an expert software developer" in sent(server.requests[0])  # the probe's
    assert (workspace / "calc.py").read_text() == small.replace(
        f"{doc}    total = a - b\n", f"{doc}    total = a + b\n") != small
    assert len(server.requests) == 1 and "the tests pass (" in run.final_message
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_the_tests_run_after_an_edit_and_the_model_reads_both(scripted_server, workspace,
                                                              home):
    (workspace / "calc.py").write_text(BIG)  # too big to be shown: no probe
    (workspace / "test_calc.py").write_text(
        "from calc import f137\n\n\ndef test_f137():\n    assert f137(1, 2) == 140\n")
    task = ("Fix f137 in calc.py: it should add b. The tests are in test_calc.py. Run them "
            "with: python3 -m pytest -q test_calc.py")
    edit = block("calc.py", f"{DOC}    total = a - b\n", f"{DOC}    total = a + b\n")
    server = scripted_server([{"content": edit}, {"content": "Fixed: the tests pass."},
                              {"content": "Checked."}])
    run = run_agent(["-i", task, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "calc.py").read_text() == FIXED
    result = server.requests[1]["messages"][-1]
    assert result["role"] == "tool" and "1 passed" in result["content"]
    assert "Applied the SEARCH/REPLACE edit in your reply to calc.py. Ran the task's test " \
        "command `python3 -m pytest -q test_calc.py` on the files your edits changed." \
        in result["content"]
    assert run.events[-1]["verification"]["by"] == "evidence"

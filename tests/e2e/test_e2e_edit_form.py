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


def test_a_code_block_that_would_cut_a_big_file_is_not_written(scripted_server, workspace,
                                                               home):
    """The block defines the file's one top-level name, so it reads as a whole file, but it
    is a piece of a 300-line class: writing it would delete the other 99 methods."""
    (workspace / "engine.py").write_text(ENGINE)
    piece = "class Engine:\n    def m7(self, n):\n        return n + 8\n"
    server = scripted_server([{"content": f"engine.py\n```python\n{piece}```"},
                              {"content": "I see."}, {"content": "Checked."},
                              {"content": "Done."}])
    run = run_agent(["-i", "Fix m7 in engine.py: it should add 8.", "--prompt-profile",
                     "compact"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "engine.py").read_text() == ENGINE
    assert not run.completed_items("file_change")
    told = server.requests[1]["messages"][-1]["content"]
    assert "engine.py was not written: it has 3 lines and engine.py has 301" in told
    assert "<<<<<<< SEARCH" in told


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


def test_a_function_sent_alone_for_a_big_file_gets_the_edit_form(scripted_server, workspace,
                                                                 home):
    """A block with one function of a 200-function module leaves out the rest: not written
    (as for any file), and for a big file the model is shown the SEARCH/REPLACE form rather
    than asked for the whole file again."""
    (workspace / "calc.py").write_text(BIG)
    piece = f"def f137(a, b):\n{DOC}    total = a + b\n    return total + 137\n"
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

"""How the loop meets a model that stumbles: empty replies, runaway and cut-off replies,
unreadable calls, calls repeated after they failed, code left in the answer, and answers
that claim verification without evidence. In-process, with the deterministic client.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from baseagent.core.verification.evidence import Evidence, forbids_test_changes, named_test_command
from baseagent.helps.code_blocks import Fragment, file_blocks, fragments
from baseagent.llm.types import ModelTurn
from baseagent.output import events as ev
from test_loop import assert_pairs_intact, call, make_loop, tool_results

PATCH_THAT_FAILS = ("*** Begin Patch\n*** Update File: app.py\n@@\n-no such line\n+x\n"
                    "*** End Patch")
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
TASK = ("Implement distance in hamming.py. The tests are in hamming_test.py; they are correct, "
        "don't change them. Run them with: python -m pytest -q hamming_test.py")


def turn_completed(rec) -> ev.TurnCompleted:
    return next(e for e in rec.events if isinstance(e, ev.TurnCompleted))


# -- replies that are not answers -------------------------------------------------------------

def test_an_empty_reply_gets_a_note_not_the_same_request_again(tmp_path):
    loop, client, rec = make_loop(tmp_path, [{"content": ""}, {"content": "All done."}],
                                  verify=False)
    outcome = loop.run_turn("say hello")
    assert outcome.status == "completed" and outcome.final_message == "All done."
    assert client.requests[0] != client.requests[1]  # never resent as it was
    nudge = client.requests[1][-1]
    assert nudge["role"] == "user" and nudge["content"].startswith("Your last reply was empty")
    assert client.requests[1][-2] == client.requests[0][-1]  # no empty assistant message kept
    assert not rec.completed("agent_message")[:-1]  # no empty agent_message item either


def test_empty_replies_three_times_in_a_row_end_the_turn(tmp_path):
    loop, client, rec = make_loop(tmp_path, [{"content": ""}] * 3 + [{"content": "late"}])
    outcome = loop.run_turn("say hello")
    assert outcome.status == "failed"
    assert outcome.error == ("the model returned empty replies (no text, no tool call) 3 times "
                             "in a row")
    assert client.calls == 3 and isinstance(rec.events[-1], ev.TurnFailed)


def test_a_reply_that_calls_a_tool_resets_the_count(tmp_path):
    steps = [{"content": ""}, {"content": ""}, {"tool_calls": [call("list_dir", dir_path=".")]},
             {"content": ""}, {"content": ""}, {"content": "Listed."}]
    loop, client, _ = make_loop(tmp_path, steps, verify=False)
    assert loop.run_turn("list").final_message == "Listed."
    assert client.calls == 6


def test_a_runaway_reply_is_dropped_and_the_model_told(tmp_path):
    runaway = "x = 1\n" * 2000
    loop, client, _ = make_loop(tmp_path, [{"content": runaway, "finish_reason": "repetition"},
                                           {"content": "Stopped repeating."}], verify=False)
    assert loop.run_turn("x").final_message == "Stopped repeating."
    sent = client.requests[1]
    assert "kept repeating the same text" in sent[-1]["content"]
    assert not any(runaway in str(m.get("content")) for m in sent)


def test_an_unreadable_call_is_not_an_answer(tmp_path):
    broken = ModelTurn(text='```json\n{"name": "write_file", "arguments": {"file_path": "a.py"',
                       finish_reason="stop",
                       malformed_calls=["write_file: the call is not valid JSON (x)"])
    loop, client, _ = make_loop(tmp_path, [broken, {"content": "Gave up."}], verify=False)
    assert loop.run_turn("write a.py").final_message == "Gave up."
    told = client.requests[1][-1]["content"]
    assert "could not be read, so it did not run: write_file: the call is not valid JSON" in told


# -- arguments that are almost JSON ------------------------------------------------------------

def test_arguments_with_unescaped_quotes_and_newlines_are_repaired_and_the_model_told(tmp_path):
    raw = '{"file_path": "a.py", "content": "def f():\n    """Doc "quoted"."""\n    return 1\n"}'
    loop, client, rec = make_loop(tmp_path, [
        {"tool_calls": [{"name": "write_file", "arguments": raw, "id": "w"}]},
        {"content": "Written."}], verify=False)
    assert loop.run_turn("write a.py").status == "completed"
    assert (tmp_path / "a.py").read_text() == 'def f():\n    """Doc "quoted"."""\n    return 1\n'
    result = tool_results(loop.history)["w"]
    assert "Note: the arguments were not valid JSON" in result and "strict JSON" in result
    stored = next(m for m in loop.history if m["role"] == "assistant")
    assert json.loads(stored["tool_calls"][0]["function"]["arguments"])["file_path"] == "a.py"
    assert_pairs_intact(client.requests[1])


def test_arguments_cut_off_are_never_completed(tmp_path):
    cut = '{"file_path": "a.py", "content": "def f():\n    ret'
    loop, _, _ = make_loop(tmp_path, [
        {"tool_calls": [{"name": "write_file", "arguments": cut, "id": "w"}]},
        {"content": "ok"}], verify=False)
    loop.run_turn("write a.py")
    assert not (tmp_path / "a.py").exists()
    assert tool_results(loop.history)["w"].startswith("Error: invalid JSON")


# -- calls repeated after they failed ----------------------------------------------------------

def test_a_repeated_failing_call_gets_another_way_then_is_not_run(tmp_path):
    (tmp_path / "app.py").write_text("print('hi')\n")
    patch = call("apply_patch", input=PATCH_THAT_FAILS)
    steps = [{"tool_calls": [{**patch, "id": f"p{i}"}]} for i in range(3)]
    loop, client, rec = make_loop(tmp_path, steps + [{"content": "Stuck."}], verify=False)
    assert loop.run_turn("edit app.py").final_message == "Stuck."
    results = tool_results(loop.history)
    assert "Note:" not in results["p0"]
    assert "exact call already failed" in results["p1"] and "write_file" in results["p1"]
    assert results["p2"].startswith("Error: not run: this exact apply_patch call already "
                                    "failed 2 times")
    assert (tmp_path / "app.py").read_text() == "print('hi')\n"
    notices = [e.message for e in rec.events if isinstance(e, ev.ErrorEvent)]
    assert notices == ["not running apply_patch again: the same call gave the same result "
                       "twice"]
    assert rec.completed("mcp_tool_call")[-1].status == "failed"


def test_a_model_that_keeps_sending_refused_calls_ends_the_turn(tmp_path):
    steps = [{"tool_calls": [call("read_file", file_path="missing.txt")]}] * 8
    loop, client, rec = make_loop(tmp_path, steps)
    outcome = loop.run_turn("read it")
    assert outcome.status == "failed"
    assert outcome.error == "the model kept repeating calls that had given the same result"
    assert client.calls == 5  # two failures, then three refused
    assert_pairs_intact(loop.history)


def test_the_same_write_again_and_again_is_stopped(tmp_path):
    (tmp_path / "a.py").write_text("x = 0\n")
    write = call("write_file", file_path="a.py", content="x = 1\n")
    steps = [{"tool_calls": [{**write, "id": f"w{i}"}]} for i in range(3)] + [{"content": "ok"}]
    loop, _, _ = make_loop(tmp_path, steps, verify=False)
    loop.run_turn("write a.py")
    results = tool_results(loop.history)
    assert "Note:" not in results["w0"]  # it changed the file
    assert "already holds exactly this content" in results["w1"]  # this one did not
    assert results["w2"].startswith("Error: not run: this exact write_file call already ran "
                                    "2 times with the same result")


def test_a_command_that_succeeds_runs_every_time_it_is_sent(tmp_path):
    """A successful command may act each time (poll, append): noted, never refused."""
    run = call("shell", command="echo x >> log.txt; echo appended")
    steps = [{"tool_calls": [{**run, "id": f"s{i}"}]} for i in range(5)] + [{"content": "ok"}]
    loop, _, _ = make_loop(tmp_path, steps, verify=False)
    assert loop.run_turn("append").status == "completed"
    results = tool_results(loop.history)
    assert (tmp_path / "log.txt").read_text() == "x\n" * 5
    assert "Note: this exact call was already made" in results["s4"]
    assert not any(r.startswith("Error: not run") for r in results.values())


def test_an_edit_forgets_earlier_failures(tmp_path):
    (tmp_path / "t.sh").write_text("exit 1\n")
    run = call("shell", command="bash t.sh")
    fix = call("write_file", file_path="t.sh", content="exit 0\n")
    steps = [{"tool_calls": [{**run, "id": "a"}]}, {"tool_calls": [{**run, "id": "b"}]},
             {"tool_calls": [fix]}, {"tool_calls": [{**run, "id": "c"}]}, {"content": "ok"}]
    loop, _, _ = make_loop(tmp_path, steps, verify=False)
    loop.run_turn("make t.sh pass")
    results = tool_results(loop.history)
    assert "exact call already failed" in results["b"]
    assert results["c"].startswith("Exit code: 0")


# -- code left in the answer -------------------------------------------------------------------

def test_a_test_run_of_looping_code_is_stopped_and_the_model_told(tmp_path):
    """The test runs the prose-code help adds are timed from the first one (a few times it,
    5 s at least): code that loops forever is stopped there and reported as likely
    looping."""
    _hamming(tmp_path, solved=False)
    wrong = "hamming.py\n```python\ndef distance(a, b):\n    return 0\n```"
    looping = "hamming.py\n```python\ndef distance(a, b):\n    while True:\n        pass\n```"
    loop, client, rec = make_loop(tmp_path, [{"content": wrong}, {"content": looping},
                                             {"content": "Gave up."}], verify=False)
    task = f"Implement distance in hamming.py. Run the tests with `{PYTEST} hamming_test.py`."
    assert loop.run_turn(task).final_message == "Gave up."
    first, stopped = rec.completed("command_execution")
    assert first.exit_code == 1 and stopped.exit_code == 124
    told = client.requests[2][-1]
    assert told["role"] == "user" and "likely loops forever" in told["content"]
    assert told["content"].startswith("The test run was stopped after ")
    assert "(the first run of the tests took " in told["content"]


def test_a_whole_file_in_the_answer_is_written_and_the_model_told(tmp_path):
    (tmp_path / "hamming.py").write_text("def distance(strand_a, strand_b):\n    pass\n")
    answer = ("Here is the updated hamming.py:\n\n```python\ndef distance(strand_a, strand_b):\n"
              "    return sum(a != b for a, b in zip(strand_a, strand_b))\n```")
    loop, client, rec = make_loop(tmp_path, [{"content": answer}, {"content": "Done."}],
                                  verify=False)
    assert loop.run_turn(TASK).final_message == "Done."
    assert "zip(strand_a, strand_b)" in (tmp_path / "hamming.py").read_text()
    written = rec.completed("file_change")[0]
    assert written.status == "completed" and written.changes[0].kind == "update"
    wrote, tested = client.requests[1][-2], client.requests[1][-1]
    assert wrote["role"] == "tool" and "Wrote hamming.py with the whole content of the code block" in wrote["content"]
    # the task's test command runs at once on what was written (Aider's auto-test)
    assert tested["role"] == "tool" and "Ran the task's test command" in tested["content"]
    ran = rec.completed("command_execution")[0]
    assert ran.command == "python -m pytest -q hamming_test.py" and ran.exit_code != 0
    assert client.requests[1][-3]["content"] == "Here is the updated hamming.py:"


def test_a_whole_file_that_passes_the_tests_is_evidence(tmp_path):
    _hamming(tmp_path, solved=False)
    task = TASK.replace("python -m pytest", f"{sys.executable} -m pytest")
    answer = ("hamming.py\n```python\ndef distance(a, b):\n"
              "    return sum(x != y for x, y in zip(a, b))\n```")
    loop, client, rec = make_loop(tmp_path, [{"content": answer}, {"content": "Done."},
                                             {"content": "Verified."}])
    assert loop.run_turn(task).status == "completed"
    assert rec.completed("command_execution")[0].exit_code == 0
    assert turn_completed(rec).verification.by == "evidence"
    assert client.calls == 2  # the answer, then "Done.": the tests passed, no verification round


def test_a_whole_file_beside_a_call_is_written_before_the_call_runs(tmp_path):
    """"Here is hamming.py ... now run the tests" with a call: the file is written first,
    so the call tests the new code (not the stub)."""
    _hamming(tmp_path, solved=False)
    answer = ("hamming.py\n```python\ndef distance(a, b):\n"
              "    return sum(x != y for x, y in zip(a, b))\n```\nNow the tests:")
    steps = [{"content": answer,
              "tool_calls": [call("shell", command=f"{PYTEST} hamming_test.py")]},
             {"content": "Done: 1 passed."}, {"content": "Verified."}]
    loop, client, rec = make_loop(tmp_path, steps)
    assert loop.run_turn(TASK).status == "completed"
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    kinds = [type(e.item).__name__ for e in rec.events if isinstance(e, ev.ItemCompleted)
             and type(e.item).__name__ in ("FileChangeItem", "CommandExecutionItem")]
    assert kinds == ["FileChangeItem", "CommandExecutionItem"]
    assert rec.completed("command_execution")[0].exit_code == 0
    assert turn_completed(rec).verification.by == "evidence"


def test_a_file_the_calls_write_themselves_is_not_written_twice(tmp_path):
    (tmp_path / "hamming.py").write_text("def distance(a, b):\n    pass\n")
    answer = "hamming.py\n```python\ndef distance(a, b):\n    return 1\n```"
    steps = [{"content": answer, "tool_calls": [call(
        "write_file", file_path="./hamming.py", content="def distance(a, b):\n    return 2\n")]},
             {"content": "ok"}]
    loop, _, rec = make_loop(tmp_path, steps, verify=False)
    loop.run_turn("change hamming.py")
    assert (tmp_path / "hamming.py").read_text().endswith("return 2\n")
    assert len(rec.completed("file_change")) == 1


def test_protected_tests_in_the_answer_are_never_written(tmp_path):
    (tmp_path / "hamming.py").write_text("def distance(a, b):\n    pass\n")
    (tmp_path / "hamming_test.py").write_text("import unittest\n")
    answer = ("```python\n# hamming.py\ndef distance(a, b):\n    return 0\n```\n"
              "```python\n# hamming_test.py\nimport unittest\nprint('rewritten')\n```")
    assert [b.path for b in file_blocks(answer, tmp_path, TASK)] == ["hamming.py"]
    assert len(file_blocks(answer, tmp_path, "Implement hamming.py and its tests.")) == 2


def test_an_attribute_an_issue_names_is_never_a_file_to_create(tmp_path):
    # furl at 1a80f63: `furl(...).path.isdir` in the issue matched as a file name, and the
    # block after a line naming it was written to a new file `.path.isdir`
    issue = ("For a URL with no path, `furl(...).path.isdir` should be True:\n"
             "print(f.path.isdir)  # False -- expected True")
    answer = ("The fix for `f.path.isdir`:\n\n```python\ndef isdir(self):\n"
              "    return not self.segments or self.segments[-1] == ''\n```")
    assert file_blocks(answer, tmp_path, issue) == []
    loop, _client, rec = make_loop(tmp_path, [{"content": answer}, {"content": "Done."}],
                                   verify=False)
    loop.run_turn(issue)
    assert sorted(p.name for p in tmp_path.iterdir()) == [] and not rec.completed("file_change")
    # a new file the task names is still one to create
    named = "Write the fix in helpers.py:"
    assert [b.path for b in file_blocks(named + "\n```python\nX = 1\n```", tmp_path,
                                        "Create helpers.py")] == ["helpers.py"]


def test_a_fragment_of_a_file_is_never_written(tmp_path):
    original = "def distance(a, b):\n    pass\n\n\ndef helper():\n    pass\n"
    (tmp_path / "hamming.py").write_text(original)
    answer = "Change hamming.py like this:\n```python\ndef distance(a, b):\n    return 0\n```"
    loop, _, _ = make_loop(tmp_path, [{"content": answer}], verify=False)
    loop.run_turn(TASK)
    assert (tmp_path / "hamming.py").read_text() == original


DND = "class Character:\n    def __init__(self):\n        pass\n\ndef modifier(value):\n    pass\n"
# A whole-looking file that moved `modifier` into the class (the tests import it by name).
MOVED = ("dnd.py\n```python\nclass Character:\n    def __init__(self):\n        self.hp = 10\n\n"
         "    def modifier(self, value):\n        return (value - 10) // 2\n```")


def test_fragments_name_the_top_level_definitions_a_block_leaves_out(tmp_path):
    (tmp_path / "dnd.py").write_text(DND)
    assert fragments(MOVED, tmp_path, "Implement dnd.py") == [Fragment("dnd.py", ("modifier",))]
    # an excerpt with no top-level definition is not a dropped file; a whole one is not either
    assert fragments("dnd.py\n```python\n    return 1\n```", tmp_path, "dnd.py") == []
    whole = MOVED.removesuffix("```") + "\ndef modifier(value):\n    return 0\n```"
    assert fragments(whole, tmp_path, "Implement dnd.py") == []
    assert fragments(MOVED + "\n" + whole, tmp_path, "dnd.py") == []  # the later block wins


def test_the_tests_echoed_in_an_answer_are_neither_the_file_nor_a_fragment_of_it(tmp_path):
    """A reply that says "now let's run the tests" and shows the test file, unnamed: it
    imports the module the task names, so it is not that module's new content, and the
    model is not told it dropped the module's names."""
    (tmp_path / "anagram.py").write_text("def find_anagrams(word, candidates):\n    pass\n")
    task = "Implement anagram.py. Run the tests with: python -m pytest -q anagram_test.py"
    echo = ("Now, let's run the tests:\n```python\nimport unittest\n\n"
            "from anagram import (\n    find_anagrams,\n)\n\n"
            "class AnagramTest(unittest.TestCase):\n    def test_no_matches(self):\n"
            "        self.assertEqual(find_anagrams('a', []), [])\n```")
    assert file_blocks(echo, tmp_path, task) == [] and fragments(echo, tmp_path, task) == []
    own = "```python\nimport anagram\n\ndef find_anagrams(w, c):\n    return []\n```"
    assert file_blocks(own, tmp_path, task) == []
    solution = "```python\nimport collections\n\ndef find_anagrams(w, c):\n    return []\n```"
    assert [b.path for b in file_blocks(solution, tmp_path, task)] == ["anagram.py"]


SUBLIST_STUB = ('"""Stub."""\n# Possible sublist categories.\nSUBLIST = None\nEQUAL = None\n\n\n'
                'def sublist(list_one, list_two):\n    pass\n')


def test_a_python_block_that_drops_module_level_names_is_a_fragment(tmp_path):
    (tmp_path / "sublist.py").write_text(SUBLIST_STUB)
    dropped = "sublist.py\n```python\ndef sublist(a, b):\n    return 1\n```"
    assert file_blocks(dropped, tmp_path, "Implement sublist.py") == []
    assert fragments(dropped, tmp_path, "Implement sublist.py") == [
        Fragment("sublist.py", ("SUBLIST", "EQUAL"))]
    kept = ("sublist.py\n```python\nSUBLIST = 1\nEQUAL: int = 2\n\n"
            "def sublist(a, b):\n    return EQUAL\n```")
    assert [b.path for b in file_blocks(kept, tmp_path, "Implement sublist.py")] == ["sublist.py"]
    assert fragments(kept, tmp_path, "Implement sublist.py") == []
    # a block that does not parse is read as the file is, by its def and class lines only
    broken = "sublist.py\n```python\ndef sublist(a, b):\n    return (\n```"
    assert [b.path for b in file_blocks(broken, tmp_path, "Implement sublist.py")] == ["sublist.py"]


def test_a_block_that_drops_a_top_level_name_is_not_written_and_the_model_is_told(tmp_path):
    (tmp_path / "dnd.py").write_text(DND)
    loop, client, _ = make_loop(tmp_path, [{"content": "Here is the file:\n" + MOVED},
                                           {"content": "Done."}], verify=False)
    assert loop.run_turn("Implement dnd.py").final_message == "Done."
    assert (tmp_path / "dnd.py").read_text() == DND
    note = client.requests[1][-1]
    assert note["role"] == "user" and "dnd.py was not written" in note["content"]
    assert "`modifier`" in note["content"] and "whole file" in note["content"]


def test_the_dropped_names_note_follows_the_steps_tool_results(tmp_path):
    """A reply that drops a name and also runs a command: the command runs, and the note
    comes after its result (the tool messages stay paired with their call)."""
    (tmp_path / "dnd.py").write_text(DND)
    run = call("shell", command="echo ran")
    loop, client, _ = make_loop(tmp_path, [{"content": MOVED, "tool_calls": [run]},
                                           {"content": "Done."}], verify=False)
    loop.run_turn("Implement dnd.py")
    second = client.requests[1]
    assert second[-2]["role"] == "tool" and "ran" in second[-2]["content"]
    assert second[-1]["role"] == "user" and "`modifier`" in second[-1]["content"]
    assert_pairs_intact(loop.history)
    # once a turn: a second such block is not told again
    loop, client, _ = make_loop(tmp_path, [{"content": MOVED}, {"content": MOVED},
                                           {"content": "Done."}], verify=False)
    loop.run_turn("Implement dnd.py")
    assert len(client.requests) == 2  # told once; the same reply again is the answer
    assert sum("`modifier`" in str(m.get("content")) for m in loop.history) == 1


def test_prose_code_tell_mode_asks_the_model_to_write_it(tmp_path):
    (tmp_path / "hamming.py").write_text("def distance(a, b):\n    pass\n")
    answer = "hamming.py\n```python\ndef distance(a, b):\n    return 0\n```"
    loop, client, _ = make_loop(tmp_path, [{"content": answer}, {"content": "ok"}],
                                verify=False, prose_code="tell")
    loop.run_turn(TASK)
    assert "no file was changed" in client.requests[1][-1]["content"]
    assert (tmp_path / "hamming.py").read_text() == "def distance(a, b):\n    pass\n"


def test_the_prompts_example_path_in_front_of_the_name_still_names_the_file(tmp_path):
    (tmp_path / "hamming.py").write_text("def distance(a, b):\n    pass\n")
    answer = "path/to/hamming.py\n```python\ndef distance(a, b):\n    return 0\n```"
    blocks = file_blocks(answer, tmp_path, "Fix hamming.py")
    assert [(b.path, b.content) for b in blocks] == [("hamming.py",
                                                      "def distance(a, b):\n    return 0\n")]


def test_file_blocks_need_a_name_or_a_single_candidate(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    code = "```python\nx = 2\n```"
    assert file_blocks(code, tmp_path, "change a.py and b.py") == []  # which file? unknown
    assert [b.path for b in file_blocks(code, tmp_path, "change a.py")] == ["a.py"]
    assert [b.path for b in file_blocks("a.py:\n" + code, tmp_path, "change a.py and b.py")] \
        == ["a.py"]
    assert file_blocks("run a.py:\n```bash\npython a.py\n```", tmp_path, "a.py") == []


# -- verification by evidence ------------------------------------------------------------------

def _hamming(tmp_path: Path, solved: bool) -> None:
    (tmp_path / "hamming.py").write_text("def distance(a, b):\n    pass\n")
    body = "sum(x != y for x, y in zip(a, b))" if solved else "0"
    (tmp_path / "fix.py").write_text(f"def distance(a, b):\n    return {body}\n")
    (tmp_path / "hamming_test.py").write_text(
        "from hamming import distance\n\ndef test_one():\n    assert distance('A', 'G') == 1\n")


def test_an_answer_after_failing_tests_gets_one_more_round_and_says_statement(tmp_path):
    _hamming(tmp_path, solved=False)
    tests = call("shell", command=f"{PYTEST} hamming_test.py")
    steps = [{"tool_calls": [call("write_file", file_path="hamming.py",
                                  content="def distance(a, b):\n    return 0\n")]},
             {"tool_calls": [tests]}, {"content": "Implemented."},
             {"content": "I have verified that it works."}, {"content": "It works, trust me."}]
    loop, client, rec = make_loop(tmp_path, steps)
    outcome = loop.run_turn(TASK)
    assert outcome.status == "completed" and client.calls == 5
    reminder = client.requests[3][-1]["content"]
    assert "after your last edit exited 1: it fails" in reminder
    extra = client.requests[4][-1]["content"]
    assert extra.startswith("Your answer says the work is done, but nothing shows it")
    assert turn_completed(rec).verification.by == "statement"


def test_tests_that_pass_after_the_last_edit_are_evidence(tmp_path):
    _hamming(tmp_path, solved=True)
    steps = [{"tool_calls": [call("shell", command="cp fix.py hamming.py")]},
             {"tool_calls": [call("shell", command=f"{PYTEST} hamming_test.py")]},
             {"content": "Implemented."}, {"content": "Verified: 1 passed."}]
    loop, client, rec = make_loop(tmp_path, steps)
    # the tests passed after the last edit: the answer stands, no verification round
    assert loop.run_turn(TASK).final_message == "Implemented."
    assert client.calls == 3
    verification = turn_completed(rec).verification
    assert verification.by == "evidence" and verification.exit_code == 0
    assert "pytest" in verification.command


def test_no_edit_and_no_test_command_needs_no_evidence(tmp_path):
    """A question costs one model call: no edit, no test named, no verification round."""
    loop, client, rec = make_loop(tmp_path, [{"content": "4"}])
    assert loop.run_turn("what is 2 + 2?").final_message == "4"
    assert client.calls == 1
    assert turn_completed(rec).verification.by == "statement"


def test_a_refused_write_still_gets_the_verification_round(tmp_path):
    """A turn that tried a write gets the round, even when the write failed."""
    patch = call("apply_patch", input=PATCH_THAT_FAILS)
    loop, client, _ = make_loop(tmp_path, [{"tool_calls": [patch]}, {"content": "Done."},
                                           {"content": "Checked."}])
    assert loop.run_turn("fix app.py").final_message == "Checked."
    assert client.calls == 3


def test_changed_tests_the_task_protected_are_named_in_the_final_answer(tmp_path):
    _hamming(tmp_path, solved=True)
    steps = [{"tool_calls": [call("write_file", file_path="hamming_test.py", content="x = 1\n")]},
             {"tool_calls": [call("shell", command=f"{PYTEST} hamming_test.py || true")]},
             {"content": "Done."}, {"content": "Verified."}]
    loop, _, _ = make_loop(tmp_path, steps)
    outcome = loop.run_turn(TASK)
    assert outcome.final_message.endswith("Note: this run changed test files that the task "
                                          "said not to change: hamming_test.py.")


def test_evidence_reads_the_task():
    assert named_test_command(TASK) == "python -m pytest -q hamming_test.py"
    assert named_test_command("Run them with: .venv/bin/python3.11 -m pytest -q t.py") == \
        ".venv/bin/python3.11 -m pytest -q t.py"
    assert named_test_command("Fix it; `npm test` must pass") == "npm test"
    assert named_test_command("rename the variable") is None
    # A command on a line of its own that sets its environment first (the repository tasks'
    # form): the environment is part of it.
    assert named_test_command("Run the suite with:\nenv PYTHONPATH=. PYTHONDONTWRITEBYTECODE=1 "
                              "/v/bin/python -m pytest -q tests\n") == \
        "env PYTHONPATH=. PYTHONDONTWRITEBYTECODE=1 /v/bin/python -m pytest -q tests"
    assert named_test_command("then:\nCI=1 pytest -x\n") == "CI=1 pytest -x"
    assert forbids_test_changes(TASK) and forbids_test_changes("Do not modify the tests.")
    assert not forbids_test_changes("Add tests for the parser.")
    evidence = Evidence.for_turn("make `make test` pass")
    evidence.saw("command_execution", True, {"command": "sed -i s/a/b/ x.c", "exit_code": 0})
    assert evidence.missing() is not None  # an editing command is not its own proof
    evidence.saw("command_execution", True, {"command": "ls", "exit_code": 0})
    assert evidence.missing() is not None  # not the tests
    evidence.saw("command_execution", True, {"command": "make test", "exit_code": 0})
    assert evidence.missing() is None and evidence.summary()["command"] == "make test"


def test_passing_tests_with_plan_steps_still_open_get_the_verification_round(tmp_path):
    """Evidence skips the verification round only when the turn's plan is done too: an
    open step is work the answer may have skipped."""
    _hamming(tmp_path, solved=True)
    plan = call("update_plan", plan=[{"step": "implement distance", "status": "completed"},
                                     {"step": "document distance", "status": "pending"}])
    steps = [{"tool_calls": [plan]},
             {"tool_calls": [call("shell", command="cp fix.py hamming.py")]},
             {"tool_calls": [call("shell", command=f"{PYTEST} hamming_test.py")]},
             {"content": "Implemented."}, {"content": "Documented too."}]
    loop, client, rec = make_loop(tmp_path, steps)
    assert loop.run_turn(TASK).final_message == "Documented too."
    reminder = client.requests[4][-1]["content"]
    assert "still has steps that are not completed" in reminder
    assert "document distance" in reminder
    assert turn_completed(rec).verification.by == "evidence"


def test_a_reply_that_only_announces_the_next_step_is_told_nothing_happened(tmp_path):
    _hamming(tmp_path, solved=True)
    steps = [{"tool_calls": [call("shell", command="cp fix.py hamming.py")]},
             {"content": "I will now run the tests to check it."},
             {"tool_calls": [call("shell", command=f"{PYTEST} hamming_test.py")]},
             {"content": "Done: 1 passed."}]
    loop, client, _ = make_loop(tmp_path, steps)
    assert loop.run_turn(TASK).final_message == "Done: 1 passed."
    assert client.requests[2][-1]["content"].startswith("You said what you would do next")


def test_a_reply_that_only_echoes_the_failing_tests_is_told_nothing_changed(tmp_path):
    _hamming(tmp_path, solved=False)
    run_tests = call("shell", command=f"{PYTEST} hamming_test.py")
    steps = [{"tool_calls": [call("shell", command="cp fix.py hamming.py")]},
             {"tool_calls": [run_tests]},
             # the echo: the test output it was shown, copied back with a line of its own
             lambda messages: {"content": "The tests failed:\n" + messages[-1]["content"]},
             {"tool_calls": [call("shell", command=f"cp {tmp_path / 'good.py'} hamming.py")]},
             {"tool_calls": [run_tests]}, {"content": "Fixed: 1 passed."}]
    (tmp_path / "good.py").write_text(
        "def distance(a, b):\n    return sum(x != y for x, y in zip(a, b))\n")
    loop, client, rec = make_loop(tmp_path, steps)
    assert loop.run_turn(TASK).final_message == "Fixed: 1 passed."
    nudge = client.requests[3][-1]["content"]
    assert nudge.startswith("Your reply repeats what you were shown") and "exited 1" in nudge
    assert turn_completed(rec).verification.by == "evidence"


def test_echo_overlap_is_measured_on_words_not_lines():
    from baseagent.helps.echo import echo_share, echoes

    note = ("Overwrote a.py (27 bytes)\nNote: this exact call was already made with the same "
            "result. The file already holds exactly this content: writing it again changes "
            "nothing. Run the tests or the program to check it, or change the code.")
    parrot = ("The file already holds exactly this content, so writing it again does not "
              "change anything. Run the tests or the program to check it, or change the code.")
    own = ("I implemented distance with zip over both strands and counted the positions that "
           "differ; the length check raises ValueError as the tests expect.")
    assert echoes(parrot, [note]) and not echoes(own, [note])
    assert echo_share("ok", [note]) == 0.0  # too short to judge


def test_a_test_run_shown_but_not_made_is_run(tmp_path):
    _hamming(tmp_path, solved=True)
    shown = f"I ran the tests:\n```bash\n{PYTEST} hamming_test.py\n```\nAll passed."
    steps = [{"tool_calls": [call("shell", command="cp fix.py hamming.py")]},
             {"content": shown}, {"content": "Done."}, {"content": "Verified."}]
    loop, client, rec = make_loop(tmp_path, steps)
    assert loop.run_turn(TASK).status == "completed"
    ran = rec.completed("command_execution")[-1]
    assert "pytest" in ran.command and ran.exit_code == 0
    assert "the command shown in a code block" in client.requests[2][-1]["content"]
    assert turn_completed(rec).verification.by == "evidence"


def test_the_compact_profile_shows_the_files_the_task_names(tmp_path):
    (tmp_path / "hamming.py").write_text("def distance(a, b):\n    pass\n")
    outside = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    outside.write_text("do not show\n")
    (tmp_path / "link.txt").symlink_to(outside)
    loop, client, _ = make_loop(tmp_path, [{"content": "ok"}], verify=False,
                                show_named_files=True)
    loop.run_turn(f"Fix hamming.py; see link.txt, ../{outside.name} and /etc/hostname.")
    sent = client.requests[0][-1]["content"]
    assert sent.startswith("Fix hamming.py;")
    assert "hamming.py\n```py\ndef distance(a, b):\n    pass\n```" in sent
    assert "do not show" not in sent and "/etc/hostname\n```" not in sent
    loop, client, _ = make_loop(tmp_path, [{"content": "ok"}], verify=False)
    loop.run_turn("Fix hamming.py")
    assert client.requests[0][-1]["content"] == "Fix hamming.py"  # the full profile: as given


# -- a reply cut off after a whole file; a fresh attempt where the turn is stuck -----------------

def test_a_whole_file_before_a_runaway_is_written_and_the_rest_dropped(tmp_path):
    """A reply that wrote the file, then invented test output until the repetition guard cut
    it: the complete block before the cut is the edit; what follows is not kept."""
    _hamming(tmp_path, solved=False)
    task = TASK.replace("python -m pytest", f"{sys.executable} -m pytest")
    runaway = ("hamming.py\n```python\ndef distance(a, b):\n"
               "    return sum(x != y for x, y in zip(a, b))\n```\n\nOutput:\n"
               + "test_one PASSED\n" * 500)
    loop, client, rec = make_loop(tmp_path, [{"content": runaway, "finish_reason": "repetition"},
                                             {"content": "Done."}, {"content": "Verified."}],
                                  show_named_files=True)
    assert loop.run_turn(task).status == "completed"
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    wrote = client.requests[1][-2]["content"]
    assert "Your reply was cut off (it kept repeating itself); hamming.py was written" in wrote
    assert not any("PASSED" in str(m.get("content")) for m in client.requests[1])
    assert turn_completed(rec).verification.by == "evidence"


def test_a_cut_reply_without_a_whole_file_is_still_a_stumble(tmp_path):
    loop, client, _ = make_loop(tmp_path, [{"content": "```python\ndef f(:\n" * 300,
                                            "finish_reason": "length"},
                                           {"content": "Short now."}], verify=False)
    assert loop.run_turn("write f in f.py").final_message == "Short now."
    assert "cut off at the output limit" in client.requests[1][-1]["content"]


GOOD = "hamming.py\n```python\ndef distance(a, b):\n    return sum(x != y for x, y in zip(a, b))\n```"
WRONG = "hamming.py\n```python\ndef distance(a, b):\n    return 2\n```"


def _probe_loop(tmp_path: Path, steps: list[Any], **kw: Any):
    _hamming(tmp_path, solved=False)
    task = TASK.replace("python -m pytest", f"{sys.executable} -m pytest")
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, **kw)
    return loop, client, rec, task


def test_a_whole_file_probe_that_passes_the_tests_is_the_answer(tmp_path):
    loop, client, rec, task = _probe_loop(tmp_path, [{"content": "Here it is.\n" + GOOD}],
                                          probe=True)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and client.calls == 1
    assert outcome.final_message.startswith("Wrote ") and "hamming.py" in outcome.final_message
    assert "the tests pass (" in outcome.final_message
    probe = client.requests[0]
    # the task and the files to change, no conversation, no tools, not the tests
    assert [m["role"] for m in probe] == ["system", "user"] and client.tools_seen[0] == []
    assert "whole file" in probe[0]["content"] and probe[1]["content"].startswith(task)
    assert "def distance(a, b):\n    pass" in probe[1]["content"]
    assert "from hamming import distance" not in probe[1]["content"]
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    assert turn_completed(rec).verification.by == "evidence"
    assert_pairs_intact(loop.history)  # the probe's exchange joined the history
    assert any(isinstance(e, ev.ErrorEvent) and "whole-file answer" in e.message
               for e in rec.events)


def test_a_probe_that_fails_is_undone_and_the_turn_starts_as_without_it(tmp_path):
    steps = [{"content": WRONG},  # the probe: its file fails the tests
             {"content": WRONG.replace("2", "3")},  # again with the tests shown: fails too
             {"content": GOOD}, {"content": "Fixed."}]
    loop, client, rec, task = _probe_loop(tmp_path, steps, probe=True, probe_rounds=0)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and outcome.final_message == "Fixed."
    again = client.requests[1]  # the second probe: the same, with the tests shown
    assert client.tools_seen[1] == [] and [m["role"] for m in again] == ["system", "user"]
    assert again[1]["content"].startswith(client.requests[0][1]["content"])
    assert "must pass" in again[1]["content"]
    assert "hamming_test.py\n```py\nfrom hamming import distance" in again[1]["content"]
    assert "return 2" not in again[1]["content"]  # nothing of the first probe's answer
    first = client.requests[2]  # the agent's own first request: as if no probe was made
    assert client.tools_seen[2] and [m["role"] for m in first] == ["system", "user", "user"]
    assert not any("return 2" in str(m.get("content")) or "return 3" in str(m.get("content"))
                   for m in first)
    changes = [c.changes[0].path for c in rec.completed("file_change")]
    assert len(changes) == 5  # each probe's write and putting the file back, the agent's write
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    assert turn_completed(rec).verification.by == "evidence"
    # the same prompt would get the same reply: no probe again later in the turn
    assert sum(1 for tools in client.tools_seen if tools == []) == 2
    notices = [e.message for e in rec.events if isinstance(e, ev.ErrorEvent)]
    assert any("whole-file answer" in m for m in notices)
    assert any("with the tests shown" in m for m in notices)


def test_the_probe_with_the_tests_shown_can_be_the_answer(tmp_path):
    loop, client, rec, task = _probe_loop(tmp_path, [{"content": WRONG},
                                                     {"content": "Here.\n" + GOOD}], probe=True)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and client.calls == 2
    assert outcome.final_message.startswith("Wrote ") and "the tests pass (" in outcome.final_message
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    assert turn_completed(rec).verification.by == "evidence"
    assert_pairs_intact(loop.history)
    # the history holds the task and the passing exchange, not the failed probe
    assert not any("return 2" in str(m.get("content")) for m in loop.history)


def test_a_probe_writes_only_the_files_to_change(tmp_path):
    """A probe reply that repeats the test file (changed, so that it passes) does not write
    it, even where the task does not forbid changing tests: the probe puts back only what it
    may write, and tests it rewrote would pass for the wrong reason."""
    _hamming(tmp_path, solved=False)
    tests_before = (tmp_path / "hamming_test.py").read_text()
    task = (f"Implement distance in hamming.py. Run the tests with: {sys.executable} -m pytest "
            "-q hamming_test.py")
    rigged = ("hamming.py\n```python\ndef distance(a, b):\n    return 0\n```\n\n"
              "hamming_test.py\n```python\nfrom hamming import distance\n\n"
              "def test_one():\n    assert distance('A', 'G') == 0\n```")
    loop, client, rec = make_loop(tmp_path, [{"content": rigged}, {"content": rigged},
                                             {"content": GOOD}, {"content": "Fixed."},
                                             {"content": "Verified."}],
                                  show_named_files=True, probe=True, probe_rounds=0)
    outcome = loop.run_turn(task)
    assert (tmp_path / "hamming_test.py").read_text() == tests_before
    assert client.tools_seen[:2] == [[], []] and client.tools_seen[2]  # both probes failed
    assert not any(c.changes[0].path.endswith("hamming_test.py")
                   for c in rec.completed("file_change"))
    assert outcome.status == "completed" and "zip(a, b)" in (tmp_path / "hamming.py").read_text()


def test_no_probe_without_the_profile_a_test_command_or_a_file_to_change(tmp_path):
    loop, client, _, task = _probe_loop(tmp_path, [{"content": "ok"}, {"content": "ok."}])
    loop.run_turn(task)
    assert [] not in client.tools_seen  # the full profile
    loop, client, _, _ = _probe_loop(tmp_path, [{"content": "ok"}, {"content": "ok."}],
                                     probe=True)
    loop.run_turn("Implement distance in hamming.py.")  # no test command named
    assert [] not in client.tools_seen
    loop, client, _, _ = _probe_loop(tmp_path, [{"content": "ok"}, {"content": "ok."}],
                                     probe=True)
    loop.run_turn("Run the tests with: python -m pytest -q")  # no file to change named
    assert [] not in client.tools_seen
    loop, client, _, task = _probe_loop(tmp_path, [{"content": "No idea."}, {"content": "Nope."},
                                                   {"content": "ok"}, {"content": "ok."}],
                                        probe=True)
    loop.run_turn(task)  # probes with no file in them: the turn goes on, nothing kept of them
    assert client.tools_seen[:2] == [[], []] and client.tools_seen[2]
    assert not any(text in str(m.get("content")) for m in loop.history
                   for text in ("No idea.", "Nope."))
    loop, client, _, task = _probe_loop(tmp_path, [{"content": "No idea."}, {"content": "ok"},
                                                   {"content": "ok."}], probe=True)
    (tmp_path / "hamming_test.py").unlink()  # no test file to show: one probe
    loop.run_turn(task)
    assert client.tools_seen[0] == [] and client.tools_seen[1]


def test_a_probe_reply_that_drops_a_name_tells_the_conversation_nothing(tmp_path):
    dropped = "hamming.py\n```python\ndef count(a, b):\n    return 0\n```"
    loop, client, _, task = _probe_loop(tmp_path, [{"content": dropped}, {"content": dropped},
                                                   {"content": GOOD}, {"content": "Fixed."},
                                                   {"content": "Verified."}], probe=True)
    assert loop.run_turn(task).status == "completed"
    assert client.tools_seen[:2] == [[], []]
    assert not any("was not written" in str(m.get("content")) for m in loop.history)


# -- the probe's repair rounds: the best attempt and one failing test, again and again -----------

def _two_tests(tmp_path: Path, third: bool = False) -> str:
    """hamming with two tests (three with `third`), so that an attempt can pass some of
    them; returns the task."""
    (tmp_path / "hamming.py").write_text("def distance(a, b):\n    pass\n")
    (tmp_path / "hamming_test.py").write_text(
        "from hamming import distance\n\n"
        "def test_same():\n    assert distance('A', 'A') == 0\n\n"
        "def test_differs():\n    assert distance('A', 'G') == 1\n"
        + ("\ndef test_two():\n    assert distance('AC', 'GT') == 2\n" if third else ""))
    return TASK.replace("python -m pytest", f"{sys.executable} -m pytest")


HALF = "hamming.py\n```python\ndef distance(a, b):\n    return 0\n```"  # test_same passes


def test_a_repair_round_shows_the_best_attempt_and_one_failing_test(tmp_path):
    task = _two_tests(tmp_path)
    steps = [{"content": HALF}, {"content": WRONG}, {"content": "Fixed:\n" + GOOD}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and client.calls == 3
    assert outcome.final_message.startswith("Wrote hamming.py; the tests pass")
    assert client.tools_seen == [[], [], []]  # all three without tools: the probe's
    again, repair = client.requests[1][1]["content"], client.requests[2][1]["content"]
    # the second message first (one prefix for the server's cache), then the round's own
    assert repair.startswith(task) and repair.startswith(again)
    tail = repair[len(again):]
    # the best attempt (one test passes), not the second probe's (none passes), nor the stub
    assert "return 0" in tail and "return 2" not in tail and "pass\n" not in tail
    assert "gives: 1 failed, 1 passed" in tail
    assert "This test fails (test_differs)" in tail and "assert 0 == 1" in tail
    assert "def test_same" not in tail  # one failing test, not the test file again
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    assert turn_completed(rec).verification.by == "evidence"
    assert_pairs_intact(loop.history)
    notices = [e.message for e in rec.events if isinstance(e, ev.ErrorEvent)]
    assert any(m.startswith("repair round 1: the best whole-file answer so far (1 failed, "
                            "1 passed)") for m in notices)


def test_repair_rounds_stop_after_misses_and_the_turn_starts_from_the_task(tmp_path):
    """Rounds that pass no more tests than the best are dropped; each shows the best again
    with another of its failing tests (a new prompt), and after three in a row the files are
    put back as the task had them and the conversation begins."""
    task = _two_tests(tmp_path, third=True)
    steps = [{"content": HALF}, {"content": HALF}, {"content": WRONG}, {"content": WRONG},
             {"content": "The test expects 1."}, {"content": WRONG},  # a sentence, no file
             {"content": GOOD}, {"content": "Done."}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True,
                                  repair_candidates=0)  # no search: the repair rounds alone
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and outcome.final_message == "Done."
    assert client.tools_seen[:6] == [[]] * 6 and client.tools_seen[6]
    rounds = [client.requests[i][1]["content"] for i in (2, 3, 4)]
    assert all("return 0" in r for r in rounds)  # always the best, never a worse attempt
    assert "(test_differs)" in rounds[0] and "(test_two)" in rounds[1]
    assert "(test_differs)" in rounds[2]  # the failing tests shown in turn
    # the third round's reply said why and sent no file: the file asked for, after it
    follow_up = client.requests[5]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert follow_up[1]["content"] == rounds[2]
    assert follow_up[2]["content"] == "The test expects 1."
    assert follow_up[3]["content"] == "Now reply with the whole new content of hamming.py, fixed."
    first = client.requests[6]  # the conversation: from the task, nothing of the probe
    assert not any("return 0" in str(m.get("content")) for m in first)
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    assert turn_completed(rec).verification.by == "evidence"


# -- the search with the tests: sampled candidates, tested in a scratch copy ------------------

NONE_PASS = "hamming.py\n```python\ndef distance(a, b):\n    return 5\n```"  # passes no test
# A search round whose three candidates send the repair round's code again (nothing new to
# test): what the probe spends of its three quarters of the calls after a missed repair round.
SEARCH_NOTHING_NEW = [{"content": NONE_PASS}] * 3


def test_repeated_replies_start_a_search_whose_passing_candidate_is_kept(tmp_path):
    """The repair round sends the best attempt back (twice): the next rounds draw sampled
    candidates from other prompts, each tested in a scratch copy; the workspace holds the
    best attempt until the candidate that passes is written there."""
    task = _two_tests(tmp_path, third=True)
    workspace_seen: list[str] = []

    def candidate(reply: str):
        def step(_messages: list[dict[str, Any]]) -> dict[str, Any]:
            workspace_seen.append((tmp_path / "hamming.py").read_text())
            return {"content": reply}
        return step

    steps = [{"content": HALF}, {"content": HALF},  # the openings: 1 of 3 passes
             {"content": HALF}, {"content": HALF},  # repair round 1 and its follow-up: as is
             candidate(NONE_PASS), candidate("Here:\n" + GOOD)]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and client.calls == 6
    assert outcome.final_message.startswith("Wrote hamming.py; the tests pass")
    assert client.tools_seen == [[]] * 6
    # sampled above 0 only in the search; the run's own temperature before it
    assert client.temperatures == [None] * 4 + [0.7, 0.7]
    one, fresh = client.requests[4][1]["content"], client.requests[5][1]["content"]
    assert "This test fails (test_two)" in one and "return 0" in one  # the next failing test
    assert fresh == client.requests[1][1]["content"]  # a fresh start: the task and its tests
    # while the candidates were drawn and tested the workspace held the best attempt
    assert workspace_seen == ["def distance(a, b):\n    return 0\n"] * 2
    # the openings' writes and the stub put back between them, then the chosen candidate's:
    # a losing candidate is never written
    assert len(rec.completed("file_change")) == 4
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    assert turn_completed(rec).verification.by == "evidence"
    assert_pairs_intact(loop.history)
    notices = [e.message for e in rec.events if isinstance(e, ev.ErrorEvent)]
    assert any(m.startswith("search round 2: candidate 1 of 3 (one failing test) at "
                            "temperature 0.7") for m in notices)
    assert any("candidate 1: 3 failed" in m for m in notices)
    assert any("candidate 2 passes the tests in the scratch copy" in m for m in notices)


def test_a_fresh_start_candidate_is_the_task_without_the_failed_attempt(tmp_path):
    task = _two_tests(tmp_path, third=True)
    seven = NONE_PASS.replace("return 5", "return 7")
    steps = [{"content": HALF}, {"content": HALF}, {"content": NONE_PASS},  # round 1: a miss
             {"content": NONE_PASS}, {"content": seven}, {"content": GOOD}]
    loop, client, _ = make_loop(tmp_path, steps, show_named_files=True, probe=True)
    assert loop.run_turn(task).status == "completed" and client.calls == 6
    fresh = client.requests[5][1]["content"]
    assert fresh == client.requests[1][1]["content"]  # the opening with the tests shown
    assert "return 0" not in fresh and client.temperatures[5] == 0.7


def test_a_candidate_that_sends_no_code_is_asked_for_the_file_after_its_reply(tmp_path):
    """A search candidate that says why the test fails and stops (or sends the code as it
    was) gets one more message, after its own reply, as a repair round's does: the file it
    then sends is tested like any candidate."""
    task = _two_tests(tmp_path, third=True)
    steps = [{"content": HALF}, {"content": HALF}, {"content": NONE_PASS},  # round 1: a miss
             {"content": "The test fails because distance returns 0."},  # no code
             {"content": "Here:\n" + GOOD}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and client.calls == 5
    assert outcome.final_message.startswith("Wrote hamming.py; the tests pass")
    follow_up = client.requests[4]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert follow_up[1]["content"] == client.requests[3][1]["content"]  # the same prefix
    assert follow_up[2]["content"] == "The test fails because distance returns 0."
    assert follow_up[3]["content"] == "Now reply with the whole new content of hamming.py, fixed."
    assert client.temperatures[3:] == [0.7, 0.7]
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    notices = [e.message for e in rec.events if isinstance(e, ev.ErrorEvent)]
    assert "search round 2: candidate 1 changed no file: asked for the changed file, after " \
        "its reply" in notices
    assert any("candidate 1 passes the tests in the scratch copy" in m for m in notices)


def test_the_best_attempt_survives_a_later_worse_write_and_max_iterations(tmp_path):
    """The probe misses (its best passes 1 of 3); the conversation starts from the task's
    file, writes a worse one and runs out of model calls: the best attempt is put back."""
    task = _two_tests(tmp_path, third=True)
    worse = call("write_file", file_path="hamming.py",
                 content="def distance(a, b):\n    return 5\n")
    look = call("shell", command="ls")
    steps = [{"content": HALF}, {"content": HALF}, {"content": NONE_PASS}, *SEARCH_NOTHING_NEW,
             {"tool_calls": [worse]}, {"tool_calls": [look]}, {"content": "Done."}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True,
                                  max_iterations=8)  # the probe: 6 calls
    outcome = loop.run_turn(task)
    assert outcome.status == "limit" and client.calls == 8
    first = client.requests[6]  # the conversation starts from the task's file
    assert not any("return 0" in str(m.get("content")) for m in first)
    assert (tmp_path / "hamming.py").read_text() == "def distance(a, b):\n    return 0\n"
    notices = [e.message for e in rec.events if isinstance(e, ev.ErrorEvent)]
    assert any("pass fewer tests (3 failed) than the probe's best attempt (2 failed, 1 passed)"
               in m for m in notices)
    assert isinstance(rec.events[-1], ev.TurnFailed)
    # the put-back is a file change of the turn, before it closes; the tests never written
    assert rec.completed("file_change")[-1].changes[0].path.endswith("hamming.py")


def test_the_best_attempt_survives_a_cancelled_turn(tmp_path):
    """A task timeout cancels the turn after a worse write: the best attempt is put back."""
    task = _two_tests(tmp_path, third=True)
    flags: list[bool] = []
    worse = call("write_file", file_path="hamming.py",
                 content="def distance(a, b):\n    return 5\n")

    def cancel(_messages: list[dict[str, Any]]) -> dict[str, Any]:
        flags.append(True)
        return {"content": "Still working."}

    steps = [{"content": HALF}, {"content": HALF}, {"content": NONE_PASS}, *SEARCH_NOTHING_NEW,
             {"tool_calls": [worse]}, cancel, {"content": "never sent"}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True,
                                  flags=flags, max_iterations=8)  # the probe: 6 calls
    outcome = loop.run_turn(task)
    assert outcome.status == "interrupted"
    assert (tmp_path / "hamming.py").read_text() == "def distance(a, b):\n    return 0\n"
    assert any("the best attempt's files were put back" in e.message for e in rec.events
               if isinstance(e, ev.ErrorEvent))


def test_a_turn_whose_files_pass_as_many_tests_keeps_them(tmp_path):
    task = _two_tests(tmp_path, third=True)
    same = call("write_file", file_path="hamming.py",
                content="def distance(a, b):\n    return 0  # same\n")
    steps = [{"content": HALF}, {"content": HALF}, {"content": NONE_PASS}, *SEARCH_NOTHING_NEW,
             {"tool_calls": [same]}, {"content": "Done."}, {"content": "Done."},
             {"content": "Done."}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True,
                                  max_iterations=8)  # the probe: 6 calls
    loop.run_turn(task)
    assert "# same" in (tmp_path / "hamming.py").read_text()
    assert not any("put back" in e.message for e in rec.events if isinstance(e, ev.ErrorEvent))


def test_a_repair_round_that_passes_more_tests_is_where_the_next_one_starts(tmp_path):
    task = _two_tests(tmp_path, third=True)
    better = ("hamming.py\n```python\ndef distance(a, b):\n"
              "    return 0 if a == b else 1\n```")
    steps = [{"content": HALF}, {"content": HALF}, {"content": better}, {"content": GOOD}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True)
    assert loop.run_turn(task).status == "completed" and client.calls == 4
    second = client.requests[3][1]["content"]
    assert "0 if a == b else 1" in second and "gives: 1 failed, 2 passed" in second
    assert "(test_two)" in second and "assert 1 == 2" in second
    # the round started from the best attempt's file, written before it was sent
    writes = [c for c in rec.completed("file_change")]
    assert len(writes) >= 4


def test_no_repair_round_without_an_attempt_or_with_rounds_off(tmp_path):
    task = _two_tests(tmp_path)
    loop, client, _ = make_loop(tmp_path, [{"content": HALF}, {"content": HALF},
                                           {"content": GOOD}, {"content": "Done."},
                                           {"content": "Verified."}],
                                show_named_files=True, probe=True, probe_rounds=0)
    assert loop.run_turn(task).status == "completed"
    assert client.tools_seen[:2] == [[], []] and client.tools_seen[2]
    assert (tmp_path / "hamming.py").read_text().count("zip(a, b)") == 1


# -- the probe merges a block that drops names into its file, by name -------------------------

def test_merge_definitions_replaces_by_name_and_keeps_the_rest():
    from baseagent.helps.code_blocks import merge_definitions
    current = ('"""Doc."""\nSIDES = 6\n\n\nclass Character:\n    def __init__(self):\n'
               '        pass\n\n\n@staticmethod\ndef modifier(value):\n    pass\n')
    moved = ("import random\n\nclass Character:\n    def __init__(self):\n"
             "        self.hp = random.randint(3, 18)\n\n    def modifier(self, value):\n"
             "        return (value - 10) // 2\n\nc = Character()\nprint(c.hp)\n"
             "LIMIT = 18\n")
    merged = merge_definitions(current, moved)
    assert merged is not None
    assert merged.startswith('"""Doc."""\nimport random\nSIDES = 6\n')  # import after the doc
    assert "self.hp = random.randint(3, 18)" in merged and "        pass\n\n\nclass" not in merged
    assert "@staticmethod\ndef modifier(value):\n    pass\n" in merged  # the file's own, kept
    assert "c = Character()" not in merged and "print(" not in merged  # a demo is left out
    assert merged.rstrip().endswith("LIMIT = 18")  # a new constant is added
    compile(merged, "dnd.py", "exec")
    only_one = merge_definitions(current, "def modifier(value):\n    return value // 2\n")
    assert only_one is not None and "return value // 2" in only_one and "class Character" in only_one
    assert "@staticmethod" not in only_one  # the whole statement, decorators too, replaced
    assert merge_definitions(current, "def f(:\n") is None  # does not parse
    assert merge_definitions(current, "print('hi')\n") is None  # nothing to put in
    assert merge_definitions(current, "SIDES = 6\n") is None  # changes nothing


def test_a_probe_block_that_drops_a_name_is_merged_and_judged_by_the_tests(tmp_path):
    (tmp_path / "dnd.py").write_text(DND)
    (tmp_path / "dnd_test.py").write_text(
        "from dnd import Character, modifier\n\n"
        "def test_hp():\n    assert Character().hp == 10\n\n"
        "def test_modifier():\n    assert modifier(3) == -4\n")
    task = (f"Implement dnd.py. Run the tests with: {sys.executable} -m pytest -q "
            "-p no:cacheprovider dnd_test.py")
    fixed = ("dnd.py\n```python\ndef modifier(value):\n    return (value - 10) // 2\n```")
    loop, client, rec = make_loop(tmp_path, [{"content": MOVED}, {"content": MOVED},
                                             {"content": "It returns None.\n" + fixed}],
                                  show_named_files=True, probe=True)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and client.calls == 3
    repair = client.requests[2][1]["content"]
    # the merged attempt: the class from the reply, the file's own modifier; one test passes
    assert "self.hp = 10" in repair and "def modifier(value):\n    pass" in repair
    assert "gives: 1 failed, 1 passed" in repair and "(test_modifier)" in repair
    final = (tmp_path / "dnd.py").read_text()
    assert "self.hp = 10" in final and "return (value - 10) // 2" in final
    notes = [m["content"] for m in loop.history if m.get("role") == "tool"]
    assert any("your code block left out `Character`" in n for n in notes)


# -- the code sent back as it already is ---------------------------------------------------------

def test_a_file_sent_back_unchanged_is_told_nothing_changed(tmp_path):
    """A small model resends its failing code as it is ("now the test should pass"): the
    loop says nothing changed and what is still missing, instead of taking it as done."""
    _hamming(tmp_path, solved=False)
    task = TASK.replace("python -m pytest", f"{sys.executable} -m pytest")
    steps = [{"content": WRONG}, {"content": "Here is the fix:\n" + WRONG},
             {"content": GOOD}, {"content": "Done."}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and outcome.final_message == "Done."
    told = client.requests[2][-1]
    assert told["role"] == "user" and told["content"].startswith(
        "Your code block for hamming.py is the same as the file already is, so nothing changed.")
    assert "exited 1: it fails" in told["content"]
    assert turn_completed(rec).verification.by == "evidence"


def test_a_repair_round_that_sends_the_code_back_unchanged_is_asked_for_a_change(tmp_path):
    task = _two_tests(tmp_path)
    steps = [{"content": HALF}, {"content": WRONG},
             {"content": "It fails because of the second case.\n" + HALF},  # as it was
             {"content": GOOD}]
    loop, client, rec = make_loop(tmp_path, steps, show_named_files=True, probe=True)
    outcome = loop.run_turn(task)
    assert outcome.status == "completed" and client.calls == 4
    follow_up = client.requests[3]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert follow_up[3]["content"] == ("That is the code as it already is, so the test still "
                                       "fails. Change the code so that it passes, and reply "
                                       "with the whole new content of hamming.py.")
    assert "zip(a, b)" in (tmp_path / "hamming.py").read_text()
    notices = [e.message for e in rec.events if isinstance(e, ev.ErrorEvent)]
    assert "the reply changed no file: asked for the changed file" in notices


def test_the_probe_spends_at_most_three_quarters_of_the_turns_model_calls(tmp_path):
    task = _two_tests(tmp_path)
    steps = [{"content": HALF}] * 6 + [{"content": GOOD}, {"content": "Done."},
                                       {"content": "Verified."}]
    loop, client, _ = make_loop(tmp_path, steps, show_named_files=True, probe=True,
                                max_iterations=8)
    assert loop.run_turn(task).status == "completed"
    assert client.tools_seen[:6] == [[]] * 6 and client.tools_seen[6]  # 6 of 8: the probe's

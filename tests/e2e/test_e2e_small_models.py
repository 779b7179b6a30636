"""End to end: what the agent does for small local models (issue: real tasks with a real
model), through the CLI and the scripted server: the compact prompt profile, --oss, an
output cap on every request, runaway replies cut, code left in the answer written, and
JSONL that stays linear in a long streamed answer.
"""
from __future__ import annotations

import json
import re
import socket

from baseagent.prompts.profiles import COMPACT_SYSTEM_PROMPT
from helpers import run_agent

STUB = "def distance(strand_a, strand_b):\n    pass\n"
SOLVED = ("def distance(strand_a, strand_b):\n"
          "    return sum(a != b for a, b in zip(strand_a, strand_b))\n")
TASK = "Implement distance in hamming.py (the Hamming distance of two strands)."


def tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def test_compact_profile_sends_a_short_prompt_and_three_tools(scripted_server, workspace, home):
    server = scripted_server([{"content": "Nothing to do."}])
    run = run_agent(["-i", "look", "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    request = server.requests[0]
    assert tool_names(request) == ["shell", "read_file", "write_file"]
    assert request["messages"][0] == {"role": "system", "content": COMPACT_SYSTEM_PROMPT}
    shell = request["tools"][0]["function"]
    assert "description" not in json.dumps(shell["parameters"])
    sent = len(json.dumps(request["tools"])) + len(COMPACT_SYSTEM_PROMPT)
    assert sent < 2_400  # ~600 tokens, against ~9,000 characters for the full profile
    full = scripted_server([{"content": "x"}])
    run_agent(["-i", "look"], cwd=workspace, home=home, api_base=full.api_base)
    assert "apply_patch" in tool_names(full.requests[0])  # full stays the default here


def test_code_left_in_the_answer_is_written_with_write_file(scripted_server, workspace, home):
    (workspace / "hamming.py").write_text(STUB)
    server = scripted_server([
        {"content": f"Here is the updated hamming.py:\n```python\n{SOLVED}```"},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "python3 -c 'import hamming; "
                                                         "print(hamming.distance(\"AG\", \"AA\"))'"}}]},
        {"content": "Implemented."}, {"content": "Verified: distance('AG', 'AA') is 1."}])
    run = run_agent(["-i", TASK, "--prompt-profile", "compact"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "hamming.py").read_text() == SOLVED
    change = run.completed_items("file_change")[0]
    assert change["status"] == "completed" and change["changes"][0]["path"].endswith("hamming.py")
    note = server.requests[1]["messages"][-1]
    assert note["role"] == "tool" and "Wrote hamming.py with the whole content of the code " \
        "block" in note["content"]
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_oss_needs_no_key_and_picks_the_compact_profile(scripted_server, workspace, home):
    server = scripted_server([{"content": "Hi."}, {"content": "Hi, checked."}])
    env = {"OPENAI_API_KEY": ""}
    run = run_agent(["-i", "say hi", "--oss", "--api-base", server.api_base,
                     "--model", "openai/scripted"], cwd=workspace, home=home, env_extra=env)
    assert run.returncode == 0, run.stderr
    assert tool_names(server.requests[0]) == ["shell", "read_file", "write_file"]


def test_oss_with_nothing_listening_is_one_line(workspace, home):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    run = run_agent(["-i", "hi", "--oss", "--api-base", f"http://127.0.0.1:{port}/v1"],
                    cwd=workspace, home=home, parse=False)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "no local model server answers at" in lines[0]
    assert "ollama serve" in lines[0]


def test_every_request_carries_an_output_cap(scripted_server, workspace, home):
    server = scripted_server([{"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
                              {"content": "b"}])
    run_agent(["-i", "x"], cwd=workspace, home=home, api_base=server.api_base)
    assert [r.get("max_tokens") or r.get("max_completion_tokens") for r in server.requests] \
        == [8192, 8192]  # an unknown model: the documented default
    server = scripted_server([{"content": "a"}])
    run_agent(["-i", "x", "--max-tokens", "300"], cwd=workspace, home=home,
              api_base=server.api_base)
    assert server.requests[0].get("max_tokens") == 300
    server = scripted_server([{"content": "a"}])
    run_agent(["-i", "x", "--context-window", "4096"], cwd=workspace, home=home,
              api_base=server.api_base)
    assert server.requests[0].get("max_tokens") == 1024  # a quarter of a small window


def test_a_reply_that_repeats_itself_is_cut_and_the_model_told(scripted_server, workspace, home):
    block = "".join(f"    assert check({i}) == {i}  # the same block again\n" for i in range(12))
    server = scripted_server([{"content": "Tests:\n" + block * 200, "chunk_size": 64},
                              {"content": "Sorry. Done."}])
    run = run_agent(["-i", "write tests"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    told = server.requests[1]["messages"][-1]["content"]
    assert "kept repeating the same text and was stopped" in told
    cut = run.completed_items("agent_message")[0]["text"]
    assert len(block) * 3 < len(cut) < len(block) * 20  # stopped early, not 200 copies
    assert not any(block * 3 in str(m.get("content")) for m in server.requests[1]["messages"])


def test_jsonl_stays_linear_in_a_long_streamed_answer(scripted_server, workspace, home):
    answer = "".join(f"Line {i}: the answer goes on with more words.\n" for i in range(600))
    server = scripted_server([{"content": answer, "chunk_size": 8, "chunk_delay": 0.0004}])
    run = run_agent(["-i", "explain", "--no-verify"], cwd=workspace, home=home,
                    api_base=server.api_base, timeout=120)
    assert run.returncode == 0, run.stderr
    message_lines = [line for line in run.stdout.splitlines() if '"agent_message"' in line]
    assert run.final_message == answer
    assert sum(len(line) for line in message_lines) < 7 * len(answer)


def test_a_call_written_as_text_leaves_no_agent_message(scripted_server, workspace, home):
    call = json.dumps({"name": "shell", "arguments": {"command": "echo hi"}})
    server = scripted_server([{"content": f"```json\n{call}\n```", "chunk_size": 3},
                              {"content": "Done."}])  # no edit: no verification round
    run = run_agent(["-i", "say hi"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    texts = [i["text"] for i in run.completed_items("agent_message")]
    assert texts == ["Done."]
    started = [e for e in run.of_type("item.started") if e["item"]["type"] == "agent_message"]
    assert all(e["item"]["text"].strip() for e in started)



HAMMING_TEST = ("from hamming import distance\n\n\ndef test_one():\n"
                "    assert distance('AG', 'AA') == 1\n")
TESTED_TASK = ("Implement distance in hamming.py. The tests are in hamming_test.py; they are "
               "correct, don't change them. Run them with: python3 -m pytest -q hamming_test.py")


def test_a_whole_file_before_a_runaway_is_written(scripted_server, workspace, home):
    """The probe's reply writes the file, then invents test output until the repetition
    guard cuts it: the complete block before the cut is the edit, and it passes."""
    (workspace / "hamming.py").write_text(STUB)
    (workspace / "hamming_test.py").write_text(HAMMING_TEST)
    invented = "".join(f"hamming_test.py::test_{i} PASSED\n" for i in range(12))
    server = scripted_server([
        {"content": f"hamming.py\n```python\n{SOLVED}```\nOutput:\n" + invented * 200,
         "chunk_size": 64}])
    run = run_agent(["-i", TESTED_TASK, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "hamming.py").read_text() == SOLVED and len(server.requests) == 1
    assert run.final_message.startswith("Wrote ") and "the tests pass (" in run.final_message
    assert not any(invented in i["text"] for i in run.completed_items("agent_message"))
    assert run.events[-1]["verification"]["by"] == "evidence"


# A copy of a test file as the 1.5B model wrote one out: 30 s to stream in the tests below.
TEST_COPY = "".join(f"def test_{i}():\n    assert distance('A', 'A') == 0\n\n" for i in range(150))


def slow_probe(scripted_server, workspace, home, first: str, *then: str):
    """A probe whose first reply `first` streams slowly (20 characters each 0.1 s), the
    replies `then` at once: the server, the run and its wall time."""
    import time

    (workspace / "hamming.py").write_text(STUB)
    (workspace / "hamming_test.py").write_text(HAMMING_TEST)
    server = scripted_server([{"content": first, "chunk_size": 20, "chunk_delay": 0.1},
                              *({"content": reply} for reply in then)])
    started = time.monotonic()
    run = run_agent(["-i", TESTED_TASK, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    return server, run, time.monotonic() - started


def solved_by_the_second_reply(server, run, took: float, workspace, notice: str) -> None:
    """The slow first reply was cut early (`notice` said so), long before its 30 s, and
    the second solved the task; the tests untouched."""
    assert run.returncode == 0, run.stderr
    assert (workspace / "hamming.py").read_text() == SOLVED and len(server.requests) == 2
    assert (workspace / "hamming_test.py").read_text() == HAMMING_TEST
    assert any(e["message"].startswith(notice) for e in run.of_type("error"))
    assert run.final_message.startswith("Wrote hamming.py; the tests pass")
    assert took < 20, took


def test_a_probe_reply_is_read_no_further_than_its_file(scripted_server, workspace, home):
    """The 1.5B model follows the file with a copy of the test file it was shown, minutes
    of output on a CPU: once the reply holds the whole file to change and opens another
    block, the stream is no longer read (here the copy would take 30 s to arrive)."""
    server, run, took = slow_probe(
        scripted_server, workspace, home,
        f"hamming.py\n```python\n{SOLVED}```\n\nhamming_test.py\n```python\n{TEST_COPY}```\n")
    assert run.returncode == 0, run.stderr
    assert (workspace / "hamming.py").read_text() == SOLVED and len(server.requests) == 1
    assert (workspace / "hamming_test.py").read_text() == HAMMING_TEST
    assert run.final_message.startswith("Wrote hamming.py; the tests pass")
    assert run.events[-1]["verification"]["by"] == "evidence"
    assert took < 20, took  # the whole reply: 30 s
    assert not any("def test_149" in i["text"] for i in run.completed_items("agent_message"))


def test_a_probe_reply_that_copies_the_tests_first_is_cut_and_asked_for_the_file(
        scripted_server, workspace, home):
    """The 1.5B model named its file, then copied out the test file it was shown (minutes
    on a CPU), then sent its code: the stream is read no further once a block opens under
    the test file's name, and the file is asked for after what it said."""
    server, run, took = slow_probe(
        scripted_server, workspace, home,
        f"hamming.py\n\nhamming_test.py\n```python\n{TEST_COPY}```\n\n```python\n{SOLVED}```\n",
        f"hamming.py\n```python\n{SOLVED}```")
    solved_by_the_second_reply(server, run, took, workspace, "the reply began to copy the tests")
    asked = server.requests[1]["messages"]
    assert [m["role"] for m in asked] == ["system", "user", "assistant", "user"]
    assert asked[2]["content"] == "hamming.py\n\nhamming_test.py\n"  # read no further
    assert asked[3]["content"].startswith("Do not copy the tests")


def test_a_probe_reply_that_repeats_one_pattern_with_other_numbers_is_cut(scripted_server,
                                                                           workspace, home):
    """The 1.5B model, asked for a function, enumerated `if x == 41: return 179` and on for
    6,000 characters, no two lines alike: the stream is cut once one pattern (its numbers
    aside) repeats, counted as a miss, and the probe goes on to its next message."""
    table = "".join(f"    if strand_a == {i}:\n        return {i * 7 + 3}\n" for i in range(150))
    server, run, took = slow_probe(
        scripted_server, workspace, home,
        f"hamming.py\n```python\ndef distance(strand_a, strand_b):\n{table}```\n",
        f"hamming.py\n```python\n{SOLVED}```")
    solved_by_the_second_reply(server, run, took, workspace,
                               "the reply repeated one pattern with only its numbers changing")


def test_the_whole_file_probe_comes_first_and_is_undone_when_it_fails(scripted_server,
                                                                      workspace, home):
    """Two probe messages, then a repair round (the best attempt and its failing test) that
    fails (the file sent back unchanged, then again when asked for a change), then two
    search rounds of three candidates sampled above temperature 0, each the same code and
    again when asked for a change: after two search rounds with nothing new to test the file
    is put back and the turn is the agent's own."""
    (workspace / "hamming.py").write_text(STUB)
    (workspace / "hamming_test.py").write_text(HAMMING_TEST)
    wrong = "def distance(strand_a, strand_b):\n    return 0\n"
    server = scripted_server(
        [{"content": f"hamming.py\n```python\n{wrong}```"}] * 16  # 2 probes, 2, 6 + 6
        + [{"content": f"hamming.py\n```python\n{SOLVED}```"},  # the agent's own first reply
           {"content": "Implemented."}, {"content": "Checked: the tests pass."}])
    run = run_agent(["-i", TESTED_TASK, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    probe, again, first = server.requests[0], server.requests[1], server.requests[16]
    # the search's candidates sample at repair_temperature; nothing else sets one
    assert [r.get("temperature") for r in server.requests[:17]] \
        == [None] * 4 + [0.7] * 12 + [None]
    search = [r["messages"][1]["content"] for r in server.requests[4:16:2]]
    assert "This test fails (test_one)" in search[0]
    # twice a fresh start from the task: one prompt
    assert search[1] == search[2] == again["messages"][1]["content"]
    # each candidate sent the code as it was: a change asked, after its reply
    for asked in server.requests[5:16:2]:
        assert [m["role"] for m in asked["messages"]] == ["system", "user", "assistant", "user"]
        assert asked["messages"][-1]["content"].startswith("That is the code as it already is")
    assert [m["role"] for m in probe["messages"]] == ["system", "user"] and "tools" not in probe
    assert probe["messages"][1]["content"].startswith(TESTED_TASK)
    assert STUB in probe["messages"][1]["content"]  # the file as it was
    assert HAMMING_TEST not in probe["messages"][1]["content"]  # not the tests at first
    assert "tools" not in again and HAMMING_TEST in again["messages"][1]["content"]
    repair, follow_up = server.requests[2], server.requests[3]
    opening = again["messages"][1]["content"]
    text = repair["messages"][1]["content"]
    assert text.startswith(opening)  # every probe message opens alike: the cache serves it
    tail = text[len(opening):]
    assert "tools" not in repair and wrong in tail and "This test fails (test_one)" in tail
    assert "assert 0 == 1" in tail and HAMMING_TEST not in tail
    # the code came back as it was: a change asked
    assert [m["role"] for m in follow_up["messages"]] == ["system", "user", "assistant", "user"]
    assert follow_up["messages"][-1]["content"].startswith("That is the code as it already is")
    assert "tools" in first and not any("return 0" in str(m.get("content"))
                                        for m in first["messages"])  # as without the probe
    notices = [e["message"] for e in run.of_type("error")]
    assert any("whole-file answer" in m for m in notices)
    assert sum(m.startswith("repair round ") for m in notices) == 1
    assert sum(m.startswith("search round ") and " of 3 " in m for m in notices) == 6
    assert sum("changed no file: asked for the changed file" in m for m in notices) == 7
    assert sum(": nothing new to test" in m for m in notices) == 6  # each search candidate
    # the first probe's write; the stub put back for the second, and its write; the rounds
    # start from the best attempt, which they repeat (nothing to write, nothing to test; no
    # candidate is tested twice); the stub put back for the agent's turn; the agent's write
    assert len(run.completed_items("file_change")) == 5
    # the task's own test run (it times the tests), 2 probes, the agent's run
    assert len(run.completed_items("command_execution")) == 4
    assert (workspace / "hamming.py").read_text() == SOLVED
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_a_repair_round_that_passes_is_the_answer(scripted_server, workspace, home):
    (workspace / "hamming.py").write_text(STUB)
    (workspace / "hamming_test.py").write_text(HAMMING_TEST + "\n\ndef test_same():\n"
                                               "    assert distance('A', 'A') == 0\n")
    wrong = "def distance(strand_a, strand_b):\n    return 0\n"
    server = scripted_server([{"content": f"hamming.py\n```python\n{wrong}```"},
                              {"content": "I cannot tell."},
                              {"content": f"Fixed.\nhamming.py\n```python\n{SOLVED}```"}])
    run = run_agent(["-i", TESTED_TASK, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert len(server.requests) == 3 and (workspace / "hamming.py").read_text() == SOLVED
    repair = server.requests[2]["messages"][1]["content"]
    assert "gives: 1 failed, 1 passed" in repair and wrong in repair
    assert run.final_message.startswith("Wrote hamming.py; the tests pass")
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_a_file_that_drops_a_top_level_name_is_not_written_and_the_model_hears_why(
        scripted_server, workspace, home):
    stub = "class Character:\n    pass\n\n\ndef modifier(value):\n    pass\n"
    (workspace / "dnd.py").write_text(stub)
    moved = ("class Character:\n    def modifier(self, value):\n"
             "        return (value - 10) // 2\n")
    server = scripted_server([{"content": f"dnd.py\n```python\n{moved}```"},
                              {"content": "I see."}, {"content": "Checked."}])
    run = run_agent(["-i", "Implement dnd.py", "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "dnd.py").read_text() == stub and not run.completed_items("file_change")
    note = server.requests[1]["messages"][-1]
    assert note["role"] == "user" and "dnd.py was not written" in note["content"]
    assert "`modifier`" in note["content"]


LOOPING = "def distance(strand_a, strand_b):\n    while True:\n        pass\n"


def test_a_looping_candidate_is_stopped_in_seconds_and_told(scripted_server, workspace, home):
    """The probe times the task's tests as the task has them; a candidate that loops forever
    is stopped at a few times that (5 s at least), not at the shell's two minutes, and the
    repair round says it likely loops."""
    (workspace / "hamming.py").write_text(STUB)
    (workspace / "hamming_test.py").write_text(HAMMING_TEST)
    server = scripted_server([
        {"content": f"hamming.py\n```python\n{LOOPING}```"},
        {"content": "I am not sure."},  # the second probe message: no code
        {"content": f"It never ends.\n\nhamming.py\n```python\n{SOLVED}```"}])
    run = run_agent(["-i", TESTED_TASK, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base, timeout=120)
    assert run.returncode == 0, run.stderr
    timing, looping, passing = run.completed_items("command_execution")
    assert timing["exit_code"] == 1  # the stub fails its test, quickly
    assert looping["exit_code"] == 124
    stopped = re.search(r"command timed out after (\d+) milliseconds", looping["aggregated_output"])
    # five times the task's own run, at least 5 s: never the shell's 120 s
    assert stopped and 5_000 <= int(stopped.group(1)) < 120_000
    repair = server.requests[2]["messages"][1]["content"]
    assert f"the tests did not finish within {int(stopped.group(1)) / 1000:g} s" in repair
    assert "likely loops forever" in repair
    assert passing["exit_code"] == 0 and (workspace / "hamming.py").read_text() == SOLVED
    assert run.events[-1]["verification"]["by"] == "evidence"


def test_a_reply_longer_than_the_task_could_need_is_cut(scripted_server, workspace, home):
    """A probe reply that grows past what the task's files could need is cut and counted
    as a miss: the next message goes out."""
    (workspace / "hamming.py").write_text(STUB)
    (workspace / "hamming_test.py").write_text(HAMMING_TEST)
    rambling = "".join(f"Consider the case {chr(97 + i % 26)}{chr(97 + i // 26 % 26)}, "
                       "which is not like the others.\n" for i in range(2_000))
    server = scripted_server([
        {"content": rambling, "chunk_size": 256},
        {"content": f"hamming.py\n```python\n{SOLVED}```"}])
    run = run_agent(["-i", TESTED_TASK, "--prompt-profile", "compact"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    notices = [e["message"] for e in run.of_type("error")]
    assert any("more than the files of the task could need: cut, counted as a miss" in m
               for m in notices)
    assert len(server.requests) == 2 and (workspace / "hamming.py").read_text() == SOLVED


THREE_TESTS = ("from hamming import distance\n\n"
               "def test_same():\n    assert distance('A', 'A') == 0\n\n"
               "def test_differs():\n    assert distance('A', 'G') == 1\n\n"
               "def test_two():\n    assert distance('AC', 'GT') == 2\n")
HALF_PASS = "def distance(strand_a, strand_b):\n    return 0\n"  # test_same passes


def test_the_best_attempt_is_in_the_workspace_after_a_task_timeout(scripted_server, tmp_path,
                                                                   home):
    """`batch --task-timeout`: the probe's best attempt (1 of 3 tests) is put back, the
    conversation writes a worse file and the model then hangs past the task's time: the
    task's workspace holds the best attempt, not the worse write."""
    from batch_helpers import results, run_batch, write_tasks

    source = tmp_path / "src"
    source.mkdir()
    (source / "hamming.py").write_text(STUB)
    (source / "hamming_test.py").write_text(THREE_TESTS)
    none_pass = "def distance(strand_a, strand_b):\n    return 5\n"
    worse = {"name": "write_file", "arguments": {"file_path": "hamming.py",
                                                 "content": none_pass}}
    server = scripted_server(
        [{"content": f"hamming.py\n```python\n{HALF_PASS}```"}] * 2  # the two probe messages
        + [{"content": f"hamming.py\n```python\n{none_pass}```"}] * 4  # the repair round:
        # worse, then a search round that draws it again (nothing new): the probe's 6 calls
        + [{"tool_calls": [worse]},  # the agent's own turn writes a worse file
           {"content": "still thinking", "delay": 300}])  # and the model hangs
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{
        "id": "hamming", "instruction": TESTED_TASK.replace("python3", "python"),
        "workspace": str(source)}])
    out = tmp_path / "out"
    proc = run_batch(tasks, out, server.api_base, "--task-timeout", "40", "--retries", "0",
                     "--max-iterations", "8", "--prompt-profile", "compact", "--json",
                     home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [result] = results(out)
    assert result["error"] == "task timed out after 40 s"
    assert len(server.requests) == 8  # two probes, a repair round, a search, the write, the hang
    assert (out / "work" / "hamming" / "hamming.py").read_text() == HALF_PASS
    events = [json.loads(line) for line in
              (out / "tasks" / "hamming" / "events.jsonl").read_text().splitlines()]
    assert any("the best attempt's files were put back" in e.get("message", "")
               for e in events if e["type"] == "error")
    assert (source / "hamming.py").read_text() == STUB  # the task's own copy is untouched

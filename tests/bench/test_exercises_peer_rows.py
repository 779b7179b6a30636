"""bench/exercises.py's peer rows against the scripted server: mini-swe-agent 2.4.6 (in
bench/.peer-venv) in its tool-call mode and its text mode, each task checked with the
exercise's own tests; and the model alone, Aider's way (two answers at most)."""
from __future__ import annotations

import json
import sys

from helpers import REPO, require

sys.path.insert(0, str(REPO / "bench"))
import exercises  # noqa: E402
from agents import peer_versions  # noqa: E402

SOLVED = ("def distance(strand_a, strand_b):\n    if len(strand_a) != len(strand_b):\n"
          "        raise ValueError(\"Strands must be of equal length.\")\n"
          "    return sum(a != b for a, b in zip(strand_a, strand_b))\n")
WRITE = f"cat > hamming.py <<'EOF'\n{SOLVED}EOF"
DONE = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def _hamming():
    [hamming] = exercises.load_exercises(exercises.EXERCISES, ["hamming"])
    return hamming


def _peer() -> None:
    require(peer_versions() is not None,
            "mini-swe-agent is not in bench/.peer-venv: python bench/exercises.py peer")


def test_mini_in_tool_call_mode_is_checked_with_the_exercise_tests(scripted_server, tmp_path):
    _peer()
    server = scripted_server([
        {"tool_calls": [{"name": "bash", "arguments": {"command": WRITE}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": DONE}}]},
        # the second task: it submits without changing anything
        {"tool_calls": [{"name": "bash", "arguments": {"command": DONE}}]}])
    [solved] = exercises.run_mini("mini-tool", [_hamming()], "openai/scripted",
                                  server.api_base, tmp_path / "a", lambda _m: None)
    assert solved.solved and solved.tests == "9 passed" and solved.model_calls == 2
    assert solved.input_tokens > 0
    tools = server.requests[0].get("tools") or []
    assert [t["function"]["name"] for t in tools] == ["bash"]  # its mini.yaml: tool calls
    assert server.requests[0]["temperature"] == 0
    [failed] = exercises.run_mini("mini-tool", [_hamming()], "openai/scripted",
                                  server.api_base, tmp_path / "b", lambda _m: None)
    assert not failed.solved and failed.why.startswith("tests fail (")


def test_mini_in_text_mode_is_checked_with_the_exercise_tests(scripted_server, tmp_path):
    _peer()
    server = scripted_server([
        {"content": f"THOUGHT: write it.\n\n```mswea_bash_command\n{WRITE}\n```"},
        {"content": f"THOUGHT: done.\n\n```mswea_bash_command\n{DONE}\n```"}])
    [result] = exercises.run_mini("mini-text", [_hamming()], "openai/scripted",
                                  server.api_base, tmp_path, lambda _m: None)
    assert result.solved and result.model_calls == 2
    assert not server.requests[0].get("tools")  # mini_textbased.yaml: no tools offered


def test_the_model_alone_gets_two_answers_at_most(scripted_server, tmp_path):
    wrong = "def distance(strand_a, strand_b):\n    return 0\n"
    server = scripted_server([{"content": f"hamming.py\n```python\n{wrong}```"},
                              {"content": f"hamming.py\n```python\n{SOLVED}```"},
                              {"content": f"hamming.py\n```python\n{wrong}```"},
                              {"content": f"hamming.py\n```python\n{wrong}```"}])
    [second] = exercises.run_alone([_hamming()], "openai/scripted", server.api_base,
                                   tmp_path / "a", lambda _m: None)
    assert second.solved and second.model_calls == 2
    again = server.requests[1]["messages"]
    assert "See the testing errors above" in again[-1]["content"]  # Aider's second message
    assert "FAILED" in again[-1]["content"] or "failed" in again[-1]["content"]
    [never] = exercises.run_alone([_hamming()], "openai/scripted", server.api_base,
                                  tmp_path / "b", lambda _m: None)
    assert not never.solved and never.model_calls == 2 and len(server.requests) == 4


def test_mini_replies_rejected_for_format_count_as_model_calls(tmp_path):
    # mini 2.4.6 keeps the error it sent back, not the reply it rejected (RepeatedFormatError
    # after three: the real model's usual end in tool-call mode).
    error = {"role": "user", "content": "Tool call error: No tool calls found in the response."}
    traj = tmp_path / "traj.json"
    traj.write_text(json.dumps({
        "info": {"exit_status": "RepeatedFormatError", "model_stats": {"api_calls": 3}},
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "t"},
                     error, error, error, {"role": "exit", "content": ""}]}))
    assert exercises._mini_trajectory(traj) == (3, "RepeatedFormatError", (0, 0))


def _aider() -> None:
    from agents import aider_version

    require(aider_version() is not None,
            "aider-chat is not in bench/.aider-venv: python bench/exercises.py peer")


def test_aider_edits_whole_files_runs_the_tests_and_reflects_on_failures(scripted_server,
                                                                        tmp_path):
    """Aider's row: the whole edit format, the tests read-only in its chat, its own
    auto-test with the exercise's test command; a failing first answer gets the test output
    back (Aider's reflection) and the second, right one passes the exercise's check."""
    _aider()
    wrong = "def distance(strand_a, strand_b):\n    return 0\n"
    server = scripted_server([{"content": f"hamming.py\n```python\n{wrong}```"},
                              {"content": f"hamming.py\n```python\n{SOLVED}```"}])
    [result] = exercises.run_aider([_hamming()], "openai/scripted", server.api_base,
                                   tmp_path, lambda _m: None)
    assert result.solved and result.tests == "9 passed", result
    assert result.model_calls == 2 and result.input_tokens > 0
    first = server.requests[0]
    assert first["temperature"] == 0 and not first.get("tools")
    shown = "\n".join(str(m.get("content")) for m in first["messages"])
    assert "hamming_test.py" in shown and "def distance" in shown  # the tests, the stub
    again = "\n".join(str(m.get("content")) for m in server.requests[1]["messages"])
    assert "failed" in again  # the test run's output went back
    assert (tmp_path / "aider" / "hamming" / "ws" / "hamming.py").read_text() == SOLVED


def test_aider_tokens_are_read_from_its_own_report():
    out = ("Tokens: 2.3k sent, 512 received.\nTokens: 900 sent, 1.1k cache hit, 40 received."
           "\nTokens: 1.0k sent, 2.0k cache write, 7 received. Cost: $0.00 message")
    assert exercises.aider_tokens(out) == (2300 + 900 + 1000, 512 + 40 + 7)


def test_codex_usage_is_read_from_its_jsonl():
    out = "\n".join([json.dumps({"type": "thread.started", "thread_id": "t"}),
                     "not json",
                     json.dumps({"type": "turn.completed",
                                 "usage": {"input_tokens": 900, "cached_input_tokens": 800,
                                           "output_tokens": 40}})])
    assert exercises.codex_usage(out) == (900, 800, 40, "completed")
    failed = json.dumps({"type": "turn.failed", "error": {"message": "stream disconnected"}})
    assert exercises.codex_usage(failed)[3] == "turn.failed: stream disconnected"


def test_codex_is_run_against_a_responses_server_and_checked(tmp_path):
    """Codex CLI's row: its exec mode against a Responses API server (bench/fake_responses.py
    playing one shell step that writes the solution), then the exercise's check."""
    import shutil as _shutil

    require(_shutil.which("npm") is not None, "npm is needed to install Codex CLI")
    from fake_responses import FakeResponses

    fake = FakeResponses(steps=1, command=WRITE, final="Done.").start()
    try:
        [result] = exercises.run_codex([_hamming()], "openai/local", fake.base_url, tmp_path,
                                       lambda _m: None)
    finally:
        fake.stop()
    assert result.solved and result.tests == "9 passed", result
    assert result.input_tokens > 0 and len(fake.arrivals) == 2

"""End to end: the real CLI, the real loop, litellm, and a scripted model server over HTTP."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time

from helpers import AGENT, agent_env, run_agent, run_on_pty


def tool(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def tool_messages(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


PATCH = """*** Begin Patch
*** Update File: app.py
@@
 def greet():
-    return "hello"
+    return "hello, world"
*** End Patch"""


def test_read_shell_patch_verify_answer(scripted_server, workspace, home):
    (workspace / "app.py").write_text('def greet():\n    return "hello"\n')
    server = scripted_server([
        {"content": "Let me look.", "tool_calls": [tool("read_file", file_path="app.py")]},
        {"tool_calls": [tool("shell", command="echo checked && python3 -c 'print(6*7)'")]},
        {"tool_calls": [tool("apply_patch", input=PATCH)]},
        {"content": "Changed greet()."},
        # after the verification reminder: run the changed code (reading it back with
        # `cat` would not be evidence), then answer for good
        {"tool_calls": [tool("shell", command="python3 -c 'import app; print(app.greet())'")]},
        {"content": "Verified: greet() returns 'hello, world'."},
    ])
    run = run_agent(["--instruction", "make greet say hello, world"], cwd=workspace,
                    home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "app.py").read_text() == 'def greet():\n    return "hello, world"\n'

    types = [e["type"] for e in run.events]
    assert types[0] == "thread.started" and types[1] == "turn.started"
    assert types[-1] == "turn.completed"
    assert re.fullmatch(r"[0-9a-f-]{36}", run.events[0]["thread_id"])

    commands = run.completed_items("command_execution")
    assert commands[0]["aggregated_output"] == "checked\n42\n"
    assert commands[0]["exit_code"] == 0 and commands[0]["status"] == "completed"
    changes = run.completed_items("file_change")
    assert changes == [{"id": changes[0]["id"], "type": "file_change",
                        "changes": [{"path": str(workspace / "app.py"), "kind": "update"}],
                        "status": "completed"}]
    # a consumer sees which file is about to change as soon as the patch starts
    patch_started = [e["item"] for e in run.of_type("item.started")
                     if e["item"]["type"] == "file_change"]
    assert patch_started == [{**changes[0], "status": "in_progress"}]
    reads = run.completed_items("mcp_tool_call")
    assert reads[0]["tool"] == "read_file" and reads[0]["status"] == "completed"
    assert "L2:     return \"hello\"" in reads[0]["result"]["content"][0]["text"]
    assert run.final_message == "Verified: greet() returns 'hello, world'."

    # every item id is unique and every started item was completed
    started = {e["item"]["id"] for e in run.of_type("item.started")}
    completed = {e["item"]["id"] for e in run.of_type("item.completed")}
    assert started <= completed

    requests = server.requests
    assert len(requests) == 6
    # tool results travel back paired with the ids of the calls that asked for them
    for req in requests[1:]:
        calls = {tc["id"] for m in req["messages"] if m["role"] == "assistant"
                 for tc in m.get("tool_calls") or []}
        assert set(tool_messages(req)) == calls
    assert any("42" in content for content in tool_messages(requests[2]).values())
    assert any(content.startswith("Success. Updated the following files:")
               for content in tool_messages(requests[3]).values())
    # the verification reminder came exactly once, after the first tool-free answer
    reminders = [m for m in requests[4]["messages"]
                 if m["role"] == "user" and "Before you finish, verify" in m["content"]]
    assert len(reminders) == 1 and "make greet say hello, world" in reminders[0]["content"]
    assert not any("Before you finish, verify" in m.get("content") or ""
                   for m in requests[3]["messages"] if m["role"] == "user")

    usage = run.of_type("turn.completed")[0]["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0


def test_answer_without_tools(scripted_server, workspace, home):
    server = scripted_server([{"content": "Nothing to do."}, {"content": "Still nothing to do."}])
    run = run_agent(["-i", "say hi"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0
    assert run.final_message == "Nothing to do."
    assert len(server.requests) == 1  # a question costs one call: no verification round


def test_no_verify_flag_stops_at_first_answer(scripted_server, workspace, home):
    server = scripted_server([{"content": "Done."}])
    run = run_agent(["-i", "say hi", "--no-verify"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0 and run.final_message == "Done."
    assert len(server.requests) == 1


def test_invalid_tool_json_goes_back_to_model(scripted_server, workspace, home):
    server = scripted_server([
        {"tool_calls": [{"name": "shell", "arguments": '{"command": "echo hi"'}]},
        {"content": "ok"}, {"content": "ok"},
    ])
    run = run_agent(["-i", "x"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0
    results = list(tool_messages(server.requests[1]).values())
    assert len(results) == 1 and "invalid JSON" in results[0]
    failed = run.completed_items("mcp_tool_call")
    assert failed and failed[0]["status"] == "failed"


def test_unknown_tool_and_schema_violation(scripted_server, workspace, home):
    server = scripted_server([
        {"tool_calls": [tool("launch_rocket", target="moon"),
                        tool("read_file", path="nope.txt")]},
        {"content": "ok"}, {"content": "ok"},
    ])
    run = run_agent(["-i", "x"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0
    results = list(tool_messages(server.requests[1]).values())
    assert "unknown tool 'launch_rocket'" in results[0]
    assert "invalid arguments for read_file" in results[1] and "file_path" in results[1]


def test_max_iterations(scripted_server, workspace, home):
    server = scripted_server([{"tool_calls": [tool("shell", command="true")]}] * 5)
    run = run_agent(["-i", "loop", "--max-iterations", "3"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 1
    assert run.events[-1]["type"] == "turn.failed"
    assert "max iterations" in run.events[-1]["error"]["message"]
    assert len(server.requests) == 3


def test_cost_limit(scripted_server, workspace, home):
    # gpt-4.1 is priced by litellm: 1M prompt tokens cost $2, so the second call is refused.
    big = {"prompt_tokens": 1_000_000, "completion_tokens": 10}
    server = scripted_server([{"tool_calls": [tool("shell", command="true")], "usage": big}] * 3)
    run = run_agent(["-i", "spend", "--cost-limit", "1.5"], cwd=workspace, home=home,
                    api_base=server.api_base, model="openai/gpt-4.1")
    assert run.returncode == 1
    failed = run.events[-1]
    assert failed["type"] == "turn.failed" and "cost limit" in failed["error"]["message"]
    assert "$2.0" in failed["error"]["message"]
    assert len(server.requests) == 1


def test_missing_api_key_is_a_one_line_usage_error(workspace, home):
    env = agent_env(home)
    env.pop("OPENAI_API_KEY")
    proc = subprocess.run([sys.executable, str(AGENT), "-i", "x", "--model", "openai/gpt-4.1"],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0], proc.stderr


def test_unknown_model_is_a_usage_error(workspace, home):
    run = run_agent(["-i", "x", "--model", "no-such-provider-model"], cwd=workspace, home=home,
                    parse=False)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "unknown model" in run.stderr


def test_instruction_from_stdin_and_last_message_file(scripted_server, workspace, home):
    server = scripted_server([{"content": "final words"}])  # a question: one call
    out = workspace / "out" / "last.txt"
    run = run_agent(["--output-last-message", str(out)], cwd=workspace, home=home,
                    api_base=server.api_base, stdin="task from stdin\n")
    assert run.returncode == 0
    user_texts = [m["content"] for m in server.requests[0]["messages"] if m["role"] == "user"]
    assert "task from stdin\n" in user_texts
    assert out.read_text() == "final words"


def test_help_does_not_import_litellm():
    code = ("import runpy, sys\nsys.argv = ['agent.py', '--help']\n"
            "try:\n    runpy.run_path(%r, run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert e.code in (0, None), e.code\n"
            "print('LITELLM' if 'litellm' in sys.modules else 'CLEAN')\n") % str(AGENT)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "CLEAN", proc.stdout + proc.stderr
    assert "--instruction" in proc.stdout


def test_agents_md_and_environment_reach_the_model(scripted_server, workspace, home):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "AGENTS.md").write_text("Always run make test.")
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "AGENTS.md").write_text("Package rule.")
    server = scripted_server([{"tool_calls": [tool("shell", command="ls")]}, {"content": "b"}])
    run = run_agent(["-i", "x", "--cwd", str(workspace / "pkg")], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0
    context = server.requests[0]["messages"][1]["content"]
    assert f"<cwd>{workspace / 'pkg'}</cwd>" in context
    assert f"# AGENTS.md instructions for {workspace / 'pkg'}" in context
    assert context.index("Always run make test.") < context.index("Package rule.")
    # the system prompt is byte-identical between runs (cacheable prefix)
    assert server.requests[0]["messages"][0] == server.requests[1]["messages"][0]


def test_tty_rendering(scripted_server, workspace, home):
    server = scripted_server([
        {"content": "Running it.", "tool_calls": [tool("shell", command="echo from-the-shell"),
                                                  tool("write_file", file_path="n.txt",
                                                       content="tty-diff-line\n")]},
        {"content": "All good."}, {"content": "All good, verified."},
    ])
    code, raw = run_on_pty(["-i", "go", "--model", "openai/scripted", "--api-base",
                            server.api_base], workspace, home, timeout=60)
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    assert code == 0, screen
    assert "{\"type\"" not in screen  # a person gets a rendering, not JSONL
    assert "$ echo from-the-shell" in screen
    assert "from-the-shell" in screen and "exit 0" in screen
    assert "All good, verified." in screen
    assert "A n.txt" in screen and "+tty-diff-line" in screen  # the diff, on screen only
    # the summary line: status, turn, tokens in (cached) / out, cost, wall time
    assert re.search(r"✓ completed · turn 1 · [\d,]+ in \([\d,]+ cached\) · [\d,]+ out · "
                     r"cost unknown · \d+\.\ds", screen), screen


def test_usage_is_estimated_when_the_provider_reports_none(scripted_server, workspace, home):
    # A provider that ignores stream_options sends no usage: the prompt is charged at the
    # agent's own estimate (never 0), so totals and --cost-limit still move.
    server = scripted_server([{"content": "done", "usage": False},
                              {"content": "verified", "usage": False}])
    run = run_agent(["-i", "go"], cwd=workspace, home=home, api_base=server.api_base,
                    model="openai/gpt-4.1")
    assert run.returncode == 0, run.stderr
    usage = run.events[-1]["usage"]
    sent = sum(len(json.dumps(r["messages"])) + len(json.dumps(r["tools"]))
               for r in server.requests)
    # the estimate is about a token per 4 characters of what was sent
    assert sent / 8 < usage["input_tokens"] < sent
    assert usage["cached_input_tokens"] == 0


def test_an_answer_cut_off_by_the_provider_is_not_a_success(scripted_server, workspace, home):
    """finish_reason "length" (the output token limit) is not an answer: the model is told
    and answers again; cut off three times in a row, the turn fails (exit 1, not 0)."""
    cut = {"content": "Here is the fix: first change", "finish_reason": "length"}
    server = scripted_server([cut, cut, cut])
    run = run_agent(["--instruction", "fix it"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 1, run.stderr
    failed = run.of_type("turn.failed")
    assert len(failed) == 1 and "cut off at the output token limit" in failed[0]["error"]["message"]
    assert not run.of_type("turn.completed")
    assert run.completed_items("agent_message")[0]["text"] == "Here is the fix: first change"
    assert "cut off at the output limit" in server.requests[1]["messages"][-1]["content"]

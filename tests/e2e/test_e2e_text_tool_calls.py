"""End to end: a model that writes its tool calls as text, as local models served without
tool-call parsing do (llm/text_tool_calls.py, setting tool_call_parser)."""
from __future__ import annotations

import json

from helpers import run_agent


def tagged(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_text_tool_calls_run_as_tool_calls_with_one_notice(scripted_server, workspace, home):
    server = scripted_server([
        {"content": "I will write the file.\n" + tagged("shell", command="echo hi > f.txt")},
        {"content": "```json\n" + json.dumps({"name": "read_file",
                                              "arguments": {"file_path": "f.txt"}}) + "\n```"},
        # an offered tool with arguments that do not fit: not run, and not an answer either
        {"content": tagged("shell", command=3)},
        # not offered / not valid: never run, stays text (the answer; no file tool was used
        # and no test named: no verification round)
        {"content": "Done. " + tagged("rm_everything", path="/")},
    ])
    run = run_agent(["--instruction", "write hi to f.txt"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (workspace / "f.txt").read_text() == "hi\n"
    assert [c["command"] for c in run.completed_items("command_execution")] == ["echo hi > f.txt"]
    reads = [i for i in run.completed_items("mcp_tool_call") if i["tool"] == "read_file"]
    assert reads and reads[0]["status"] == "completed"
    notices = [e["message"] for e in run.of_type("error")]
    assert len(notices) == 1 and "tool_call_parser=auto" in notices[0]  # once per run
    # the history carries them as real tool calls, the call text taken out of the content
    second = server.requests[1]["messages"]
    assert second[-2]["content"] == "I will write the file."
    assert [c["function"]["name"] for c in second[-2]["tool_calls"]] == ["shell"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == \
        second[-2]["tool_calls"][0]["id"]
    assert "Exit code: 0" in second[-1]["content"]
    # a call to a tool that is not offered is text; a call to an offered tool that cannot
    # run is neither a call nor an answer: the model is told it did not run
    told = server.requests[3]["messages"][-1]["content"]
    assert "could not be read, so it did not run: shell: its arguments do not match" in told
    assert run.final_message.startswith("Done. ") and "rm_everything" in run.final_message
    assert not any(i["tool"] == "rm_everything" for i in run.completed_items("mcp_tool_call"))


def test_native_parser_leaves_text_calls_alone(scripted_server, workspace, home):
    server = scripted_server([{"content": tagged("shell", command="echo hi > f.txt")},
                              {"content": "Verified."}])
    run = run_agent(["--instruction", "write hi"], cwd=workspace, home=home,
                    api_base=server.api_base,
                    env_extra={"BASEAGENT_TOOL_CALL_PARSER": "native"})
    assert run.returncode == 0, run.stderr
    assert not (workspace / "f.txt").exists()
    assert run.completed_items("command_execution") == [] and run.of_type("error") == []

"""The verbose log (llm/request_log.py) from the CLI: `--verbose` writes every model request
and response to stderr, one redacted JSON line each; stdout stays JSONL, and without the
flag nothing is logged."""
from __future__ import annotations

import json

from helpers import run_agent

SECRET = "tok-verbose-secret-0123456789"
PREFIX = "baseagent: verbose: "


def test_verbose_logs_requests_and_responses_to_stderr_redacted(scripted_server, workspace,
                                                                home, transport_env):
    server = scripted_server([
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]},
        {"content": f"Done; the token was {SECRET}."},
    ])
    run = run_agent(["--json", "--verbose", "--no-verify", "-i", f"use {SECRET}"],
                    cwd=workspace, home=home, api_base=server.api_base,
                    env_extra={"MY_SERVICE_TOKEN": SECRET, **transport_env})
    assert run.returncode == 0, run.stderr
    assert run.events and run.events[-1]["type"] == "turn.completed"  # stdout: JSONL only
    assert PREFIX not in run.stdout and SECRET not in run.stdout
    lines = [json.loads(line[len(PREFIX):]) for line in run.stderr.splitlines()
             if line.startswith(PREFIX)]
    assert [line["event"] for line in lines] == ["request", "response"] * 2
    thread_id = run.events[0]["thread_id"]
    assert {line["thread_id"] for line in lines} == {thread_id}
    request = lines[0]
    assert request["model"] == "openai/scripted" and request["api_base"] == server.api_base
    assert request["transport"] == ("litellm" if transport_env["BASEAGENT_MODEL_TRANSPORT"]
                                    == "litellm" else "direct")
    assert request["messages"][-1] == {"role": "user", "content": "use [REDACTED]"}
    assert "shell" in request["tools"] and request["params"]["stream"] is True
    assert lines[1]["message"]["tool_calls"][0]["function"]["arguments"] == \
        '{"command": "echo hi"}'
    assert lines[1]["usage"]["input_tokens"] > 0
    assert lines[2]["messages"][-1]["role"] == "tool"  # the second request carries the result
    assert lines[3]["message"]["content"] == "Done; the token was [REDACTED]."
    assert SECRET not in run.stderr


def test_without_verbose_nothing_is_logged(scripted_server, workspace, home):
    server = scripted_server([{"content": "Done."}])
    run = run_agent(["--json", "--no-verify", "-i", "x"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert PREFIX not in run.stderr

"""End to end over Anthropic's Messages API: the real CLI and litellm's Anthropic client
against the scripted server speaking `POST /v1/messages` (SSE), as a Claude model would."""
from __future__ import annotations

import json

from helpers import run_agent

from baseagent.core.context.caching import count_breakpoints
from baseagent.testing.anthropic_wire import sign

# A model litellm knows (priced, supports extended thinking); the server answers for it.
CLAUDE = "anthropic/claude-sonnet-4-5-20250929"
ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-dummy"}


def tool(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def blocks(message: dict) -> list[dict]:
    content = message.get("content")
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def test_tools_cache_markers_and_cached_tokens(scripted_server, workspace, home,
                                               transport_env):
    server = scripted_server([
        {"content": "Looking.", "tool_calls": [tool("shell", command="echo hi > out.txt")]},
        {"tool_calls": [tool("read_file", file_path="out.txt")]},
        {"content": "Wrote out.txt."},  # no code edited, no test named: no verification
    ], anthropic_cache=True)
    run = run_agent(["--instruction", "write hi to out.txt"], cwd=workspace, home=home,
                    api_base=server.url, model=CLAUDE, env_extra={**ENV, **transport_env})
    assert run.returncode == 0, run.stderr
    assert (workspace / "out.txt").read_text() == "hi\n"
    commands = run.completed_items("command_execution")
    assert [c["command"] for c in commands] == ["echo hi > out.txt"]
    assert commands[0]["status"] == "completed"
    assert run.final_message == "Wrote out.txt."

    requests = server.requests
    assert len(requests) == 3 and not server.refusals
    for body in requests:  # the Messages API shape, not chat completions
        assert body["model"] == CLAUDE.split("/", 1)[1] and body["stream"] is True
        assert isinstance(body["max_tokens"], int) and "tools" in body
        # core/context/caching.py: the system prompt and the last two messages, within Anthropic's 4
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert blocks(body["messages"][-1])[-1].get("cache_control") == {"type": "ephemeral"}
        assert 3 <= count_breakpoints([{"content": body["system"]}, *body["messages"]]) <= 4
    # tool_use / tool_result pairs went back under the ids the server gave
    second = requests[1]["messages"]
    uses = [b for b in blocks(second[-2]) if b["type"] == "tool_use"]
    results = [b for b in blocks(second[-1]) if b["type"] == "tool_result"]
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results] == ["toolu_0_0"]
    assert uses[0]["input"] == {"command": "echo hi > out.txt"}

    usage = run.of_type("turn.completed")[0]["usage"]
    assert set(usage) == {"input_tokens", "cached_input_tokens", "cache_write_input_tokens",
                          "output_tokens", "reasoning_output_tokens"}
    # every request after the first reads the prefix the one before it wrote
    assert usage["cached_input_tokens"] > 0 and usage["cache_write_input_tokens"] > 0
    assert usage["cached_input_tokens"] + usage["cache_write_input_tokens"] \
        <= usage["input_tokens"]
    assert run.of_type("turn.completed")[0]["cost_usd"] > 0  # priced from litellm's map


def test_extended_thinking_blocks_go_back_with_their_signatures(scripted_server, workspace,
                                                                 home):
    server = scripted_server([
        {"reasoning": "List the directory first.", "tool_calls": [tool("shell", command="ls")]},
        {"reasoning": "Then write the file.",
         "tool_calls": [tool("write_file", file_path="a.txt", content="A\n")]},
        {"reasoning": "Done; say so.", "content": "Created a.txt."},
        {"reasoning": "Check it.", "tool_calls": [tool("read_file", file_path="a.txt")]},
        {"content": "Verified."},
    ])
    run = run_agent(["--reasoning-effort", "low", "--instruction", "create a.txt"],
                    cwd=workspace, home=home, api_base=server.url, model=CLAUDE,
                    env_extra=ENV)
    assert run.returncode == 0, run.stderr
    # the server holds the history to the real API's rules; it refused nothing
    assert server.refusals == []
    requests = server.requests
    assert requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}  # "low"
    assert all(r["max_tokens"] > r["thinking"]["budget_tokens"] for r in requests)
    # each request in the tool loop sends the last assistant message back starting with its
    # thinking block, text and signature exactly as streamed
    for request, reasoning in ((requests[1], "List the directory first."),
                               (requests[2], "Then write the file.")):
        first = blocks(request["messages"][-2])[0]
        assert first == {"type": "thinking", "thinking": reasoning, "signature": sign(reasoning)}
    # and older thinking blocks stay in the history too
    assert [b["thinking"] for m in requests[4]["messages"] if m["role"] == "assistant"
            for b in blocks(m) if b["type"] == "thinking"] == \
        ["List the directory first.", "Then write the file.", "Done; say so.", "Check it."]

    reasoning = [i["text"] for i in run.completed_items("reasoning")]
    assert reasoning == ["List the directory first.", "Then write the file.", "Done; say so.",
                         "Check it."]
    thread = run.events[0]["thread_id"]
    sharegpt = run_agent(["export", thread, "--format", "sharegpt"], cwd=workspace, home=home,
                         parse=False)
    gpt = [t["value"] for t in json.loads(sharegpt.stdout)["conversations"]
           if t["from"] == "gpt"]
    assert gpt[0].startswith("<think>\nList the directory first.\n</think>")
    atif = run_agent(["export", thread, "--format", "atif"], cwd=workspace, home=home,
                     parse=False)
    steps = [s for s in json.loads(atif.stdout)["steps"] if s["source"] == "agent"]
    assert [s.get("reasoning_content") for s in steps] == reasoning + [None]



def test_overload_and_a_broken_stream_are_retried(scripted_server, workspace, home,
                                                  transport_env):
    server = scripted_server([
        {"fault": "status", "status": 529, "message": "Overloaded"},
        {"fault": "reset", "content": "This answer is cut off."},
        {"content": "Done."},  # a question: no verification round
    ])
    run = run_agent(["--instruction", "hello"], cwd=workspace, home=home,
                    api_base=server.url, model=CLAUDE,
                    env_extra={**ENV, "BASEAGENT_RETRY_BASE_DELAY": "0.01",
                               **transport_env})
    assert run.returncode == 0, run.stderr
    notices = [e["message"] for e in run.of_type("error")]
    assert len(notices) == 2 and all(n.startswith("Reconnecting... ") for n in notices)
    assert "529" in notices[0]
    assert [i["text"] for i in run.completed_items("agent_message")] == ["Done."]

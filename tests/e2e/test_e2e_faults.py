"""End to end: the real agent survives what can be survived and fails cleanly on the rest.

Every run is checked the same way: exit code, every stdout line parsed and validated
(run_agent does that), the session record complete, and no child process left behind.
Each script spreads its faults over several model calls so that no call runs out of its
retries (5 by default); each call's retry counter starts afresh.
"""
from __future__ import annotations

import re

import pytest

from helpers import run_agent
from reliability import (FAST_RETRY_ENV, assert_no_survivors, assert_session_complete,
                         read_pids, shell)

ANSWER = "Let me look at the files first."
# Every command records its shell's pid so the test can check nothing outlived the agent.
MARK_PID = "echo $$ >> pids.txt; "


def notices(run) -> list[str]:
    return [e["message"] for e in run.of_type("error")]


def assistant_texts(request: dict) -> list[str]:
    return [m.get("content") or "" for m in request["messages"] if m["role"] == "assistant"]


def test_transient_http_errors_are_retried(scripted_server, workspace, home,
                                           transport_env):
    server = scripted_server([
        {"fault": "status", "status": 429, "retry_after": 1},       # Retry-After header
        {"fault": "status", "status": 503},                          # overloaded, no hint
        {"fault": "status", "status": 529},                          # Anthropic overloaded
        {"tool_calls": [shell(MARK_PID + "echo first")]},
        {"fault": "status", "status": 500,
         "message": "Rate limit reached. Please try again in 0.8s."},  # hint in the text
        {"fault": "status", "status": 502},
        {"content": "All done."},
    ])
    run = run_agent(["-i", "work", "--no-verify"], cwd=workspace, home=home,
                    api_base=server.api_base, env_extra={**FAST_RETRY_ENV, **transport_env})
    assert run.returncode == 0, run.stderr
    assert run.final_message == "All done."
    assert [n.split(" (waiting")[0] for n in notices(run)] == [
        "Reconnecting... 1/5 after 429 RateLimitError",
        "Reconnecting... 2/5 after 503 ServiceUnavailableError",
        "Reconnecting... 3/5 after 529 APIError",
        "Reconnecting... 1/5 after 500 RateLimitError",
        "Reconnecting... 2/5 after 502 BadGatewayError",
    ]
    times = server.request_times
    assert times[1] - times[0] >= 0.95  # Retry-After: 1 honoured
    assert times[5] - times[4] >= 0.75  # "try again in 0.8s" honoured
    assert len(server.requests) == 7
    assert run.events[-1]["type"] == "turn.completed"
    assert_session_complete(home, run)
    assert_no_survivors(read_pids(workspace / "pids.txt"))


def test_broken_streams_are_retried_without_duplicating_text(scripted_server, workspace,
                                                             home, transport_env):
    call = [shell(MARK_PID + "echo checked")]
    server = scripted_server([
        # call 1: reset after some text had streamed, then the full answer
        {"fault": "reset", "content": ANSWER, "tool_calls": call, "chunk_size": 4},
        {"content": ANSWER, "tool_calls": call, "chunk_size": 4},
        # call 2: a clean close without finish, a malformed event, then bad tool arguments
        {"fault": "drop", "content": "Next step."},
        {"fault": "malformed", "content": "Next step."},
        {"fault": "truncated_args", "tool_calls": [shell("echo never runs")]},
        # call 3: the model fixes its arguments; first a stall mid-stream, a stall before
        # the headers (beyond the 1 s idle timeout), and three kinds of empty answer
        {"fault": "stall", "seconds": 3, "content": "Fixed."},
        {"content": "late", "delay": 3},
        {"fault": "empty"},
        {"fault": "empty", "shape": "done"},
        {"fault": "empty", "shape": "no_content"},
        {"content": "Fixed.", "tool_calls": call},
        {"content": "All done."},  # no edit, no test named: no verification round
    ])
    run = run_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base,
                    env_extra={**FAST_RETRY_ENV, "BASEAGENT_STREAM_IDLE_TIMEOUT": "1",
                               # a hosted provider's stall detection, on 127.0.0.1
                               "BASEAGENT_FIRST_BYTE_TIMEOUT": "1",
                               **transport_env})
    assert run.returncode == 0, run.stderr
    reasons = [re.sub(r"Reconnecting\.\.\. \d/5 after (.*) \(waiting.*", r"\1", n)
               for n in notices(run)]
    assert reasons[2].startswith("stream error: ")  # the JSON parser's complaint
    assert reasons[:2] + reasons[3:] == [
        "stream error: [Errno 104] Connection reset by peer",
        "stream ended early",
        "stream error: timed out",
        f"no answer from {server.api_base}/chat/completions: timed out waiting for the "
        "response",
        "stream ended early",
        "stream ended early",
    ], notices(run)
    # the empty answer that finished (no_content) is the model's: not resent, but answered
    # with a note saying what is expected
    nudged = server.requests[10]["messages"][-1]
    assert nudged["role"] == "user" and nudged["content"].startswith("Your last reply was empty")

    # The broken first attempt streamed part of ANSWER; the history and the completed item
    # hold the retried answer once, never the partial text in front of it.
    # Call 2's broken attempts streamed "Next step." and its successful attempt said nothing:
    # the item started for that text is still completed (every started item is), empty. So
    # is call 3's: its stalled attempt streamed "Fixed.", and it ended as an empty answer.
    messages = run.completed_items("agent_message")
    assert [m["text"] for m in messages] == [ANSWER, "", "", "Fixed.", "All done."]
    started = [e["item"]["id"] for e in run.events if e["type"] == "item.started"]
    completed = [e["item"]["id"] for e in run.events if e["type"] == "item.completed"]
    assert sorted(started) == sorted(set(started)) and set(started) <= set(completed)
    last_request = server.requests[-1]
    assert assistant_texts(last_request)[0] == ANSWER
    assert sum(ANSWER in t for t in assistant_texts(last_request)) == 1
    # the truncated arguments went back to the model as an error it could act on
    tool_results = [m["content"] for m in last_request["messages"] if m["role"] == "tool"]
    assert any("invalid JSON in the arguments of shell" in t for t in tool_results)
    assert len([c for c in run.completed_items("command_execution")
                if c["aggregated_output"] == "checked\n"]) == 2
    assert run.events[-1]["type"] == "turn.completed"
    assert_session_complete(home, run)
    assert_no_survivors(read_pids(workspace / "pids.txt"))


@pytest.mark.parametrize("step, message", [
    ({"fault": "status", "status": 403}, "model call failed: permission denied (403): "
                                         "You are not allowed to access this model."),
    ({"fault": "status", "status": 400}, "model call failed: invalid request (400): "
                                         "Invalid request."),
    ({"fault": "status", "status": 429, "code": "insufficient_quota",
      "message": "You exceeded your current quota."},
     "model call failed: quota exceeded (check the plan and billing) (429): "
     "You exceeded your current quota."),
])
def test_fatal_errors_fail_at_once(scripted_server, workspace, home, step, message,
                                   transport_env):
    server = scripted_server([{"tool_calls": [shell(MARK_PID + "echo ok")]}, step,
                              {"content": "never"}])
    run = run_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base,
                    env_extra={**FAST_RETRY_ENV, **transport_env})
    assert run.returncode == 1
    assert run.events[-1] == {"type": "turn.failed", "error": {"message": message}}
    assert notices(run) == []  # not retried
    assert len(server.requests) == 2
    records = assert_session_complete(home, run)
    assert records[-2]["event"]["type"] == "turn.failed"
    assert_no_survivors(read_pids(workspace / "pids.txt"))


def test_retries_run_out_cleanly(scripted_server, workspace, home, transport_env):
    # each attempt streams some text before the reset, so a message item is open when the
    # call finally fails: it must still be completed before turn.failed
    server = scripted_server([{"fault": "reset", "content": ANSWER, "chunk_size": 4}] * 4)
    run = run_agent(["-i", "work"], cwd=workspace, home=home, api_base=server.api_base,
                    env_extra={**FAST_RETRY_ENV, "BASEAGENT_MAX_RETRIES": "2", **transport_env})
    assert run.returncode == 1
    assert len(notices(run)) == 2 and len(server.requests) == 3
    started = [e["item"] for e in run.of_type("item.started")]
    completed = {e["item"]["id"]: e["item"] for e in run.of_type("item.completed")}
    assert [s["type"] for s in started] == ["agent_message"]
    assert ANSWER.startswith(completed[started[0]["id"]]["text"])
    assert run.events.index({"type": "item.completed", "item": completed[started[0]["id"]]}) \
        < len(run.events) - 1
    assert run.events[-1] == {"type": "turn.failed", "error": {"message": (
        "model call failed after 2 retries: stream error: [Errno 104] Connection reset by "
        "peer")}}
    assert_session_complete(home, run)

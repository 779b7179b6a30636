"""The scripted server's Anthropic Messages API (testing/anthropic_wire.py): what it refuses
as the real API does, and what it streams."""
from __future__ import annotations

import json

import pytest

from baseagent.testing.anthropic_wire import (ANTHROPIC_WIRE, anthropic_usage, check_request,
                                              sign, stream_events)
from baseagent.testing.script import ErrorReply, resolve_answer

THINKING = {"type": "enabled", "budget_tokens": 1024}


def signed(text: str) -> dict:
    return {"type": "thinking", "thinking": text, "signature": sign(text)}


USE = {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}


def body(*messages: dict, thinking: dict | None = THINKING, **extra) -> dict:
    request = {"model": "claude", "max_tokens": 4096,
               "messages": [{"role": "user", "content": "go"}, *messages], **extra}
    if thinking is not None:
        request["thinking"] = thinking
    return request


# (request, None when accepted or a phrase of the 400 the real API answers)
CASES = {
    "thinking kept before the tool use": (
        body({"role": "assistant", "content": [signed("plan"), USE]},
             {"role": "user", "content": [RESULT]}), None),
    "thinking dropped in a tool loop": (
        body({"role": "assistant", "content": [USE]}, {"role": "user", "content": [RESULT]}),
        "Expected `thinking` or `redacted_thinking`, but found `tool_use`"),
    "thinking text edited": (
        body({"role": "assistant", "content": [{**signed("plan"), "thinking": "plan!"}, USE]},
             {"role": "user", "content": [RESULT]}), "Invalid `signature`"),
    "redacted thinking is enough": (
        body({"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}, USE]},
             {"role": "user", "content": [RESULT]}), None),
    "no thinking needed once the loop ended": (
        body({"role": "assistant", "content": [USE]}, {"role": "user", "content": [RESULT]},
             {"role": "assistant", "content": "done"}, {"role": "user", "content": "more"}),
        None),
    "thinking off: blocks not required": (
        body({"role": "assistant", "content": [USE]}, {"role": "user", "content": [RESULT]},
             thinking=None), None),
    "budget not below max_tokens": (
        body(thinking={"type": "enabled", "budget_tokens": 4096}),
        "`max_tokens` must be greater than `thinking.budget_tokens`"),
    "budget too small": (body(thinking={"type": "enabled", "budget_tokens": 100}), ">= 1024"),
    "temperature with thinking": (body(temperature=0.2), "`temperature` may only be set to 1"),
    "tool_use without its result": (
        body({"role": "assistant", "content": [signed("p"), USE]},
             {"role": "user", "content": "no result"}, thinking=None),
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"),
    "result without its tool_use": (
        body({"role": "assistant", "content": "hi"}, {"role": "user", "content": [RESULT]},
             thinking=None), "unexpected `tool_use_id` found in `tool_result` blocks"),
    "max_tokens missing": ({"model": "claude", "messages": [{"role": "user", "content": "x"}]},
                           "max_tokens"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_requests_are_held_to_the_real_apis_rules(name: str) -> None:
    request, refusal = CASES[name]
    problem = check_request(request)
    if refusal is None:
        assert problem is None
    else:
        assert problem is not None and refusal in problem


def test_a_step_streams_as_the_messages_api_does() -> None:
    step = {"reasoning": "think", "content": "Hi.",
            "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}],
            "usage": {"prompt_tokens": 100, "cached_tokens": 60, "cache_write_tokens": 30,
                      "completion_tokens": 9}}
    answer = resolve_answer(step, prompt_tokens=0, cached_tokens=0, call_prefix="toolu_0",
                            model="claude", completion_id="msg_1")
    events = stream_events(answer)
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta",
                                                                      "message_stop"]
    starts = [data["content_block"]["type"] for name, data in events
              if name == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "think"
    assert [d["signature"] for d in deltas if d["type"] == "signature_delta"] == [sign("think")]
    assert json.loads("".join(d.get("partial_json", "") for d in deltas)) == {"command": "ls"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    # Anthropic's input_tokens excludes cache reads and writes
    assert anthropic_usage(answer.usage) == {"input_tokens": 10, "cache_read_input_tokens": 60,
                                             "cache_creation_input_tokens": 30,
                                             "output_tokens": 9}


def test_errors_take_anthropics_shape() -> None:
    reply = ANTHROPIC_WIRE.error(ErrorReply(529, {"error": {"message": "Overloaded"}}))
    assert reply.body == {"type": "error",
                          "error": {"type": "overloaded_error", "message": "Overloaded"}}

"""Prompt-cache helpers: provider detection, breakpoint placement, prompt_cache_key."""
from __future__ import annotations

import copy

import pytest

from baseagent.testing.scripted_server import PrefixCache
from baseagent.testing.script import prompt_parts

from baseagent.core.context.caching import (EPHEMERAL, MAX_BREAKPOINTS, add_cache_markers,
                                    count_breakpoints, prompt_cache_params, uses_cache_control,
                                    wants_cache_markers)


@pytest.mark.parametrize("model, expected", [
    ("anthropic/claude-sonnet-4-5", True),
    ("claude-3-5-haiku-20241022", True),
    ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", True),
    ("bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", True),
    ("bedrock/converse/anthropic.claude-3-haiku-20240307-v1:0", True),
    ("vertex_ai/claude-sonnet-4@20250514", True),
    ("openrouter/anthropic/claude-sonnet-4", True),
    ("openrouter/openai/gpt-4.1", False),
    ("bedrock/amazon.nova-pro-v1:0", False),
    ("vertex_ai/gemini-2.5-pro", False),
    ("openai/gpt-4.1", False),
    ("gpt-4o", False),
    ("openai/claude-via-some-proxy", False),
    ("ollama/llama3", False),
])
def test_provider_detection(model, expected):
    assert uses_cache_control(model) is expected


def test_setting_overrides_detection():
    assert wants_cache_markers("openai/scripted", "on")
    assert not wants_cache_markers("anthropic/claude-sonnet-4-5", "off")
    assert wants_cache_markers("anthropic/claude-sonnet-4-5", "auto")
    assert not wants_cache_markers("openai/gpt-4.1", "auto")


def history() -> list[dict]:
    return [
        {"role": "system", "content": "system prompt"},
        {"role": "user", "content": "environment"},
        {"role": "user", "content": "the task"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "output one"},
        {"role": "assistant", "content": "two calls", "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
            {"id": "c3", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "output two"},
        {"role": "tool", "tool_call_id": "c3", "content": "output three"},
    ]


def marked(messages: list[dict]) -> list[int]:
    return [i for i, m in enumerate(messages) if "cache_control" in m]


def test_marks_system_and_last_two_messages_on_a_copy():
    original = history()
    before = copy.deepcopy(original)
    out = add_cache_markers(original, "anthropic/claude-sonnet-4-5")
    assert original == before  # pure: nothing marked in the stored history
    assert marked(out) == [0, 6, 7]
    assert all(out[i]["cache_control"] == EPHEMERAL for i in marked(out))
    # only the marker was added: the request is otherwise byte-identical to the history
    assert [{k: v for k, v in m.items() if k != "cache_control"} for m in out] == original
    assert count_breakpoints(out) <= MAX_BREAKPOINTS


def test_a_tool_call_only_assistant_message_is_skipped():
    messages = history()[:5]  # ..., assistant (tool calls only), tool
    assert marked(add_cache_markers(messages)) == [0, 2, 4]
    messages = history()[:4]  # ends with the tool-call-only assistant message
    assert marked(add_cache_markers(messages)) == [0, 1, 2]


def test_each_request_reads_the_previous_requests_prefix():
    """Against the scripted server's Anthropic-style cache: request N+1 is served from the
    cache up to the end of request N (it was written there and read back there)."""
    cache = PrefixCache(anthropic=True)
    full = history()
    requests = [full[:3], full[:5], full]
    served = []
    for messages in requests:
        body = add_cache_markers(messages)
        parts = prompt_parts({"messages": body})
        served.append(cache.lookup_and_store(parts, ["cache_control" in m for m in body]))
    sizes = [sum(len(p) for p in prompt_parts({"messages": m})) for m in requests]
    assert served == [0, sizes[0], sizes[1]]


def test_other_providers_get_an_unmarked_copy():
    messages = history()
    out = add_cache_markers(messages, "openai/gpt-4.1")
    assert out == messages and out is not messages and marked(out) == []


def test_no_breakpoint_on_empty_history():
    assert add_cache_markers([]) == []
    assert marked(add_cache_markers([{"role": "system", "content": "s"}])) == [0]


@pytest.mark.parametrize("model, api_base, expected", [
    ("openai/gpt-4.1", None, {"prompt_cache_key": "thread-1"}),
    ("gpt-4o", None, {"prompt_cache_key": "thread-1"}),
    ("openai/gpt-4.1", "https://api.openai.com/v1", {"prompt_cache_key": "thread-1"}),
    ("openai/scripted", "http://127.0.0.1:8080/v1", {}),  # a compatible server may refuse it
    ("anthropic/claude-sonnet-4-5", None, {}),
    ("gemini/gemini-2.5-pro", None, {}),
])
def test_prompt_cache_key_only_for_openai(model, api_base, expected):
    assert prompt_cache_params(model, api_base, "thread-1") == expected

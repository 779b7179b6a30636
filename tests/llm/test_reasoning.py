"""Reasoning goes back to the providers that continue from it (llm/reasoning.py).

The rules as a table; OpenRouter's streamed `reasoning_details` merged by index; and end
to end through the CLI against the scripted server: the next request of a tool loop
carries the reasoning the last answer came with (OpenRouter's details with their
signature; `reasoning_content` for an OpenAI-compatible server), on both transports, while
OpenAI's own models still never get it.
"""
from __future__ import annotations

import json

import pytest

from baseagent.llm.reasoning import kept_reasoning_keys, merge_details
from baseagent.testing.script import reasoning_signature
from helpers import run_agent

LOCAL = "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("model, api_base, kept", [
    ("anthropic/claude-sonnet-4-5", None, {"thinking_blocks"}),
    ("claude-3-7-sonnet", None, {"thinking_blocks"}),
    ("bedrock/anthropic.claude-3-7-sonnet", None, {"thinking_blocks"}),
    ("deepseek/deepseek-reasoner", None, {"reasoning_content"}),
    ("openrouter/anthropic/claude-sonnet-4", None, {"reasoning_details"}),
    ("openrouter/openai/gpt-5", "https://openrouter.ai/api/v1", {"reasoning_details"}),
    # an OpenAI-compatible server of your own gets back what it sent
    ("openai/qwen3-30b", LOCAL, {"reasoning_content", "reasoning_details"}),
    # OpenAI itself, and OpenAI's models behind any base, get none
    ("openai/qwen3-30b", None, set()),
    ("openai/qwen3-30b", "https://api.openai.com/v1", set()),
    ("openai/o3-mini", LOCAL, set()),
    ("openai/gpt-4.1", LOCAL, set()),
    ("gemini/gemini-2.5-pro", None, set()),
])
def test_which_reasoning_goes_back(model, api_base, kept):
    assert kept_reasoning_keys(model, api_base) == kept


def test_streamed_details_merge_by_index():
    details: list[dict] = []
    merge_details(details, [{"type": "reasoning.text", "text": "th", "index": 0,
                             "format": "anthropic-claude-v1"}])
    merge_details(details, [{"type": "reasoning.text", "text": "ink", "index": 0,
                             "signature": None}])
    merge_details(details, [{"type": "reasoning.encrypted", "data": "abc", "index": 1}])
    merge_details(details, [{"index": 0, "signature": "sig"}, {"index": 1, "data": "def"}])
    merge_details(details, None)
    merge_details(details, ["not a dict", {"type": "reasoning.summary", "summary": "s"}])
    assert details == [
        {"type": "reasoning.text", "text": "think", "index": 0,
         "format": "anthropic-claude-v1", "signature": "sig"},
        {"type": "reasoning.encrypted", "data": "abcdef", "index": 1},
        {"type": "reasoning.summary", "summary": "s"},
    ]


def _tool_loop(reasoning_format: str | None = None) -> list[dict]:
    first = {"reasoning": "Look before you leap.",
             "tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]}
    if reasoning_format:
        first["reasoning_format"] = reasoning_format
    # a second call, so that a third request follows (no edit: no verification round)
    return [first, {"tool_calls": [{"name": "shell", "arguments": {"command": "echo again"}}]},
            {"content": "Done."}]


def _assistant_sent_back(request: dict) -> dict:
    return next(m for m in request["messages"] if m["role"] == "assistant")


def test_openrouter_gets_its_reasoning_details_back(scripted_server, workspace, home):
    """hermes-agent's default provider: the details (signature included) go back on the
    assistant message of the next request; the text is shown as a reasoning item."""
    server = scripted_server(_tool_loop("openrouter"))
    run = run_agent(["--json", "-i", "look around"], cwd=workspace, home=home,
                    api_base=server.api_base, model="openrouter/anthropic/claude-sonnet-4",
                    env_extra={"OPENROUTER_API_KEY": "sk-or-test-dummy-key"})
    assert run.returncode == 0, run.stderr
    assert [i["text"] for i in run.completed_items("reasoning")] == ["Look before you leap."]
    sent = _assistant_sent_back(server.requests[1])
    assert sent["reasoning_details"] == [{
        "type": "reasoning.text", "text": "Look before you leap.", "format": "unknown",
        "index": 0, "signature": reasoning_signature("Look before you leap.")}]
    assert "reasoning_content" not in sent and "thinking_blocks" not in sent
    # the session record keeps them, so a resumed thread sends them too
    record = home / ".baseagent" / "sessions" / f"{run.events[0]['thread_id']}.jsonl"
    kept = [json.loads(line)["message"] for line in record.read_text().splitlines()
            if json.loads(line).get("kind") == "message"
            and json.loads(line)["message"]["role"] == "assistant"]
    assert kept[0]["reasoning_details"] == sent["reasoning_details"]


@pytest.mark.parametrize("reasoning_format", ["reasoning_content", "openrouter"])
def test_an_openai_compatible_server_gets_back_what_it_sent(scripted_server, workspace, home,
                                                           transport_env, reasoning_format):
    """vLLM, llama.cpp, SGLang (and OpenRouter-style proxies): the reasoning text, and the
    details when the server sent them, on the direct path and through litellm alike."""
    server = scripted_server(_tool_loop(reasoning_format))
    run = run_agent(["--json", "-i", "look around"], cwd=workspace, home=home,
                    api_base=server.api_base, model="openai/qwen3-local",
                    env_extra=transport_env)
    assert run.returncode == 0, run.stderr
    sent = _assistant_sent_back(server.requests[1])
    assert sent["reasoning_content"] == "Look before you leap."
    if reasoning_format == "openrouter":
        assert sent["reasoning_details"][0]["signature"] == \
            reasoning_signature("Look before you leap.")
    else:
        assert "reasoning_details" not in sent
    # every later request carries it too (the history keeps it)
    assert _assistant_sent_back(server.requests[2])["reasoning_content"] == \
        "Look before you leap."


def test_openai_models_still_never_get_reasoning_back(scripted_server, workspace, home):
    server = scripted_server(_tool_loop("openrouter"))
    run = run_agent(["--json", "-i", "look around"], cwd=workspace, home=home,
                    api_base=server.api_base, model="openai/o3-mini")
    assert run.returncode == 0, run.stderr
    sent = _assistant_sent_back(server.requests[1])
    assert not {"reasoning_content", "reasoning_details", "thinking_blocks"} & set(sent)

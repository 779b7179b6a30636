"""hermes-agent's own examples, unchanged, on `baseagent.hermes.AIAgent` (issue 41, item 7):
its defaults (model at OpenRouter, 20 turns), `chat("...")` / `chat(user_message=...)`,
the text after running out of turns, `reasoning` in the messages, `conversation_history`,
its toolset names, and verbose logging with the caller's handler alone."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from baseagent import ConfigError
from baseagent.hermes import AIAgent
from baseagent.llm.request_log import LOGGER_NAME

KEY = "sk-hermes-seed-0123456789"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """hermes' examples run in the caller's directory, with its keys in the environment."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return workspace


def test_the_defaults_are_hermes_with_only_an_openrouter_key(here, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    with AIAgent() as agent:
        assert agent.model == "openrouter/anthropic/claude-sonnet-4"
        assert agent.base_url == "https://openrouter.ai/api/v1"
        assert agent.max_iterations == 20


def test_chat_takes_hermes_user_message(scripted_server, here):
    server = scripted_server([{"content": "Hi there."}, {"content": "Again."}])
    with AIAgent(base_url=server.api_base, api_key=KEY, model="m") as agent:
        assert agent.chat("hello") == "Hi there."
        assert agent.chat(user_message="hello again") == "Again."


def test_running_out_of_turns_returns_the_text(scripted_server, here):
    call = {"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]}
    server = scripted_server([{"content": "Looking around first.", **call}, call,
                              call, call])
    with AIAgent(base_url=server.api_base, api_key=KEY, model="m", max_turns=2) as agent:
        assert agent.chat("explore") == "Looking around first."
        result = agent.run_conversation("more")
    assert result["completed"] is False and result["failed"] is False
    assert result["final_response"].startswith("I reached the maximum number of turns (2)")


def test_reasoning_is_hermes_reasoning_and_conversation_history_is_taken(scripted_server,
                                                                         here):
    server = scripted_server([
        {"reasoning": "Think first.", "content": "Four."},
        {"content": "Still four."},
    ])
    with AIAgent(base_url=server.api_base, api_key=KEY, model="m") as agent:
        result = agent.run_conversation("what is 2+2?")
    answer = result["messages"][-1]
    assert answer == {"role": "assistant", "content": "Four.", "reasoning": "Think first."}
    assert all(m["role"] != "system" for m in result["messages"])
    with AIAgent(base_url=server.api_base, api_key=KEY, model="m") as other:
        again = other.run_conversation("are you sure?",
                                       conversation_history=result["messages"])
    assert again["final_response"] == "Still four."
    sent = server.requests[1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"][-2:] == \
        ["what is 2+2?", "are you sure?"]
    assert any(m["role"] == "assistant" and m.get("content") == "Four." for m in sent)


def test_the_vision_toolset_is_view_image_and_missing_ones_say_what_to_use(scripted_server,
                                                                          here):
    server = scripted_server([{"content": "ok"}])
    with AIAgent(base_url=server.api_base, api_key=KEY, model="m",
                 enabled_toolsets=["terminal", "vision"]) as agent:
        agent.chat("look")
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == \
        ["shell", "view_image"]
    with pytest.raises(ConfigError) as info:
        AIAgent(base_url=server.api_base, api_key=KEY, model="m", enabled_toolsets=["web"])
    message = str(info.value)
    assert message.startswith("hermes toolset 'web' has no baseagent tools: ")
    assert "tools=" in message and "mcp_servers=" in message and "\n" not in message
    with pytest.raises(ConfigError, match="@playwright/mcp"):
        AIAgent(base_url=server.api_base, api_key=KEY, model="m",
                enabled_toolsets=["browser"])


def test_verbose_logging_reaches_a_handler_alone(scripted_server, here):
    logger = logging.getLogger(LOGGER_NAME)
    saved = (list(logger.handlers), logger.level)
    logger.setLevel(logging.NOTSET)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger.addHandler(Keep())
    try:
        server = scripted_server([{"content": "logged"}])
        with AIAgent(base_url=server.api_base, api_key=KEY, model="m",
                     verbose_logging=True) as agent:
            assert agent.chat("hi") == "logged"
    finally:
        logger.handlers[:], logger.level = saved
    assert [json.loads(r.getMessage())["event"] for r in records] == ["request", "response"]

"""`baseagent.hermes.AIAgent`, hermes-agent's constructor and chat() over the library Agent,
against the scripted server: names and defaults, toolsets, trajectories under
trajectories/, the verbose log, and OpenRouter's reasoning passed back."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from baseagent import ConfigError, InputError, TurnError
from baseagent.hermes import AIAgent, litellm_model
from baseagent.llm.request_log import LOGGER_NAME
from baseagent.testing.script import reasoning_signature

KEY = "sk-hermes-test-key-0123456789"


@pytest.mark.parametrize("model, base_url, provider, expected", [
    ("anthropic/claude-sonnet-4", None, None,
     ("openrouter/anthropic/claude-sonnet-4", "https://openrouter.ai/api/v1")),
    ("anthropic/claude-sonnet-4", "https://openrouter.ai/api/v1", None,
     ("openrouter/anthropic/claude-sonnet-4", "https://openrouter.ai/api/v1")),
    ("qwen3", "http://127.0.0.1:8000/v1", None, ("openai/qwen3", "http://127.0.0.1:8000/v1")),
    ("claude-sonnet-4-5", None, "anthropic", ("anthropic/claude-sonnet-4-5", None)),
    ("deepseek-reasoner", None, "deepseek", ("deepseek/deepseek-reasoner", None)),
    ("x/y", "http://127.0.0.1:9/v1", "openrouter", ("openrouter/x/y", "http://127.0.0.1:9/v1")),
    ("", "http://127.0.0.1:9/v1", None, ("", "http://127.0.0.1:9/v1")),
])
def test_hermes_model_names_become_litellm_strings(model, base_url, provider, expected):
    assert litellm_model(model, base_url, provider) == expected


def test_bad_names_are_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown provider 'nous-portal'"):
        AIAgent(model="m", provider="nous-portal")
    with pytest.raises(ConfigError, match="hermes toolset 'browser' has no baseagent tools"):
        AIAgent(model="m", base_url="http://127.0.0.1:9/v1", enabled_toolsets=["browser"])
    with pytest.raises(ConfigError, match="not both"):
        AIAgent(model="m", base_url="http://127.0.0.1:9/v1", max_iterations=3, max_turns=4)
    with pytest.raises(ConfigError, match="session record"):
        AIAgent(model="m", base_url="http://127.0.0.1:9/v1", save_trajectories=True,
                session=False)


def make(server, tmp_path: Path, **kw) -> AIAgent:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    kw.setdefault("model", "qwen-local")
    return AIAgent(base_url=server.api_base, api_key=KEY, cwd=str(workspace),
                   session_dir=str(tmp_path / "sessions"),
                   trajectories_dir=str(tmp_path / "trajectories"), **kw)


def offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def test_chat_answers_with_hermes_toolsets_and_no_verification_round(scripted_server,
                                                                      tmp_path):
    server = scripted_server([
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo hi > out.txt"}}]},
        {"content": "Wrote out.txt."},
        {"content": "Second answer."},
    ])
    with make(server, tmp_path, max_turns=7, enabled_toolsets=["terminal", "todo"],
              disabled_toolsets=["web"], quiet_mode=True, tool_delay=1.0) as agent:
        assert (agent.model, agent.max_iterations) == ("openai/qwen-local", 7)
        assert agent.chat("write out.txt") == "Wrote out.txt."
        assert agent.chat("and now?", task_id="t-1") == "Second answer."
        assert agent.session_id == agent.agent.thread_id
    assert (tmp_path / "ws" / "out.txt").read_text() == "hi\n"  # the tool really ran
    assert offered(server.requests[0]) == ["shell", "update_plan"]
    assert len(server.requests) == 3  # hermes has no verification round: no extra call
    assert server.requests[0]["model"] == "qwen-local"


def test_file_toolset_and_delegation(scripted_server, tmp_path):
    server = scripted_server([{"content": "ok"}])
    with make(server, tmp_path, enabled_toolsets=["file", "delegation"]) as agent:
        agent.chat("hi")
    assert sorted(offered(server.requests[0])) == ["apply_patch", "delegate", "grep_files",
                                                   "list_dir", "read_file", "write_file"]


def test_save_trajectories_appends_sharegpt_lines_as_hermes(scripted_server, tmp_path):
    server = scripted_server([
        {"reasoning": "Check first.", "tool_calls": [{"name": "shell",
                                                      "arguments": {"command": "echo 42"}}]},
        {"content": "The answer is 42."},
    ])
    with make(server, tmp_path, save_trajectories=True) as agent:
        assert agent.chat("what is the answer?", task_id="q-1") == "The answer is 42."
    good = tmp_path / "trajectories" / "trajectory_samples.jsonl"
    first = json.loads(good.read_text().splitlines()[0])
    assert first["completed"] is True and first["model"] == "openai/qwen-local"
    assert first["task_id"] == "q-1" and "timestamp" in first
    turns = first["conversations"]
    assert [t["from"] for t in turns] == ["system", "human", "human", "gpt", "tool", "gpt"]
    assert "<tools>" in turns[0]["value"]
    assert turns[2]["value"] == "what is the answer?"
    assert turns[3]["value"].startswith("<think>\nCheck first.\n</think>\n<tool_call>")
    assert "<tool_response>" in turns[4]["value"] and "42" in turns[4]["value"]
    assert turns[5]["value"] == "The answer is 42."


def test_a_turn_that_does_not_complete_goes_to_failed_trajectories(scripted_server, tmp_path):
    server = scripted_server([
        {"content": "Done at once."},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]},
    ])
    with make(server, tmp_path, save_trajectories=True, max_iterations=1) as agent:
        agent.chat("first")
        result = agent.run_conversation("keep going", task_id="t-2")
    assert result["completed"] is False and result["failed"] is False
    assert result["api_calls"] == 1
    assert result["messages"][-1]["role"] in ("tool", "assistant", "user")
    traj = tmp_path / "trajectories"
    assert len((traj / "trajectory_samples.jsonl").read_text().splitlines()) == 1
    failed = [json.loads(line) for line in
              (traj / "failed_trajectories.jsonl").read_text().splitlines()]
    assert len(failed) == 1 and failed[0]["completed"] is False
    assert failed[0]["task_id"] == "t-2"
    assert [t["value"] for t in failed[0]["conversations"] if t["from"] == "human"][-2:] == \
        ["first", "keep going"]


def test_run_conversation_dict_and_what_it_refuses(scripted_server, tmp_path):
    server = scripted_server([
        {"content": "Working on it.",
         "tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]},
        {"content": "All done."},
    ])
    streamed: list[str] = []
    with make(server, tmp_path) as agent:
        result = agent.run_conversation("do it", stream_callback=streamed.append)
        assert streamed == ["Working on it.", "All done."]
        assert (result["final_response"], result["completed"], result["api_calls"]) == \
            ("All done.", True, 2)
        assert result["messages"][-1] == {"role": "assistant", "content": "All done."}
        with pytest.raises(InputError, match="system_message"):
            agent.run_conversation("again", system_message="be brief")


def test_a_failed_turn_raises_rather_than_answering_none(scripted_server, tmp_path):
    server = scripted_server([{"fault": "status", "status": 401}])
    with make(server, tmp_path) as agent:
        with pytest.raises(TurnError, match="failed"):
            agent.chat("hello")


def test_openrouter_reasoning_goes_back(scripted_server, tmp_path):
    server = scripted_server([
        {"reasoning": "Plan it.", "reasoning_format": "openrouter",
         "tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]},
        {"content": "Done."},
    ])
    with make(server, tmp_path, model="anthropic/claude-sonnet-4",
              provider="openrouter") as agent:
        assert agent.model == "openrouter/anthropic/claude-sonnet-4"
        assert agent.chat("go") == "Done."
    sent = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    assert sent["reasoning_details"][0]["signature"] == reasoning_signature("Plan it.")
    assert server.requests[0]["model"] == "anthropic/claude-sonnet-4"


@pytest.fixture
def model_log():
    """The baseagent.model logger's records, its handlers restored afterwards."""
    logger = logging.getLogger(LOGGER_NAME)
    saved = (list(logger.handlers), logger.level)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger.addHandler(Keep(logging.DEBUG))
    logger.setLevel(logging.DEBUG)
    yield records
    logger.handlers[:], logger.level = saved


def test_verbose_logging_logs_every_request_and_response_redacted(scripted_server, tmp_path,
                                                                   model_log):
    server = scripted_server([
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo ok"}}]},
        {"fault": "status", "status": 503},
        {"content": f"Your key was {KEY}."},
    ])
    with make(server, tmp_path, verbose_logging=True, retry_base_delay=0.01) as agent:
        answer = agent.chat(f"remember {KEY}")
    assert KEY not in answer  # results are redacted, as always
    lines = [json.loads(r.getMessage()) for r in model_log]
    assert [line["event"] for line in lines] == ["request", "response", "request", "error",
                                                 "response"]
    assert all(line["thread_id"] == agent.session_id for line in lines)
    first = lines[0]
    assert first["model"] == "openai/qwen-local" and "shell" in first["tools"]
    assert first["messages"][-1]["content"] == "remember [REDACTED]"
    assert lines[1]["message"]["tool_calls"][0]["function"]["name"] == "shell"
    assert lines[3]["retrying"] is True and "503" in lines[3]["error"]
    assert lines[4]["message"]["content"] == "Your key was [REDACTED]."
    assert KEY not in json.dumps(lines)


def test_not_verbose_logs_nothing(scripted_server, tmp_path, model_log):
    server = scripted_server([{"content": "quiet"}])
    with make(server, tmp_path) as agent:
        agent.chat("hi")
    assert model_log == []

"""Issue 41, the seeds round two, through the library Agent in-process (a deterministic
model client) and against the scripted server: no exception escapes a run, cancel scoped
to its run, pluggable engine parts, tools that see their run, output caps and retry
schedules as settings."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent, ConfigError, TurnError
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.tool import Tool, ToolContext, ToolResult

ENV = {"PATH": os.environ["PATH"]}


def make(workspace: Path, steps: list[Any], **kw: Any) -> tuple[Agent, DeterministicClient]:
    model = DeterministicClient(steps)
    kw.setdefault("session", False)
    kw.setdefault("verify", False)
    return Agent(model_client=model, cwd=workspace, env=ENV, **kw), model


def shell(command: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "shell",
                            "arguments": {"command": command}}]}


# -- 1. no exception escapes a run ------------------------------------------------------------


def test_an_error_of_the_model_client_ends_the_run_with_a_final_event(workspace, tmp_path):
    agent, _ = make(workspace, [shell("echo hi"), RuntimeError("client bug"),
                                {"content": "back again"}],
                    session=True, session_dir=str(tmp_path / "s"))
    result = agent.run("go")
    assert result.status == "failed"
    assert result.error == "unexpected error: RuntimeError: client bug"
    assert isinstance(result.exception, RuntimeError)
    # The thread goes on (its history is one a provider accepts) and the record resumes.
    assert agent.run("again").final_message == "back again"
    thread = agent.thread_id
    agent.close()
    resumed = Agent(model_client=DeterministicClient([{"content": "resumed"}]),
                    thread_id=thread, env=ENV, session_dir=str(tmp_path / "s"), verify=False)
    assert resumed.run("and now").final_message == "resumed"
    assert [m["role"] for m in resumed.history][2:6] == ["user", "assistant", "tool", "user"]
    resumed.close()


def test_the_codex_stream_ends_with_turn_failed_and_finishes(workspace):
    agent, _ = make(workspace, [RuntimeError("boom")])
    stream = agent.stream("go")
    events = list(stream)  # the generator finishes: nothing raised
    assert events[-1].type == "turn.failed"
    assert events[-1].error.message == "unexpected error: RuntimeError: boom"
    assert stream.result is not None and stream.result.status == "failed"


def test_the_agentb_stream_ends_with_thread_run_failed(workspace):
    agent, _ = make(workspace, [ValueError("bad value")])
    events = [json.loads(e.model_dump_json()) for e in agent.stream("go", format="agentb")]
    assert events[-1]["type"] == "thread.run.failed"
    error = events[-1]["data"]["error"]
    assert (error["code"], error["message"]) == \
        ("internal_error", "unexpected error: ValueError: bad value")


def test_chat_raises_turn_error_from_the_exception(workspace):
    agent, _ = make(workspace, [KeyError("k")])
    with pytest.raises(TurnError) as info:
        agent.chat("go")
    assert isinstance(info.value.__cause__, KeyError)


class _NoRun(Tool):
    name = "half_tool"
    description = "a tool that forgot its run()"
    item_type = "mcp_tool_call"
    server = "mine"

    def parameters(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    def parse(self, data: dict[str, Any]) -> Any:
        return data


class _NoDescription:
    name = "undescribed"
    item_type = "mcp_tool_call"
    server = "mine"

    def parameters(self) -> dict[str, Any]:
        return {"type": "object"}

    def parse(self, data: dict[str, Any]) -> Any:
        return data

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult("ran")


class _BadSchema(_NoDescription):
    name = "bad_schema"
    description = "its parameters are not a schema"

    def parameters(self) -> Any:
        return "not a schema"


@pytest.mark.parametrize("tool, message", [
    (_NoRun(), "tool 'half_tool' (_NoRun) is not a Tool: it has no run"),
    (_NoDescription(), "tool 'undescribed' (_NoDescription) is not a Tool: it has no description"),
    (_BadSchema(), "parameters() must return a JSON schema object, not str"),
])
def test_a_malformed_tool_is_refused_when_the_agent_is_built(workspace, tool, message):
    model = DeterministicClient([])
    with pytest.raises(ConfigError) as info:
        Agent(model_client=model, cwd=workspace, env=ENV, session=False, tools=[tool])
    assert message in str(info.value)
    assert model.calls == 0


# -- 2. a cancel is the run's it was meant for -------------------------------------------------


def test_a_stale_cancel_does_not_interrupt_the_next_run(workspace):
    agent, model = make(workspace, [{"content": "one"}, {"content": "two"}])
    assert agent.run("first").final_message == "one"
    agent.cancel("meant for the first run")
    second = agent.run("second")
    assert second.status == "completed" and second.final_message == "two"

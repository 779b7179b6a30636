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
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import Tool, ToolResult

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


# -- 4. tools that see their run ---------------------------------------------------------------


class _Inspector(Tool):
    """Reads what its context says of the run, runs a command through it, logs a line and
    answers with metadata."""

    name = "inspect_run"
    description = "look at the run"
    item_type = "mcp_tool_call"
    server = "mine"

    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def parameters(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    def parse(self, data: dict[str, Any]) -> Any:
        return data

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        self.seen = {"instruction": ctx.instruction, "step": ctx.step,
                     "roles": [m["role"] for m in ctx.history],
                     "max_iterations": ctx.settings.max_iterations,
                     "api_key": ctx.settings.api_key}
        try:
            ctx.history[0]["content"] = "changed"  # type: ignore[index]
        except TypeError:
            self.seen["read_only"] = True
        command = ctx.shell("echo from-the-tool > made.txt && echo done")
        self.seen["shell"] = (command.success, command.item["exit_code"], command.output)
        ctx.log("inspected")
        return ctx.done("looked", metadata={"files": ["made.txt"], "score": 3})


def test_a_tool_sees_its_run_and_its_metadata_reaches_agentb(workspace, caplog):
    tool = _Inspector()
    agent, _ = make(workspace, [
        {"content": "first look", "tool_calls": [{"id": "c0", "name": "shell",
                                                  "arguments": {"command": "true"}}]},
        {"tool_calls": [{"id": "c1", "name": "inspect_run", "arguments": {}}]},
        {"content": "done"}], tools=[tool], max_iterations=9, api_key="sk-secret-0000")
    with caplog.at_level("INFO", logger="baseagent.tools"):
        events = [json.loads(e.model_dump_json())
                  for e in agent.stream("inspect it", format="agentb")]
    assert tool.seen["instruction"] == "inspect it" and tool.seen["step"] == 2
    assert tool.seen["roles"][-4:] == ["user", "assistant", "tool", "assistant"]
    assert tool.seen["max_iterations"] == 9 and tool.seen["api_key"] is None
    assert tool.seen["read_only"] is True
    assert agent.history[0]["content"] != "changed"
    assert tool.seen["shell"][:2] == (True, 0) and "done" in tool.seen["shell"][2]
    assert (workspace / "made.txt").read_text() == "from-the-tool\n"
    assert [r.getMessage() for r in caplog.records if r.name == "baseagent.tools"] == \
        ["inspected"]
    completed = [e for e in events if e["type"] == "agent.tool.execution.completed"
                 and e["data"]["toolName"] == "inspect_run"]
    assert len(completed) == 1
    result = completed[0]["data"]["result"]
    assert result["success"] is True and result["data"] == "looked"
    assert result["metadata"]["files"] == ["made.txt"] and result["metadata"]["score"] == 3
    assert result["metadata"]["itemId"].startswith("item_")


# -- 5. tool output caps as settings -----------------------------------------------------------


def _big(n: int) -> str:
    return "".join(f"line {i:05d}\n" for i in range(n))


def test_tool_output_caps_are_settings(workspace):
    """A function tool returning ~60K characters: 40,000 by default (~10K tokens); 2,500
    tokens with tool_output_max_tokens; a tool's own entry wins; the shell follows too."""
    def dump() -> str:
        """Print a lot."""
        return _big(6000)

    steps = [{"tool_calls": [{"id": "c1", "name": "dump", "arguments": {}},
                             {"id": "c2", "name": "shell",
                              "arguments": {"command": "seq 1 40000"}}]},
             {"content": "ok"}]

    def tool_messages(**settings: Any) -> dict[str, str]:
        agent, _ = make(workspace, list(steps), tools=[dump], **settings)
        assert agent.run("go").ok
        return {m["tool_call_id"]: m["content"] for m in agent.history if m["role"] == "tool"}

    default = tool_messages()
    # (the marker saying how much was cut comes on top of a cap: ~40 characters)
    assert 39_000 < len(default["c1"]) <= 40_100 and 9_000 < len(default["c2"]) <= 10_200
    capped = tool_messages(tool_output_max_tokens=2_500)
    assert 9_000 < len(capped["c1"]) <= 10_100 and 9_000 < len(capped["c2"]) <= 10_100
    assert "characters" in capped["c1"] and "line 00000" in capped["c1"]
    assert "line 05999" in capped["c1"]  # cut in the middle: head and tail kept
    own = tool_messages(tool_output_max_tokens=2_500,
                        tool_output_limits={"dump": 500, "shell": 5_000})
    assert len(own["c1"]) <= 2_100 and 15_000 < len(own["c2"]) <= 20_100


def test_a_tool_output_limit_below_100_tokens_is_refused(workspace):
    with pytest.raises(ConfigError, match="tool_output_limits.shell"):
        make(workspace, [], tool_output_limits={"shell": 10})


# -- 6. the retry schedule ---------------------------------------------------------------------


def _rate_limited(server_steps: int) -> list[dict[str, Any]]:
    return [{"fault": "status", "status": 429, "message": "slow down"}] * server_steps \
        + [{"content": "through"}]


def test_a_linear_retry_schedule_waits_step_times_attempt(scripted_server, workspace):
    server = scripted_server(_rate_limited(3))
    notices: list[str] = []
    agent = Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-0",
                  cwd=workspace, env=ENV, session=False, verify=False,
                  retry_schedule="linear", retry_linear_delay=0.2,
                  on_event=lambda e: notices.append(e.message) if e.type == "error" else None)
    result = agent.run("go")
    assert result.final_message == "through"
    waits = [n.rsplit("(waiting ", 1)[1] for n in notices if n.startswith("Reconnecting")]
    assert waits == ["0.2s)", "0.4s)", "0.6s)"]
    arrivals = server.request_times
    assert arrivals[3] - arrivals[0] >= 1.1


def test_the_total_wait_cap_ends_the_retries(scripted_server, workspace):
    server = scripted_server(_rate_limited(5))
    agent = Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-0",
                  cwd=workspace, env=ENV, session=False, verify=False,
                  retry_schedule="linear", retry_linear_delay=0.2, retry_max_total_wait=0.5)
    result = agent.run("go")
    assert result.status == "failed" and len(server.requests) == 2
    assert "would pass retry_max_total_wait (0.5s, 0.2s waited)" in result.error


# -- 3. the engine's parts, replaced ----------------------------------------------------------


class _KeepLast:
    """A context policy of the caller's: sends the system prompt and the last 3 messages."""

    def __init__(self) -> None:
        self.prepared = 0

    def prepare(self, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        self.prepared += 1
        return [history[0], *history[-3:]], 0

    def on_overflow(self, history: list[dict[str, Any]], attempt: int) -> None:
        del history[1:-1]


def test_a_context_policy_of_the_callers_decides_what_the_model_is_sent(workspace):
    policy = _KeepLast()
    agent, model = make(workspace, [shell("echo one"), {"content": "done"}],
                        context_policy=policy)
    assert agent.run("go").ok
    assert policy.prepared == 2
    assert [m["role"] for m in model.requests[1]] == \
        ["system", "user", "assistant", "tool"]


class _Recording:
    """A tool executor that records each call and runs it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def execute(self, tool: Any, args: Any, ctx: ToolContext) -> ToolResult:
        self.calls.append((tool.name, ctx.step))
        if tool.name == "read_file":
            raise RuntimeError("not here")  # a failing executor is the call's error result
        return tool.run(args, ctx)


def test_a_tool_executor_of_the_callers_runs_every_call(workspace):
    executor = _Recording()
    agent, _ = make(workspace, [
        shell("echo hi"),
        {"tool_calls": [{"id": "r", "name": "read_file", "arguments": {"file_path": "x"}}]},
        {"content": "done"}], tool_executor=executor)
    result = agent.run("go")
    assert result.ok and executor.calls == [("shell", 1), ("read_file", 2)]
    tool_messages = [m["content"] for m in agent.history if m["role"] == "tool"]
    assert tool_messages[1] == "Error: read_file failed: RuntimeError: not here"


def test_parts_are_held_to_their_protocols_when_the_agent_is_built(workspace):
    with pytest.raises(ConfigError, match="context_policy: a object has no prepare"):
        make(workspace, [], context_policy=object())
    with pytest.raises(ConfigError, match="tool_executor: a int has no execute"):
        make(workspace, [], tool_executor=3)
    with pytest.raises(ConfigError, match="loop: a str is not a factory"):
        make(workspace, [], loop="mine")


class _EchoLoop:
    """An agent loop of the caller's: answers each instruction with one model call, no
    tools, emitting the engine's events."""

    def __init__(self, parts: Any) -> None:
        self.parts = parts
        self.history = parts.history
        self.paused = None

    def run_turn(self, turn: Any) -> Any:
        from baseagent.emitting import events as engine
        from baseagent.core.parts import TurnOutcome

        parts = self.parts
        parts.emitter.send(engine.TurnStarted(turn_id="t1", thread_id=parts.thread_id,
                                              instruction=turn.text))
        self.history.append({"role": "user", "content": turn.text})
        reply = parts.client.complete(self.history, [], lambda *a: None)
        self.history.append({"role": "assistant", "content": reply.text})
        item_id = parts.emitter.new_item_id()
        parts.emitter.send(engine.ItemCompleted(engine.TextItem(item_id, "message",
                                                                reply.text.upper())))
        parts.emitter.send(engine.TurnEnded("completed", usage=parts.client.totals.tokens()))
        return TurnOutcome("completed", final_message=reply.text.upper())

    def continue_turn(self, outputs: Any) -> Any:
        raise NotImplementedError


def test_an_agent_loop_of_the_callers_runs_the_turns(workspace):
    agent, model = make(workspace, [{"content": "hello"}], loop=_EchoLoop)
    events = list(agent.stream("say hi"))
    assert [e.type for e in events] == ["thread.started", "turn.started", "item.completed",
                                        "turn.completed"]
    assert stream_text(events) == "HELLO" and model.calls == 1


def test_an_agent_loop_can_wrap_the_default_one(workspace):
    seen: list[str] = []

    def factory(parts: Any) -> Any:
        inner = parts.default()
        original = inner.run_turn

        def run_turn(turn: Any) -> Any:
            seen.append(turn.text)
            return original(turn)

        inner.run_turn = run_turn
        return inner

    agent, _ = make(workspace, [{"content": "fine"}], loop=factory)
    assert agent.run("wrapped").final_message == "fine" and seen == ["wrapped"]


def stream_text(events: list[Any]) -> str:
    return "".join(e.item.text for e in events
                   if e.type == "item.completed" and e.item.type == "agent_message")


def test_run_takes_a_conversation_to_start_from(workspace, tmp_path):
    agent, model = make(workspace, [{"content": "42, as before"}], session=True,
                        session_dir=str(tmp_path / "s"))
    conversation = [
        {"role": "user", "content": "what is six times seven?"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c9", "type": "function",
                         "function": {"name": "shell", "arguments": {"command": "echo 42"}}}]},
        {"role": "tool", "tool_call_id": "c9", "content": "42"},
        {"role": "assistant", "content": "42"},
        {"role": "user", "content": "and again?"},
    ]
    result = agent.run(messages=conversation)
    assert result.final_message == "42, as before"
    sent = model.requests[0]
    assert [m["role"] for m in sent][2:] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[3]["tool_calls"][0]["function"]["arguments"] == '{"command": "echo 42"}'
    assert sent[-1]["content"] == "and again?"
    thread = agent.thread_id
    agent.close()
    resumed = Agent(model_client=DeterministicClient([{"content": "x"}]), thread_id=thread,
                    env=ENV, session_dir=str(tmp_path / "s"))
    assert [m["role"] for m in resumed.history][2:] == \
        ["user", "assistant", "tool", "assistant", "user", "assistant"]
    resumed.close()


@pytest.mark.parametrize("messages, match", [
    ([{"role": "system", "content": "x"}, {"role": "user", "content": "y"}], "system message"),
    ([{"role": "assistant", "content": "x"}], "last message must be the user's"),
    ([{"role": "assistant", "content": "",
       "tool_calls": [{"id": "a", "function": {"name": "shell", "arguments": "{}"}}]},
      {"role": "user", "content": "y"}], "the tool calls a have no tool message"),
    ([{"role": "tool", "tool_call_id": "zz", "content": "x"},
      {"role": "user", "content": "y"}], "no assistant message before it called"),
    ([{"role": "robot", "content": "x"}], "role must be one of"),
])
def test_a_bad_conversation_is_refused_before_anything_runs(workspace, messages, match):
    from baseagent import InputError

    agent, model = make(workspace, [])
    with pytest.raises(InputError, match=match):
        agent.run(messages=messages)
    assert model.calls == 0

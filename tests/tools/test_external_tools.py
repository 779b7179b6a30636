"""Tools the caller runs: the turn pauses with `requires_action` and continues with the
caller's outputs, in the library (same process, and from the session record) and through
the CLI (exit code 3, then `--resume ID --tool-outputs FILE`)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent, ExternalTool, InputError
from baseagent.records.pending import PendingCall, check_outputs
from baseagent.records.replay import load_session
from baseagent.exit_codes import EXIT_REQUIRES_ACTION
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.external import load_external_tools
from helpers import run_agent

# Seconds per CLI run: each imports litellm, which takes half a minute on a loaded machine.
CLI_TIMEOUT = 180

WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"], "additionalProperties": False}}


def weather_call(call_id: str = "call_w", city: Any = "Paris") -> dict[str, Any]:
    return {"id": call_id, "name": "get_weather", "arguments": {"city": city}}


def agent_for(workspace: Path, steps: list[Any], **kw: Any) -> tuple[Agent, DeterministicClient]:
    model = DeterministicClient(steps)
    kw.setdefault("session", False)
    kw.setdefault("verify", False)
    kw.setdefault("external_tools", [WEATHER])
    return Agent(model_client=model, cwd=workspace, env={"PATH": os.environ["PATH"]}, **kw), model


# -- declaring tools and checking outputs -------------------------------------------------------

@pytest.mark.parametrize("spec, words", [
    ({"name": "bad name!", "parameters": {"type": "object"}}, "must be 1-64 letters"),
    ({"name": "t", "parameters": {"type": "string"}}, "of type 'object'"),
    ({"name": "t", "parameters": {"type": "object", "properties": {"x": {"type": 7}}}},
     "not a valid JSON schema"),
    ({"name": "t", "parameters": {"type": "object"}, "run": "x"}, "unknown key(s)"),
    ({"name": "shell", "parameters": {"type": "object"}}, "two tools are named 'shell'"),
])
def test_a_bad_declaration_is_an_input_error(workspace, spec, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        agent_for(workspace, [], external_tools=[spec])


def test_specs_in_every_accepted_form():
    tool = ExternalTool("lookup", "Find a record.", {"type": "object",
                                                    "properties": {"id": {"type": "integer"}}})
    loaded = load_external_tools(json.dumps([
        WEATHER, {"type": "function", "function": {"name": "ping"}}]), "tools.json")
    assert [t.name for t in loaded] == ["get_weather", "ping"]
    assert loaded[1].parameters() == {"type": "object", "properties": {}}
    assert tool.parse({"id": 3}) == {"id": 3}
    with pytest.raises(InputError, match="declared twice"):
        load_external_tools(json.dumps([WEATHER, WEATHER]), "tools.json")
    with pytest.raises(InputError, match="JSON list"):
        load_external_tools('{"name": "x"}', "tools.json")


def test_outputs_must_answer_exactly_the_pending_calls():
    calls = [PendingCall("a", "get_weather", {}, "item_0"), PendingCall("b", "ping", {}, "item_1")]
    assert check_outputs(calls, {"a": "sunny", "b": {"ok": True}}) == \
        {"a": "sunny", "b": '{"ok": true}'}
    with pytest.raises(InputError, match=r"missing outputs for b \(waiting for: a "
                                         r"\(get_weather\), b \(ping\)\)"):
        check_outputs(calls, {"a": "x"})
    with pytest.raises(InputError, match="no pending tool call has the id zzz"):
        check_outputs(calls, {"a": "x", "b": "y", "zzz": "z"})
    with pytest.raises(InputError, match="must be a mapping"):
        check_outputs(calls, ["a", "b"])  # type: ignore[arg-type]


# -- the library, in-process --------------------------------------------------------------------

def test_pause_runs_internal_calls_first_then_continues_the_same_turn(workspace):
    agent, model = agent_for(workspace, [
        {"content": "Let me check.",
         "tool_calls": [weather_call(), {"id": "call_s", "name": "shell",
                                         "arguments": {"command": "echo local > seen.txt"}}]},
        {"content": "It is sunny in Paris."},
    ])
    result = agent.run("what is the weather in Paris?")
    assert result.status == "requires_action" and not result.ok and result.error is None
    assert [(c.id, c.name, c.arguments) for c in result.pending_tool_calls] == \
        [("call_w", "get_weather", {"city": "Paris"})]
    assert (workspace / "seen.txt").read_text() == "local\n"  # the internal call ran first
    assert [c.id for c in agent.pending_tool_calls] == ["call_w"]
    # the pending call's item is started, not completed
    assert [i.type for i in result.items] == ["agent_message", "command_execution"]

    with pytest.raises(InputError, match="waiting for the outputs of call_w"):
        agent.run("something else")
    with pytest.raises(InputError, match="missing outputs for call_w"):
        agent.submit_tool_outputs({"call_x": "?"})
    assert model.calls == 1  # bad input ran nothing

    done = agent.submit_tool_outputs({"call_w": "18 C, sunny"})
    assert done.status == "completed" and done.final_message == "It is sunny in Paris."
    assert agent.pending_tool_calls == []
    external = done.items[0]
    assert (external.type, external.server, external.tool, external.status) == \
        ("mcp_tool_call", "external", "get_weather", "completed")
    assert external.id == result.pending_tool_calls[0].item_id
    assert external.result.content == [{"type": "text", "text": "18 C, sunny"}]
    sent = model.requests[1]
    assistant = sent[-3]
    assert [tc["id"] for tc in assistant["tool_calls"]] == ["call_w", "call_s"]
    results = {m["tool_call_id"]: m["content"] for m in sent[-2:]}
    assert results["call_w"] == "18 C, sunny" and results["call_s"].startswith("Exit code: 0")
    with pytest.raises(InputError, match="no turn of this thread is waiting"):
        agent.submit_tool_outputs({"call_w": "again"})


def test_invalid_arguments_go_back_to_the_model_not_to_the_caller(workspace):
    agent, model = agent_for(workspace, [{"tool_calls": [weather_call(city=5)]},
                                         {"content": "sorry"}])
    result = agent.run("weather?")
    assert result.status == "completed" and result.pending_tool_calls == []
    error = model.requests[1][-1]["content"]
    assert error.startswith("Error: invalid arguments for get_weather: city: 5 is not of type")


def test_the_verification_round_survives_the_pause(workspace):
    note = {"id": "call_n", "name": "write_file",  # a change: the turn is no mere question
            "arguments": {"file_path": "notes.txt", "content": "Paris\n"}}
    agent, model = agent_for(workspace, [{"tool_calls": [note, weather_call()]},
                                         {"content": "first answer"},
                                         {"content": "verified answer"}], verify=True)
    assert agent.run("weather in Paris").status == "requires_action"
    result = agent.submit_tool_outputs({"call_w": "rain"})
    assert result.final_message == "verified answer"
    assert "<instruction>\nweather in Paris\n</instruction>" in model.requests[2][-1]["content"]


def test_a_stream_can_continue_the_turn(workspace):
    agent, _ = agent_for(workspace, [{"tool_calls": [weather_call()]}, {"content": "ok"}])
    paused = list(agent.stream("weather"))
    assert paused[-1].type == "turn.requires_action"
    assert [c.id for c in paused[-1].tool_calls] == ["call_w"]
    assert "turn.failed" not in [e.type for e in paused]
    stream = agent.stream_tool_outputs({"call_w": "hail"})
    types = [e.type for e in stream]
    assert types[0] == "turn.started" and types[1] == "item.completed"
    assert types[-1] == "turn.completed" and stream.result.final_message == "ok"


# -- the library against the scripted server, across agents (the session record) ----------------

def test_pause_survives_the_agent_through_the_session_record(scripted_server, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = scripted_server([
        {"tool_calls": [weather_call("call_1"), weather_call("call_2", "Rome")],
         "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"content": "Paris is sunny, Rome is rainy.",
         "usage": {"prompt_tokens": 150, "completion_tokens": 12}},
    ])
    options = dict(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
                   cwd=workspace, verify=False, session_dir=tmp_path / "sessions",
                   external_tools=[WEATHER])
    with Agent(**options) as first:
        paused = first.run("weather in Paris and Rome")
    assert paused.status == "requires_action"
    assert [c.id for c in paused.pending_tool_calls] == ["call_1", "call_2"]

    loaded = load_session(tmp_path / "sessions" / f"{first.thread_id}.jsonl")
    assert loaded.paused is not None and loaded.paused.call_ids == ["call_1", "call_2"]
    assert loaded.history[-1]["role"] == "assistant"  # the calls stay open, not "not run"

    with Agent(thread_id=first.thread_id, **options) as second:
        assert [c.name for c in second.pending_tool_calls] == ["get_weather", "get_weather"]
        done = second.submit_tool_outputs({"call_2": "rain", "call_1": "sun"})
    assert done.status == "completed" and done.final_message == "Paris is sunny, Rome is rainy."
    assert done.total_usage.input_tokens == 250 and done.total_usage.output_tokens == 22
    sent = server.requests[1]["messages"]
    assert [(m["tool_call_id"], m["content"]) for m in sent[-2:]] == \
        [("call_1", "sun"), ("call_2", "rain")]
    assert load_session(tmp_path / "sessions" / f"{first.thread_id}.jsonl").paused is None


def test_a_record_whose_outputs_arrived_is_not_paused_any_more(tmp_path):
    """A run killed after appending the outputs but before clearing its `paused` record:
    the calls are answered, so the thread is not waiting (and nothing gets "not run")."""
    from baseagent.records.recorder import SessionRecorder

    path = tmp_path / "t-1.jsonl"
    record = SessionRecorder(path)
    record.meta(thread_id="t-1")
    record.message({"role": "user", "content": "weather?"})
    record.message({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_w", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]})
    pending = {"turn_id": "turn-1", "instruction": "weather?", "verified": True,
               "calls_left": 5, "steps": 1, "calls": [{"id": "call_w", "name": "get_weather",
                                                      "arguments": {"city": "Paris"},
                                                      "item_id": "item_0"}]}
    record.paused(pending)
    loaded = load_session(path)
    assert loaded.paused is not None and loaded.paused.calls_left == 5
    assert loaded.history[-1]["role"] == "assistant"  # left open for the caller's output
    record.message({"role": "tool", "tool_call_id": "call_w", "content": "sun"})
    record.close()
    loaded = load_session(path)
    assert loaded.paused is None
    assert loaded.history[-1] == {"role": "tool", "tool_call_id": "call_w", "content": "sun"}


# -- the CLI ----------------------------------------------------------------------------------

def test_cli_pauses_with_exit_code_3_and_resumes_with_tool_outputs(scripted_server, tmp_path,
                                                                    workspace, home):
    server = scripted_server([
        {"content": "Checking.", "tool_calls": [
            weather_call(), {"id": "call_s", "name": "shell",
                             "arguments": {"command": "echo ran > ran.txt"}}]},
        {"content": "It is 18 C in Paris."},
    ])
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([WEATHER]))
    first = run_agent(["--no-verify", "--external-tools", str(tools), "-i", "weather?"],
                      cwd=workspace, home=home, api_base=server.api_base, timeout=CLI_TIMEOUT)
    assert first.returncode == EXIT_REQUIRES_ACTION, first.stderr
    assert first.stderr == ""
    types = [e["type"] for e in first.events]
    assert types[-1] == "turn.requires_action" and "turn.failed" not in types
    pause = first.events[-1]
    assert pause["tool_calls"] == [{"id": "call_w", "name": "get_weather",
                                    "arguments": {"city": "Paris"}, "item_id": "item_2"}]
    started = [e["item"] for e in first.of_type("item.started")
               if e["item"]["type"] == "mcp_tool_call"]
    assert started == [{"id": "item_2", "type": "mcp_tool_call", "server": "external",
                        "tool": "get_weather", "arguments": {"city": "Paris"}, "result": None,
                        "error": None, "status": "in_progress"}]
    assert (workspace / "ran.txt").read_text() == "ran\n"
    assert pause["usage"]["input_tokens"] > 0
    thread_id = first.events[0]["thread_id"]

    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"call_x": "?"}))
    wrong = run_agent(["--resume", thread_id, "--tool-outputs", str(outputs)],
                      cwd=workspace, home=home, api_base=server.api_base, timeout=CLI_TIMEOUT)
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr.strip() == ("baseagent: error: missing outputs for call_w; no pending "
                                    "tool call has the id call_x (waiting for: call_w "
                                    "(get_weather))")
    new_instruction = run_agent(["--resume", thread_id, "-i", "never mind"],
                                cwd=workspace, home=home, api_base=server.api_base,
                                timeout=CLI_TIMEOUT)
    assert new_instruction.returncode == 2 and "waiting for the outputs of call_w" in \
        new_instruction.stderr
    assert len(server.requests) == 1  # neither reached the model

    outputs.write_text(json.dumps({"call_w": "18 C"}))
    second = run_agent(["--no-verify", "--resume", thread_id, "--tool-outputs", str(outputs)],
                       cwd=workspace, home=home, api_base=server.api_base, timeout=CLI_TIMEOUT)
    assert second.returncode == 0, second.stderr
    assert [e["type"] for e in second.events[:3]] == \
        ["thread.started", "turn.started", "item.completed"]
    completed = second.events[2]["item"]
    assert completed["id"] == "item_2" and completed["status"] == "completed"
    assert completed["result"]["content"] == [{"type": "text", "text": "18 C"}]
    new_ids = [e["item"]["id"] for e in second.events[3:] if "item" in e]
    assert new_ids and all(i not in ("item_0", "item_1", "item_2") for i in new_ids)
    assert second.final_message == "It is 18 C in Paris."
    assert second.events[-1]["type"] == "turn.completed"
    sent = server.requests[1]["messages"]
    assert {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}["call_w"] \
        == "18 C"

    again = run_agent(["--resume", thread_id, "--tool-outputs", str(outputs)],
                      cwd=workspace, home=home, api_base=server.api_base, timeout=CLI_TIMEOUT)
    assert again.returncode == 2 and "not waiting for tool outputs" in again.stderr
    listed = run_agent(["sessions", "list", "--json"], cwd=workspace, home=home, parse=False,
                       timeout=CLI_TIMEOUT)
    summary = json.loads(listed.stdout)
    assert (summary["turns"], summary["last_status"]) == (1, "completed")
    assert summary["instructions"] == ["weather?"]


def test_cli_tool_output_flags_are_checked(tmp_path, workspace, home):
    outputs = tmp_path / "outputs.json"
    outputs.write_text("{}")
    alone = run_agent(["--tool-outputs", str(outputs)], cwd=workspace, home=home, parse=False,
                      timeout=CLI_TIMEOUT)
    assert alone.returncode == 2 and "give --resume THREAD_ID" in alone.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("[{\"name\": 1}]")
    run = run_agent(["--external-tools", str(bad), "-i", "x"], cwd=workspace, home=home,
                    parse=False, timeout=CLI_TIMEOUT)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("baseagent: error: external tool name 1 must be")

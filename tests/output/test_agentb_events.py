"""AgentB's event vocabulary: the same scripted runs in both formats, every AgentB event
where it belongs, and both streams telling the same story."""
from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent, agentb
from baseagent.testing.deterministic import DeterministicClient
from helpers import run_agent

# Seconds per CLI run: each imports litellm, which takes half a minute on a loaded machine.
CLI_TIMEOUT = 180

WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
PAUSING = [
    {"content": "Let me look.", "usage": {"prompt_tokens": 120, "completion_tokens": 12},
     "tool_calls": [{"id": "call_s", "name": "shell", "arguments": {"command": "echo hi"}},
                    {"id": "call_w", "name": "get_weather", "arguments": {"city": "Paris"}}]},
]
FINISHING = [{"content": "It is sunny in Paris.",
              "usage": {"prompt_tokens": 200, "completion_tokens": 9}}]
FAILING = [{"fault": "status", "status": 401, "message": "invalid api key"}]

# The list: the AgentB events a run of baseagent must produce.
REQUIRED = {
    "agent.run.created", "agent.run.step.created", "thread.message.created",
    "thread.message.delta", "thread.message.completed", "thread.run.step.tool_call.created",
    "thread.run.step.tool_call.completed_by_llm", "agent.tool.execution.started",
    "agent.tool.execution.completed", "thread.run.requires_action", "thread.run.completed",
    "thread.run.failed", "agent.run.status.changed",
}


def parse_agentb(stdout: str) -> list[Any]:
    """Every line is one AgentB event valid against the wire models."""
    return [agentb.parse_agentb_event(json.loads(line)) for line in stdout.splitlines()]


def squeeze(types: list[str]) -> list[str]:
    """Consecutive deltas (content, tool-call arguments) count as one (streaming chunking
    is not fixed)."""
    return [t for t, _ in itertools.groupby(types)]


def scenario(scripted_server, tmp_path: Path, fmt: str) -> tuple[Any, Any, Any, str]:
    """Pause on an external tool, resume with its output, then a run that fails: the same
    scripted runs for either format. Returns the three runs and the paused thread's id."""
    workspace, home = tmp_path / f"ws-{fmt}", tmp_path / f"home-{fmt}"
    workspace.mkdir()
    home.mkdir()
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([WEATHER]))
    server = scripted_server(PAUSING + FINISHING)
    flags = ["--no-verify", "--event-format", fmt]
    first = run_agent([*flags, "--external-tools", str(tools), "-i", "Weather in Paris?"],
                      cwd=workspace, home=home, api_base=server.api_base, parse=fmt == "codex",
                      timeout=CLI_TIMEOUT)
    assert first.returncode == 3, first.stderr
    thread = next((home / ".baseagent" / "sessions").glob("*.jsonl")).stem
    outputs = tmp_path / f"outputs-{fmt}.json"
    outputs.write_text(json.dumps({"call_w": "18 C and sunny"}))
    second = run_agent([*flags, "--resume", thread, "--tool-outputs", str(outputs)],
                       cwd=workspace, home=home, api_base=server.api_base,
                       parse=fmt == "codex", timeout=CLI_TIMEOUT)
    assert second.returncode == 0, second.stderr
    failing = scripted_server(FAILING)
    third = run_agent([*flags, "-i", "anything"], cwd=workspace, home=home,
                      api_base=failing.api_base, parse=fmt == "codex", timeout=CLI_TIMEOUT)
    assert third.returncode == 1, third.stderr
    return first, second, third, thread


def test_the_same_runs_in_both_formats(scripted_server, tmp_path):
    codex = scenario(scripted_server, tmp_path, "codex")
    runs = scenario(scripted_server, tmp_path, "agentb")
    paused, resumed, failed = (parse_agentb(r.stdout) for r in runs[:3])

    seen = {e.type for e in paused + resumed + failed}
    assert REQUIRED <= seen, REQUIRED - seen

    # -- where each event belongs --------------------------------------------------------
    # (the tool calls' arguments stream as deltas too, so they are not sent whole again)
    assert squeeze([e.type for e in paused]) == [
        "agent.run.created", "agent.run.status.changed", "thread.message.created",
        "agent.run.step.created", "agent.run.status.changed", "thread.message.created",
        "thread.message.delta",
        "thread.run.step.tool_call.created", "thread.run.step.tool_call.completed_by_llm",
        "thread.run.step.tool_call.created", "thread.run.step.tool_call.completed_by_llm",
        "thread.message.completed",
        "agent.tool.execution.started", "agent.tool.execution.completed",
        "thread.message.created", "agent.run.status.changed", "thread.run.requires_action"]
    assert squeeze([e.type for e in resumed]) == [
        "agent.run.status.changed", "thread.message.created", "agent.run.step.created",
        "agent.run.status.changed", "thread.message.created", "thread.message.delta",
        "thread.message.completed", "agent.run.status.changed", "thread.run.completed"]
    assert squeeze([e.type for e in failed]) == [
        "agent.run.created", "agent.run.status.changed", "thread.message.created",
        "agent.run.step.created", "agent.run.status.changed", "thread.message.created",
        "thread.message.completed", "agent.run.status.changed", "thread.run.failed"]

    # one run (the paused turn keeps its id across processes), one thread
    assert len({e.runId for e in paused + resumed}) == 1
    assert {e.threadId for e in paused + resumed} == {runs[3]}
    statuses = [(e.data.previousStatus, e.data.currentStatus)
                for e in paused + resumed + failed if e.type == "agent.run.status.changed"]
    assert statuses == [("queued", "in_progress"), ("in_progress", "in_progress"),
                        ("in_progress", "requires_action"),
                        ("requires_action", "in_progress"), ("in_progress", "in_progress"),
                        ("in_progress", "completed"),
                        ("queued", "in_progress"), ("in_progress", "in_progress"),
                        ("in_progress", "failed")]
    llm_calls = [e.data.details for e in paused + resumed + failed
                 if e.type == "agent.run.status.changed"
                 and e.data.previousStatus == e.data.currentStatus == "in_progress"]
    # AgentB's words; the resumed turn counts on from the paused one's model calls
    assert llm_calls == ["LLM call for turn 1", "LLM call for turn 2", "LLM call for turn 1"]
    user, assistant, result = [e.data.message for e in paused
                               if e.type == "thread.message.created"]
    assert (user.role, user.content) == ("user", "Weather in Paris?")
    assert assistant.role == "assistant" and assistant.metadata["inProgress"] is True
    # the agent's own tool result is a thread message too, as the model reads it
    assert (result.role, result.metadata["toolCallId"], result.metadata["toolName"]) == \
        ("tool", "call_s", "shell")
    assert result.content.startswith("Exit code: 0") and "hi" in result.content
    step = next(e for e in paused if e.type == "agent.run.step.created").data.stepId
    created = [e.data for e in paused if e.type == "thread.run.step.tool_call.created"]
    assert [(d.stepId, d.toolCall.id) for d in created] == [(step, "call_s"), (step, "call_w")]
    chunks = [e.data.delta for e in paused if e.type == "thread.message.delta"]
    assert all(d.messageId == assistant.id for d in
               [e.data for e in paused if e.type == "thread.message.delta"])
    # the arguments arrive in pieces (the scripted server streams each in three), named by
    # the call's id; each call's pieces join up to its arguments
    pieces: dict[str, list[str]] = {}
    for d in chunks:
        for c in d.toolCallsChunk or []:
            pieces.setdefault(c.id, []).append(c.function.arguments)
    assert list(pieces) == ["call_s", "call_w"]
    assert {k: json.loads("".join(v)) for k, v in pieces.items()} == \
        {"call_s": {"command": "echo hi"}, "call_w": {"city": "Paris"}}
    started = next(e.data for e in paused if e.type == "agent.tool.execution.started")
    assert (started.toolCallId, started.toolName, started.input) == \
        ("call_s", "shell", {"command": "echo hi"})
    assert started.stepId == f"{step}-tool_exec-call_s"
    tool_message = next(e.data.message for e in resumed if e.type == "thread.message.created")
    assert (tool_message.role, tool_message.content, tool_message.metadata["toolCallId"]) == \
        ("tool", "18 C and sunny", "call_w")
    error = failed[-1].data.error
    assert error.code == "failed" and "invalid api key" in error.message
    incomplete = next(e.data.message for e in failed if e.type == "thread.message.completed")
    assert incomplete.metadata["incomplete"] is True

    # -- the same story as the Codex stream ----------------------------------------------
    c_paused, c_resumed, c_failed = (r.events for r in codex[:3])
    text = "".join(d.contentChunk for d in chunks if d.contentChunk)
    assert text == [e["item"]["text"] for e in c_paused if e["type"] == "item.completed"
                    and e["item"]["type"] == "agent_message"][0] == "Let me look."
    command = [e["item"] for e in c_paused if e["type"] == "item.completed"
               and e["item"]["type"] == "command_execution"][0]
    executed = next(e.data for e in paused if e.type == "agent.tool.execution.completed")
    assert executed.result.success is True and command["status"] == "completed"
    assert executed.result.data.endswith("Output:\n" + command["aggregated_output"])
    c_pause = c_paused[-1]
    b_pause = paused[-1].data.required_action.submit_tool_outputs.tool_calls
    assert [(c["id"], c["name"], c["arguments"]) for c in c_pause["tool_calls"]] == \
        [(c.id, c.function.name, json.loads(c.function.arguments)) for c in b_pause]
    final = resumed[-1].data
    assert final.finalMessages[0].content == [
        e["item"]["text"] for e in c_resumed if e["type"] == "item.completed"
        and e["item"]["type"] == "agent_message"][-1] == "It is sunny in Paris."
    assert final.usage.model_dump() == c_resumed[-1]["usage"]
    assert failed[-1].data.error.message == c_failed[-1]["error"]["message"]


def agent_for(workspace: Path, steps: list[Any], **kw: Any) -> tuple[Agent, DeterministicClient]:
    model = DeterministicClient(steps)
    kw.setdefault("session", False)
    kw.setdefault("verify", False)
    return Agent(model_client=model, cwd=workspace, env={"PATH": os.environ["PATH"],
                                                         **kw.pop("env", {})}, **kw), model


def test_library_stream_and_codex_events_of_one_run_agree(workspace):
    """stream(format="agentb") and on_event (Codex) watch the same run, with a delegation:
    every tool item has its execution events, and the sub-agent its invocation events."""
    (workspace / "notes.txt").write_text("answer: 42\n")
    codex: list[Any] = []
    agent, _ = agent_for(workspace, [
        {"tool_calls": [{"id": "call_d", "name": "delegate",
                         "arguments": {"task": "find the answer in notes.txt"}},
                        {"id": "call_l", "name": "list_dir", "arguments": {"dir_path": "."}}]},
        {"tool_calls": [{"id": "call_r", "name": "read_file",
                         "arguments": {"file_path": "notes.txt"}}]},
        {"content": "42"},
        {"content": "The answer is 42."},
    ], delegate=True, on_event=codex.append)
    stream = agent.stream("what is the answer?", format="agentb")
    seen = list(stream)
    assert stream.result.final_message == "The answer is 42."
    assert all(type(e).__module__ == "baseagent.output.agentb_events" for e in seen)
    types = [e.type for e in seen]

    # the delegate call: execution.started, the sub-agent's run, execution.completed
    collab = next(e.item for e in codex if e.type == "item.completed"
                  and e.item.type == "collab_tool_call")
    exec_started = types.index("agent.tool.execution.started")
    sub_started = types.index("agent.sub_agent.invocation.started")
    sub_completed = types.index("agent.sub_agent.invocation.completed")
    assert exec_started < sub_started < sub_completed
    assert types[sub_completed + 1] == "agent.tool.execution.completed"
    started, completed = seen[sub_started].data, seen[sub_completed].data
    assert started.toolCallId == completed.toolCallId == "call_d"
    assert started.subAgentRunId == collab.receiver_thread_ids[0]
    assert started.subTaskDescription == "find the answer in notes.txt"
    assert completed.result.success and completed.result.data == "42"
    assert completed.result.metadata["items"] == len(collab.items) == 2
    # the child's own steps stay inside its invocation (one parent step before, one after)
    steps = [i for i, t in enumerate(types) if t == "agent.run.step.created"]
    assert len(steps) == 2 and steps[0] < sub_started and steps[1] > sub_completed

    # every Codex tool item has its execution events, in the same order
    codex_tools = [e.item for e in codex if e.type == "item.completed"
                   and e.item.type in ("collab_tool_call", "mcp_tool_call")]
    done = [e.data for e in seen if e.type == "agent.tool.execution.completed"]
    assert [d.result.metadata["itemId"] for d in done] == [i.id for i in codex_tools]
    assert [d.toolName for d in done] == ["delegate", "list_dir"]
    assert done[1].result.data == codex_tools[1].result.content[0]["text"]


@pytest.mark.parametrize("steps, kwargs, code, status", [
    ([{"content": "x", "delay": 5}], {}, "cancelled", "cancelled"),
    ([{"tool_calls": [{"name": "list_dir", "arguments": {"dir_path": "."}}]}] * 2,
     {"max_iterations": 1}, "limit_reached", "failed"),
])
def test_failures_carry_their_code(workspace, steps, kwargs, code, status):
    agent, _ = agent_for(workspace, steps, **kwargs)
    stream = agent.stream("go", format="agentb")
    if code == "cancelled":
        first = next(stream)
        assert first.type == "agent.run.created"
        agent.cancel()
    seen = list(stream)
    assert seen[-2].data.currentStatus == status
    assert seen[-1].type == "thread.run.failed" and seen[-1].data.error.code == code
    statuses = [e.data.currentStatus for e in seen if e.type == "agent.run.status.changed"]
    # a cancelled run says so before it ends (AgentB's `cancelling`); no other run does
    assert ("cancelling" in statuses) == (code == "cancelled")
    if code == "cancelled":
        assert statuses[-2:] == ["cancelling", "cancelled"]


def test_secrets_are_redacted_from_agentb_events(workspace):
    secret = "sk-live-0123456789abcdef"
    (workspace / ".env").write_text(f"API_TOKEN={secret}\n")
    agent, _ = agent_for(workspace, [
        {"tool_calls": [{"name": "read_file", "arguments": {"file_path": ".env"}}]},
        {"content": "done"}], env={"API_TOKEN": secret})
    lines = [e.model_dump_json() for e in agent.stream("read .env", format="agentb")]
    assert not any(secret in line for line in lines)
    assert any("[REDACTED]" in line for line in lines)


def test_a_bad_format_is_an_input_error(workspace):
    agent, model = agent_for(workspace, [{"content": "x"}])
    with pytest.raises(ValueError, match="unknown event format 'xml'"):
        agent.stream("go", format="xml")  # type: ignore[arg-type]
    assert model.calls == 0 and not agent.running


def test_agentb_events_are_the_cli_lines(workspace):
    """What stream(format="agentb") yields is what --event-format agentb prints."""
    agent, _ = agent_for(workspace, [{"content": "hi"}])
    from baseagent.output.jsonl import event_to_line

    for event in agent.stream("go", format="agentb"):
        assert json.loads(event_to_line(event)) == json.loads(event.model_dump_json())


ALL_FAILING = [{"tool_calls": [{"id": "c1", "name": "read_file",
                                "arguments": {"file_path": "missing.txt"}},
                               {"id": "c2", "name": "shell", "arguments": {"command": "exit 3"}}]},
               {"content": "Neither worked."}]


@pytest.mark.parametrize("fmt", ["agentb", "codex"])
def test_all_tools_failed_through_the_cli(scripted_server, workspace, home, fmt):
    """AgentB's rule, asked for in the environment (all_tools_failed = "fail"): the answer
    whose calls all failed ends the run, with AgentB's error code; both streams say why.
    Without it (the default) the model reads the errors and answers."""
    server = scripted_server([ALL_FAILING[0]] + ALL_FAILING)
    flags = ["--no-verify", "--event-format", fmt, "-i", "read missing.txt"]
    failed = run_agent(flags, cwd=workspace, home=home, api_base=server.api_base,
                       env_extra={"BASEAGENT_ALL_TOOLS_FAILED": "fail"}, parse=fmt == "codex",
                       timeout=CLI_TIMEOUT)
    assert failed.returncode == 1, failed.stderr
    assert len(server.requests) == 1
    why = "every tool call of the model's answer failed (2 of 2)"
    if fmt == "agentb":
        events = parse_agentb(failed.stdout)
        done = [e.data.result.success for e in events
                if e.type == "agent.tool.execution.completed"]
        assert done == [False, False]
        assert [e.data.message.metadata["toolCallId"] for e in events
                if e.type == "thread.message.created" and e.data.message.role == "tool"] == \
            ["c1", "c2"]
        assert events[-2].data.currentStatus == "failed"
        error = events[-1].data.error
        assert (events[-1].type, error.code) == ("thread.run.failed", "all_tools_failed")
        assert error.message.startswith(why)
    else:
        assert failed.events[-1]["type"] == "turn.failed"
        assert failed.events[-1]["error"]["message"].startswith(why)

    goes_on = run_agent(flags, cwd=workspace, home=home, api_base=server.api_base,
                        parse=fmt == "codex", timeout=CLI_TIMEOUT)
    assert goes_on.returncode == 0, goes_on.stderr
    assert len(server.requests) == 3  # the failed calls, then the answer
    assert '"Neither worked."' in goes_on.stdout
    last = json.loads(goes_on.stdout.splitlines()[-1])
    assert last["type"] == ("thread.run.completed" if fmt == "agentb" else "turn.completed")


def test_on_event_takes_agentb_events_when_asked(workspace):
    """on_event_format="agentb": the callback gets what stream(format="agentb") yields."""
    got: list[Any] = []
    agent, _ = agent_for(workspace, [{"content": "hi"}], on_event=got.append,
                         on_event_format="agentb")
    result = agent.run("go")
    assert result.ok
    assert all(type(e).__module__ == "baseagent.output.agentb_events" for e in got)
    assert [got[0].type, got[-1].type] == ["agent.run.created", "thread.run.completed"]
    with pytest.raises(ValueError, match="unknown event format 'xml'"):
        agent_for(workspace, [], on_event=got.append, on_event_format="xml")


def test_a_signal_cancels_the_cli_run_through_cancelling(scripted_server, workspace, home):
    """SIGTERM while the model answers (`--event-format agentb`): the stream says
    `cancelling`, then `cancelled`, and ends with thread.run.failed (code cancelled)."""
    import signal

    from reliability import kill_quietly, start_agent, wait_for

    server = scripted_server([{"content": "never sent", "delay": 30}])
    proc = start_agent(["--event-format", "agentb", "-i", "wait"], cwd=workspace, home=home,
                       api_base=server.api_base)
    try:
        wait_for(lambda: len(server.requests) == 1, timeout=CLI_TIMEOUT,
                 what="the model call")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        kill_quietly(proc)
    events = parse_agentb(out.decode())
    statuses = [e.data.currentStatus for e in events if e.type == "agent.run.status.changed"]
    assert statuses[-2:] == ["cancelling", "cancelled"], err
    assert events[-1].type == "thread.run.failed" and events[-1].data.error.code == "cancelled"
    assert proc.returncode != 0

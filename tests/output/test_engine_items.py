"""The engine's events (emitting/events.py) and the mappers over them (output/), in-process.

The Codex mapping is a pure function of each engine event: the same event gives the same
JSONL lines, whatever came before. AgentB's stream is made from the same engine events
through the Emitter. No subprocess, no model: engine events in, exact lines out.
"""
from __future__ import annotations

import json
import re
from typing import Any

import pytest

from baseagent.emitting import events as engine
from baseagent.output import events as ev
from baseagent.output.agentb import AgentBMapper
from baseagent.output.codex import codex_events, codex_item
from baseagent.output.emitter import Emitter
from baseagent.output.jsonl import event_to_line, json_line
from baseagent.output.redact import MARK, Redactor


def lines(event: engine.RunEvent) -> list[str]:
    return [event_to_line(e).decode().rstrip("\n") for e in codex_events(event)]


def tool(kind: str, **fields: Any) -> engine.ToolCallItem:
    base: dict[str, Any] = {"id": "item_1", "kind": kind, "name": "t", "server": "baseagent",
                            "tool": "t", "arguments": None}
    return engine.ToolCallItem(**{**base, **fields})


SHELL = tool("command_execution", name="shell", tool="shell",
             arguments={"command": "ls"}, command="ls")
SHELL_DONE = engine.ToolOutcome(success=True, output="a\n",
                                data={"exit_code": 0, "aggregated_output": "a\n"})

# engine event -> the exact Codex JSONL lines it is
CASES: list[tuple[str, engine.RunEvent, list[str]]] = [
    ("thread", engine.ThreadStarted("t-1"), ['{"type":"thread.started","thread_id":"t-1"}']),
    ("turn", engine.TurnStarted("turn-1", "t-1", "hi"), ['{"type":"turn.started"}']),
    ("continued turn", engine.TurnStarted("turn-1", "t-1", None, continued=True),
     ['{"type":"turn.started"}']),
    ("step", engine.StepStarted("turn-1", 1), []),
    ("model responded", engine.ModelResponded(
        "x", (engine.CallRequest("c1", "shell", "{}"),), "tool_calls"), []),
    ("tool started", engine.ToolStarted("c1", "shell", "item_1", {"command": "ls"}), []),
    ("tool finished", engine.ToolFinished("c1", "shell", "item_1", True, "a"), []),
    ("output submitted", engine.OutputSubmitted("c1", "w", "item_1", "sunny"), []),
    ("notice", engine.Notice("retrying"), ['{"type":"error","message":"retrying"}']),
    ("run failed", engine.RunFailed("disk full"),
     ['{"type":"turn.failed","error":{"message":"disk full"}}']),
    ("message started", engine.ItemStarted(engine.TextItem("item_0", "message", "Hel")),
     ['{"type":"item.started","item":{"id":"item_0","type":"agent_message","text":"Hel"}}']),
    ("message updated", engine.ItemUpdated(engine.TextItem("item_0", "message", "Hello")),
     ['{"type":"item.updated","item":{"id":"item_0","type":"agent_message","text":"Hello"}}']),
    ("reasoning", engine.ItemCompleted(engine.TextItem("item_0", "reasoning", "hmm")),
     ['{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"hmm"}}']),
    ("command started", engine.ItemStarted(SHELL),
     ['{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"ls",'
      '"aggregated_output":"","exit_code":null,"status":"in_progress"}}']),
    ("command progress", engine.ItemUpdated(
        tool("command_execution", command="ls", progress={"aggregated_output": "a",
                                                          "not_a_field": 1})),
     ['{"type":"item.updated","item":{"id":"item_1","type":"command_execution","command":"ls",'
      '"aggregated_output":"a","exit_code":null,"status":"in_progress"}}']),
    ("command completed", engine.ItemCompleted(
        tool("command_execution", command="ls", outcome=SHELL_DONE)),
     ['{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls",'
      '"aggregated_output":"a\\n","exit_code":0,"status":"completed"}}']),
    ("command declined", engine.ItemCompleted(tool("command_execution", command="ls",
                                                   outcome=engine.ToolOutcome(
                                                       False, "Error: interrupted",
                                                       interrupted=True))),
     ['{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls",'
      '"aggregated_output":"Error: interrupted","exit_code":null,"status":"declined"}}']),
    ("file change done", engine.ItemCompleted(tool(
        "file_change", changes=({"path": "/w/a.py", "kind": "update"},),
        outcome=engine.ToolOutcome(True, "ok", {"changes": [{"path": "/w/a.py",
                                                              "kind": "update"}]}))),
     ['{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":'
      '[{"path":"/w/a.py","kind":"update"}],"status":"completed"}}']),
    ("file change failed", engine.ItemCompleted(tool(
        "file_change", outcome=engine.ToolOutcome(
            False, "Error: sandbox is read-only", named=({"path": "/w/b", "kind": "add"},)))),
     ['{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":'
      '[{"path":"/w/b","kind":"add"}],"status":"failed",'
      '"error":{"message":"sandbox is read-only"}}}']),
    ("tool call done", engine.ItemCompleted(tool(
        "mcp_tool_call", tool="read_file", arguments={"file_path": "a"},
        outcome=engine.ToolOutcome(True, "text"))),
     ['{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"baseagent",'
      '"tool":"read_file","arguments":{"file_path":"a"},"result":{"content":[{"type":"text",'
      '"text":"text"}],"structured_content":null},"error":null,"status":"completed"}}']),
    ("tool call failed", engine.ItemCompleted(tool(
        "mcp_tool_call", tool="nope", outcome=engine.ToolOutcome(False, "Error: unknown"))),
     ['{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"baseagent",'
      '"tool":"nope","arguments":null,"result":null,"error":{"message":"Error: unknown"},'
      '"status":"failed"}}']),
    ("server blocks", engine.ItemCompleted(tool(
        "mcp_tool_call", server="time", tool="now", outcome=engine.ToolOutcome(
            True, "12:00", {"content": [{"type": "text", "text": "12:00"}],
                            "structured_content": {"t": 12}}))),
     ['{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"time",'
      '"tool":"now","arguments":null,"result":{"content":[{"type":"text","text":"12:00"}],'
      '"structured_content":{"t":12}},"error":null,"status":"completed"}}']),
    ("plan", engine.ItemStarted(engine.TurnScopedItem("item_2", "todo_list", {"items": [
        {"text": "read", "completed": True}, {"text": "fix", "completed": False}]})),
     ['{"type":"item.started","item":{"id":"item_2","type":"todo_list","items":['
      '{"text":"read","completed":true},{"text":"fix","completed":false}]}}']),
    ("turn completed", engine.TurnEnded(
        "completed", usage={"input_tokens": 10, "cached_input_tokens": 2,
                            "cache_write_input_tokens": 0, "output_tokens": 3,
                            "reasoning_output_tokens": 1},
        cost_usd=0.5, verification={"by": "evidence", "command": "pytest", "exit_code": 0}),
     ['{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":2,'
      '"cache_write_input_tokens":0,"output_tokens":3,"reasoning_output_tokens":1},'
      '"cost_usd":0.5,"verification":{"by":"evidence","command":"pytest","exit_code":0,'
      '"reason":null}}']),
    ("turn failed", engine.TurnEnded("limit", error="max iterations reached"),
     ['{"type":"turn.failed","error":{"message":"max iterations reached"}}']),
    ("turn paused", engine.TurnEnded(
        "requires_action", usage={"input_tokens": 1},
        pending=(engine.PendingTool("c2", "get_weather", {"city": "Paris"}, "item_3"),)),
     ['{"type":"turn.requires_action","tool_calls":[{"id":"c2","name":"get_weather",'
      '"arguments":{"city":"Paris"},"item_id":"item_3"}],"usage":{"input_tokens":1,'
      '"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":0,'
      '"reasoning_output_tokens":0}}']),
]


@pytest.mark.parametrize("name,event,expected", CASES, ids=[c[0] for c in CASES])
def test_each_engine_event_is_exact_codex_lines(name, event, expected):
    assert lines(event) == expected
    assert lines(event) == expected  # a pure function: no state carried between calls


def test_a_delegation_nests_the_childs_engine_items_as_codex_items():
    child = [engine.TextItem("item_1.item_0", "message", "42"),
             tool("mcp_tool_call", id="item_1.item_1", tool="read_file",
                  outcome=engine.ToolOutcome(True, "answer: 42"))]
    progress = {"receiver_thread_ids": ["child"],
                "agents_states": {"child": {"status": "running"}}, "items": child}
    delegate = tool("collab_tool_call", name="delegate", tool="delegate", task="find it",
                    thread_id="parent", progress=progress)
    item = codex_item(delegate)
    assert isinstance(item, ev.CollabToolCallItem)
    assert item.items == [codex_item(i) for i in child]
    assert (item.sender_thread_id, item.receiver_thread_ids, item.prompt, item.status) == (
        "parent", ["child"], "find it", "in_progress")
    usage = {"input_tokens": 5, "cached_input_tokens": 0, "cache_write_input_tokens": 0,
             "output_tokens": 1, "reasoning_output_tokens": 0}
    done = codex_item(tool("collab_tool_call", task="find it", thread_id="parent",
                           outcome=engine.ToolOutcome(True, "42", {
                               **progress, "agents_states": {"child": {
                                   "status": "completed", "message": "42"}},
                               "usage": usage})))
    assert done.status == "completed" and done.usage == ev.Usage(**usage)
    assert json.loads(json_line(done.model_dump(mode="json")))["items"][1]["result"] == {
        "content": [{"type": "text", "text": "answer: 42"}], "structured_content": None}


def test_an_unknown_turn_scoped_kind_is_refused():
    with pytest.raises(ValueError, match="turn-scoped"):
        codex_item(engine.TurnScopedItem("item_0", "plan_of_old", {}))


class _Lines:
    def __init__(self) -> None:
        self.got: list[str] = []

    def emit(self, event: ev.ThreadEvent) -> None:
        self.got.append(event_to_line(event).decode().rstrip("\n"))


def test_the_emitter_maps_and_redacts_for_codex_listeners():
    secret = "sk-live-0123456789abcdefghij"
    out = _Lines()
    emitter = Emitter([out], redact=Redactor([secret]))
    emitter.send(engine.ItemCompleted(tool("command_execution", command=f"echo {secret}",
                                           outcome=SHELL_DONE)))
    emitter.send(engine.StepStarted("turn-1", 1))  # nothing on the Codex wire
    assert out.got == [
        '{"type":"item.completed","item":{"id":"item_1","type":"command_execution",'
        f'"command":"echo {MARK}","aggregated_output":"a\\n","exit_code":0,'
        '"status":"completed"}}']


def test_listeners_that_take_engine_events_get_them_redacted():
    secret = "sk-live-0123456789abcdefghij"
    got: list[engine.RunEvent] = []

    class Taker:
        run_events = True

        def emit(self, event: ev.ThreadEvent) -> None:
            pass

        def run_event(self, event: engine.RunEvent) -> None:
            got.append(event)

    item = tool("mcp_tool_call", progress={"items": [engine.TextItem("x", "message", secret)]})
    Emitter([Taker()], redact=Redactor([secret])).send(engine.ItemUpdated(item))
    [event] = got
    assert isinstance(event, engine.ItemUpdated)
    assert event.item.progress["items"][0].text == MARK


# -- AgentB: the same engine events, through the Emitter --------------------------------------

_VOLATILE = [(re.compile(r'"timestamp":"[^"]*"'), '"timestamp":"<TS>"'),
             (re.compile(r'"createdAt":"[^"]*"'), '"createdAt":"<TS>"'),
             (re.compile(r"(msg|step)_[0-9a-f]{32}"), r"\1_<HEX>")]

RUN = [
    engine.TurnStarted("turn-1", "thread-1", "list the files"),
    engine.StepStarted("turn-1", 1),
    engine.ItemStarted(engine.TextItem("item_0", "message", "Let me")),
    engine.ItemCompleted(engine.TextItem("item_0", "message", "Let me look.")),
    engine.ModelResponded("Let me look.", (engine.CallRequest("c1", "shell",
                                                              '{"command":"ls"}'),),
                          "tool_calls"),
    engine.ToolStarted("c1", "shell", "item_1", {"command": "ls"}),
    engine.ItemStarted(SHELL),
    engine.ItemCompleted(tool("command_execution", command="ls", outcome=SHELL_DONE)),
    engine.ToolFinished("c1", "shell", "item_1", True, "a\n"),
    engine.StepStarted("turn-1", 2),
    engine.ItemCompleted(engine.TextItem("item_2", "message", "One file: a.")),
    engine.ModelResponded("One file: a.", (), "stop"),
    engine.TurnEnded("completed", usage={"input_tokens": 10, "output_tokens": 3}),
]


def agentb_lines(events: list[engine.RunEvent]) -> list[str]:
    got: list[str] = []
    emitter = Emitter([AgentBMapper(lambda e: got.append(e.model_dump_json()))])
    for event in events:
        emitter.send(event)
    out = []
    for line in got:
        for pattern, repl in _VOLATILE:
            line = pattern.sub(repl, line)
        out.append(line)
    return out


AGENTB_RUN = [  # the mapper's output for the same run (AgentB's "LLM call for turn N" status
    # before each model call)
    '{"type":"agent.run.created","timestamp":"<TS>","runId":"turn-1","threadId":"thread-1'
    '","data":{"status":"queued","initialMessages":[{"role":"user","content":"list the fi'
    'les"}]}}',
    '{"type":"agent.run.status.changed","timestamp":"<TS>","runId":"turn-1","threadId":"t'
    'hread-1","data":{"previousStatus":"queued","currentStatus":"in_progress","details":n'
    'ull}}',
    '{"type":"thread.message.created","timestamp":"<TS>","runId":"turn-1","threadId":"thr'
    'ead-1","data":{"message":{"id":"msg_<HEX>","threadId":"thread-1","role":"user","cont'
    'ent":"list the files","createdAt":"<TS>","metadata":{}}}}',
    '{"type":"agent.run.step.created","timestamp":"<TS>","runId":"turn-1","threadId":"thr'
    'ead-1","data":{"stepId":"step_<HEX>","details":{"stepNumber":1}}}',
    '{"type":"agent.run.status.changed","timestamp":"<TS>","runId":"turn-1","threadId":"t'
    'hread-1","data":{"previousStatus":"in_progress","currentStatus":"in_progress","details'
    '":"LLM call for turn 1"}}',
    '{"type":"thread.message.created","timestamp":"<TS>","runId":"turn-1","threadId":"thr'
    'ead-1","data":{"message":{"id":"msg_<HEX>","threadId":"thread-1","role":"assistant",'
    '"content":"","createdAt":"<TS>","metadata":{"stepId":"step_<HEX>","inProgress":true}'
    '}}}',
    '{"type":"thread.message.delta","timestamp":"<TS>","runId":"turn-1","threadId":"threa'
    'd-1","data":{"messageId":"msg_<HEX>","delta":{"contentChunk":"Let me","toolCallsChun'
    'k":null}}}',
    '{"type":"thread.message.delta","timestamp":"<TS>","runId":"turn-1","threadId":"threa'
    'd-1","data":{"messageId":"msg_<HEX>","delta":{"contentChunk":" look.","toolCallsChun'
    'k":null}}}',
    '{"type":"thread.run.step.tool_call.created","timestamp":"<TS>","runId":"turn-1","thr'
    'eadId":"thread-1","data":{"stepId":"step_<HEX>","toolCall":{"id":"c1","type":"functi'
    'on","function":{"name":"shell","arguments":"{\\"command\\":\\"ls\\"}"}}}}',
    '{"type":"thread.run.step.tool_call.completed_by_llm","timestamp":"<TS>","runId":"tur'
    'n-1","threadId":"thread-1","data":{"stepId":"step_<HEX>","toolCall":{"id":"c1","type'
    '":"function","function":{"name":"shell","arguments":"{\\"command\\":\\"ls\\"}"}}}}',
    '{"type":"thread.message.delta","timestamp":"<TS>","runId":"turn-1","threadId":"threa'
    'd-1","data":{"messageId":"msg_<HEX>","delta":{"contentChunk":null,"toolCallsChunk":['
    '{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\\"command\\":\\"'
    'ls\\"}"}}]}}}',
    '{"type":"thread.message.completed","timestamp":"<TS>","runId":"turn-1","threadId":"t'
    'hread-1","data":{"message":{"id":"msg_<HEX>","threadId":"thread-1","role":"assistant'
    '","content":"Let me look.","createdAt":"<TS>","metadata":{"stepId":"step_<HEX>","fin'
    'ishReason":"tool_calls","tool_calls":[{"id":"c1","type":"function","function":{"name'
    '":"shell","arguments":"{\\"command\\":\\"ls\\"}"}}]}}}}',
    '{"type":"agent.tool.execution.started","timestamp":"<TS>","runId":"turn-1","threadId'
    '":"thread-1","data":{"stepId":"step_<HEX>-tool_exec-c1","toolCallId":"c1","toolName"'
    ':"shell","input":{"command":"ls"}}}',
    '{"type":"agent.tool.execution.completed","timestamp":"<TS>","runId":"turn-1","thread'
    'Id":"thread-1","data":{"stepId":"step_<HEX>-tool_exec-c1","toolCallId":"c1","toolNam'
    'e":"shell","result":{"success":true,"data":"a\\n","error":null,"metadata":{"itemId":"'
    'item_1"}}}}',
    '{"type":"agent.run.step.created","timestamp":"<TS>","runId":"turn-1","threadId":"thr'
    'ead-1","data":{"stepId":"step_<HEX>","details":{"stepNumber":2}}}',
    '{"type":"agent.run.status.changed","timestamp":"<TS>","runId":"turn-1","threadId":"t'
    'hread-1","data":{"previousStatus":"in_progress","currentStatus":"in_progress","details'
    '":"LLM call for turn 2"}}',
    '{"type":"thread.message.created","timestamp":"<TS>","runId":"turn-1","threadId":"thr'
    'ead-1","data":{"message":{"id":"msg_<HEX>","threadId":"thread-1","role":"assistant",'
    '"content":"","createdAt":"<TS>","metadata":{"stepId":"step_<HEX>","inProgress":true}'
    '}}}',
    '{"type":"thread.message.delta","timestamp":"<TS>","runId":"turn-1","threadId":"threa'
    'd-1","data":{"messageId":"msg_<HEX>","delta":{"contentChunk":"One file: a.","toolCal'
    'lsChunk":null}}}',
    '{"type":"thread.message.completed","timestamp":"<TS>","runId":"turn-1","threadId":"t'
    'hread-1","data":{"message":{"id":"msg_<HEX>","threadId":"thread-1","role":"assistant'
    '","content":"One file: a.","createdAt":"<TS>","metadata":{"stepId":"step_<HEX>","fin'
    'ishReason":"stop","tool_calls":[]}}}}',
    '{"type":"agent.run.status.changed","timestamp":"<TS>","runId":"turn-1","threadId":"t'
    'hread-1","data":{"previousStatus":"in_progress","currentStatus":"completed","details'
    '":null}}',
    '{"type":"thread.run.completed","timestamp":"<TS>","runId":"turn-1","threadId":"threa'
    'd-1","data":{"status":"completed","finalMessages":[{"id":"msg_<HEX>","threadId":"thr'
    'ead-1","role":"assistant","content":"One file: a.","createdAt":"<TS>","metadata":{"s'
    'tepId":"step_<HEX>","finishReason":"stop","tool_calls":[]}}],"usage":{"input_tokens"'
    ':10,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":3,"reasonin'
    'g_output_tokens":0}}}',
]


def test_agentb_events_of_a_run_are_exact():
    assert agentb_lines(RUN) == AGENTB_RUN

"""What the loop does for AgentB's run model: tool-call arguments streamed in pieces
(ToolCallDelta, throttled, never on the Codex wire), a ToolMessage for every tool result, a
cancelled turn saying so before it ends, and the all_tools_failed rule."""
from __future__ import annotations

from typing import Any

import pytest

from baseagent.emitting import events as engine
from baseagent.llm.types import CallProgress
from baseagent.emitting.interface import EventListener
from baseagent.tools.external import external_tool
from baseagent.tools.registry import builtin_tools
from test_loop import make_loop

ARGS = '{"file_path": "notes.txt", "offset": 1}'


class Engine(EventListener):
    """The engine's events, as a mapper gets them."""

    run_events = True

    def __init__(self) -> None:
        self.events: list[Any] = []

    def run_event(self, event: Any) -> None:
        self.events.append(event)

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]


def streaming(client: Any, plan: list[tuple[str, tuple[CallProgress, ...]]]) -> None:
    """Make the deterministic client stream `plan` (text so far, calls so far) before each
    answer, as the real client's chunk loop does."""
    original = client.complete

    def complete(messages, tools=None, on_progress=None, **kw):
        if client.calls == 0:
            for text, calls in plan:
                on_progress(text, "", calls) if calls else on_progress(text, "")
        return original(messages, tools, on_progress, **kw)

    client.complete = complete


def pieces(text: str, n: int) -> list[str]:
    size = -(-len(text) // n)
    return [text[:i + size] for i in range(0, len(text), size)]


def two_calls_plan() -> list[tuple[str, tuple[CallProgress, ...]]]:
    """Text, then call 0's arguments in ten pieces, then call 1's in ten (no pause: the
    throttle holds all but the first piece of each)."""
    plan: list[tuple[str, tuple[CallProgress, ...]]] = [("Hi", ())]
    first = [CallProgress(0, "call_a", "read_file", p) for p in ["", *pieces(ARGS, 10)]]
    plan += [("Hi", (c,)) for c in first]
    plan += [("Hi", (first[-1], CallProgress(1, "call_b", "list_dir", p)))
             for p in ["", *pieces('{"dir_path": "."}', 10)]]
    return plan


STEPS = [{"content": "Hi", "tool_calls": [
    {"id": "call_a", "name": "read_file", "arguments": ARGS},
    {"id": "call_b", "name": "list_dir", "arguments": '{"dir_path": "."}'}]},
    {"content": "done"}]


def test_tool_call_arguments_stream_in_pieces_that_join_up(tmp_path, monkeypatch):
    monkeypatch.setattr("baseagent.core.streaming.STREAM_UPDATE_INTERVAL_S", 60.0)  # no timing
    (tmp_path / "notes.txt").write_text("x\n")
    loop, client, rec = make_loop(tmp_path, STEPS, tools=builtin_tools(), verify=False)
    seen = Engine()
    loop.emitter.add_listener(seen)
    streaming(client, two_calls_plan())
    assert loop.run_turn("go").status == "completed"

    deltas = seen.of(engine.ToolCallDelta)
    # call 0 entirely before call 1; each call's pieces join up to its arguments
    assert [d.index for d in deltas] == sorted(d.index for d in deltas)
    joined = {d.call_id: "".join(x.delta for x in deltas if x.call_id == d.call_id)
              for d in deltas}
    assert joined == {"call_a": ARGS, "call_b": '{"dir_path": "."}'}
    # throttled: the first piece of a call at once (it names the call), the rest of call 0
    # when call 1 begins, the rest of call 1 when the answer is complete
    assert [(d.call_id, d.name, d.delta) for d in deltas] == [
        ("call_a", "read_file", ""), ("call_a", "read_file", ARGS),
        ("call_b", "list_dir", ""), ("call_b", "list_dir", '{"dir_path": "."}')]
    assert {d.text for d in deltas} == {"Hi"}  # the text before the calls
    # before the model's answer is complete
    responded = seen.events.index(seen.of(engine.ModelResponded)[0])
    assert all(seen.events.index(d) < responded for d in deltas)


def test_the_codex_events_are_the_same_whether_calls_stream_or_not(tmp_path):
    (tmp_path / "notes.txt").write_text("x\n")
    runs = []
    for stream in (False, True):
        loop, client, rec = make_loop(tmp_path, STEPS, tools=builtin_tools(), verify=False)
        if stream:
            streaming(client, two_calls_plan())
        loop.run_turn("go")
        runs.append([e.model_dump(exclude={"usage"}) for e in rec.events])
    assert runs[0] == runs[1]


def test_a_retried_stream_does_not_send_its_pieces_twice(tmp_path):
    loop, client, _ = make_loop(tmp_path, [STEPS[0] | {"tool_calls": STEPS[0]["tool_calls"][:1]},
                                           STEPS[1]], tools=builtin_tools(), verify=False)
    (tmp_path / "notes.txt").write_text("x\n")
    seen = Engine()
    loop.emitter.add_listener(seen)
    half = ARGS[:12]
    streaming(client, [("", (CallProgress(0, "call_a", "read_file", half),)),
                       ("", ()),  # the client's retry: the stream starts afresh
                       ("", (CallProgress(0, "call_a", "read_file", ARGS[:5]),)),
                       ("", (CallProgress(0, "call_a", "read_file", ARGS),))])
    loop.run_turn("go")
    assert "".join(d.delta for d in seen.of(engine.ToolCallDelta)) == ARGS


def test_every_tool_result_is_a_tool_message(tmp_path):
    """Failed, run, not run (the run was cancelled meanwhile): each call's result, as the
    model reads it."""
    flags: list[bool] = []
    loop, client, _ = make_loop(tmp_path, [
        {"tool_calls": [{"id": "c0", "name": "no_such_tool", "arguments": {}},
                        {"id": "c1", "name": "list_dir", "arguments": {"dir_path": "."}},
                        {"id": "c2", "name": "list_dir", "arguments": {"dir_path": "."}}]},
    ], tools=builtin_tools(), verify=False, flags=flags)
    seen = Engine()
    loop.emitter.add_listener(seen)
    original = loop._calls.run

    def run_tool(call, prepared, budget):  # cancelled while c1 runs
        if call.id == "c1":
            flags.append(True)
        return original(call, prepared, budget)

    loop._calls.run = run_tool
    outcome = loop.run_turn("go")
    assert outcome.status == "interrupted"
    messages = seen.of(engine.ToolMessage)
    history = {m["tool_call_id"]: m["content"] for m in loop.history if m["role"] == "tool"}
    assert [(m.call_id, m.name) for m in messages] == [
        ("c0", "no_such_tool"), ("c1", "list_dir"), ("c2", "list_dir")]
    assert {m.call_id: m.content for m in messages} == history
    assert messages[0].content.startswith("Error: unknown tool")
    assert messages[1].content.startswith("Absolute path:")
    assert messages[2].content == "Error: not run: the run was interrupted"
    # the cancelled turn said so before it ended
    cancelling = seen.of(engine.TurnCancelling)
    ended = seen.of(engine.TurnEnded)
    assert len(cancelling) == 1 and ended[-1].status == "interrupted"
    assert seen.events.index(cancelling[0]) < seen.events.index(ended[-1])


FAILING = [{"tool_calls": [{"id": "c1", "name": "read_file",
                            "arguments": {"file_path": "missing.txt"}},
                           {"id": "c2", "name": "no_such_tool", "arguments": {}}]},
           {"content": "I could not read it."}]


@pytest.mark.parametrize("rule, steps, status", [
    ("continue", FAILING, "completed"),  # the default: the model reads the errors (Codex)
    ("fail", FAILING, "failed"),
    # one call that worked is enough to go on
    ("fail", [{"tool_calls": [FAILING[0]["tool_calls"][0],
                              {"id": "c3", "name": "list_dir", "arguments": {"dir_path": "."}}]},
              FAILING[1]], "completed"),
    # a call the caller runs has not failed: the turn pauses for it
    ("fail", [{"tool_calls": [FAILING[0]["tool_calls"][0],
                              {"id": "c4", "name": "ask", "arguments": {}}]}],
     "requires_action"),
])
def test_all_tools_failed(tmp_path, rule, steps, status):
    ask = external_tool({"name": "ask", "description": "ask", "parameters": {"type": "object"}})
    loop, client, rec = make_loop(tmp_path, steps, tools=[*builtin_tools(), ask], verify=False,
                                  all_tools_failed=rule)
    seen = Engine()
    loop.emitter.add_listener(seen)
    outcome = loop.run_turn("read missing.txt")
    assert outcome.status == status
    ended = seen.of(engine.TurnEnded)[-1]
    if status == "failed":
        assert ended.code == "all_tools_failed" and client.calls == 1
        assert outcome.error.startswith("every tool call of the model's answer failed (2 of 2)")
        assert rec.events[-1].type == "turn.failed" and rec.events[-1].error.message == \
            outcome.error
        # every call still has its result in the history (a resumed thread stays valid)
        assert {m["tool_call_id"] for m in loop.history if m["role"] == "tool"} == {"c1", "c2"}
    else:
        assert ended.code is None

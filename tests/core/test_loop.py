"""The loop in-process with a deterministic model client: milliseconds per test.

Each test builds the real Loop, registry and emitter (no HTTP, no litellm) and asserts on
the outcome, the events, the requests the model saw and the history the loop kept.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from baseagent.cancellation import NEVER, CancelToken
from baseagent.core.loop import Loop, TurnInput
from baseagent.helps import for_profile
from baseagent.core.turn_input import SchemaCheck
from baseagent.llm.errors import ContextOverflowError, ModelError
from baseagent.output import events as ev
from baseagent.output.emitter import Emitter
from baseagent.prompts.system import VERIFICATION_PROMPT
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.registry import ToolRegistry, builtin_tools
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolResult
from pydantic import BaseModel


class Recorder:
    def __init__(self) -> None:
        self.events: list[ev.ThreadEvent] = []

    def emit(self, event: ev.ThreadEvent) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def completed(self, item_type: str) -> list[Any]:
        return [e.item for e in self.events
                if isinstance(e, ev.ItemCompleted) and e.item.type == item_type]


def call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id:
        out["id"] = call_id
    return out


HELP_OPTIONS = ("prose_code", "show_named_files", "probe", "probe_rounds", "repair_candidates",
                "repair_temperature")


def make_loop(tmp_path: Path, steps: list[Any], *, tools: list[Any] | None = None,
              **kw: Any) -> tuple[Loop, DeterministicClient, Recorder]:
    client = DeterministicClient(steps)
    recorder = Recorder()
    history = [{"role": "system", "content": "system"}, {"role": "user", "content": "env"}]
    flags = kw.pop("flags", None)
    if "helps" not in kw:  # the helps the composition root gives a run of these options
        kw["helps"] = for_profile(**{k: kw.pop(k) for k in HELP_OPTIONS if k in kw})
    loop = Loop(client=client, registry=ToolRegistry(tools), emitter=Emitter([recorder]),
                tool_context=ToolContext(cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}),
                history=history, cancelled=CancelToken(lambda: bool(flags)) if flags is not None
                else NEVER, **kw)
    return loop, client, recorder


def tool_results(history: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in history if m["role"] == "tool"}


def assert_pairs_intact(history: list[dict[str, Any]]) -> None:
    calls = [tc["id"] for m in history if m["role"] == "assistant"
             for tc in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert sorted(calls) == sorted(results)


def test_verification_round_restates_the_instruction(tmp_path):
    note = call("write_file", file_path="notes.txt", content="plan\n")  # a change: not a question
    loop, client, rec = make_loop(tmp_path, [{"tool_calls": [note]}, {"content": "done"},
                                             {"content": "verified"}])
    outcome = loop.run_turn("make it work")
    assert outcome.status == "completed" and outcome.final_message == "verified"
    assert client.calls == 3
    reminder = client.requests[2][-1]
    assert reminder == {"role": "user",
                        "content": VERIFICATION_PROMPT.format(instruction="make it work")}
    assert rec.types()[0] == "turn.started" and rec.types()[-1] == "turn.completed"
    assert [i.text for i in rec.completed("agent_message")] == ["done", "verified"]


def test_without_verification_the_first_answer_ends_the_turn(tmp_path):
    loop, client, _ = make_loop(tmp_path, [{"content": "done"}], verify=False)
    assert loop.run_turn("x").final_message == "done"
    assert client.remaining == 0 and client.calls == 1


def test_iteration_limit_stops_after_exactly_n_calls(tmp_path):
    forever = [{"tool_calls": [call("list_dir", dir_path=".")]} for _ in range(10)]
    loop, client, rec = make_loop(tmp_path, forever, max_iterations=3)
    outcome = loop.run_turn("x")
    assert outcome.status == "limit" and client.calls == 3
    assert "max iterations reached (3 model calls)" in outcome.error
    assert isinstance(rec.events[-1], ev.TurnFailed)
    assert_pairs_intact(loop.history)


class _Nothing(BaseModel):
    pass


def test_cancel_in_the_middle_of_a_batch_of_tool_calls(tmp_path):
    """The second of three calls cancels the run: it completes, the third never runs, and
    every call still gets exactly one result in the history."""
    flags: list[str] = []
    ran: list[str] = []

    def trip(_args: Any, _ctx: ToolContext) -> ToolResult:
        ran.append("trip")
        flags.append("cancelled")
        return ToolResult("tripped")

    def mark(_args: Any, _ctx: ToolContext) -> ToolResult:
        ran.append("mark")
        return ToolResult("marked")

    tools = [ModelTool(name="trip", description="t", args_model=_Nothing, runner=trip),
             ModelTool(name="mark", description="m", args_model=_Nothing, runner=mark)]
    loop, client, rec = make_loop(
        tmp_path, [{"tool_calls": [call("mark", "c1"), call("trip", "c2"), call("mark", "c3")]},
                   {"content": "never"}], tools=tools, flags=flags)
    outcome = loop.run_turn("x")
    assert outcome.status == "interrupted" and client.calls == 1
    assert ran == ["mark", "trip"]
    results = tool_results(loop.history)
    assert results["c1"] == "marked" and results["c2"] == "tripped"
    assert results["c3"] == "Error: not run: the run was interrupted"
    assert_pairs_intact(loop.history)
    assert isinstance(rec.events[-1], ev.TurnFailed)


def test_invalid_json_arguments_are_repaired_in_the_history(tmp_path):
    loop, client, rec = make_loop(tmp_path, [
        {"tool_calls": [{"name": "read_file", "arguments": '{"file_path": ', "id": "bad"}]},
        {"content": "fixed"}], verify=False)
    assert loop.run_turn("x").status == "completed"
    stored = next(m for m in loop.history if m["role"] == "assistant")
    assert stored["tool_calls"][0]["function"]["arguments"] == "{}"  # strict providers accept
    assert tool_results(loop.history)["bad"].startswith("Error: invalid JSON in the arguments")
    # the request after the failure carried that history, pairs intact
    assert_pairs_intact(client.requests[1])
    failed = rec.completed("mcp_tool_call")[0]
    assert failed.status == "failed" and failed.arguments == '{"file_path": '


def test_streamed_items_are_closed_when_the_call_fails(tmp_path):
    loop, client, rec = make_loop(tmp_path, [ModelError("model call failed: boom")])
    original = client.complete

    def streaming_complete(messages, tools=None, on_progress=lambda t, r: None, **kw):
        on_progress("partial answ", "thinking")  # text streamed before the call broke
        return original(messages, tools, on_progress, **kw)

    client.complete = streaming_complete  # type: ignore[method-assign]
    outcome = loop.run_turn("x")
    assert outcome.status == "failed" and outcome.error == "model call failed: boom"
    started = {e.item.id for e in rec.events if isinstance(e, ev.ItemStarted)}
    completed = {e.item.id: e.item for e in rec.events if isinstance(e, ev.ItemCompleted)}
    assert started and started <= set(completed)
    assert {completed[i].text for i in started} == {"partial answ", "thinking"}
    assert isinstance(rec.events[-1], ev.TurnFailed)


def test_a_filtered_answer_ends_the_turn(tmp_path):
    loop, _, rec = make_loop(tmp_path, [{"content": "Half an ans",
                                         "finish_reason": "content_filter"}])
    outcome = loop.run_turn("x")
    assert outcome.status == "failed" and "content filter" in outcome.error
    assert isinstance(rec.events[-1], ev.TurnFailed)


def test_a_cut_off_answer_gets_a_note_then_the_turn_goes_on(tmp_path):
    loop, client, _ = make_loop(tmp_path, [{"content": "Half an ans", "finish_reason": "length"},
                                           {"content": "Short answer."}], verify=False)
    outcome = loop.run_turn("x")
    assert outcome.status == "completed" and outcome.final_message == "Short answer."
    assert "cut off at the output limit" in client.requests[1][-1]["content"]
    assert client.requests[1][-2] == {"role": "assistant", "content": "Half an ans"}


def test_answers_cut_off_again_and_again_end_the_turn_at_the_limit(tmp_path):
    loop, client, rec = make_loop(tmp_path, [{"content": "Half", "finish_reason": "length"}] * 3)
    outcome = loop.run_turn("x")
    assert outcome.status == "limit" and "cut off at the output token limit 3 times" \
        in outcome.error
    assert len(client.requests) == 3 and isinstance(rec.events[-1], ev.TurnFailed)


def test_final_check_gets_one_correction_round(tmp_path):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    loop, client, _ = make_loop(tmp_path, [{"content": "prose"}, {"content": '{"n": 1}'}],
                                verify=False)
    outcome = loop.run_turn(TurnInput("count", final_check=SchemaCheck(schema)))
    assert outcome.status == "completed" and json.loads(outcome.final_message) == {"n": 1}
    assert "does not match the required output schema" in client.requests[1][-1]["content"]

    loop, client, _ = make_loop(tmp_path, [{"content": "prose"}, {"content": "still prose"}],
                                verify=False)
    outcome = loop.run_turn(TurnInput("count", final_check=SchemaCheck(schema)))
    assert outcome.status == "failed" and "after a retry" in outcome.error


def test_context_overflow_compacts_and_retries(tmp_path):
    class Policy:
        def __init__(self) -> None:
            self.overflows: list[int] = []

        def prepare(self, history):
            return history, 0

        def on_overflow(self, history, attempt):
            self.overflows.append(attempt)

    policy = Policy()
    loop, client, _ = make_loop(tmp_path, [ContextOverflowError("too long"), {"content": "ok"}],
                                verify=False, compactor=policy)
    assert loop.run_turn("x").final_message == "ok"
    assert policy.overflows == [1] and client.calls == 2


def test_images_travel_with_the_instruction_only(tmp_path):
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    note = call("write_file", file_path="notes.txt", content="seen\n")  # not a question
    loop, client, _ = make_loop(tmp_path, [{"tool_calls": [note]}, {"content": "seen"},
                                           {"content": "verified"}])
    loop.run_turn(TurnInput("describe", content=[{"type": "text", "text": "describe"}, image]))
    first = client.requests[0][-1]
    assert first["content"][1] == image
    assert isinstance(client.requests[2][-1]["content"], str)  # the reminder: text only


def test_builtin_tools_keep_a_stable_order():
    names = [t.name for t in builtin_tools()]
    assert names == ["shell", "read_file", "write_file", "apply_patch", "grep_files", "list_dir",
                     "update_plan"]
    registry = ToolRegistry()
    assert registry.specs() is registry.specs()  # built once: identical bytes every request
    assert json.dumps(registry.specs()) == json.dumps(ToolRegistry().specs())


@pytest.mark.parametrize("name", ["shell", "write_file"])
def test_arguments_nested_past_what_json_reads_are_an_error_result(tmp_path, name):
    """A native tool call whose arguments nest thousands of brackets deep (json.loads raises
    RecursionError, not ValueError) is a failed call the model reads, not the turn's end."""
    deep = '{"command": ' + "[" * 5000 if name == "shell" else '{"file_path": ' + "[" * 5000
    loop, client, _rec = make_loop(tmp_path, [
        {"tool_calls": [{"name": name, "arguments": deep}]},
        {"content": "gave up"}, {"content": "gave up, verified"}],
        tools=builtin_tools(), prose_code="apply")
    outcome = loop.run_turn("do it")
    assert outcome.status == "completed", outcome.error
    [result] = tool_results(loop.history).values()
    assert result.startswith("Error")
    assert_pairs_intact(loop.history)


def test_a_plan_or_an_answer_nested_past_what_json_reads_is_no_crash():
    from baseagent.records.plan import parse_plan
    from baseagent.core.turn_input import schema_problem

    assert parse_plan('{"plan": ' + "[" * 5000) is None
    assert "deeper" in schema_problem("[" * 5000, {"type": "object"})

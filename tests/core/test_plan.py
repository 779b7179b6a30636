"""The plan: update_plan's checks, the plan found in and carried over a history, the turn's
todo_list item, and the verification round's plan check. In-process (pure functions, the
Compactor with a fake model, the Loop with the deterministic client): milliseconds each.
The CLI end to end is tests/e2e/test_e2e_plan.py."""
from __future__ import annotations

import io
import json
from typing import Any, get_args

import pyte
import pytest

from baseagent.core.context.compaction import Budget, Compactor, orphans
from baseagent.records.plan import (carry_plan, is_plan_message, latest_plan, parse_plan,
                                 plan_message, verification_reminder)
from baseagent.core.context.tokens import TokenCounter
from baseagent.llm.errors import ModelError
from baseagent.llm.types import ModelTurn
from baseagent.output import events as ev
from baseagent.prompts.system import PLAN_PREFIX, SUMMARY_PREFIX, VERIFICATION_PROMPT
from baseagent.tools import update_plan
from baseagent.tools.registry import ToolRegistry
from test_loop import Recorder, make_loop


def steps(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"step": step, "status": status} for step, status in pairs]


def plan_call(*pairs: tuple[str, str], explanation: str | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"plan": steps(*pairs)}
    if explanation is not None:
        arguments["explanation"] = explanation
    return {"name": "update_plan", "arguments": arguments}


# -- the tool ----------------------------------------------------------------------------------

def test_the_tool_speaks_codexs_schema():
    spec = next(s["function"] for s in ToolRegistry().specs()
                if s["function"]["name"] == "update_plan")
    params = spec["parameters"]
    assert params["required"] == ["plan"] and params["additionalProperties"] is False
    assert params["properties"]["explanation"] == {"type": "string"}
    item = params["properties"]["plan"]["items"]
    assert item["required"] == ["step", "status"] and item["additionalProperties"] is False
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert "$defs" not in json.dumps(params)  # inline, as models are trained on
    assert "At most one step can be in_progress" in spec["description"]
    assert list(get_args(update_plan.StepStatus)) == list(update_plan.STATUSES)


@pytest.mark.parametrize("arguments,problem", [
    ({"plan": []}, "plan: List should have at least 1 item"),
    ({"plan": steps(("  ", "pending"))}, "plan.0.step: Value error, a step must say what it does"),
    ({"plan": steps(("a", "in_progress"), ("b", "in_progress"))},
     "at most one step can be in_progress at a time, got 2: a; b"),
    ({"plan": steps(("a", "done"))},
     "plan.0.status: Input should be 'pending', 'in_progress' or 'completed'"),
    ({"plan": [{"step": "a", "status": "pending", "owner": "me"}]}, "plan.0.owner: Extra inputs"),
    ({"explanation": "no plan"}, "plan: Field required"),
])
def test_a_bad_plan_is_an_argument_error_that_says_what_to_fix(arguments, problem):
    prepared = ToolRegistry().prepare("update_plan", json.dumps(arguments))
    assert prepared.error is not None and problem in prepared.error, prepared.error
    assert prepared.error.startswith("invalid arguments for update_plan: ")


def test_a_good_plan_becomes_the_todo_list_payload():
    registry = ToolRegistry()
    prepared = registry.prepare("update_plan", json.dumps(
        {"explanation": "", "plan": steps((" read ", "completed"), ("fix", "in_progress"),
                                          ("test", "pending"))}))
    assert prepared.error is None and prepared.item_type == "todo_list"
    result = registry.execute(prepared, None)  # type: ignore[arg-type]  # needs no context
    assert result.success and result.output == "Plan updated"
    assert result.item == {"items": [{"text": "read", "completed": True},
                                     {"text": "fix", "completed": False},
                                     {"text": "test", "completed": False}]}


# -- the plan in a history ---------------------------------------------------------------------

HEAD = [{"role": "system", "content": "S"}, {"role": "user", "content": "env"}]
TASK = {"role": "user", "content": "do the task"}


def assistant_plan(call_id: str, *pairs: tuple[str, str], raw: str | None = None) -> dict:
    arguments = raw if raw is not None else json.dumps({"plan": steps(*pairs)})
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": "update_plan", "arguments": arguments}}]}


def tool(call_id: str, content: str = "Plan updated") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def shell(call_id: str, output: str = "ok") -> list[dict]:
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": "shell", "arguments": '{"command": "true"}'}}]},
        tool(call_id, output)]


FIRST = (("read", "in_progress"), ("fix", "pending"))
SECOND = (("read", "completed"), ("fix", "in_progress"))


def test_latest_plan_is_the_newest_call_that_succeeded():
    history = [*HEAD, TASK, assistant_plan("p1", *FIRST), tool("p1"), *shell("s1"),
               assistant_plan("p2", *SECOND), tool("p2"),
               assistant_plan("p3", ("x", "in_progress"), ("y", "in_progress")),
               tool("p3", "Error: invalid arguments for update_plan: ..."),
               assistant_plan("p4", raw="{}"), tool("p4", "Error: ...")]
    assert latest_plan(history) == parse_plan({"plan": steps(*SECOND)})
    assert latest_plan([*HEAD, TASK, *shell("s1")]) is None
    # a call whose result never came (the run was killed) did not set the plan
    assert latest_plan([*HEAD, TASK, assistant_plan("p1", *FIRST), tool("p1"),
                        assistant_plan("p2", *SECOND)]) == parse_plan({"plan": steps(*FIRST)})


def test_a_plan_message_counts_as_the_plan_until_a_newer_call():
    carried = plan_message(parse_plan({"plan": steps(*FIRST), "explanation": "why"}))
    assert is_plan_message(carried) and carried["content"].startswith(PLAN_PREFIX)
    assert json.loads(carried["content"][len(PLAN_PREFIX):]) == {
        "explanation": "why", "plan": steps(*FIRST)}
    assert latest_plan([*HEAD, TASK, carried, *shell("s1")]).plan[0].status == "in_progress"
    newer = [*HEAD, TASK, carried, assistant_plan("p2", *SECOND), tool("p2")]
    assert latest_plan(newer) == parse_plan({"plan": steps(*SECOND)})


def test_carry_plan_puts_a_lost_plan_where_the_removed_work_was():
    before = [*HEAD, TASK, assistant_plan("p1", *FIRST), tool("p1"), *shell("s1"),
              {"role": "user", "content": "more"}, *shell("s2")]
    # a summary rebuild: instructions + summary, no turns left -> at the end
    summary = {"role": "user", "content": SUMMARY_PREFIX + "did things"}
    rebuilt = carry_plan(before, [*HEAD, TASK, summary], head=2)
    assert rebuilt[:-1] == [*HEAD, TASK, summary] and is_plan_message(rebuilt[-1])
    assert latest_plan(rebuilt) == latest_plan(before)
    # a drop of the oldest turns: before the first turn that is left, pairs intact
    dropped = [*HEAD, TASK, {"role": "user", "content": "more"}, *shell("s2")]
    carried = carry_plan(before, dropped, head=2)
    assert is_plan_message(carried[4]) and carried[5:] == shell("s2")
    assert orphans(carried) == [] and latest_plan(carried) == latest_plan(before)
    # nothing lost, nothing added (pruning, or a drop that kept the plan's call)
    assert carry_plan(before, list(before), head=2) == before
    assert carry_plan([*HEAD, TASK], [*HEAD], head=2) == [*HEAD]


def test_the_verification_reminder_lists_the_steps_still_open():
    assert verification_reminder("go", None) == VERIFICATION_PROMPT.format(instruction="go")
    done = parse_plan({"plan": steps(("a", "completed"))})
    assert verification_reminder("go", done) == VERIFICATION_PROMPT.format(instruction="go")
    open_plan = parse_plan({"plan": steps(("a", "completed"), ("b", "in_progress"),
                                          ("c", "pending"))})
    text = verification_reminder("go", open_plan)
    assert text.startswith(VERIFICATION_PROMPT.format(instruction="go"))
    assert "- [in_progress] b\n- [pending] c\n" in text and "] a" not in text


# -- the plan through compaction (the Compactor with a fake model) -----------------------------

class SummaryClient:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls = 0

    def complete(self, messages, tools=None, on_progress=None, estimated_input_tokens=0):
        self.calls += 1
        if self.error is not None:
            raise self.error
        return ModelTurn(text="SUMMARY: read the code, fixing now")


def compactor(client: Any) -> Compactor:
    return Compactor(client=client, counter=TokenCounter("fake", text_counter=len),
                     budget=Budget(window=20_000, max_output=4_000))  # limit 13,600


def long_session(text: str) -> list[dict]:
    """A plan set early, then work too big for the limit; `text` per assistant message."""
    history = [*HEAD, TASK, assistant_plan("p1", *FIRST), tool("p1"),
               assistant_plan("p2", *SECOND), tool("p2")]
    for n in range(12):
        message, result = shell(f"s{n}", "x" * 400)
        history += [{**message, "content": text}, result]
    return history


@pytest.mark.parametrize("error,reason", [(None, "summary"),
                                          (ModelError("summaries are down"), "fallback")])
def test_the_latest_plan_survives_a_summary_or_a_fallback(error, reason):
    client = SummaryClient(error)
    cm = compactor(client)
    history = long_session("t" * 1_200)  # assistant text: pruning cannot free it
    assert cm.measure(history) > cm.limit
    messages, _ = cm.prepare(history)
    assert client.calls == 1 and cm.stats.events[0][0] == reason
    assert not any(m.get("tool_calls", [{}])[0].get("function", {}).get("name") == "update_plan"
                   for m in messages if m["role"] == "assistant")  # the calls are gone...
    assert latest_plan(messages) == parse_plan({"plan": steps(*SECOND)})  # ...the plan is not
    assert sum(is_plan_message(m) for m in messages) == 1 and orphans(messages) == []


def test_pruning_keeps_the_plans_calls():
    cm = compactor(SummaryClient())
    history = long_session("")
    for n in range(4):  # big outputs: pruning frees enough
        history += shell(f"big{n}", "y" * 3_000)
    messages, _ = cm.prepare(history)
    assert cm.stats.prunes == 1 and cm.stats.summaries == 0
    assert latest_plan(messages) == parse_plan({"plan": steps(*SECOND)})
    assert not any(is_plan_message(m) for m in messages)  # nothing to carry: nothing lost


def test_a_second_summary_carries_the_plan_again_once():
    client = SummaryClient()
    cm = compactor(client)
    history = long_session("t" * 1_200)
    cm.prepare(history)
    for n in range(12):  # more work after the first summary, no new plan
        message, result = shell(f"t{n}", "x" * 400)
        history += [{**message, "content": "t" * 1_200}, result]
    cm.prepare(history)
    assert client.calls == 2
    assert sum(is_plan_message(m) for m in history) == 1
    assert latest_plan(history) == parse_plan({"plan": steps(*SECOND)})


# -- the turn's todo_list item (the Loop in-process) -------------------------------------------

def todo_events(rec: Recorder) -> list[tuple[str, str, list[tuple[str, bool]]]]:
    return [(e.type, e.item.id, [(i.text, i.completed) for i in e.item.items])
            for e in rec.events if getattr(e, "item", None) is not None
            and e.item.type == "todo_list"]


def test_one_todo_list_item_per_turn_started_updated_completed(tmp_path):
    loop, client, rec = make_loop(tmp_path, [
        {"content": "Planning.", "tool_calls": [plan_call(*FIRST)]},
        {"tool_calls": [plan_call(*SECOND), {"name": "list_dir", "arguments": {"dir_path": "."}}]},
        {"content": "done"},
        {"tool_calls": [plan_call(("read", "completed"), ("fix", "completed"))]},
        {"content": "verified"},
    ])
    assert loop.run_turn("fix it").status == "completed"
    assert todo_events(rec) == [
        ("item.started", "item_1", [("read", False), ("fix", False)]),
        ("item.updated", "item_1", [("read", True), ("fix", False)]),
        ("item.updated", "item_1", [("read", True), ("fix", True)]),
        ("item.completed", "item_1", [("read", True), ("fix", True)]),
    ]
    # completed when the turn ends, just before turn.completed; no item of the call itself
    assert [e.type for e in rec.events[-2:]] == ["item.completed", "turn.completed"]
    assert [e.item.tool for e in rec.events if isinstance(e, ev.ItemCompleted)
            and e.item.type == "mcp_tool_call"] == ["list_dir"]
    # the verification reminder named the step still open at that point
    assert "- [in_progress] fix" in client.requests[3][-1]["content"]


def test_an_invalid_plan_is_an_error_the_model_fixes(tmp_path):
    loop, client, rec = make_loop(tmp_path, [
        {"tool_calls": [plan_call(("a", "in_progress"), ("b", "in_progress"))]},
        {"tool_calls": [plan_call(("a", "in_progress"), ("b", "pending"))]},
        {"content": "done"},
    ], verify=False)
    assert loop.run_turn("x").status == "completed"
    error = client.requests[1][-1]
    assert error["role"] == "tool" and error["content"].startswith("Error: invalid arguments "
                                                                   "for update_plan")
    assert "at most one step can be in_progress" in error["content"]
    failed = [e.item for e in rec.events if isinstance(e, ev.ItemCompleted)
              and e.item.type == "mcp_tool_call"]
    assert len(failed) == 1 and failed[0].status == "failed" and failed[0].tool == "update_plan"
    assert [t for t, _, _ in todo_events(rec)] == ["item.started", "item.completed"]


@pytest.mark.parametrize("ending,status", [("limit", "limit"), ("model error", "failed"),
                                           ("interrupt", "interrupted")])
def test_the_plan_item_is_completed_however_the_turn_ends(tmp_path, ending, status):
    flags: list[str] = []
    after_plan: Any = {"tool_calls": [{"name": "list_dir", "arguments": {"dir_path": "."}}]}
    if ending == "model error":
        after_plan = ModelError("model call failed: boom")
    elif ending == "interrupt":
        def after_plan(_messages):
            flags.append("cancel")
            return {"content": "never seen"}
    loop, _, rec = make_loop(tmp_path, [{"tool_calls": [plan_call(*FIRST)]}, after_plan],
                             max_iterations=2, flags=flags)
    outcome = loop.run_turn("x")
    assert outcome.status == status
    assert [t for t, _, _ in todo_events(rec)] == ["item.started", "item.completed"]
    assert [e.type for e in rec.events[-2:]] == ["item.completed", "turn.failed"]


def test_each_turn_has_its_own_item_and_the_plan_carries_on(tmp_path):
    loop, client, rec = make_loop(tmp_path, [
        {"tool_calls": [plan_call(*FIRST)]}, {"content": "first"},
        {"content": "second, no new plan"},
        {"tool_calls": [plan_call(*SECOND)]}, {"content": "third"},
    ], verify=False)
    for instruction in ("one", "two", "three"):
        assert loop.run_turn(instruction).status == "completed"
    events = todo_events(rec)
    assert [(t, i) for t, i, _ in events] == [("item.started", "item_0"),
                                              ("item.completed", "item_0"),
                                              ("item.started", "item_3"),
                                              ("item.completed", "item_3")]
    assert latest_plan(loop.history) == parse_plan({"plan": steps(*SECOND)})


def test_the_verification_round_checks_this_turns_plan_only(tmp_path):
    loop, client, _ = make_loop(tmp_path, [
        {"tool_calls": [plan_call(*FIRST)]}, {"content": "stopping early"}, {"content": "ok"},
        {"content": "another task, done"},
        {"tool_calls": [plan_call(*SECOND)]}, {"content": "done"}, {"content": "ok"},
    ])
    for instruction in ("one", "two", "three"):
        assert loop.run_turn(instruction).status == "completed"
    reminders = [r[-1]["content"] for r in client.requests if r[-1]["role"] == "user"
                 and r[-1]["content"].startswith("Before you finish")]
    # the second turn's older plan is not its own: a turn that changed nothing, no round
    assert len(reminders) == 2 and client.calls == 7
    assert "- [in_progress] read\n- [pending] fix" in reminders[0]
    assert "- [in_progress] fix" in reminders[1] and "] read" not in reminders[1]


def test_the_library_result_holds_the_plan_in_its_final_state(tmp_path):
    from baseagent import Agent
    from baseagent.testing.deterministic import DeterministicClient

    model = DeterministicClient([{"tool_calls": [plan_call(*FIRST)]},
                                 {"tool_calls": [plan_call(*SECOND)]}, {"content": "done"}])
    result = Agent(model_client=model, cwd=tmp_path, session=False, verify=False).run("go")
    plans = [i for i in result.items if isinstance(i, ev.TodoListItem)]
    assert len(plans) == 1
    assert [(e.text, e.completed) for e in plans[0].items] == [("read", True), ("fix", False)]


# -- the checklist on a terminal (output/pretty.py, fed events directly) -----------------------

class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _render(stream: io.StringIO) -> str:
    from baseagent.emitting import events as engine
    from baseagent.output.pretty import PrettySink

    sink = PrettySink(stream, spinner=False)
    names = ("read the code", "fix the bug")

    def plan(kind: type, *done: bool) -> Any:
        items = [{"text": t, "completed": d} for t, d in zip(names, done)]
        return kind(item=engine.TurnScopedItem(id="item_1", kind="todo_list",
                                               data={"items": items}))

    thought = lambda kind, text: kind(  # noqa: E731
        item=engine.TextItem(id="item_2", kind="reasoning", text=text))
    for event in [plan(engine.ItemStarted, False, False),
                  thought(engine.ItemStarted, "Half a li"),  # streamed while the plan is pinned
                  thought(engine.ItemUpdated, "Half a line, then\nthe next"),
                  thought(engine.ItemCompleted, "Half a line, then\nthe next one."),
                  plan(engine.ItemUpdated, True, False), plan(engine.ItemUpdated, True, True),
                  plan(engine.ItemCompleted, True, True), engine.TurnEnded("completed")]:
        sink.run_event(event)
    return stream.getvalue()


SUMMARY = "✓ completed · turn 0 · 0 in (0 cached) · 0 out · cost unknown"


def test_the_checklist_is_redrawn_in_place_under_streamed_text(monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")
    raw = _render(_Terminal())
    screen = pyte.Screen(70, 20)
    pyte.Stream(screen).feed(raw.replace("\n", "\r\n"))  # what the tty's onlcr does
    assert [line.rstrip() for line in screen.display[:7]] == [
        "Half a line, then", "the next one.",
        "Plan (2/2 done)", "  [x] read the code", "  [x] fix the bug", SUMMARY, ""]
    assert "\x1b[1A" in raw  # the checklist was lifted and redrawn, not printed again


def test_off_a_terminal_the_checklist_is_printed_once_in_its_final_state(monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    raw = _render(io.StringIO())
    assert raw == ("Half a line, then\nthe next one.\nPlan (2/2 done)\n  [x] read the code\n"
                   f"  [x] fix the bug\n{SUMMARY}\n")

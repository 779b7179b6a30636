"""End to end: the plan the model keeps (update_plan → Codex's todo_list item), through the
real CLI against the scripted server: the JSONL a Codex consumer reads, what the model is
sent back (results, errors, the verification round's plan check, the plan after compaction),
the session record and its export, and the checklist a person sees on a terminal."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyte

from baseagent.records.plan import is_plan_message, latest_plan, parse_plan
from baseagent.prompts.system import SUMMARY_PROMPT
from helpers import run_agent, run_on_pty

READ, FIX, TEST = "read the failing test", "fix parse_date", "run the test suite"


def update_plan(*pairs: tuple[str, str], explanation: str | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"plan": [{"step": s, "status": st} for s, st in pairs]}
    if explanation is not None:
        arguments["explanation"] = explanation
    return {"name": "update_plan", "arguments": arguments}


def todo(*pairs: tuple[str, bool]) -> list[dict[str, Any]]:
    return [{"text": text, "completed": done} for text, done in pairs]


CREATED = update_plan((READ, "in_progress"), (FIX, "pending"), (TEST, "pending"),
                      explanation="three steps")
UPDATED = update_plan((READ, "completed"), (FIX, "completed"), (TEST, "in_progress"))
FINISHED = update_plan((READ, "completed"), (FIX, "completed"), (TEST, "completed"))
PLAN_SCRIPT = [
    {"content": "I will plan this first.", "tool_calls": [CREATED]},
    {"tool_calls": [{"name": "shell", "arguments": {"command": "echo fixed"}}, UPDATED]},
    {"content": "Fixed."},  # -> the verification round, which names the open step
    {"tool_calls": [{"name": "shell", "arguments": {"command": "echo tests pass"}},
                    FINISHED]},
    {"content": "Fixed and verified."},
]


def session_records(home: Path) -> list[dict[str, Any]]:
    files = list((home / ".baseagent" / "sessions").glob("*.jsonl"))
    assert len(files) == 1
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


def test_a_plan_created_updated_and_finished_is_one_todo_list_item(
        scripted_server, workspace, home):
    server = scripted_server(PLAN_SCRIPT)
    run = run_agent(["-i", "fix the date parser"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    # Codex's lifecycle and shape, exactly: item.started at the first plan, item.updated at
    # each change, item.completed when the turn ends (right before turn.completed); the
    # item is {id, type, items: [{text, completed}]} and nothing else
    plan_events = [e for e in run.events if e.get("item", {}).get("type") == "todo_list"]
    assert plan_events == [
        {"type": "item.started", "item": {"id": "item_1", "type": "todo_list", "items": todo(
            (READ, False), (FIX, False), (TEST, False))}},
        {"type": "item.updated", "item": {"id": "item_1", "type": "todo_list", "items": todo(
            (READ, True), (FIX, True), (TEST, False))}},
        {"type": "item.updated", "item": {"id": "item_1", "type": "todo_list", "items": todo(
            (READ, True), (FIX, True), (TEST, True))}},
        {"type": "item.completed", "item": {"id": "item_1", "type": "todo_list", "items": todo(
            (READ, True), (FIX, True), (TEST, True))}},
    ]
    assert run.events[-2] == plan_events[-1] and run.events[-1]["type"] == "turn.completed"
    # the plan's calls are the todo_list, not items of their own
    assert [i["type"] for i in run.completed_items()] == [
        "agent_message", "command_execution", "agent_message", "command_execution",
        "agent_message", "todo_list"]

    requests = server.requests
    assert len(requests) == 5
    spec = next(t["function"] for t in requests[0]["tools"]
                if t["function"]["name"] == "update_plan")
    assert spec["parameters"]["required"] == ["plan"]
    # every request sends the same system prompt and tools: the cached prefix holds
    assert all(r["messages"][0] == requests[0]["messages"][0] for r in requests)
    assert all(r["tools"] == requests[0]["tools"] for r in requests)
    assert "update_plan" in requests[0]["messages"][0]["content"]  # when to plan, and not
    # the model reads "Plan updated" back for each call
    results = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in results] == ["Plan updated"]
    # the verification round names the step still open, and only that one
    reminder = requests[3]["messages"][-1]["content"]
    assert f"- [in_progress] {TEST}" in reminder and READ not in reminder

    # the session record keeps every state of the plan; the export carries the last one
    records = session_records(home)
    recorded = [r["event"]["type"] for r in records if r["kind"] == "event"
                and r["event"].get("item", {}).get("type") == "todo_list"]
    assert recorded == ["item.started", "item.updated", "item.updated", "item.completed"]
    thread_id = run.events[0]["thread_id"]
    atif = run_agent(["export", thread_id, "--format", "atif"], cwd=workspace, home=home,
                     parse=False)
    assert atif.returncode == 0, atif.stderr
    document = json.loads(atif.stdout)
    assert document["extra"]["plan"] == {"plan": FINISHED["arguments"]["plan"]}
    calls = [c for s in document["steps"] for c in s.get("tool_calls", [])
             if c["function_name"] == "update_plan"]
    assert [c["arguments"] for c in calls] == [
        CREATED["arguments"], UPDATED["arguments"], FINISHED["arguments"]]


def test_an_invalid_plan_is_an_error_result_the_model_fixes(scripted_server, workspace, home):
    server = scripted_server([
        {"tool_calls": [update_plan((READ, "in_progress"), (FIX, "in_progress"))]},
        {"tool_calls": [update_plan((READ, "in_progress"), ("", "pending"))]},
        {"tool_calls": [update_plan((READ, "in_progress"), (FIX, "pending"))]},
        {"content": "Planned."},
    ])
    run = run_agent(["-i", "plan it", "--no-verify"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    errors = [r["messages"][-1] for r in server.requests[1:3]]
    assert all(m["role"] == "tool" and m["content"].startswith(
        "Error: invalid arguments for update_plan: ") for m in errors)
    assert "at most one step can be in_progress at a time, got 2" in errors[0]["content"]
    assert "plan.1.step" in errors[1]["content"] and "empty text" in errors[1]["content"]
    # each bad call is a failed call in the JSONL, as any bad arguments are; the good one
    # starts the plan
    failed = run.completed_items("mcp_tool_call")
    assert [(i["tool"], i["status"]) for i in failed] == [("update_plan", "failed")] * 2
    assert failed[0]["error"]["message"] == errors[0]["content"]
    assert [e["type"] for e in run.events if e.get("item", {}).get("type") == "todo_list"] == [
        "item.started", "item.completed"]
    assert run.completed_items("todo_list")[0]["items"] == todo((READ, False), (FIX, False))


def test_a_session_that_compacts_keeps_the_latest_plan(scripted_server, workspace, home):
    """A small window and chatty steps: the history is summarised (the plan's calls go with
    it) more than once; every request the model gets shows the plan it last set."""
    (workspace / "data.txt").write_text("".join(f"line {i:05d}: some data to survey\n"
                                                for i in range(3000)))
    plans = {1: update_plan(("survey the data", "in_progress"), ("report", "pending")),
             6: update_plan(("survey the data", "in_progress"), ("report", "pending"),
                            explanation="more data than expected"),
             9: update_plan(("survey the data", "completed"), ("report", "in_progress"))}
    state: dict[str, Any] = {"step": 0, "summaries": 0, "seen": []}

    def respond(body: dict, _index: int) -> dict:
        if body["messages"][-1].get("content") == SUMMARY_PROMPT:
            state["summaries"] += 1
            return {"content": f"SUMMARY {state['summaries']}: surveyed part of data.txt."}
        state["seen"].append((state["step"], body["messages"]))  # after this many answers
        state["step"] += 1
        step = state["step"]
        if step > 24:
            return {"content": "Report: surveyed it all."}
        start = 1 + step * 90
        calls = [{"name": "shell", "arguments": {
            "command": f"sed -n '{start},{start + 119}p' data.txt"}}]
        if step in plans:
            calls.append(plans[step])
        return {"content": "Surveying the next chunk. " * 40, "tool_calls": calls}

    server = scripted_server(respond, context_window=12_000)
    run = run_agent(["-i", "survey data.txt and report", "--context-window", "12000",
                     "--no-verify"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr[-2000:]
    notices = [e["message"] for e in run.of_type("error")]
    assert state["summaries"] >= 2 and any("summarised" in n for n in notices), notices

    carried = 0
    for answered, messages in state["seen"]:
        set_by = [s for s in plans if s <= answered]
        expected = parse_plan(plans[max(set_by)]["arguments"]) if set_by else None
        assert latest_plan(messages) == expected, f"the request after {answered} answers"
        assert sum(is_plan_message(m) for m in messages) <= 1
        carried += any(is_plan_message(m) for m in messages)
    assert len(state["seen"]) == 25
    assert carried > 0  # the plan did have to be carried over a summary
    assert run.completed_items("todo_list")[0]["items"] == todo(("survey the data", True),
                                                                ("report", False))


def test_a_person_sees_the_plan_as_a_checklist_updated_in_place(
        scripted_server, workspace, home):
    server = scripted_server(PLAN_SCRIPT)
    code, raw = run_on_pty(["-i", "fix the date parser", "--model", "openai/scripted",
                            "--api-base", server.api_base], workspace, home, columns=100,
                           lines=60, term="xterm-256color", timeout=60)
    assert code == 0, raw
    screen = pyte.Screen(100, 60)
    pyte.Stream(screen).feed(raw)
    lines = [line.rstrip() for line in screen.display]
    text = "\n".join(lines)
    # one checklist, in its final state, after the work and the final answer: each update
    # redrew it in place rather than printing another
    assert text.count("Plan (") == 1, text
    at = lines.index("Plan (3/3 done)")
    assert lines[at + 1:at + 4] == [f"  [x] {READ}", f"  [x] {FIX}", f"  [x] {TEST}"]
    # the plan is finished before the answer, which is set apart last
    assert text.index("$ echo tests pass") < text.index("Plan (3/3 done)") < \
        text.index("Fixed and verified.")
    assert "\x1b[1A" in raw  # the cursor went back up to redraw it
    # the output printed while the plan was pinned is whole, in order, none of it erased
    assert text.index("I will plan this first.") < text.index("$ echo fixed") < \
        text.index("Fixed.") < text.index("$ echo tests pass")

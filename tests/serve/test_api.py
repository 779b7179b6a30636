"""`baseagent serve`'s API against a live server (uvicorn on 127.0.0.1, a free port) and the
scripted model server: threads, turns, event streams in both vocabularies, reconnecting
with Last-Event-ID, approvals, tool outputs, cancel, the session store, every error path."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Api, TurnScripts


def shell(command: str, content: str = "") -> dict[str, Any]:
    return {"content": content,
            "tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def types(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [e["type"] for _, e in events]


def test_a_turn_streams_its_events_and_the_thread_keeps_its_usage(api: Api, scripts: TurnScripts,
                                                                  workspace: Path) -> None:
    scripts.scripts["say hi"] = [shell("echo hi from the shell", "Looking."),
                                 {"content": "Done: **hi** printed."}]
    thread = api.create(input="say hi")
    assert thread["live"] and thread["sandbox"] == "workspace-write"
    assert thread["approval_policy"] == "on-request"  # a person answers from the page
    events = api.events(thread["id"])
    kinds = types(events)
    assert kinds[:3] == ["thread.started", "turn.started", "turn.input"]
    assert events[2][1]["text"] == "say hi"
    assert kinds[-1] == "turn.completed"
    command = [e["item"] for _, e in events if e["type"] == "item.completed"
               and e["item"]["type"] == "command_execution"][0]
    assert command["aggregated_output"] == "hi from the shell\n" and command["exit_code"] == 0
    answer = [e["item"]["text"] for _, e in events if e["type"] == "item.completed"
              and e["item"]["type"] == "agent_message"]
    assert answer[-1] == "Done: **hi** printed."
    ids = [i for i, _ in events]
    assert len(set(ids)) == len(ids) and all(i.count(".") == 1 for i in ids)
    info = api.wait_status(thread["id"], "idle")
    assert info["usage"]["output_tokens"] > 0 and info["title"] == "say hi"


def test_a_diff_reaches_the_client_with_the_runs_secrets_redacted(api: Api,
                                                                  scripts: TurnScripts,
                                                                  workspace: Path) -> None:
    patch = ("*** Begin Patch\n*** Add File: conf.py\n+KEY = 'sk-test-dummy'\n"
             "+NAME = 'demo'\n*** End Patch")
    scripts.scripts["write the config"] = [
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        {"content": "Written."}]
    tid = api.create(input="write the config")["id"]
    events = api.events(tid)
    diffs = [e["text"] for _, e in events if e["type"] == "item.detail"]
    assert len(diffs) == 1 and "+NAME = 'demo'" in diffs[0]
    assert "[REDACTED]" in diffs[0] and "sk-test-dummy" not in str(events)
    assert "sk-test-dummy" in (workspace / "conf.py").read_text()  # the file itself is as written


def test_the_agentb_vocabulary(api: Api, scripts: TurnScripts) -> None:
    scripts.scripts["hello"] = [{"content": "Hello there."}]
    thread = api.create(input="hello")
    events = api.events(thread["id"], fmt="agentb",
                        until=("thread.run.completed", "thread.run.failed"))
    kinds = types(events)
    assert kinds[0] == "agent.run.created" and kinds[-1] == "thread.run.completed"
    assert "thread.message.delta" in kinds or "thread.message.created" in kinds
    assert all(e["threadId"] == thread["id"] for _, e in events)


def test_several_threads_at_once_each_see_their_own(api: Api, scripts: TurnScripts) -> None:
    names = [f"task {n}" for n in range(4)]
    for n, name in enumerate(names):
        scripts.scripts[name] = [shell(f"sleep 0.3; echo out-{n}"),
                                 {"content": f"answer {n}", "delay": 0.2}]
    threads = [api.create(input=name) for name in names]
    results: dict[int, list[tuple[str, dict[str, Any]]]] = {}

    def read(n: int) -> None:
        results[n] = api.events(threads[n]["id"])

    readers = [threading.Thread(target=read, args=(n,)) for n in range(len(names))]
    for r in readers:
        r.start()
    for r in readers:
        r.join(60)
    for n in range(len(names)):
        text = " ".join(str(e) for _, e in results[n])
        assert f"answer {n}" in text and f"out-{n}" in text
        others = [m for m in range(len(names)) if m != n]
        assert not any(f"answer {m}" in text for m in others)
        assert results[n][-1][1]["type"] == "turn.completed"


def test_reconnecting_with_last_event_id_gets_what_it_missed(api: Api,
                                                            scripts: TurnScripts) -> None:
    scripts.scripts["slow one"] = [
        shell("echo one; sleep 0.5; echo two"),
        shell("echo three"),
        {"content": "All " + "done " * 40, "chunk_size": 8, "chunk_delay": 0.01}]
    thread = api.create(input="slow one")
    first = api.events(thread["id"], count=4)  # then the connection is dropped mid-turn
    rest = api.events(thread["id"], last_event_id=first[-1][0])
    whole = api.events(thread["id"])  # a new subscriber: everything kept, from the start
    assert [i for i, _ in first + rest] == [i for i, _ in whole]
    assert [e for _, e in first + rest] == [e for _, e in whole]
    # An id of another log (another server process) replays what is kept.
    again = api.events(thread["id"], last_event_id="0badc0de.3")
    assert [i for i, _ in again] == [i for i, _ in whole]


def test_approve_one_command_decline_another(api: Api, scripts: TurnScripts,
                                             workspace: Path) -> None:
    scripts.scripts["make files"] = [shell("touch approved.txt"), shell("touch declined.txt"),
                                     {"content": "Finished."}]
    thread = api.create(input="make files", approval_policy="untrusted")
    tid = thread["id"]
    question = api.wait_approval(tid)
    assert question["command"] == "touch approved.txt"
    answered = api.post(f"/api/threads/{tid}/approvals/{question['id']}",
                        json={"decision": "approved"})
    assert answered.status_code == 200, answered.text
    question = api.wait_approval(tid)
    assert question["command"] == "touch declined.txt"
    api.post(f"/api/threads/{tid}/approvals/{question['id']}",
             json={"decision": "denied", "note": "not that one"}).raise_for_status()
    events = api.events(tid)
    assert events[-1][1]["type"] == "turn.completed"
    assert (workspace / "approved.txt").exists() and not (workspace / "declined.txt").exists()
    decisions = [e["item"]["decision"] for _, e in events if e["type"] == "item.completed"
                 and e["item"]["type"] == "approval_request"]
    assert decisions == ["approved", "denied"]
    told = str(scripts.requests[-1]["messages"])
    assert "declined" in told and "not that one" in told
    # The question is answered: answering it again is refused.
    again = api.post(f"/api/threads/{tid}/approvals/{question['id']}",
                     json={"decision": "approved"})
    assert again.status_code == 404 and "no open approval" in again.json()["error"]["message"]


def test_an_open_question_shows_the_command_redacted(api: Api, scripts: TurnScripts) -> None:
    scripts.scripts["leak it"] = [shell("echo sk-test-dummy > key.txt"), {"content": "ok"}]
    tid = api.create(input="leak it", approval_policy="untrusted")["id"]
    question = api.wait_approval(tid)
    assert question["command"] == "echo [REDACTED] > key.txt" and question["id"].startswith("item_")
    assert "sk-test-dummy" not in api.get(f"/api/threads/{tid}").text
    api.post(f"/api/threads/{tid}/approvals/{question['id']}",
             json={"decision": "denied"}).raise_for_status()
    api.wait_status(tid, "idle")


def test_approve_for_the_session_asks_once_per_prefix(api: Api, scripts: TurnScripts,
                                                      workspace: Path) -> None:
    scripts.scripts["two touches"] = [shell("touch one.txt"), shell("touch two.txt"),
                                      {"content": "Both."}]
    tid = api.create(input="two touches", approval_policy="untrusted")["id"]
    question = api.wait_approval(tid)
    assert question["prefix"] == "touch"
    api.post(f"/api/threads/{tid}/approvals/{question['id']}",
             json={"decision": "approved_for_session"}).raise_for_status()
    events = api.events(tid)
    asked = [e for _, e in events if e["type"] == "item.started"
             and e["item"]["type"] == "approval_request"]
    assert len(asked) == 1
    assert (workspace / "one.txt").exists() and (workspace / "two.txt").exists()


def test_the_next_turn_can_start_as_soon_as_the_last_one_ended(api: Api,
                                                              scripts: TurnScripts) -> None:
    for n in range(5):
        scripts.scripts[f"turn {n}"] = [{"content": f"answer {n}"}]
    tid = api.create(input="turn 0")["id"]
    seen = 1
    for n in range(1, 5):
        api.events(tid, ends=seen)  # turn.completed of the last turn: go on at once
        response = api.post(f"/api/threads/{tid}/turns", json={"input": f"turn {n}"})
        assert response.status_code == 202, response.text
        seen += 1
    assert "answer 4" in str(api.events(tid, ends=5))


def test_approvals_as_tool_outputs(api: Api, scripts: TurnScripts, workspace: Path) -> None:
    scripts.scripts["ask first"] = [shell("touch held.txt"), {"content": "Ran it."}]
    thread = api.create(input="ask first", approval_policy="untrusted",
                        approver="requires_action")
    events = api.events(thread["id"])
    assert events[-1][1]["type"] == "turn.requires_action"
    info = api.wait_status(thread["id"], "requires_action")
    call = info["pending_tool_calls"][0]
    assert call["name"] == "approval_request" and call["arguments"]["command"] == "touch held.txt"
    api.post(f"/api/threads/{thread['id']}/tool_outputs",
             json={"outputs": {call["id"]: "approved"}}).raise_for_status()
    api.wait_status(thread["id"], "idle")
    assert (workspace / "held.txt").exists()


def test_tools_the_caller_runs_round_trip(api: Api, scripts: TurnScripts) -> None:
    weather = {"name": "get_weather", "description": "Weather of a city.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}
    scripts.scripts["umbrella?"] = [
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"content": "Take one."}]
    thread = api.create(input="umbrella?", external_tools=[weather])
    tid = thread["id"]
    events = api.events(tid)
    assert events[-1][1]["type"] == "turn.requires_action"
    info = api.wait_status(tid, "requires_action")
    call = info["pending_tool_calls"][0]
    assert call["arguments"] == {"city": "Paris"}
    # A new instruction while outputs are pending is refused, so are wrong ids.
    busy = api.post(f"/api/threads/{tid}/turns", json={"input": "something else"})
    assert busy.status_code == 409 and call["id"] in busy.json()["error"]["message"]
    wrong = api.post(f"/api/threads/{tid}/tool_outputs", json={"outputs": {"nope": "x"}})
    assert wrong.status_code == 400
    api.post(f"/api/threads/{tid}/tool_outputs",
             json={"outputs": {call["id"]: "rain, 12 C"}}).raise_for_status()
    api.wait_status(tid, "idle")
    assert "rain, 12 C" in str(scripts.requests[-1]["messages"])


def test_cancel_a_running_turn(api: Api, scripts: TurnScripts) -> None:
    scripts.scripts["forever"] = [shell("sleep 60")]
    thread = api.create(input="forever")
    tid = thread["id"]
    api.events(tid, until=("item.started",))
    started = time.monotonic()
    response = api.post(f"/api/threads/{tid}/cancel")
    assert response.status_code == 202
    events = api.events(tid)
    assert events[-1][1]["type"] == "turn.failed"
    assert "interrupt" in events[-1][1]["error"]["message"]
    api.wait_status(tid, "idle")
    assert time.monotonic() - started < 20
    again = api.post(f"/api/threads/{tid}/cancel")
    assert again.status_code == 409 and "no turn" in again.json()["error"]["message"]


def test_a_cancel_answers_an_open_question(api: Api, scripts: TurnScripts) -> None:
    scripts.scripts["ask and wait"] = [shell("touch x.txt")]
    thread = api.create(input="ask and wait", approval_policy="untrusted")
    api.wait_approval(thread["id"])
    api.post(f"/api/threads/{thread['id']}/cancel").raise_for_status()
    info = api.wait_status(thread["id"], "idle")
    assert info["approvals"] == []


def test_list_read_resume_and_export_recorded_threads(api: Api, scripts: TurnScripts) -> None:
    scripts.scripts["first"] = [{"content": "First answer."}]
    scripts.scripts["second"] = [{"content": "Second answer."}]
    thread = api.create(input="first")
    tid = thread["id"]
    api.events(tid)
    api.wait_status(tid, "idle")
    assert api.delete(f"/api/threads/{tid}").status_code == 204
    listed = {t["id"]: t for t in api.get("/api/threads").json()["threads"]}
    assert listed[tid]["live"] is False and listed[tid]["title"] == "first"
    transcript = api.get(f"/api/threads/{tid[:13]}/transcript").json()["events"]
    assert {"type": "turn.input", "text": "first"} in transcript
    assert api.get(f"/api/threads/{tid}").json()["live"] is False
    resumed = api.post(f"/api/threads/{tid}/resume").json()
    assert resumed["id"] == tid and resumed["live"] and resumed["title"] == "first"
    api.post(f"/api/threads/{tid}/turns", json={"input": "second"}).raise_for_status()
    events = api.events(tid, ends=2)
    # The resumed thread's stream starts with its record, then the new turn.
    assert types(events).count("turn.started") == 2
    assert "First answer." in str(events) and "Second answer." in str(events)
    api.wait_status(tid, "idle")
    atif = api.get(f"/api/threads/{tid}/export?format=atif").json()
    assert atif["session_id"] == tid and atif["steps"]
    sharegpt = api.get(f"/api/threads/{tid}/export?format=sharegpt").json()
    assert any("Second answer." in c["value"] for c in sharegpt["conversations"])


def test_the_openapi_document_names_every_route(api: Api) -> None:
    from starlette.routing import Route

    doc = api.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    routes = {(r.path, m.lower()) for r in api.server.app.app.routes if isinstance(r, Route)
              for m in (r.methods or ()) if m != "HEAD"}
    documented = {(path, method) for path, item in doc["paths"].items()
                  for method in item if method != "parameters"}
    served = {r for r in routes if r[0].startswith("/api/") or r[0] == "/openapi.json"}
    assert served == documented


@pytest.mark.parametrize("method,path,body,status,words", [
    ("GET", "/api/threads/nope", None, 404, "nope"),
    ("GET", "/api/threads/nope/events", None, 404, "not live"),
    ("POST", "/api/threads/nope/turns", {"input": "x"}, 404, "not live"),
    ("POST", "/api/threads/nope/cancel", {}, 404, "not live"),
    ("POST", "/api/threads/nope/resume", {}, 404, "nope"),
    ("GET", "/api/threads/nope/transcript", None, 404, "nope"),
    ("GET", "/api/threads/nope/export", None, 404, "nope"),
    ("DELETE", "/api/threads/nope", None, 404, "not live"),
    ("POST", "/api/threads", {"input": ""}, 400, "input"),
    ("POST", "/api/threads", {"colour": "blue"}, 400, "unknown thread option 'colour'"),
    ("POST", "/api/threads", {"sandbox": "sideways"}, 400, "sandbox"),
    ("POST", "/api/threads", {"approver": "someone"}, 400, "approver"),
    ("POST", "/api/threads", {"cwd": "/does/not/exist"}, 400, "/does/not/exist"),
    ("POST", "/api/threads", [1, 2], 400, "JSON object"),
    ("GET", "/api/nothing", None, 404, "no route"),
    ("PUT", "/api/threads", {}, 405, "not allowed"),
])
def test_error_paths(api: Api, method: str, path: str, body: Any, status: int,
                     words: str) -> None:
    response = api.request(method, path, json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["status"] == status and words in error["message"]


def test_error_paths_of_a_live_thread(api: Api, scripts: TurnScripts) -> None:
    scripts.scripts["long"] = [shell("sleep 30")]
    tid = api.create(input="long")["id"]
    api.events(tid, until=("item.started",))
    cases = [
        ("POST", f"/api/threads/{tid}/turns", {"input": "more"}, 409, "running"),
        ("POST", f"/api/threads/{tid}/turns", {"text": "more"}, 400, "input"),
        ("POST", f"/api/threads/{tid}/approvals/item_99", {"decision": "approved"}, 404,
         "no open approval"),
        ("POST", f"/api/threads/{tid}/approvals/item_99", {"decision": "maybe"}, 400,
         "decision"),
        ("POST", f"/api/threads/{tid}/tool_outputs", {"outputs": {}}, 400, "outputs"),
        ("GET", f"/api/threads/{tid}/events?format=xml", None, 400, "format"),
        ("GET", f"/api/threads/{tid}/export?format=xml", None, 400, "format"),
    ]
    for method, path, body, status, words in cases:
        response = api.request(method, path, json=body)
        assert response.status_code == status, (path, response.text)
        assert words in response.json()["error"]["message"], (path, response.text)
    not_json = api.post(f"/api/threads/{tid}/turns", content=b"input=more",
                        headers={"content-type": "application/x-www-form-urlencoded"})
    assert not_json.status_code == 415
    broken = api.post(f"/api/threads/{tid}/turns", content=b"{not json",
                      headers={"content-type": "application/json"})
    assert broken.status_code == 400 and "not JSON" in broken.json()["error"]["message"]
    api.post(f"/api/threads/{tid}/cancel").raise_for_status()
    api.wait_status(tid, "idle")
    outputs = api.post(f"/api/threads/{tid}/tool_outputs", json={"outputs": {"a": "b"}})
    assert outputs.status_code == 400 and "waiting" in outputs.json()["error"]["message"]


def test_at_the_cap_the_thread_idle_longest_makes_room(scripts: TurnScripts, workspace: Path,
                                                      tmp_path: Path) -> None:
    from conftest import require_serve, start_server

    require_serve()
    server = start_server(scripts, workspace, tmp_path / "home", max_threads=2)
    api = Api(server)
    try:
        scripts.scripts["busy"] = [shell("sleep 30")]
        scripts.scripts["quick"] = [{"content": "ok"}]
        busy = api.create(input="busy")["id"]
        quick = api.create(input="quick")["id"]
        api.events(quick)
        api.wait_status(quick, "idle")
        third = api.create()["id"]  # the idle one is closed, the busy one stays
        live = {h.id for h in server.registry.live()}
        assert live == {busy, third}
        assert api.get(f"/api/threads/{quick}").json()["live"] is False
        full = api.post("/api/threads", json={})
        assert full.status_code == 201  # `third` had never run: it made room
        api.events(busy, until=("item.started",))
        blocked = server.registry.live()
        assert len(blocked) == 2
        scripts.scripts["long too"] = [shell("sleep 30")]
        other = [h.id for h in blocked if h.id != busy][0]
        api.post(f"/api/threads/{other}/turns", json={"input": "long too"}).raise_for_status()
        api.events(other, until=("item.started",))
        refused = api.post("/api/threads", json={})
        assert refused.status_code == 503 and "busy" in refused.json()["error"]["message"]
    finally:
        api.http.close()
        server.stop()

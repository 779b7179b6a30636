"""The stores through the CLI against the scripted server: a paused turn, its tool outputs, a
resume, then `sessions list|search`, `export`, on JSONL files and on SQLite
(`[storage] kind = "sqlite"`); and `sessions migrate` from one to the other."""
from __future__ import annotations

import json
import os

import pytest

from baseagent import Agent
from baseagent.exit_codes import EXIT_REQUIRES_ACTION
from baseagent.storage.jsonl import JsonlStorage
from baseagent.testing.deterministic import DeterministicClient
from helpers import run_agent

# Seconds per CLI run (a loaded machine).
CLI_TIMEOUT = 180
WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_pause_outputs_resume_search_and_export_through_the_cli(kind, scripted_server,
                                                                 tmp_path, workspace, home):
    if kind == "sqlite":
        (home / ".baseagent").mkdir()
        (home / ".baseagent" / "config.toml").write_text('[storage]\nkind = "sqlite"\n')
    server = scripted_server([
        {"tool_calls": [{"id": "call_w", "name": "get_weather",
                         "arguments": {"city": "Paris"}}]},
        {"content": "It is 18 C in Paris."},
        {"content": "Take a light jacket."},
    ])
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([WEATHER]))
    first = run_agent(["--no-verify", "--external-tools", str(tools), "-i", "weather in Paris?"],
                      cwd=workspace, home=home, api_base=server.api_base, timeout=CLI_TIMEOUT)
    assert first.returncode == EXIT_REQUIRES_ACTION, first.stderr
    assert first.events[-1]["type"] == "turn.requires_action"
    thread_id = first.events[0]["thread_id"]

    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"call_w": "18 C"}))
    second = run_agent(["--no-verify", "--resume", thread_id[:13], "--tool-outputs",
                        str(outputs)], cwd=workspace, home=home, api_base=server.api_base,
                       timeout=CLI_TIMEOUT)
    assert second.returncode == 0, second.stderr
    assert second.final_message == "It is 18 C in Paris."
    third = run_agent(["--no-verify", "--resume", thread_id, "-i", "what should I wear?"],
                      cwd=workspace, home=home, api_base=server.api_base, timeout=CLI_TIMEOUT)
    assert third.returncode == 0, third.stderr
    assert third.events[0] == {"type": "thread.started", "thread_id": thread_id}
    sent = [m.get("content") for m in server.requests[2]["messages"]]
    assert "weather in Paris?" in sent and "18 C" in sent and "It is 18 C in Paris." in sent

    db = home / ".baseagent" / "sessions.db"
    session_dir = home / ".baseagent" / "sessions"
    if kind == "sqlite":
        assert db.is_file() and not session_dir.exists()
    else:
        assert [p.name for p in session_dir.iterdir()] == [f"{thread_id}.jsonl"]
        assert not db.exists()

    listed = run_agent(["sessions", "list", "--json"], cwd=workspace, home=home, parse=False)
    assert listed.returncode == 0, listed.stderr
    [summary] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (summary["thread_id"], summary["turns"], summary["last_status"]) == \
        (thread_id, 2, "completed")
    assert summary["instructions"] == ["weather in Paris?", "what should I wear?"]

    found = run_agent(["sessions", "search", "jacket"], cwd=workspace, home=home, parse=False)
    assert found.returncode == 0, found.stderr
    [hit] = found.stdout.splitlines()
    assert hit.startswith(thread_id) and "assistant" in hit and "Take a light jacket." in hit
    how = "full-text search (SQLite FTS5)" if kind == "sqlite" else "a plain scan"
    assert how in found.stderr
    none = run_agent(["sessions", "search", "umbrella"], cwd=workspace, home=home, parse=False)
    assert (none.returncode, none.stdout) == (0, "no matches\n")

    exported = run_agent(["export", thread_id[:8], "--format", "sharegpt"], cwd=workspace,
                         home=home, parse=False)
    assert exported.returncode == 0, exported.stderr
    turns = json.loads(exported.stdout)["conversations"]
    assert [t["value"] for t in turns if t["from"] == "gpt"][-2:] == \
        ["It is 18 C in Paris.", "Take a light jacket."]
    assert any('"content": "18 C"' in t["value"] for t in turns if t["from"] == "tool")


def test_migrate_then_use_the_database_from_the_cli(tmp_path, workspace, home):
    sessions = tmp_path / "sessions"
    ids = []
    for text in ("the alpaca question", "the bison question"):
        with Agent(model_client=DeterministicClient([{"content": f"answered {text}"}]),
                   cwd=workspace, verify=False, env={"PATH": os.environ["PATH"]},
                   storage=JsonlStorage(sessions)) as agent:
            agent.run(text)
        ids.append(agent.thread_id)
    db = tmp_path / "out" / "s.db"

    first = run_agent(["sessions", "migrate", "--dir", str(sessions), "--db", str(db)],
                      cwd=workspace, home=home, parse=False)
    assert first.returncode == 0, first.stderr
    assert first.stdout == (f"migrated 2 thread(s) from {sessions} into {db}; 0 already "
                            "there; 0 left out\n")
    (sessions / "broken-1.jsonl").write_text("not json\n{}\n")
    again = run_agent(["sessions", "migrate", "--dir", str(sessions), "--db", str(db)],
                      cwd=workspace, home=home, parse=False)
    assert again.returncode == 1
    assert again.stdout.splitlines() == [
        f"migrated 0 thread(s) from {sessions} into {db}; 2 already there; 1 left out",
        f"  left out broken-1: session record {sessions / 'broken-1.jsonl'} is corrupt: "
        "line 1 is not valid JSON"]
    assert sorted(p.name for p in sessions.iterdir()) == \
        sorted([f"{i}.jsonl" for i in ids] + ["broken-1.jsonl"])  # the files stay

    listed = run_agent(["sessions", "--db", str(db), "list", "--json"], cwd=workspace,
                       home=home, parse=False)
    assert sorted(json.loads(line)["thread_id"] for line in listed.stdout.splitlines()) == \
        sorted(ids)
    found = run_agent(["sessions", "search", "bison", "--db", str(db), "--json"],
                      cwd=workspace, home=home, parse=False)
    assert [json.loads(line)["thread_id"] for line in found.stdout.splitlines()] == \
        [ids[1], ids[1]]  # the question and its answer
    shown = run_agent(["sessions", "show", ids[0], "--db", str(db)], cwd=workspace,
                      home=home, parse=False)
    assert shown.returncode == 0 and f"record:   {db}#{ids[0]}" in shown.stdout
    removed = run_agent(["sessions", "rm", ids[0], "--db", str(db)], cwd=workspace,
                        home=home, parse=False)
    assert removed.stdout == f"removed {db}#{ids[0]}\n"

    both = run_agent(["sessions", "list", "--dir", str(sessions), "--db", str(db)],
                     cwd=workspace, home=home, parse=False)
    assert both.returncode == 2 and both.stderr.count("\n") == 1
    assert "give --dir (JSONL records) or --db (a SQLite database), not both" in both.stderr
    empty = run_agent(["sessions", "search", " ", "--db", str(db)], cwd=workspace, home=home,
                      parse=False)
    assert empty.returncode == 2 and "search needs some text" in empty.stderr


def test_an_agent_killed_mid_tool_on_sqlite_keeps_its_record_and_resumes(
        scripted_server, tmp_path, workspace, home):
    """SIGKILL while a command runs: every event the agent had printed is in the database,
    which passes SQLite's integrity check, and the thread resumes (the unfinished call
    answered as not run)."""
    import signal
    import sqlite3

    from baseagent.records.replay import MISSING_RESULT
    from reliability import finish, kill_quietly, start_agent, wait_for

    (home / ".baseagent").mkdir()
    (home / ".baseagent" / "config.toml").write_text('[storage]\nkind = "sqlite"\n')
    server = scripted_server([
        {"tool_calls": [{"id": "call_s", "name": "shell",
                         "arguments": {"command": "touch started && sleep 60"}}]},
        {"content": "Resumed after the kill."},
    ])
    proc = start_agent(["--no-verify", "--json", "-i", "run the long command"], cwd=workspace,
                       home=home, api_base=server.api_base)
    try:
        wait_for(lambda: (workspace / "started").exists(), timeout=CLI_TIMEOUT,
                 what="the command to start")
        proc.send_signal(signal.SIGKILL)
        killed = finish(proc)
    finally:
        kill_quietly(proc)
    assert killed.returncode == -signal.SIGKILL
    thread_id = killed.events[0]["thread_id"]
    db = home / ".baseagent" / "sessions.db"
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    from baseagent.storage.sqlite import SqliteStorage

    recorded = [r["event"] for r in SqliteStorage(db).load_records(thread_id)
                if r["kind"] == "event"]
    assert recorded == killed.events  # everything printed before the kill

    resumed = run_agent(["--no-verify", "--resume", thread_id, "-i", "go on"], cwd=workspace,
                        home=home, api_base=server.api_base, timeout=CLI_TIMEOUT)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.final_message == "Resumed after the kill."
    sent = server.requests[1]["messages"]
    assert {"role": "tool", "tool_call_id": "call_s", "content": MISSING_RESULT} in sent

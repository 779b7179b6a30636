"""Resuming a thread from its session record, and `baseagent sessions list|show|rm`."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from baseagent.records.replay import (MISSING_RESULT, SessionLoadError, find_session,
                                   latest_session, load_session, resolve)
from baseagent.records.recorder import SessionRecorder
from baseagent.llm.types import CallUsage, UsageTotals
from baseagent.output import events as ev
from baseagent.sessions import list_sessions, prune
from helpers import run_agent

TID = "11111111-2222-3333-4444-555555555555"


def call(call_id: str, name: str = "shell", args: str = '{"command": "ls"}') -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def write_record(session_dir: Path, thread_id: str = TID, final_usage: bool = True,
                 created: str | None = None) -> Path:
    """A record as a run writes it: two model calls, a compaction, a final usage record."""
    path = session_dir / f"{thread_id}.jsonl"
    totals = UsageTotals()
    rec = SessionRecorder(path)
    when = {"ts": created} if created else {}
    rec.meta(thread_id=thread_id, model="openai/m1", cwd="/w", tools=[], **when)
    rec.message({"role": "system", "content": "sys"})
    rec.message({"role": "user", "content": "env"})
    rec.track_usage(lambda: totals)
    rec.emit(ev.TurnStarted())
    rec.message({"role": "user", "content": "do the thing"})
    totals.add(CallUsage(100, 10, 5, 0.5))
    rec.message({"role": "assistant", "content": None, "tool_calls": [call("c1")]})
    rec.message({"role": "tool", "tool_call_id": "c1", "content": "a.txt"})
    rec.history([{"role": "system", "content": "sys"},
                 {"role": "user", "content": "do the thing"},
                 {"role": "user", "content": "summary of the work so far"}], "compaction")
    totals.add(CallUsage(200, 20, 7, 0.25))
    rec.message({"role": "assistant", "content": "done"})
    rec.emit(ev.TurnCompleted(usage=ev.Usage(input_tokens=300, output_tokens=12)))
    if final_usage:
        rec.usage(input_tokens=300, cached_input_tokens=30, output_tokens=12, cost_usd=0.75,
                  calls=2)
    rec.close()
    return path


# -- loading (pure) ---------------------------------------------------------------------------

def test_load_replays_history_snapshot_and_usage(tmp_path):
    loaded = load_session(write_record(tmp_path))
    assert loaded.thread_id == TID and loaded.turns == 1
    assert [m["content"] for m in loaded.history] == [
        "sys", "do the thing", "summary of the work so far", "done"]
    u = loaded.usage
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.calls) == (300, 30, 12, 2)
    assert u.cost_usd == pytest.approx(0.75) and u.cost_known


def test_usage_survives_a_run_killed_before_its_usage_record(tmp_path):
    path = write_record(tmp_path, final_usage=False)
    with open(path, "a") as handle:  # and a torn last line, as a kill mid-write leaves
        handle.write('{"kind":"message","message":{"role":"assis')
    u = load_session(path).usage
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.calls) == (300, 30, 12, 2)
    assert u.cost_usd == pytest.approx(0.75)


def test_dangling_tool_call_gets_a_result_and_orphans_go(tmp_path):
    path = tmp_path / f"{TID}.jsonl"
    rec = SessionRecorder(path)
    rec.meta(thread_id=TID, model="m")
    rec.message({"role": "system", "content": "sys"})
    rec.message({"role": "tool", "tool_call_id": "ghost", "content": "orphan"})
    rec.message({"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]})
    rec.message({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    rec.close()  # killed while c2 ran
    history = load_session(path).history
    assert history[1:] == [
        {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "tool", "tool_call_id": "c2", "content": MISSING_RESULT},
    ]


@pytest.mark.parametrize("content, error", [
    ("", "holds no messages|no meta record"),
    ('{"kind":"meta","thread_id":"x"}\nnot json\n{"kind":"usage"}\n', "line 2 is not valid JSON"),
    ('{"kind":"message","message":{"role":"user","content":"x"}}\n', "no meta record"),
    ('{"kind":"meta","thread_id":"t1"}\n{"kind":"message","message":{"content":"x"}}\n',
     "no valid role"),
    ('{"kind":"meta","thread_id":"t1"}\n[1, 2]\n{"kind":"usage"}\n', "line 2 is not a record"),
    ('{"kind":"meta","thread_id":"../../etc"}\n', "bad thread id"),
])
def test_corrupt_records_are_clear_errors(tmp_path, content, error):
    path = tmp_path / "t1.jsonl"
    path.write_text(content)
    with pytest.raises(SessionLoadError, match=error):
        load_session(path)


def test_finding_records(tmp_path):
    with pytest.raises(SessionLoadError, match="no session records"):
        latest_session(tmp_path)
    older = write_record(tmp_path, "abcd0001-x")
    newer = write_record(tmp_path, "abcd0002-y")
    os.utime(older, (time.time() - 100, time.time() - 100))
    assert latest_session(tmp_path) == newer
    assert resolve(tmp_path, None, last=True).thread_id == "abcd0002-y"
    assert find_session(tmp_path, "abcd0001") == older  # a unique prefix
    with pytest.raises(SessionLoadError, match="ambiguous"):
        find_session(tmp_path, "abcd")
    with pytest.raises(SessionLoadError, match="no session record for thread zzzz"):
        find_session(tmp_path, "zzzz")
    with pytest.raises(SessionLoadError, match="invalid thread id"):
        find_session(tmp_path, "../etc/passwd")


# -- the real CLI ---------------------------------------------------------------------------

def test_resume_continues_the_thread(scripted_server, tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    def u(prompt: int, completion: int, cached: int) -> dict:
        return {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": cached}

    server = scripted_server([
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo first-run"}}],
         "usage": u(100, 10, 0)},
        {"content": "First answer.", "usage": u(150, 15, 50)},  # no edit: no verification
        {"content": "Follow-up done.", "usage": u(250, 25, 150)},
    ])
    first = run_agent(["-i", "first instruction"], cwd=ws, home=home, api_base=server.api_base)
    assert first.returncode == 0, first.stderr
    thread_id = first.events[0]["thread_id"]

    second = run_agent(["--resume", thread_id, "-i", "follow-up", "--no-verify"], cwd=ws,
                       home=home, api_base=server.api_base)
    assert second.returncode == 0, second.stderr
    assert [e["type"] for e in second.events] == [
        "thread.started", "turn.started", "item.started", "item.completed", "turn.completed"]
    assert second.events[0]["thread_id"] == thread_id
    assert second.final_message == "Follow-up done."
    # usage continues from the first run's totals
    assert second.events[-1]["usage"] == {"input_tokens": 500, "cached_input_tokens": 200,
                                          "cache_write_input_tokens": 0, "output_tokens": 50,
                                          "reasoning_output_tokens": 0}

    # the model saw the whole first run, then the follow-up
    sent = server.requests[2]["messages"]
    assert sent[:-1] == server.requests[1]["messages"] + [
        {"role": "assistant", "content": "First answer."}]
    assert sent[-1] == {"role": "user", "content": "follow-up"}

    # one record, appended to; it lists and shows as two turns
    session_dir = home / ".baseagent" / "sessions"
    assert [p.name for p in session_dir.iterdir() if p.name != "checkpoints"] == [
        f"{thread_id}.jsonl"]
    records = [json.loads(line) for line in (session_dir / f"{thread_id}.jsonl").open()]
    metas = [r for r in records if r["kind"] == "meta"]
    assert [m["resumed"] for m in metas] == [False, True]
    [summary] = list_sessions(session_dir)
    assert summary.turns == 2 and summary.instructions == ["first instruction", "follow-up"]
    assert summary.last_status == "completed" and summary.input_tokens == 500


def test_missing_or_corrupt_record_exits_2(tmp_path):
    home = tmp_path / "home"
    session_dir = home / ".baseagent" / "sessions"
    session_dir.mkdir(parents=True)
    missing = run_agent(["--resume", "no-such-thread", "-i", "x"], cwd=tmp_path, home=home,
                        parse=False)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip().splitlines() == [
        f"baseagent: error: no session record for thread no-such-thread in {session_dir}"]
    empty = run_agent(["--resume-last", "-i", "x"], cwd=tmp_path, home=home, parse=False)
    assert empty.returncode == 2 and "no session records in" in empty.stderr
    (session_dir / "broken.jsonl").write_text('{"kind":"meta","thread_id":"broken"}\n{oops\n{}\n')
    corrupt = run_agent(["--resume", "broken", "-i", "x"], cwd=tmp_path, home=home, parse=False)
    assert corrupt.returncode == 2
    assert "is corrupt: line 2 is not valid JSON" in corrupt.stderr
    assert "Traceback" not in corrupt.stderr
    both = run_agent(["--resume", "a", "--resume-last", "-i", "x"], cwd=tmp_path, home=home,
                     parse=False)
    assert both.returncode == 2 and "not both" in both.stderr


def test_sessions_list_show_rm(tmp_path):
    home = tmp_path / "home"
    session_dir = home / ".baseagent" / "sessions"
    session_dir.mkdir(parents=True)
    keep = write_record(session_dir, "keep0000-1", created="2026-01-01T00:00:01+00:00")
    old = write_record(session_dir, "old00000-2", created="2026-01-01T00:00:02+00:00")
    gone = write_record(session_dir, "gone0000-3", created="2026-01-01T00:00:03+00:00")
    now = time.time()
    for path, age in ((gone, 10), (keep, 20), (old, 8 * 86_400)):
        os.utime(path, (now - age, now - age))

    listing = run_agent(["sessions", "list"], cwd=tmp_path, home=home, parse=False)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].split()[:3] == ["THREAD", "ID", "UPDATED"]
    # newest first by creation (these ids are not UUIDv7: their first record's time), not by
    # last update: keep was written to after old
    assert [line.split()[0] for line in lines[1:]] == ["gone0000-3", "old00000-2", "keep0000-1"]
    assert "do the thing" in lines[1] and "openai/m1" in lines[1]

    shown = run_agent(["sessions", "show", "keep"], cwd=tmp_path, home=home, parse=False)
    assert shown.returncode == 0, shown.stderr
    assert "thread:   keep0000-1" in shown.stdout
    assert "usage:    300 in (30 cached), 12 out, cost $0.7500" in shown.stdout
    assert "history (4 messages):" in shown.stdout
    as_json = run_agent(["sessions", "show", "keep0000-1", "--json"], cwd=tmp_path, home=home,
                        parse=False)
    assert json.loads(as_json.stdout)["turns"] == 1

    removed = run_agent(["sessions", "rm", "gone0000-3", "--older-than", "7"], cwd=tmp_path,
                        home=home, parse=False)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.splitlines() == [f"removed {gone}", f"removed {old}"]
    assert sorted(p.name for p in session_dir.iterdir()) == [keep.name]

    unknown = run_agent(["sessions", "rm", "nothing-here"], cwd=tmp_path, home=home,
                        parse=False)
    assert unknown.returncode == 2 and "no session record for thread nothing-here" in \
        unknown.stderr
    assert keep.exists()
    other_dir = run_agent(["sessions", "list", "--dir", str(tmp_path / "elsewhere")],
                          cwd=tmp_path, home=home, parse=False)
    assert other_dir.stdout == "no sessions\n"


def test_prune_keeps_recent_records(tmp_path):
    recent = write_record(tmp_path, "recent00-1")
    stale = write_record(tmp_path, "stale000-2")
    os.utime(stale, (1_000, 1_000))
    assert prune(tmp_path, older_than_days=30) == [str(stale)]
    assert recent.exists() and not stale.exists()


# -- a resumed thread keeps its model, API base and workspace ---------------------------------

def test_resume_keeps_the_threads_model_api_base_and_workspace(scripted_server, tmp_path):
    home, ws, elsewhere = tmp_path / "home", tmp_path / "ws", tmp_path / "elsewhere"
    for d in (home, ws, elsewhere):
        d.mkdir()
    server = scripted_server([
        {"content": "one"},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "pwd"}}]},
        {"content": "two"},
        {"content": "three"},
    ])
    first = run_agent(["-i", "first", "--no-verify", "-C", str(ws)], cwd=tmp_path, home=home,
                      api_base=server.api_base)
    assert first.returncode == 0, first.stderr
    thread_id = first.events[0]["thread_id"]

    # no flags, another directory: the record's model, endpoint and workspace
    second = run_agent(["--resume-last", "-i", "where are we", "--no-verify"], cwd=elsewhere,
                       home=home)
    assert second.returncode == 0, second.stderr
    assert server.requests[1]["model"] == "scripted"  # not the default openai/gpt-4.1
    [pwd] = second.completed_items("command_execution")
    assert pwd["aggregated_output"].strip() == str(ws)
    assert "note" not in second.stderr

    # a flag overrides the record, and stderr says so (stdout stays JSONL only)
    third = run_agent(["--resume", thread_id, "-i", "again", "--no-verify",
                       "--model", "openai/other"], cwd=elsewhere, home=home)
    assert third.returncode == 0, third.stderr
    assert server.requests[-1]["model"] == "other"
    assert f"baseagent: note: resuming thread {thread_id} with model openai/other (the " \
           f"thread used openai/scripted)" in third.stderr

    records = [json.loads(line) for line in
               (home / ".baseagent" / "sessions" / f"{thread_id}.jsonl").open()]
    metas = [r for r in records if r["kind"] == "meta"]
    assert [(m["model"], m["api_base"], m["cwd"]) for m in metas] == [
        ("openai/scripted", server.api_base, str(ws))] * 2 + [
        ("openai/other", server.api_base, str(ws))]


def test_the_library_resumes_with_the_recorded_settings(tmp_path):
    from baseagent import Agent
    from baseagent.errors import ConfigError

    class DeterministicModel:  # never called: only the settings are under test
        def __init__(self, _steps: list) -> None:
            self.totals = UsageTotals()

        def complete(self, *_args: object, **_kw: object) -> None:
            raise AssertionError("never called")

        def bind_cancel(self, _token: object) -> None:
            pass

        def close(self) -> None:
            pass

    ws = tmp_path / "ws"
    ws.mkdir()
    rec = SessionRecorder(tmp_path / f"{TID}.jsonl")
    rec.meta(thread_id=TID, model="anthropic/claude-x", api_base="http://proxy:1/v1",
             cwd=str(ws), tools=[])
    rec.message({"role": "user", "content": "hi"})
    rec.close()
    agent = Agent(thread_id=TID, session_dir=tmp_path, model_client=DeterministicModel([]))
    assert (agent.settings.model, agent.settings.api_base, agent.settings.cwd) == (
        "anthropic/claude-x", "http://proxy:1/v1", ws)
    assert agent.notes == []
    other = Agent(thread_id=TID, session_dir=tmp_path, model="openai/gpt-4.1",
                  model_client=DeterministicModel([]))
    assert other.settings.model == "openai/gpt-4.1" and other.settings.cwd == ws
    assert other.notes == [f"resuming thread {TID} with model openai/gpt-4.1 (the thread "
                           "used anthropic/claude-x)"]
    ws.rmdir()
    with pytest.raises(ConfigError, match="no longer exists; pass --cwd DIR"):
        Agent(thread_id=TID, session_dir=tmp_path, model_client=DeterministicModel([]))
# -- a torn tail and concurrent resumes (issue 14) ---------------------------------------------

def test_a_torn_tail_is_cut_when_the_record_is_reopened(tmp_path):
    path = write_record(tmp_path)
    whole = path.read_bytes()
    # SIGKILL in the middle of a large history line: half a line, no newline.
    path.write_bytes(whole + b'{"kind":"message","message":{"role":"user","content":"xxxx')
    loaded = load_session(path)  # tolerated on load
    rec = SessionRecorder(path)  # what a resume opens: the torn part goes
    rec.message({"role": "user", "content": "resumed"})
    rec.close()
    lines = path.read_bytes().splitlines()
    assert [json.loads(line)["kind"] for line in lines][-1] == "message"
    assert path.read_bytes().startswith(whole)
    again = load_session(path)
    assert again.history == loaded.history + [{"role": "user", "content": "resumed"}]


def test_a_record_glued_to_a_torn_line_is_recovered(tmp_path):
    # What resuming after a torn tail wrote before the fix: the next record glued on.
    path = write_record(tmp_path)
    path.write_bytes(path.read_bytes() + b'{"kind":"message","message":{"role":"us'
                     + b'{"kind":"message","message":{"role":"user","content":"later"}}\n')
    assert load_session(path).history[-1] == {"role": "user", "content": "later"}


def test_two_runs_cannot_write_one_record(tmp_path):
    from baseagent.records.recorder import RecordInUseError

    path = write_record(tmp_path / "new")
    assert os.stat(path).st_mode & 0o777 == 0o600  # the conversation is its owner's only
    first = SessionRecorder(path)
    with pytest.raises(RecordInUseError, match="in use by another run"):
        SessionRecorder(path)
    first.close()
    SessionRecorder(path).close()  # free again once the first run closed it


def test_concurrent_resume_of_one_thread_is_refused(scripted_server, tmp_path):
    from reliability import finish, kill_quietly, start_agent, wait_for

    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    server = scripted_server([{"content": "first"},  # a question: one call
                              {"content": "slow", "delay": 60}])
    first = run_agent(["-i", "start"], cwd=workspace, home=home, api_base=server.api_base)
    thread_id = first.events[0]["thread_id"]
    slow = start_agent(["--resume", thread_id, "-i", "go on"], cwd=workspace, home=home,
                       api_base=server.api_base)
    try:
        wait_for(lambda: len(server.requests) == 2, what="the resumed run's model call")
        second = run_agent(["--resume", thread_id, "-i", "me too"], cwd=workspace,
                           home=home, api_base=server.api_base, parse=False)
        assert second.returncode == 2, second.stderr
        assert second.stdout == ""
        assert second.stderr.strip() == (
            f"baseagent: error: thread {thread_id} is in use by another run (its record "
            f"{home / '.baseagent' / 'sessions' / (thread_id + '.jsonl')} is locked); "
            "wait for it to finish")
        assert len(server.requests) == 2
        slow.terminate()
        assert finish(slow).returncode == 143
    finally:
        kill_quietly(slow)


def test_the_threads_offered_to_pick_from_read_as_a_list(tmp_path):
    """`/resume` alone (interactive/repl.py): numbered, the whole id, how long ago, turns,
    the first instruction."""
    from baseagent.sessions import SessionSummary, render_choices

    def thread(n: int, updated: str, turns: int, first: str) -> SessionSummary:
        return SessionSummary(thread_id=f"01a212aa-0000-7000-8000-00000000000{n}", path="p",
                              updated=updated, size_bytes=1, turns=turns, instructions=[first])

    now = 1_750_000_000.0  # 2025-06-15T15:06:40+00:00
    assert render_choices([thread(1, "2025-06-15T15:06:35+00:00", 1, "fix the test"),
                           thread(2, "2025-06-15T12:00:00+00:00", 3, "  add\na CHANGELOG  "),
                           thread(3, "2025-06-12T00:00:00+00:00", 2, "x" * 80)], now) == [
        "  1. 01a212aa-0000-7000-8000-000000000001    5s ago    1 turn  fix the test",
        "  2. 01a212aa-0000-7000-8000-000000000002    3h ago   3 turns  add a CHANGELOG",
        "  3. 01a212aa-0000-7000-8000-000000000003    3d ago   2 turns  " + "x" * 59 + "…"]

"""The two message stores (storage/): the same threads, resumes, pauses, listings, exports
and searches whichever holds the records; the SQLite store's own rules (one writer per
thread, its search with and without FTS5, a damaged row); the setting that chooses it; and
the migration from JSONL files."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent, ConfigError
from baseagent.config.load import load_agent_config, load_settings
from baseagent.records.recorder import RecordInUseError, SessionRecorder
from baseagent.records.replay import SessionLoadError
from baseagent.export import export_thread
from baseagent.sessions import list_sessions, prune, remove, show
from baseagent.storage import MessageStorage, list_runs, load_thread, open_storage
from baseagent.storage.jsonl import JsonlStorage
from baseagent.storage.migrate import migrate
from baseagent.storage.sqlite import SqliteStorage, fts5_available
from baseagent.testing.deterministic import DeterministicClient

WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}


def make_store(kind: str, tmp_path: Path) -> MessageStorage:
    if kind == "jsonl":
        return JsonlStorage(tmp_path / "sessions")
    return SqliteStorage(tmp_path / "db" / "sessions.db")


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    storage = make_store(request.param, tmp_path)
    yield storage
    storage.close()


def agent(workspace: Path, steps: list[Any], storage: Any, **kw: Any) -> Agent:
    kw.setdefault("verify", False)
    return Agent(model_client=DeterministicClient(steps), cwd=workspace,
                 env={"PATH": os.environ["PATH"]}, storage=storage, **kw)


def write_thread(storage: MessageStorage, thread_id: str, text: str) -> None:
    writer = SessionRecorder(storage.create_thread(thread_id))
    writer.meta(thread_id=thread_id, model="m", cwd="/w")
    writer.message({"role": "user", "content": text})
    writer.message({"role": "assistant", "content": "Done: answer given."})
    writer.close()


# -- the same thread on both stores -------------------------------------------------------------

def test_a_thread_resumes_lists_and_exports_the_same_on_both_stores(store, workspace):
    with agent(workspace, [{"content": "First answer."}], store) as first:
        assert first.run("first question").final_message == "First answer."
        thread_id = first.thread_id
    model = DeterministicClient([{"content": "Second answer."}])
    with Agent(model_client=model, cwd=workspace, verify=False, storage=store,
               thread_id=thread_id[:8]) as second:
        assert second.thread_id == thread_id
        assert second.run("second question").final_message == "Second answer."
    sent = model.requests[0]
    assert [m["content"] for m in sent if m["role"] != "system"][-3:] == \
        ["first question", "First answer.", "second question"]

    [summary] = list_sessions(store)
    assert (summary.thread_id, summary.turns, summary.last_status) == \
        (thread_id, 2, "completed")
    assert summary.instructions == ["first question", "second question"]
    assert summary.error is None and summary.size_bytes > 0
    shown, history = show(store, thread_id[:8])
    assert shown.thread_id == thread_id and history[-1]["content"] == "Second answer."
    runs = list_runs(store.load_records(thread_id))
    assert [(r.index, r.resumed) for r in runs] == [(1, False), (2, True)]

    sharegpt = export_thread(store, thread_id, "sharegpt")
    assert [(turn["from"], turn["value"]) for turn in sharegpt["conversations"]][-4:] == [
        ("human", "first question"), ("gpt", "First answer."),
        ("human", "second question"), ("gpt", "Second answer.")]
    atif = export_thread(store, thread_id, "atif")
    assert atif["session_id"] == thread_id and atif["final_metrics"]["total_steps"] >= 4


def test_an_external_tool_pause_survives_the_agent_on_both_stores(store, workspace):
    steps = [{"tool_calls": [{"id": "call_w", "name": "get_weather",
                              "arguments": {"city": "Paris"}}]},
             {"content": "Sunny in Paris."}]
    with agent(workspace, steps[:1], store, external_tools=[WEATHER]) as first:
        paused = first.run("weather?")
    assert paused.status == "requires_action"
    loaded = load_thread(store, first.thread_id)
    assert loaded.paused is not None and loaded.paused.call_ids == ["call_w"]

    model = DeterministicClient(steps[1:])
    with Agent(model_client=model, cwd=workspace, verify=False, storage=store,
               thread_id=first.thread_id, external_tools=[WEATHER]) as second:
        assert [c.id for c in second.pending_tool_calls] == ["call_w"]
        done = second.submit_tool_outputs({"call_w": "sun, 24 C"})
    assert done.status == "completed" and done.final_message == "Sunny in Paris."
    assert model.requests[0][-1] == \
        {"role": "tool", "tool_call_id": "call_w", "content": "sun, 24 C"}
    assert load_thread(store, first.thread_id).paused is None
    [summary] = list_sessions(store)
    assert (summary.turns, summary.last_status) == (1, "completed")


def test_one_writer_per_thread_on_both_stores(store):
    writer = store.create_thread("thread-one")
    with pytest.raises(RecordInUseError, match="in use by another run"):
        store.create_thread("thread-one")
    other = store.create_thread("thread-two")  # another thread is free
    other.close()
    writer.close()
    store.create_thread("thread-one").close()  # and free again once closed


def test_lookup_errors_are_one_line_on_both_stores(store):
    write_thread(store, "abcd1111", "one")
    write_thread(store, "abcd2222", "two")
    with pytest.raises(SessionLoadError, match="ambiguous: "):
        store.resolve("abcd")
    with pytest.raises(SessionLoadError, match="no session record for thread zzzz"):
        store.resolve("zzzz")
    with pytest.raises(SessionLoadError, match="invalid thread id"):
        store.resolve("../etc")
    assert store.resolve("abcd2") == "abcd2222"
    assert store.latest() == "abcd2222"


def test_remove_and_prune_on_both_stores(store):
    for name in ("keep0001", "drop0001", "old00001"):
        write_thread(store, name, name)
    removed = remove(store, ["drop"])
    assert len(removed) == 1 and "drop0001" in removed[0]
    assert prune(store, older_than_days=30) == []
    assert prune(store, older_than_days=30, now=4e9) and store.list_threads() == []


# -- search ---------------------------------------------------------------------------------------

def test_search_finds_every_thread_with_all_the_words_on_both_stores(store):
    write_thread(store, "thread-a", "the flaky test in parser.py fails on Tuesdays")
    write_thread(store, "thread-b", "rename the FLAKY helper")
    write_thread(store, "thread-c", "nothing to see")
    hits = store.search("flaky")
    assert sorted(h.thread_id for h in hits) == ["thread-a", "thread-b"]
    [hit] = store.search("flaky parser")
    assert (hit.thread_id, hit.role) == ("thread-a", "user") and "parser.py" in hit.snippet
    assert {h.role for h in store.search("answer")} == {"assistant"}
    assert store.search("flaky nowhere") == []
    assert len(store.search("answer", limit=2)) == 2
    # the query language of FTS5 is not the user's: operators and quotes are words
    assert store.search('"flaky AND OR NOT * (') == []
    with pytest.raises(SessionLoadError, match="search needs some text"):
        store.search("   ")
    assert store.describe_search()


def test_sqlite_search_uses_fts5_when_present_and_says_when_it_scans(tmp_path):
    indexed = SqliteStorage(tmp_path / "fts.db")
    assert indexed.fts == fts5_available()
    if indexed.fts:
        assert "FTS5" in indexed.describe_search()
        names = {r[0] for r in sqlite3.connect(tmp_path / "fts.db").execute(
            "SELECT name FROM sqlite_master")}
        assert "records_fts" in names
    scanning = SqliteStorage(tmp_path / "scan.db", fts=False)
    assert "scan" in scanning.describe_search() and not scanning.fts
    write_thread(scanning, "thread-a", "flaky parser")
    assert [h.thread_id for h in scanning.search("FLAKY pars")] == ["thread-a"]
    scanning.close()
    # the choice is the database's: reopened, it keeps scanning
    assert not SqliteStorage(tmp_path / "scan.db").fts


# -- the SQLite store's own rules -------------------------------------------------------------

def test_sqlite_database_is_private_and_in_wal_mode(tmp_path):
    storage = SqliteStorage(tmp_path / "deep" / "s.db")
    write_thread(storage, "t-1", "x")
    assert (tmp_path / "deep" / "s.db").stat().st_mode & 0o777 == 0o600
    conn = sqlite3.connect(tmp_path / "deep" / "s.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_damaged_row_is_an_error_when_resuming_and_a_note_when_listing(tmp_path):
    path = tmp_path / "s.db"
    storage = SqliteStorage(path)
    write_thread(storage, "t-1", "hello")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE records SET data = '{not json' WHERE seq = 2")
    with pytest.raises(SessionLoadError, match=r"s\.db#t-1 is corrupt: row 2"):
        load_thread(storage, "t-1")
    [summary] = list_sessions(storage)
    assert summary.error and "row 2" in summary.error


def test_a_database_that_cannot_be_opened_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="cannot open the session database"):
        SqliteStorage(tmp_path / "file" / "s.db")
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(ConfigError, match="cannot open the session database"):
        SqliteStorage(tmp_path / "junk.db")


# -- choosing the store -------------------------------------------------------------------------

def test_the_storage_setting_from_toml_env_and_options(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\nkind = "sqlite"\npath = "{tmp_path / "x.db"}"\n')
    settings = load_settings({}, env={}, config_file=config)
    assert (settings.storage.kind, settings.storage.path) == ("sqlite", tmp_path / "x.db")
    assert isinstance(open_storage(settings), SqliteStorage)
    # the environment's kind keeps the file's path
    config.write_text(f'[storage]\npath = "{tmp_path / "y.db"}"\n')
    settings = load_agent_config({}, env={"BASEAGENT_STORAGE": "sqlite"}, config_file=config)
    assert (settings.storage.kind, settings.storage.path) == ("sqlite", tmp_path / "y.db")
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    default = load_settings({}, env={}, config_file=empty)
    assert default.storage.kind == "jsonl"
    assert default.storage.path == Path.home() / ".baseagent" / "sessions.db"
    assert isinstance(open_storage(default.model_copy(update={"session_dir": tmp_path})),
                      JsonlStorage)
    with pytest.raises(ConfigError, match="storage.kind"):
        load_settings({"storage": "postgres"}, env={}, config_file=empty)


def test_agent_storage_as_a_kind_a_table_or_an_object(tmp_path, workspace):
    db = tmp_path / "agent.db"
    with agent(workspace, [{"content": "ok"}], {"kind": "sqlite", "path": str(db)}) as one:
        one.run("hi")
    assert SqliteStorage(db).resolve(one.thread_id) == one.thread_id
    with pytest.raises(ConfigError, match="not a MessageStorage"):
        agent(workspace, [], object())
    with pytest.raises(ConfigError, match="storage"):
        agent(workspace, [], "postgres")


# -- migration ----------------------------------------------------------------------------------

def test_migrate_copies_every_thread_once_and_leaves_out_what_it_cannot(tmp_path, workspace):
    source = JsonlStorage(tmp_path / "sessions")
    with agent(workspace, [{"content": "Migrated answer."}], source) as first:
        first.run("a zebracrossing to migrate")
    write_thread(source, "second-1", "another thread")
    (tmp_path / "sessions" / "broken-1.jsonl").write_text('{"kind": "meta"}\nnot json\n{}\n')
    busy = source.create_thread("busy-0001")  # a run is writing it
    busy.append({"kind": "meta", "thread_id": "busy-0001", "ts": "t"})

    target = SqliteStorage(tmp_path / "s.db")
    report = migrate(tmp_path / "sessions", target)
    assert sorted(report.migrated) == sorted([first.thread_id, "second-1"])
    assert sorted(t for t, _ in report.failed) == ["broken-1", "busy-0001"]
    assert "line 2 is not valid JSON" in dict(report.failed)["broken-1"]
    assert "a run is writing it" in dict(report.failed)["busy-0001"]
    for thread_id in report.migrated:
        assert target.load_records(thread_id) == source.load_records(thread_id)
    assert [(h.thread_id, h.role) for h in target.search("zebracross")] == \
        [(first.thread_id, "user")]
    jsonl_info = {i.thread_id: i.updated for i in source.list_threads()}
    assert {i.thread_id: i.updated for i in target.list_threads()} == \
        {k: v for k, v in jsonl_info.items() if k in report.migrated}

    busy.close()
    again = migrate(tmp_path / "sessions", target)  # idempotent; the busy one goes in now
    assert again.migrated == ["busy-0001"]
    assert sorted(again.already) == sorted(report.migrated)
    third = migrate(tmp_path / "sessions", target)
    assert third.migrated == [] and len(third.already) == 3
    assert len(target.load_records(first.thread_id)) == len(source.load_records(first.thread_id))

    # the migrated thread resumes from the database
    model = DeterministicClient([{"content": "Resumed from SQLite."}])
    with Agent(model_client=model, cwd=workspace, verify=False, storage=target,
               thread_id=first.thread_id) as resumed:
        assert resumed.run("and then?").final_message == "Resumed from SQLite."
    assert "a zebracrossing to migrate" in json.dumps(model.requests[0])

"""The SQLite store under load: eight agents writing one database at once (threads of one
process, and processes), and a writer killed while it writes, losing nothing that `append`
had acknowledged."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from baseagent import Agent
from baseagent.sessions import list_sessions
from baseagent.storage import load_thread
from baseagent.storage.sqlite import SqliteStorage
from baseagent.testing.deterministic import DeterministicClient
from helpers import REPO

AGENTS = 8
# Records each writer process appends before it stops (the killed one never stops).
RECORDS_PER_WRITER = 300
# Acknowledged records the victim must have written before it is killed.
KILL_AFTER = 150
WAIT_SECONDS = 120

WRITER = """
import sys
from baseagent.storage.sqlite import SqliteStorage

db, thread_id, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
writer = SqliteStorage(db).create_thread(thread_id)
writer.append({"kind": "meta", "thread_id": thread_id, "ts": "2026-01-01T00:00:00.000+00:00",
               "model": "m", "cwd": "/"})
n = 0
while count < 0 or n < count:
    n += 1
    text = f"{thread_id} record {n} " + "padding " * (n % 50)
    writer.append({"kind": "message", "ts": f"2026-01-01T00:00:{n % 60:02d}.000+00:00",
                   "message": {"role": "user" if n % 2 else "assistant", "content": text}})
    print(n, flush=True)  # acknowledged: append() returned
writer.close()
"""


def check_database(path: Path) -> None:
    """SQLite's own checks: the file, and the full-text index against its records."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'records_fts'").fetchone():
            conn.execute("INSERT INTO records_fts (records_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


def test_eight_agents_in_threads_share_one_store(tmp_path):
    storage = SqliteStorage(tmp_path / "sessions.db")
    results: dict[int, Any] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(AGENTS)

    def work(index: int) -> None:
        workspace = tmp_path / f"ws{index}"
        workspace.mkdir()
        steps = [{"tool_calls": [{"name": "shell",
                                  "arguments": {"command": f"echo agent-{index} > out.txt"}}]},
                 {"content": f"agent {index} wrote out.txt"},
                 {"content": f"agent {index} second turn"}]
        try:
            start.wait()
            with Agent(model_client=DeterministicClient(steps), cwd=workspace, verify=False,
                       env={"PATH": os.environ["PATH"]}, storage=storage) as agent:
                first = agent.run(f"task of agent {index}")
                second = agent.run("and again")
            results[index] = (agent.thread_id, first, second)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(AGENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS)
    assert errors == [] and len(results) == AGENTS

    check_database(tmp_path / "sessions.db")
    summaries = {s.thread_id: s for s in list_sessions(storage)}
    assert len(summaries) == AGENTS
    for index, (thread_id, first, second) in results.items():
        assert first.final_message == f"agent {index} wrote out.txt"
        assert second.final_message == f"agent {index} second turn"
        summary = summaries[thread_id]
        assert (summary.turns, summary.last_status, summary.error) == (2, "completed", None)
        assert summary.instructions == [f"task of agent {index}", "and again"]
        history = load_thread(storage, thread_id).history
        assert history[-1]["content"] == f"agent {index} second turn"
        # every thread holds its own records only
        assert f"agent-{index}" in str(history) and \
            not any(f"agent-{other}" in str(history) for other in range(AGENTS) if other != index)
    hits = storage.search("wrote out.txt")
    assert {h.thread_id for h in hits} == {r[0] for r in results.values()}


def test_eight_writer_processes_and_one_killed_mid_write_lose_nothing_acknowledged(tmp_path):
    db = tmp_path / "sessions.db"
    SqliteStorage(db).close()  # created once; the writers race on everything else
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    procs = []
    for index in range(AGENTS):
        count = -1 if index == 0 else RECORDS_PER_WRITER  # writer 0 writes until killed
        with open(tmp_path / f"stderr-{index}", "w") as errors:
            procs.append(subprocess.Popen(
                [sys.executable, "-c", WRITER, str(db), f"proc-{index}", str(count)],
                stdout=subprocess.PIPE, stderr=errors, text=True, env=env))
    victim = procs[0]
    acked: list[int] = []
    deadline = time.monotonic() + WAIT_SECONDS
    assert victim.stdout is not None
    while len(acked) < KILL_AFTER:
        line = victim.stdout.readline()
        assert line, f"the writer stopped early: {(tmp_path / 'stderr-0').read_text()}"
        acked.append(int(line))
        assert time.monotonic() < deadline
    os.kill(victim.pid, signal.SIGKILL)  # it is appending as fast as it can: mid-write
    # what it acknowledged before the kill (read through the same buffered pipe)
    acked += [int(line) for line in victim.stdout.read().split()]
    assert victim.wait(WAIT_SECONDS) == -signal.SIGKILL
    for index, proc in enumerate(procs[1:], 1):
        out, _ = proc.communicate(timeout=WAIT_SECONDS)
        assert proc.returncode == 0, (tmp_path / f"stderr-{index}").read_text()
        assert out.split()[-1] == str(RECORDS_PER_WRITER)

    check_database(db)
    storage = SqliteStorage(db)
    records = storage.load_records("proc-0")
    written = [int(r["message"]["content"].split()[2]) for r in records if r["kind"] == "message"]
    # every acknowledged record is there, in order; at most one more (committed, then
    # killed before it was acknowledged)
    assert written[:len(acked)] == acked == list(range(1, len(acked) + 1))
    assert len(written) - len(acked) in (0, 1)
    for index in range(1, AGENTS):
        assert len(storage.load_records(f"proc-{index}")) == RECORDS_PER_WRITER + 1
    # the killed writer's lock died with it: the thread can be written again
    again = storage.create_thread("proc-0")
    again.append({"kind": "message", "ts": "t", "message": {"role": "user", "content": "after"}})
    again.close()
    assert storage.load_records("proc-0")[-1]["message"]["content"] == "after"
    assert {h.thread_id for h in storage.search("proc-5 record 299")} == {"proc-5"}

"""`baseagent batch` with `[storage] kind = "sqlite"`: every worker process records its
tasks into the one database, and each task's trajectories are read back from it."""
from __future__ import annotations

import json
from pathlib import Path

from baseagent.storage.sqlite import SqliteStorage
from batch_helpers import responder, results, run_batch, write_tasks

TASKS = 4


def test_batch_workers_share_one_sqlite_store(tmp_path: Path, scripted_server, home: Path):
    db = tmp_path / "shared.db"
    (home / ".baseagent").mkdir()
    (home / ".baseagent" / "config.toml").write_text(
        f'[storage]\nkind = "sqlite"\npath = "{db}"\n')
    scripts = {f"task {n}": [{"tool_calls": [{"name": "shell",
                                              "arguments": {"command": f"echo {n} > n.txt"}}]},
                             {"content": f"done {n}"}] for n in range(TASKS)}
    server = scripted_server(responder(scripts))
    tasks = write_tasks(tmp_path / "tasks.jsonl",
                        [{"id": f"t{n}", "instruction": f"task {n}"} for n in range(TASKS)])
    out = tmp_path / "out"
    proc = run_batch(tasks, out, server.api_base, "--workers", "2", "--no-verify",
                     home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {r["id"]: r for r in results(out)}
    assert {k: r["status"] for k, r in rows.items()} == {f"t{n}": "passed" for n in range(TASKS)}
    storage = SqliteStorage(db)
    assert sorted(i.thread_id for i in storage.list_threads()) == \
        sorted(r["thread_id"] for r in rows.values())
    for n in range(TASKS):
        row = rows[f"t{n}"]
        assert row["session"] == f"{db}#{row['thread_id']}" and "export_error" not in row
        assert not (Path(row["task_dir"]) / f"{row['thread_id']}.jsonl").exists()
        sharegpt = json.loads((Path(row["task_dir"]) / "sharegpt.json").read_text())
        assert sharegpt["conversations"][-1] == {"from": "gpt", "value": f"done {n}"}
    assert {h.thread_id for h in storage.search("done")} == {r["thread_id"] for r in rows.values()}

"""`baseagent batch --backend ray`: the same tasks on a local Ray instance (Ray is the
`ray` extra; .ci/run installs it, so this runs in CI; without it the test skips, saying
so), and the one-line error without it."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from batch_helpers import requests_per_instruction, responder, results, run_batch, \
    write_task, write_tasks
from helpers import require

RAY_MISSING = "Ray is not installed (the `ray` extra): pip install -e '.[test,ray]'"


def test_four_tasks_on_a_local_ray_instance(tmp_path: Path, scripted_server,
                                            home: Path) -> None:
    require(importlib.util.find_spec("ray") is not None, RAY_MISSING)
    template = tmp_path / "template"
    template.mkdir()
    (template / "README").write_text("template\n")
    tasks = [{"id": f"r{n}", "instruction": f"ray task {n}", "workspace": str(template),
              "check": f'grep -qx "hello {n}" out_{n}.txt && test "$(ls | tr "\\n" " ")" = '
                       f'"README out_{n}.txt "'} for n in range(4)]
    server = scripted_server(responder({t["instruction"]: write_task(n)
                                        for n, t in enumerate(tasks)}))
    out = tmp_path / "out"
    proc = run_batch(write_tasks(tmp_path / "tasks.jsonl", tasks), out, server.api_base,
                     "--backend", "ray", "--workers", "2", "--json", home=home, cwd=tmp_path,
                     timeout=420)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # Ray's own output stayed off stdout
    assert (summary["backend"], summary["tasks"], summary["passed"]) == ("ray", 4, 4)
    done = results(out)
    assert sorted(r["id"] for r in done) == ["r0", "r1", "r2", "r3"]
    assert all(r["status"] == "passed" for r in done), done
    assert len({r["workspace"] for r in done}) == 4
    assert len({r["worker"] for r in done}) <= 2  # actors run many tasks each
    assert (template / "README").read_text() == "template\n" and \
        sorted(p.name for p in template.iterdir()) == ["README"]
    assert all(v == 3 for v in requests_per_instruction(server).values())
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 4
    for record in done:
        assert (Path(record["task_dir"]) / "atif.json").is_file()


def test_without_ray_the_ray_backend_is_one_clear_line(tmp_path: Path, home: Path) -> None:
    shim = tmp_path / "no-ray"
    (shim / "ray").mkdir(parents=True)
    (shim / "ray" / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    proc = run_batch(write_tasks(tmp_path / "t.jsonl", [{"instruction": "x"}]),
                     tmp_path / "out", "http://127.0.0.1:9/v1", "--backend", "ray",
                     home=home, cwd=tmp_path, env_extra={"PYTHONPATH": str(shim)})
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.strip() == \
        "baseagent: error: --backend ray needs Ray: pip install 'baseagent[ray]'"

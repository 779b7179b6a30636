"""docs/BATCH.md's library example, as printed: it must keep its `__main__` guard (the local
backend spawns workers that import the main module again) and run as a script against
the scripted server, the model and server coming from BASEAGENT_* as it says."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from batch_helpers import responder, results, write_task, write_tasks
from helpers import REPO, agent_env

DOC = REPO / "docs" / "BATCH.md"


def example() -> str:
    """The python block of the "As a library" section."""
    section = DOC.read_text(encoding="utf-8").split("\n## As a library\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, "the section should hold one python example"
    return blocks[0]


def _is_main_guard(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
            and [type(op) for op in node.test.ops] == [ast.Eq]
            and isinstance(node.test.comparators[0], ast.Constant)
            and node.test.comparators[0].value == "__main__")


def test_the_example_does_its_work_only_under_the_main_guard():
    """What a spawned worker runs when it imports the script: imports, nothing else."""
    tree = ast.parse(example())
    outside = [node for node in tree.body
               if not isinstance(node, (ast.Import, ast.ImportFrom)) and not _is_main_guard(node)]
    assert not outside, f"work outside the __main__ guard: {[ast.unparse(n) for n in outside]}"
    guards = [node for node in tree.body if _is_main_guard(node)]
    assert len(guards) == 1
    calls = [n.func.id for n in ast.walk(guards[0])
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert "run_batch" in calls


def test_the_example_runs_as_printed(tmp_path: Path, scripted_server, home: Path) -> None:
    tasks = [{"id": f"t{n}", "instruction": f"doc task {n}",
              "check": f'grep -qx "hello {n}" out_{n}.txt'} for n in range(2)]
    server = scripted_server(responder({t["instruction"]: write_task(n)
                                        for n, t in enumerate(tasks)}))
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    script = tmp_path / "exp1.py"
    script.write_text(example(), encoding="utf-8")
    # PYTHONPATH: this checkout, as `pip install -e .` would make it importable
    env = agent_env(home, BASEAGENT_MODEL="openai/scripted",
                    BASEAGENT_API_BASE=server.api_base, BASEAGENT_VERIFY="false",
                    PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "2 of 2 tasks passed\n", proc.stderr[-3000:]
    out = tmp_path / "runs" / "exp1"
    done = results(out)
    assert sorted((r["id"], r["status"]) for r in done) == [("t0", "passed"), ("t1", "passed")]
    assert json.loads((out / "summary.json").read_text())["passed"] == 2

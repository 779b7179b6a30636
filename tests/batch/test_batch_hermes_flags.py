"""hermes-agent's batch_runner flags on `baseagent batch`: --dataset_file, --run_name
(= --out data/NAME), --num_workers, --batch_size (only numbers trajectories.jsonl's
batches), each a clear one-line error when misused."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from batch_helpers import responder, results, write_tasks
from helpers import AGENT, agent_env


def hermes_batch(cwd: Path, home: Path, api_base: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(AGENT), "batch", *flags, "--model",
                           "openai/scripted", "--api-base", api_base, "--no-verify"],
                          cwd=cwd, env=agent_env(home), capture_output=True, text=True,
                          timeout=240, stdin=subprocess.DEVNULL)


def test_batch_runner_flags_run_the_batch(tmp_path: Path, scripted_server, home: Path) -> None:
    server = scripted_server(responder({f"p{n}": [{"content": f"answer {n}"}]
                                        for n in range(3)}))
    write_tasks(tmp_path / "prompts.jsonl", [{"prompt": f"p{n}"} for n in range(3)])
    proc = hermes_batch(tmp_path, home, server.api_base, "--dataset_file", "prompts.jsonl",
                        "--run_name", "first_run", "--num_workers", "2", "--batch_size", "2",
                        "--json")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "data" / "first_run"  # where hermes writes a run
    assert sorted(r["status"] for r in results(out)) == ["passed"] * 3
    assert json.loads(proc.stdout)["workers"] == 2
    lines = [json.loads(line) for line in
             (out / "trajectories.jsonl").read_text().splitlines()]
    assert [(line["prompt_index"], line["metadata"]["batch_num"]) for line in lines] == \
        [(0, 0), (1, 0), (2, 1)]
    assert lines[2]["conversations"][-1] == {"from": "gpt", "value": "answer 2"}


def test_misused_flags_are_one_line_errors(tmp_path: Path, home: Path) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", [{"prompt": "x"}])
    base = "http://127.0.0.1:9/v1"
    cases = [
        (["--run_name", "r"], "no tasks: give TASKS.jsonl (or --dataset_file FILE)"),
        ([str(tasks)], "no output directory: give --out DIR (or --run_name NAME)"),
        ([str(tasks), "--out", "o", "--run_name", "r"],
         "give --out DIR or --run_name NAME (= --out data/NAME), not both"),
        ([str(tasks), "--dataset_file", "other.jsonl", "--out", "o"],
         "give the tasks file once: TASKS.jsonl or --dataset_file"),
        (["--dataset_file", str(tasks), "--run_name", "../up"],
         "--run_name '../up': a plain name, no '/'"),
        (["--dataset_file", str(tasks), "--out", "o", "--batch_size", "0"],
         "--batch_size must be at least 1"),
    ]
    for flags, message in cases:
        proc = hermes_batch(tmp_path, home, base, *flags)
        assert (proc.returncode, proc.stdout) == (2, ""), flags
        assert proc.stderr.strip() == f"baseagent: error: {message}", flags
    assert not (tmp_path / "o").exists() and not (tmp_path / "data").exists()


def test_hermes_max_turns_flag_limits_each_task(tmp_path: Path, scripted_server,
                                               home: Path) -> None:
    call = {"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]}
    server = scripted_server(responder({"p0": [call, call, {"content": "late"}]}))
    write_tasks(tmp_path / "prompts.jsonl", [{"prompt": "p0"}])
    proc = hermes_batch(tmp_path, home, server.api_base, "--dataset_file", "prompts.jsonl",
                        "--run_name", "turns", "--max_turns", "1")
    assert proc.returncode in (0, 1), proc.stderr
    (result,) = results(tmp_path / "data" / "turns")
    assert result["agent_status"] == "limit"
    assert len(server.requests) == 1

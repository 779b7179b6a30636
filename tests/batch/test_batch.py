"""`baseagent batch` end to end: the real CLI, real worker processes, the real agent through
litellm against one scripted model server shared by every task (each task's script keyed on
its instruction)."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from baseagent.output.events import parse_event
from batch_helpers import (children_of, processes_running, requests_per_instruction,
                           responder, results, run_batch, start_batch, tree_snapshot,
                           wait_for, write_task, write_tasks)
from reliability import is_alive


def make_template(tmp_path: Path) -> Path:
    template = tmp_path / "template"
    (template / "sub").mkdir(parents=True)
    (template / "README").write_text("the template\n")
    (template / "sub" / "data.txt").write_text("data\n")
    return template


def copy_task(n: int, template: Path) -> dict:
    # The check proves the copy holds the template and this task's file, and nothing of
    # any other task.
    return {"id": f"t{n}", "instruction": f"task {n}: write out_{n}.txt",
            "workspace": str(template), "metadata": {"n": n},
            "check": f'grep -qx "hello {n}" out_{n}.txt && test "$(ls | tr "\\n" " ")" = '
                     f'"README out_{n}.txt sub "'}


def test_eight_tasks_two_workers_isolated_copies_then_a_rerun_runs_only_new_tasks(
        tmp_path: Path, scripted_server, home: Path) -> None:
    template = make_template(tmp_path)
    before = tree_snapshot(template)
    tasks = [copy_task(n, template) for n in range(8)]
    scripts = {t["instruction"]: write_task(n) for n, t in enumerate(tasks)}
    server = scripted_server(responder(scripts))
    out = tmp_path / "out"
    task_file = write_tasks(tmp_path / "tasks.jsonl", tasks)

    proc = run_batch(task_file, out, server.api_base, "--workers", "2", "--json",
                     home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout  # stdout: the summary line and nothing else
    summary = json.loads(lines[0])
    assert (summary["tasks"], summary["passed"], summary["failed"], summary["errored"]) == \
        (8, 8, 0, 0)
    assert summary["tokens"]["input_tokens"] > 0 and summary["task_time_p95_s"] is not None
    assert json.loads((out / "summary.json").read_text()) == summary
    # Progress from the first second (stderr is no terminal: plain lines): what starts,
    # then each task as it starts and as it ends.
    progress = [line for line in proc.stderr.splitlines() if line.startswith("baseagent batch")]
    assert progress[0] == ("baseagent batch: 8 tasks to run; starting 2 workers (each loads "
                           "the model client first)"), proc.stderr
    for n in range(8):
        started = next(i for i, line in enumerate(progress) if line.endswith(f"t{n} started"))
        ended = next(i for i, line in enumerate(progress) if f" t{n} passed " in line)
        assert started < ended, progress

    done = results(out)
    assert sorted(r["id"] for r in done) == [f"t{n}" for n in range(8)]
    assert all(r["status"] == "passed" and r["check"]["passed"] for r in done), done
    assert len({r["workspace"] for r in done}) == 8
    assert {Path(r["workspace"]).parent for r in done} == {out / "work"}
    # Two worker processes ran all eight tasks (litellm imported twice, not eight times).
    assert len({r["worker"] for r in done}) <= 2
    assert tree_snapshot(template) == before  # the template is never touched

    for record in done:
        task_dir = Path(record["task_dir"])
        events = [json.loads(line) for line in (task_dir / "events.jsonl").read_text().splitlines()]
        for event in events:
            parse_event(event)
        assert events[0] == {"type": "thread.started", "thread_id": record["thread_id"]}
        assert events[-1]["type"] == "turn.completed"
        assert Path(record["session"]).is_file()
        atif = json.loads((task_dir / "atif.json").read_text())
        assert atif["schema_version"] == "ATIF-v1.7" and atif["session_id"] == record["thread_id"]
        assert json.loads((task_dir / "sharegpt.json").read_text())["conversations"]
    trajectories = [json.loads(l) for l in (out / "trajectories.jsonl").read_text().splitlines()]
    assert [t["prompt_index"] for t in trajectories] == list(range(8))
    first = trajectories[0]
    assert first["completed"] is True and first["api_calls"] == 3
    assert first["tool_stats"]["write_file"] == {"count": 1, "success": 1, "failure": 0}
    assert first["tool_stats"]["apply_patch"]["count"] == 0  # every tool, same schema
    assert [c["from"] for c in first["conversations"]][:3] == ["system", "human", "human"]

    # Two tasks more, same --out: only those two run.
    asked = requests_per_instruction(server)
    tasks += [copy_task(n, template) for n in (8, 9)]
    scripts.update({t["instruction"]: write_task(n) for n, t in enumerate(tasks)})
    write_tasks(task_file, tasks)
    proc = run_batch(task_file, out, server.api_base, "--workers", "2", home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "10 tasks: 10 passed" in proc.stdout
    after = requests_per_instruction(server)
    assert {k: v for k, v in after.items() if after[k] != asked.get(k)} == {
        tasks[8]["instruction"]: 3, tasks[9]["instruction"]: 3}
    assert sorted(r["id"] for r in results(out)) == sorted(f"t{n}" for n in range(10))
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 10


def test_a_sigkilled_batch_resumes_losing_no_finished_task_and_rerunning_none(
        tmp_path: Path, scripted_server, home: Path) -> None:
    tasks = [{"id": f"k{n}", "instruction": f"slow task {n}",
              "check": f"grep -qx 'hello {n}' out_{n}.txt"} for n in range(6)]
    scripts = {}
    for n, task in enumerate(tasks):
        steps = write_task(n)
        steps[-1] = {**steps[-1], "delay": 1.0}
        scripts[task["instruction"]] = steps
    server = scripted_server(responder(scripts))
    out = tmp_path / "out"
    task_file = write_tasks(tmp_path / "tasks.jsonl", tasks)

    proc = start_batch(task_file, out, server.api_base, "--workers", "2", home=home, cwd=tmp_path)
    try:
        wait_for(lambda: len(results(out)) >= 2, 180, "two finished tasks")
        workers = children_of(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    finished_before = {r["id"] for r in results(out)}
    assert finished_before and len(finished_before) < 6
    # Workers notice their driver is gone and stop (they get EOF on its pipe).
    wait_for(lambda: not any(is_alive(pid) for pid in workers), 30, "orphaned workers to exit")
    asked = requests_per_instruction(server)

    rerun = run_batch(task_file, out, server.api_base, "--workers", "2", home=home, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "6 tasks: 6 passed" in rerun.stdout
    ids = [r["id"] for r in results(out)]
    assert sorted(ids) == sorted(t["id"] for t in tasks)  # each exactly once
    after = requests_per_instruction(server)
    for task in tasks:
        if task["id"] in finished_before:  # finished before the kill: not asked again
            assert after[task["instruction"]] == asked[task["instruction"]]


def test_a_hanging_task_times_out_a_crashing_one_is_retried_and_the_rest_finish(
        tmp_path: Path, scripted_server, home: Path) -> None:
    tasks = [
        {"id": "hang", "instruction": "hang"},
        {"id": "crash", "instruction": "crash", "setup": "kill -9 $PPID"},  # kills its worker
        {"id": "ok1", "instruction": "task 1", "check": "test -e out_1.txt"},
        {"id": "ok2", "instruction": "task 2", "check": "test -e out_2.txt"},
    ]
    scripts = {"hang": [{"tool_calls": [{"name": "shell",
                                         "arguments": {"command": "sleep 302"}}]}],
               "task 1": write_task(1), "task 2": write_task(2)}
    server = scripted_server(responder(scripts))
    out = tmp_path / "out"
    proc = run_batch(write_tasks(tmp_path / "tasks.jsonl", tasks), out, server.api_base,
                     "--workers", "2", "--task-timeout", "4", "--retries", "1", "--json",
                     home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    by_id = {r["id"]: r for r in results(out)}
    assert len(results(out)) == 4
    assert by_id["hang"]["status"] == "error"
    assert by_id["hang"]["error"] == "task timed out after 4 s"
    assert by_id["hang"]["attempts"] == 2  # a timeout is an infrastructure failure: retried
    assert requests_per_instruction(server)["hang"] == 2
    assert by_id["crash"]["status"] == "error" and by_id["crash"]["attempts"] == 2
    assert by_id["crash"]["error"] == "the worker process died (killed by SIGKILL)"
    assert by_id["ok1"]["status"] == by_id["ok2"]["status"] == "passed"
    summary = json.loads(proc.stdout)
    assert (summary["passed"], summary["errored"]) == (2, 2)
    assert not processes_running("sleep 302")  # the cancelled command did not outlive it


def test_at_a_task_timeout_the_check_still_runs_on_the_workspace_the_turn_left(
        tmp_path: Path, scripted_server, home: Path) -> None:
    """A turn that wrote what the check wants and then hangs past --task-timeout is
    `passed` (`timed_out` says how it ended); one that wrote the wrong thing is the timeout
    error it was, with the check's result kept."""
    hang = {"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 303"}}]}
    tasks = [{"id": "good", "instruction": "good then hang", "check": "grep -q yes out_1.txt"},
             {"id": "bad", "instruction": "bad then hang", "check": "grep -q yes out_2.txt"}]
    scripts = {"good then hang": [write_task(1, "yes\n")[0], hang],
               "bad then hang": [write_task(2, "no\n")[0], hang]}
    server = scripted_server(responder(scripts))
    out = tmp_path / "out"
    proc = run_batch(write_tasks(tmp_path / "tasks.jsonl", tasks), out, server.api_base,
                     "--workers", "2", "--task-timeout", "4", "--json", home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    by_id = {r["id"]: r for r in results(out)}
    good, bad = by_id["good"], by_id["bad"]
    assert good["status"] == "passed" and good["timed_out"] is True
    assert good["agent_status"] == "interrupted" and good["check"]["passed"] is True
    assert good["error"] == ("task timed out after 4 s; the check passed on the workspace as "
                             "the turn left it")
    assert bad["status"] == "error" and bad["error"] == "task timed out after 4 s"
    assert bad["check"]["passed"] is False and bad["attempts"] == 1
    assert not processes_running("sleep 303")


def test_sigint_cancels_running_tasks_records_them_interrupted_and_starts_no_more(
        tmp_path: Path, scripted_server, home: Path) -> None:
    tasks = [{"id": "a", "instruction": "long a"}, {"id": "b", "instruction": "long b"},
             {"id": "c", "instruction": "task 3"}, {"id": "d", "instruction": "task 4"}]
    long_step = [{"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 301"}}]},
                 {"content": "done"}]
    server = scripted_server(responder({"long a": long_step, "long b": long_step,
                                        "task 3": write_task(3), "task 4": write_task(4)}))
    out = tmp_path / "out"
    proc = start_batch(write_tasks(tmp_path / "tasks.jsonl", tasks), out, server.api_base,
                       "--workers", "2", "--json", home=home, cwd=tmp_path)
    try:
        wait_for(lambda: len(processes_running("sleep 301", exact=True)) >= 2, 180,
                 "both long commands")
        os.kill(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert {r["id"]: r["status"] for r in results(out)} == {"a": "interrupted",
                                                            "b": "interrupted"}
    summary = json.loads(stdout)
    assert summary["batch_interrupted"] and (summary["interrupted"], summary["not_run"]) == (2, 2)
    assert set(requests_per_instruction(server)) == {"long a", "long b"}
    assert not processes_running("sleep 301")


def test_bad_task_file_and_missing_api_key_are_one_line_and_exit_2(
        tmp_path: Path, scripted_server, home: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instruction": "fine"}\n{"id": 3}\n')
    proc = run_batch(bad, tmp_path / "out", "http://127.0.0.1:9/v1", home=home, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.strip() == ("baseagent: error: line 2: instruction (or hermes' prompt) "
                                   "must be a non-empty string")
    assert not (tmp_path / "out").exists()

    server = scripted_server([])
    proc = run_batch(write_tasks(tmp_path / "t.jsonl", [{"instruction": "x"}]), tmp_path / "o2",
                     server.api_base, "--workers", "1", home=home, cwd=tmp_path,
                     env_drop=("OPENAI_API_KEY",))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.strip().splitlines()[-1] == \
        "baseagent: error: missing API key for openai: set OPENAI_API_KEY (or api_key in config)"
    assert not server.requests


def test_run_flags_are_checked_like_a_single_runs_and_count_before_batch_too(
        tmp_path: Path, home: Path) -> None:
    import subprocess
    import sys

    from helpers import AGENT, agent_env

    tasks = write_tasks(tmp_path / "t.jsonl", [{"instruction": "x"}])
    for argv in (["batch", str(tasks), "--out", "o", "--max-iterations", "0"],
                 ["--max-iterations", "0", "batch", str(tasks), "--out", "o"]):
        proc = subprocess.run([sys.executable, str(AGENT), *argv], cwd=tmp_path,
                              env=agent_env(home), capture_output=True, text=True, timeout=60)
        assert (proc.returncode, proc.stdout) == (2, ""), argv
        assert proc.stderr.startswith("baseagent: error: invalid configuration: "
                                      "max_iterations:"), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_toolset_tool_choice_and_prompt_flags_reach_every_task(
        tmp_path: Path, scripted_server, home: Path) -> None:
    """The run flags added since batch landed apply to batch tasks too (given after or
    before `batch`), and a bad toolset name is the single run's one-line error."""
    server = scripted_server(responder({"t1": [{"content": "one"}], "t2": [{"content": "two"}]}))
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "instruction": "t1"},
                                                   {"id": "b", "instruction": "t2"}])
    proc = run_batch(tasks, tmp_path / "out", server.api_base, "--tools", "read",
                     "--disable-tools", "list_dir", "--tool-choice", "none",
                     "--append-system-prompt", "Answer in one word.", "--json",
                     home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {r["id"]: r["status"] for r in results(tmp_path / "out")} == \
        {"a": "passed", "b": "passed"}  # no check: a completed run passes
    assert len(server.requests) == 2
    for body in server.requests:
        assert [t["function"]["name"] for t in body["tools"]] == ["read_file", "grep_files"]
        assert body["tool_choice"] == "none"
        assert body["messages"][0]["content"].endswith("\n\nAnswer in one word.\n")
    bad = run_batch(tasks, tmp_path / "out2", server.api_base, "--tools", "reed",
                    home=home, cwd=tmp_path)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert "unknown tool or toolset 'reed'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1

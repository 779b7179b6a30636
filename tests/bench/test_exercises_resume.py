"""bench/exercises.py: a peer row stopped part way goes on with --resume, keeping only the
tasks measured under the same peer code, model, server and exercise set."""
from __future__ import annotations

import json
import sys

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
import exercises  # noqa: E402

STAMP = {"harness": "h1", "model": "openai/local", "server": "llama-server",
         "exercises": "dev"}


def _three():
    return exercises.load_exercises(exercises.EXERCISES, ["hamming", "pangram", "series"])


def _measure(calls: list[str], stop_at: str | None = None):
    def one(ex):
        if ex.name == stop_at:
            raise KeyboardInterrupt  # the session ends part way through the row
        calls.append(ex.name)
        return exercises.TaskResult(ex.name, ex.name != "series", "passed", model_calls=1)
    return one


def test_a_stopped_row_goes_on_where_it_left_off(tmp_path):
    log, calls = tmp_path / "mini-tool.tasks.jsonl", []
    with pytest.raises(KeyboardInterrupt):
        exercises.run_peer_row("mini-tool", _three(), _measure(calls, stop_at="pangram"), log,
                               STAMP, None, lambda _m: None)
    assert calls == ["hamming"] and len(log.read_text().splitlines()) == 1
    calls.clear()
    results, kept = exercises.run_peer_row("mini-tool", _three(), _measure(calls), log, STAMP,
                                           exercises.kept_tasks(log, STAMP), lambda _m: None)
    assert calls == ["pangram", "series"] and kept == 1  # hamming is not measured again
    assert [r["name"] for r in results] == ["hamming", "pangram", "series"]
    assert [r["solved"] for r in results] == [True, True, False]
    assert len(log.read_text().splitlines()) == 3


def test_without_resume_the_row_starts_again(tmp_path):
    log, calls = tmp_path / "alone.tasks.jsonl", []
    exercises.run_peer_row("alone", _three(), _measure(calls), log, STAMP, None,
                           lambda _m: None)
    calls.clear()
    _, kept = exercises.run_peer_row("alone", _three(), _measure(calls), log, STAMP, None,
                                     lambda _m: None)
    assert kept == 0 and calls == ["hamming", "pangram", "series"]
    assert len(log.read_text().splitlines()) == 3


@pytest.mark.parametrize("key", sorted(STAMP))
def test_tasks_measured_differently_are_refused_not_kept(tmp_path, key):
    log = tmp_path / "mini-text.tasks.jsonl"
    exercises.run_peer_row("mini-text", _three()[:1], _measure([]), log, STAMP, None,
                           lambda _m: None)
    with pytest.raises(ValueError, match=f"another {key}"):
        exercises.kept_tasks(log, {**STAMP, key: "changed"})


def test_a_damaged_task_log_is_refused(tmp_path):
    log = tmp_path / "alone.tasks.jsonl"
    log.write_text('{"harness": "h1", "resu\n')
    with pytest.raises(ValueError, match="not a task record"):
        exercises.kept_tasks(log, STAMP)


def test_resume_end_to_end_with_the_model_alone(scripted_server, tmp_path):
    solved = ("hamming.py\n```python\ndef distance(strand_a, strand_b):\n"
              "    if len(strand_a) != len(strand_b):\n"
              "        raise ValueError(\"Strands must be of equal length.\")\n"
              "    return sum(a != b for a, b in zip(strand_a, strand_b))\n```")
    server = scripted_server([{"content": solved}])
    work = tmp_path / "w"
    common = ["run", "--rows", "alone", "--only", "hamming", "--model", "openai/scripted",
              "--api-base", server.api_base, "--work", str(work), "--no-record"]
    assert exercises.main(common) == 0
    assert len(server.requests) == 1
    assert exercises.main([*common, "--resume"]) == 0
    assert len(server.requests) == 1  # the solved task was kept, not asked again
    run = json.loads((work / "run.json").read_text())
    assert run["rows"]["alone"][0]["solved"]
    assert "resumed: 1 of the alone row's tasks" in run["note"]


@pytest.mark.parametrize("bench_set", ["exercises", "repos"])
def test_resume_of_an_agent_row_at_another_commit_is_refused_before_it_runs(tmp_path,
                                                                            capsys, bench_set):
    import repos

    main = exercises.main if bench_set == "exercises" else repos.main
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "stamp.json").write_text(json.dumps(
        {"commit": "0000000", "extra": [], "model": "openai/local", "server": "http://x",
         "exercises": "dev" if bench_set == "exercises" else "repos"}))
    with pytest.raises(SystemExit):
        main(["run", "--rows", "agent", "--resume", "--api-base", "http://x",
              "--work", str(tmp_path)])
    assert "the agent row was measured with another commit" in capsys.readouterr().err


def test_a_row_that_cannot_go_on_is_refused_before_any_row_runs(scripted_server, tmp_path,
                                                                 capsys):
    server = scripted_server([{"content": "nothing"}])
    work = tmp_path / "w"
    work.mkdir()
    (work / "mini-text.tasks.jsonl").write_text(json.dumps(
        {**STAMP, "result": {"name": "hamming"}}) + "\n")  # another harness, server, model
    with pytest.raises(SystemExit):
        exercises.main(["run", "--rows", "alone,mini-text", "--only", "hamming", "--model",
                        "openai/scripted", "--api-base", server.api_base, "--work", str(work),
                        "--no-record", "--resume"])
    assert server.requests == []  # the alone row did not run first
    assert "measured with another" in capsys.readouterr().err

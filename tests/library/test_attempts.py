"""--attempts N through the scripted model server: N attempts in copies of the workspace,
the one with the best evidence applied (core/verification/attempts.py, docs/ATTEMPTS.md)."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent
from baseagent.core.verification.attempts import (Change, apply_changes, change_size, changes_between,
                                     listing, runs_in_parallel)
from baseagent.testing.keyed import KeyedResponder
from helpers import parse_jsonl, run_agent

TEST_FILE = """\
from calc import add


def test_small():
    assert add(1, 2) == 3


def test_negative():
    assert add(-1, -2) == -3
"""
TASK = "Make add(a, b) in calc.py return the sum. The tests: `python -m pytest -q`"
RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
OTHER_WRONG = "def add(a, b):\n    return 3\n"


def by_attempt(scripts: dict[int, list[dict[str, Any]]]) -> KeyedResponder:
    """Each attempt's own script, told apart by its copy's path (attempt-K) in the
    environment context."""
    return KeyedResponder(scripts.get, key_of=by_attempt_number)  # type: ignore[arg-type]


def by_attempt_number(body: dict[str, Any]) -> int:
    match = re.search(r"attempt-(\d+)", json.dumps(body["messages"][:2]))
    return int(match.group(1)) if match else 0


def writes(code: str, answer: str, test: bool = True) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"file_path": "calc.py", "content": code}}]}]
    if test:
        steps.append({"tool_calls": [{"name": "shell", "arguments": {
            "command": f"{sys.executable} -m pytest -q -p no:cacheprovider"}}]})
    steps.append({"content": answer})
    return steps


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
    (ws / "test_calc.py").write_text(TEST_FILE)
    (ws / "notes.txt").write_text("left alone\n")
    return ws


def agent_for(server: Any, ws: Path, tmp_path: Path, events: list[Any], **options: Any) -> Agent:
    return Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
                 cwd=ws, verify=False, session_dir=tmp_path / "sessions",
                 on_event=events.append, **options)


def test_the_attempt_whose_tests_pass_is_applied(scripted_server, project, tmp_path):
    server = scripted_server(by_attempt({1: writes(WRONG, "subtracted"),
                                         2: writes(RIGHT, "added"),
                                         3: writes(OTHER_WRONG, "three")}))
    events: list[Any] = []
    with agent_for(server, project, tmp_path, events, attempts=3,
                   attempts_parallel="off") as agent:
        result = agent.run(TASK.replace("python", sys.executable))
    assert result.status == "completed", result.error
    assert (project / "calc.py").read_text() == RIGHT
    assert (project / "notes.txt").read_text() == "left alone\n"
    assert result.final_message == "added"
    lines = [json.loads(e.model_dump_json()) for e in events]
    texts = [e["item"]["text"] for e in lines if e["type"] == "item.completed"
             and e["item"]["type"] == "reasoning"]
    assert [t.split(":")[0] for t in texts[:3]] == \
        ["attempt 1 of 3", "attempt 2 of 3", "attempt 3 of 3"]
    assert texts[3].startswith("applied attempt 2 of 3: its tests passed")
    # Every attempt's own items are in the one stream, with ids unique in it.
    writes_seen = [e["item"] for e in lines if e["type"] == "item.completed"
                   and e["item"]["type"] == "file_change"]
    assert len(writes_seen) == 3
    ids = [e["item"]["id"] for e in lines if e["type"] == "item.completed"]
    assert len(ids) == len(set(ids))
    messages = [e["item"]["text"] for e in lines if e["type"] == "item.completed"
                and e["item"]["type"] == "agent_message"]
    assert messages == ["subtracted", "added", "three", "added"]
    assert [e["type"] for e in lines].count("turn.started") == 1
    end = lines[-1]
    assert end["type"] == "turn.completed"
    verdict = end["attempts"]
    assert verdict["winner"] == 2 and verdict["count"] == 3 and verdict["parallel"] is False
    assert [r["tests"]["exit_code"] == 0 for r in verdict["results"]] == [False, True, False]
    assert verdict["results"][1]["tests"]["passed"] == 2
    assert verdict["results"][1]["changes"] == [{"path": "calc.py", "kind": "update"}]
    # The thread goes on from the winner's conversation.
    assert any(m.get("content") == "added" for m in agent.history)
    assert not any(m.get("content") == "subtracted" for m in agent.history)
    # Attempts after the first are sampled above temperature 0 (at 0 they would repeat it).
    temperatures = {by_attempt_number(body): body.get("temperature")
                    for body in server.requests}
    assert temperatures[1] in (None, 0) and temperatures[2] == temperatures[3] == 0.7
    # The session record holds every attempt's items.
    record = next((tmp_path / "sessions").glob("*.jsonl")).read_text()
    assert "subtracted" in record and "three" in record


def test_ties_go_to_the_smaller_change(scripted_server, project, tmp_path):
    padded = RIGHT + "\n\n# an extra comment\n# and another\n"
    server = scripted_server(by_attempt({1: writes(padded, "padded"),
                                         2: writes(RIGHT, "plain")}))
    events: list[Any] = []
    with agent_for(server, project, tmp_path, events, attempts=2) as agent:
        result = agent.run(TASK.replace("python", sys.executable))
    assert result.status == "completed", result.error
    assert (project / "calc.py").read_text() == RIGHT
    verdict = json.loads(events[-1].model_dump_json())["attempts"]
    assert verdict["winner"] == 2
    assert "smaller change" in verdict["reason"]


def test_attempts_at_once_on_a_remote_provider(scripted_server, project, tmp_path):
    server = scripted_server(by_attempt({1: writes(WRONG, "subtracted"),
                                         2: writes(RIGHT, "added"),
                                         3: writes(OTHER_WRONG, "three")}))
    events: list[Any] = []
    with agent_for(server, project, tmp_path, events, attempts=3,
                   attempts_parallel="on") as agent:
        result = agent.run(TASK.replace("python", sys.executable))
    assert (project / "calc.py").read_text() == RIGHT
    lines = [json.loads(e.model_dump_json()) for e in events]
    verdict = lines[-1]["attempts"]
    assert verdict["parallel"] is True and verdict["winner"] == 2
    assert result.final_message == "added"
    # Each attempt's items stay together, in attempt order, after its marker.
    texts = [e["item"]["text"] for e in lines if e["type"] == "item.completed"
             and e["item"]["type"] in ("reasoning", "agent_message")]
    assert texts[:6] == ["attempt 1 of 3, at once with the others: in its own copy of the "
                         "workspace", "subtracted",
                         "attempt 2 of 3, at once with the others: in its own copy of the "
                         "workspace", "added",
                         "attempt 3 of 3, at once with the others: in its own copy of the "
                         "workspace", "three"]


@pytest.mark.parametrize(("setting", "oss", "api_base", "shared", "parallel"), [
    ("auto", False, None, False, True),
    ("auto", False, "https://api.openai.com/v1", False, True),
    ("auto", True, "http://localhost:11434/v1", False, False),
    ("auto", False, "http://127.0.0.1:8080/v1", False, False),
    ("auto", False, "http://[::1]:8080/v1", False, False),
    ("auto", False, "https://example.com/v1", True, False),
    ("on", True, "http://127.0.0.1:8080/v1", False, True),
    ("off", False, None, False, False),
])
def test_when_attempts_run_at_once(setting, oss, api_base, shared, parallel):
    assert runs_in_parallel(setting, oss=oss, api_base=api_base,
                            shared_client=shared) is parallel


def test_a_local_server_gets_its_attempts_one_after_another(scripted_server, project,
                                                             tmp_path):
    """The scripted server listens on 127.0.0.1: auto runs the attempts in turn."""
    server = scripted_server(by_attempt({1: writes(WRONG, "a", test=False),
                                         2: writes(RIGHT, "b", test=False)}))
    events: list[Any] = []
    with agent_for(server, project, tmp_path, events, attempts=2) as agent:
        agent.run(TASK.replace("python", sys.executable))
    verdict = json.loads(events[-1].model_dump_json())["attempts"]
    assert verdict["parallel"] is False and verdict["winner"] == 2


def test_a_workspace_changed_meanwhile_is_left_alone(scripted_server, project, tmp_path):
    outside = project / "calc.py"
    script = writes(RIGHT, "done", test=False)
    # The attempt's own shell command changes the real workspace behind the attempts' back.
    script.insert(1, {"tool_calls": [{"name": "shell", "arguments": {
        "command": f"echo changed > {outside}"}}]})
    server = scripted_server(by_attempt({1: script, 2: writes(RIGHT, "done", test=False)}))
    events: list[Any] = []
    with agent_for(server, project, tmp_path, events, attempts=2,
                   sandbox="danger-full-access") as agent:
        result = agent.run(TASK)
    assert result.status == "failed"
    assert "the workspace changed while the attempts ran" in (result.error or "")
    assert outside.read_text() == "changed\n"
    # The best attempt is kept where the message says, for the person to take what they want.
    kept = Path(re.search(r"is in (\S+)\)", result.error or "").group(1))
    assert (kept / "calc.py").exists()
    shutil.rmtree(kept.parent.parent)


def test_a_cancelled_turn_applies_nothing(scripted_server, project, tmp_path):
    server = scripted_server(by_attempt({1: writes(RIGHT, "done", test=False),
                                         2: writes(RIGHT, "done", test=False)}))
    holder: dict[str, Agent] = {}

    def cancel_after_the_first_write(event: Any) -> None:
        if event.type == "item.completed" and event.item.type == "file_change":
            holder["agent"].cancel("enough")

    agent = Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
                  cwd=project, verify=False, session=False, attempts=2,
                  on_event=cancel_after_the_first_write)
    holder["agent"] = agent
    with agent:
        result = agent.run(TASK)
    assert result.status == "interrupted"
    assert "NotImplementedError" in (project / "calc.py").read_text()
    assert not any("attempt-2" in json.dumps(body) for body in server.requests)


def test_one_attempt_keeps_the_stream_as_it_was(scripted_server, project, tmp_path):
    server = scripted_server(writes(RIGHT, "done", test=False))
    events: list[Any] = []
    with agent_for(server, project, tmp_path, events) as agent:
        agent.run(TASK)
    end = json.loads(events[-1].model_dump_json())
    assert "attempts" not in end
    assert not any(e.type == "item.completed" and e.item.type == "reasoning" for e in events)


# -- the workspace, pure -----------------------------------------------------------------------

def test_changes_and_their_size(tmp_path):
    base, copy, real = tmp_path / "base", tmp_path / "copy", tmp_path / "real"
    for root in (base, copy):
        (root / "pkg").mkdir(parents=True)
        (root / "same.txt").write_text("x\n")
        (root / ".git").mkdir()
        (root / ".git" / "HEAD").write_text("ref\n")
    (base / "gone.py").write_text("a\nb\n")
    (base / "pkg" / "mod.py").write_text("one\ntwo\n")
    (copy / "pkg" / "mod.py").write_text("one\nTWO\n")
    (copy / "new.py").write_text("n\n")
    (copy / ".git" / "HEAD").write_text("other\n")  # never compared
    changes = changes_between(listing(base), listing(copy))
    assert changes == [Change("gone.py", "delete"), Change("new.py", "add"),
                       Change("pkg/mod.py", "update")]
    assert change_size(base, copy, changes) == 2 + 1 + 2
    real.mkdir()
    (real / "gone.py").write_text("a\nb\n")
    (real / "keep.txt").write_text("untouched\n")
    apply_changes(copy, real, changes)
    assert sorted(p.relative_to(real).as_posix() for p in real.rglob("*")) == \
        ["keep.txt", "new.py", "pkg", "pkg/mod.py"]
    assert (real / "pkg" / "mod.py").read_text() == "one\nTWO\n"


# -- the CLI and batch -------------------------------------------------------------------------

def test_cli_attempts_flag(scripted_server, project, tmp_path):
    server = scripted_server(by_attempt({1: writes(WRONG, "subtracted"),
                                         2: writes(RIGHT, "added"),
                                         3: writes(OTHER_WRONG, "three")}))
    home = tmp_path / "home"
    home.mkdir()
    run = run_agent(["--json", "--no-verify", "--attempts", "3", "-i",
                     TASK.replace("python", sys.executable)],
                    cwd=project, home=home, api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert (project / "calc.py").read_text() == RIGHT
    assert run.events[-1]["attempts"]["winner"] == 2
    assert [e["item"]["text"] for e in run.events if e["type"] == "item.completed"
            and e["item"]["type"] == "agent_message"][-1] == "added"


def test_batch_with_attempts(scripted_server, project, tmp_path):
    """`--attempts 2` for the batch; a task's own `attempts` wins over it."""
    server = scripted_server(by_attempt({0: writes(RIGHT, "alone", test=False),
                                         1: writes(WRONG, "subtracted"),
                                         2: writes(RIGHT, "added")}))
    tasks = tmp_path / "tasks.jsonl"
    instruction = TASK.replace("python", sys.executable)
    tasks.write_text("".join(json.dumps(line) + "\n" for line in (
        {"id": "calc", "workspace": str(project), "instruction": instruction},
        {"id": "once", "workspace": str(project), "instruction": instruction, "attempts": 1})))
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out"
    run = run_agent(["batch", str(tasks), "--out", str(out), "--workers", "1", "--no-verify",
                     "--attempts", "2", "--json"], cwd=tmp_path, home=home,
                    api_base=server.api_base, parse=False)
    assert run.returncode == 0, run.stderr
    results = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert results["calc"]["agent_status"] == results["once"]["agent_status"] == "completed"
    events = parse_jsonl((out / "tasks" / "calc" / "events.jsonl").read_text())
    assert events[-1]["attempts"]["winner"] == 2
    once = parse_jsonl((out / "tasks" / "once" / "events.jsonl").read_text())
    assert "attempts" not in once[-1]


@pytest.mark.parametrize(("value", "ok"), [(1, True), (3, True), (16, True), (0, False),
                                           (17, False), (True, False), ("2", False)])
def test_a_tasks_attempts_are_checked(tmp_path, value, ok):
    from baseagent.batch.tasks import TaskFileError, parse_task_line

    line = {"instruction": "x", "attempts": value}
    if ok:
        assert parse_task_line(line, 1, tmp_path).attempts == value
    else:
        with pytest.raises(TaskFileError, match="attempts must be an integer from 1 to 16"):
            parse_task_line(line, 1, tmp_path)


def test_attempts_and_a_loop_of_ones_own_are_refused_together(project):
    from baseagent.errors import ConfigError
    from baseagent.testing.deterministic import DeterministicClient

    agent = Agent(model="openai/x", cwd=project, session=False, attempts=2,
                  model_client=DeterministicClient([{"content": "hi"}]),
                  loop=lambda parts: parts.default())
    with agent, pytest.raises(ConfigError, match="attempts"):
        agent.run("hello")


def test_a_shared_model_client_runs_the_attempts_in_turn(project):
    """A caller's model client is one object: the attempts take turns on it, and the
    thread's usage counts every attempt's calls. Equal attempts: the earlier one wins."""
    from baseagent.testing.deterministic import DeterministicClient

    model = DeterministicClient([{"content": "first"}, {"content": "second"}])
    events: list[Any] = []
    with Agent(model="openai/x", cwd=project, session=False, verify=False, attempts=2,
               model_client=model, on_event=events.append) as agent:
        result = agent.run("say something")
    assert result.final_message == "first"
    verdict = json.loads(events[-1].model_dump_json())["attempts"]
    assert verdict["parallel"] is False and verdict["winner"] == 1
    assert verdict["reason"] == "its turn completed; the first of 2 equal"
    assert model.totals.calls == 2
    assert result.usage.input_tokens == model.totals.input_tokens > 0

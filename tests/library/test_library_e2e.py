"""The library API end to end: real litellm, real HTTP, the scripted model server, in this
process. Several agents at once, with no process-wide side effects."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

from baseagent import Agent
from baseagent.output.jsonl import event_to_line
from baseagent.testing.keyed import KeyedResponder

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def by_instruction(scripts: dict[str, list[dict[str, Any]]]) -> KeyedResponder:
    """A responder that plays each task's own script, keyed on its instruction."""
    return KeyedResponder(scripts.get)


def process_state() -> dict[str, Any]:
    stat = os.fstat(1)
    return {"cwd": os.getcwd(), "env": dict(os.environ), "fd1": (stat.st_dev, stat.st_ino),
            "stdout": sys.stdout, "stderr": sys.stderr,
            "handlers": [signal.getsignal(s) for s in SIGNALS]}


def test_four_agents_in_four_threads(scripted_server, tmp_path, capfd):
    scripts = {
        f"task {n}": [
            {"tool_calls": [{"name": "write_file",
                             "arguments": {"file_path": "answer.txt", "content": f"{n}\n"}}]},
            {"tool_calls": [{"name": "shell", "arguments": {"command": "cat answer.txt"}}]},
            {"content": f"answer {n} written"},
        ] for n in range(4)}
    server = scripted_server(by_instruction(scripts))
    before = process_state()
    results: dict[int, Any] = {}
    events: dict[int, list[Any]] = {n: [] for n in range(4)}
    agents = []
    for n in range(4):
        ws = tmp_path / f"ws{n}"
        ws.mkdir()
        agents.append(Agent(model="openai/scripted", api_base=server.api_base,
                            api_key="sk-test-dummy", cwd=ws, verify=False,
                            session_dir=tmp_path / "sessions", on_event=events[n].append))

    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, agents[n].run(f"task {n}")))
               for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for agent in agents:
        agent.close()

    for n in range(4):
        result = results[n]
        assert result.status == "completed", result.error
        assert result.final_message == f"answer {n} written"
        assert (tmp_path / f"ws{n}" / "answer.txt").read_text() == f"{n}\n"
        outputs = [i.aggregated_output for i in result.items if i.type == "command_execution"]
        assert outputs == [f"{n}\n"]
        # each agent saw only its own thread
        threads_seen = {e.thread_id for e in events[n] if e.type == "thread.started"}
        assert threads_seen == {agents[n].thread_id}
        record = tmp_path / "sessions" / f"{agents[n].thread_id}.jsonl"
        assert f"task {n}" in record.read_text()
    assert len({a.thread_id for a in agents}) == 4
    assert process_state() == before
    captured = capfd.readouterr()
    assert captured.out == ""  # nothing on fd 1 (nor sys.stdout)


def test_stream_chat_and_cancel_against_the_scripted_server(scripted_server, workspace, tmp_path):
    server = scripted_server([
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo streamed"}}]},
        {"content": "Streamed."},
        {"content": "Second turn."},
        {"content": "never sent", "delay": 30},
    ])
    agent = Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
                  cwd=workspace, verify=False, session_dir=tmp_path / "sessions")
    seen = list(agent.stream("first"))
    assert [e.type for e in seen[:2]] == ["thread.started", "turn.started"]
    assert seen[-1].type == "turn.completed"
    lines = [event_to_line(e).decode() for e in seen]
    assert all(json.loads(line) == json.loads(e.model_dump_json()) for line, e in zip(lines, seen))
    assert agent.chat("second") == "Second turn."

    threading.Timer(0.5, agent.cancel).start()
    started = time.monotonic()
    result = agent.run("third")  # the model takes 30 s: cancel() ends it
    assert result.status == "interrupted"
    assert time.monotonic() - started < 2.5
    assert agent.usage.input_tokens > 0
    agent.close()
    # one thread: every request after the first carries the whole conversation so far
    last = server.requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "user"][-3:] == ["first", "second", "third"]


def test_the_library_reads_no_environment_configuration(scripted_server, workspace, tmp_path,
                                                       monkeypatch):
    """BASEAGENT_* variables and the config file are the CLI's layers, not the library's
    (unless asked for with Agent.from_config)."""
    server = scripted_server([{"content": "ok"}])
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".baseagent").mkdir()
    (tmp_path / ".baseagent" / "config.toml").write_text('cost_limit = 3.5\n')
    monkeypatch.setenv("BASEAGENT_MAX_ITERATIONS", "1")
    monkeypatch.setenv("BASEAGENT_MODEL", "openai/from-env")
    agent = Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
                  cwd=workspace, verify=False, session=False)
    assert agent.settings.max_iterations == 200 and agent.settings.model == "openai/scripted"
    assert agent.settings.cost_limit is None
    configured = Agent.from_config(api_base=server.api_base, api_key="sk-test-dummy",
                                   cwd=workspace, session=False)
    assert configured.settings.max_iterations == 1
    assert configured.settings.model == "openai/from-env"
    assert configured.settings.cost_limit == 3.5 and not configured.settings.record_session
    assert agent.run("x").ok

"""The library API in-process, with a deterministic model client (no HTTP, no litellm)."""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from baseagent import (Agent, AgentBusyError, ConfigError, InputError, RunResult, TurnError,
                       events)
from baseagent.llm.errors import ModelError
from baseagent.output.jsonl import event_to_line
from baseagent.testing.deterministic import DeterministicClient


def agent_for(workspace: Path, steps: list[Any], **kw: Any) -> tuple[Agent, DeterministicClient]:
    model = DeterministicClient(steps)
    kw.setdefault("session", False)
    kw.setdefault("verify", False)
    return Agent(model_client=model, cwd=workspace, env={"PATH": os.environ["PATH"]}, **kw), model


def shell(command: str, call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "shell", "arguments": {"command": command}}
    if call_id:
        call["id"] = call_id
    return {"tool_calls": [call]}


def test_run_returns_the_outcome_items_and_usage(workspace):
    agent, _ = agent_for(workspace, [shell("echo hi > out.txt && cat out.txt"),
                                     {"content": "Wrote out.txt.",
                                      "usage": {"prompt_tokens": 100, "completion_tokens": 7,
                                                "cached_tokens": 40, "cost_usd": 0.002}}])
    result = agent.run("write out.txt")
    assert isinstance(result, RunResult) and result.ok
    assert result.status == "completed" and result.final_message == "Wrote out.txt."
    assert result.thread_id == agent.thread_id and result.error is None
    assert [i.type for i in result.items] == ["command_execution", "agent_message"]
    assert result.items[0].aggregated_output == "hi\n" and result.items[0].exit_code == 0
    assert result.usage.input_tokens > 100 and result.usage.cached_input_tokens == 40
    assert result.usage.output_tokens == 8 and result.usage.cost_usd == pytest.approx(0.002)
    assert (workspace / "out.txt").read_text() == "hi\n"


def test_stream_yields_the_cli_events_and_ends_with_the_result(workspace):
    agent, _ = agent_for(workspace, [shell("echo one"), {"content": "first"},
                                     {"content": "second"}])
    stream = agent.stream("go")
    seen = list(stream)
    assert [e.type for e in seen[:2]] == ["thread.started", "turn.started"]
    assert seen[-1].type == "turn.completed"
    assert seen[0].thread_id == agent.thread_id
    for event in seen:  # the same objects the CLI prints: its JSONL line is the dump
        assert event_to_line(event).decode().rstrip("\n") == \
            json.dumps(json.loads(event.model_dump_json()), separators=(",", ":"),
                       ensure_ascii=False)
        assert isinstance(event, events.ItemCompleted | events.ItemStarted | events.ItemUpdated
                          | events.ThreadStarted | events.TurnStarted | events.TurnCompleted)
    assert stream.result is not None and stream.result.final_message == "first"
    # the next turn of the thread: no second thread.started
    again = [e.type for e in agent.stream("more")]
    assert again[0] == "turn.started" and "thread.started" not in again


def test_chat_keeps_one_thread_and_its_history(workspace):
    agent, model = agent_for(workspace, [{"content": "Hello."}, {"content": "You said hi."}])
    thread = agent.thread_id
    assert agent.chat("hi") == "Hello."
    assert agent.chat("what did I say?") == "You said hi."
    assert agent.thread_id == thread
    second = model.requests[1]
    assert [m["content"] for m in second if m["role"] in ("user", "assistant")][-3:] == \
        ["hi", "Hello.", "what did I say?"]
    assert agent.history[-1] == {"role": "assistant", "content": "You said hi."}


def test_chat_raises_when_the_turn_does_not_complete(workspace):
    agent, _ = agent_for(workspace, [ModelError("model call failed: 401")])
    with pytest.raises(TurnError) as info:
        agent.chat("hi")
    assert info.value.result.status == "failed"
    assert "401" in info.value.result.error


def test_cancel_from_another_thread_kills_the_command(workspace):
    agent, _ = agent_for(workspace, [shell("echo $$ > pid; sleep 30"), {"content": "never"}])
    timer = threading.Timer(0.5, agent.cancel)
    timer.start()
    started = time.monotonic()
    result = agent.run("wait")
    assert time.monotonic() - started < 2.5
    assert result.status == "interrupted" and "cancelled" in result.error
    command = result.items[0]
    assert command.status == "failed" and command.exit_code == 130
    pid = int((workspace / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # the agent is usable again: the next turn is not interrupted
    assert agent.run("again").final_message == "never"


def test_a_cancel_while_no_turn_runs_does_not_stop_the_next_run(workspace):
    """AgentB resets the flag as each run starts: a stale cancel() is not the next run's."""
    agent, model = agent_for(workspace, [{"content": "first"}, {"content": "answered"}])
    agent.cancel()
    first = agent.run("x")
    assert first.status == "completed" and first.final_message == "first"
    assert not agent.cancel_requested
    agent.run("y")
    agent.cancel("late")  # after the turn ended: stale too
    assert model.calls == 2


def test_a_cancel_meant_for_the_next_run_stops_it_then_clears(workspace):
    agent, model = agent_for(workspace, [{"content": "answered"}])
    agent.cancel("the task was cancelled", next_run=True)
    first = agent.run("x")
    assert first.status == "interrupted" and model.calls == 0 and first.items == []
    assert "the task was cancelled" in first.error
    assert agent.run("y").final_message == "answered"


def test_on_event_callback_sees_every_event_and_its_errors_surface(workspace):
    seen: list[str] = []
    agent, _ = agent_for(workspace, [{"content": "ok"}], on_event=lambda e: seen.append(e.type))
    agent.run("x")
    assert seen == ["thread.started", "turn.started", "item.started", "item.completed",
                    "turn.completed"]

    def broken(event: events.ThreadEvent) -> None:
        if event.type == "item.started":
            raise RuntimeError("callback bug")

    agent, model = agent_for(workspace, [shell("sleep 5"), {"content": "never"}],
                             on_event=broken)
    with pytest.raises(RuntimeError, match="callback bug"):
        agent.run("x")
    assert model.calls == 1  # the turn stopped instead of carrying on


def test_one_turn_at_a_time(workspace):
    agent, _ = agent_for(workspace, [{"content": "slow", "delay": 1.0}, {"content": "x"}])
    stream = agent.stream("first")
    with pytest.raises(AgentBusyError):
        agent.run("second")
    assert [e.type for e in stream][-1] == "turn.completed"
    assert agent.run("now").final_message == "x"


def test_closing_a_stream_early_cancels_its_turn(workspace):
    agent, _ = agent_for(workspace, [shell("sleep 30"), {"content": "never"}])
    stream = agent.stream("x")
    for event in stream:
        if event.type == "item.started":
            break
    started = time.monotonic()
    stream.close()
    assert time.monotonic() - started < 2.5
    assert stream.result is not None and stream.result.status == "interrupted"


@pytest.mark.parametrize("kwargs,words", [
    ({"max_iterations": 0}, "max_iterations"),
    ({"sandbox": "open"}, "sandbox"),
    ({"no_such_setting": 1}, "no_such_setting"),
    ({"model": " "}, "model"),
])
def test_bad_settings_raise_config_error(workspace, kwargs, words):
    with pytest.raises(ConfigError, match=words):
        Agent(model_client=DeterministicClient([]), cwd=workspace, **kwargs)


def test_bad_input_raises_before_anything_runs(workspace, tmp_path):
    with pytest.raises(ConfigError, match="working directory does not exist"):
        Agent(model_client=DeterministicClient([]), cwd=tmp_path / "missing")
    agent, model = agent_for(workspace, [{"content": "x"}])
    with pytest.raises(InputError, match="empty"):
        agent.run("   ")
    with pytest.raises(InputError, match="unsupported image type"):
        agent.run("look", images=[workspace / "notes.txt"])
    with pytest.raises(InputError, match="output_schema"):
        agent.run("x", output_schema={"type": 12})
    assert model.calls == 0
    with pytest.raises(ConfigError, match="no session record"):
        Agent(model_client=DeterministicClient([]), cwd=workspace, thread_id="0000-nope",
              session_dir=tmp_path / "sessions")


def test_session_record_and_resume_by_thread_id(workspace, tmp_path):
    sessions = tmp_path / "sessions"
    agent, _ = agent_for(workspace, [{"content": "first answer"}], session=True,
                         session_dir=sessions)
    agent.run("remember 42")
    agent.close()
    record = sessions / f"{agent.thread_id}.jsonl"
    kinds = [json.loads(line)["kind"] for line in record.read_text().splitlines()]
    assert kinds[0] == "meta" and kinds[-1] == "usage"

    resumed, model = agent_for(workspace, [{"content": "it was 42"}], session=True,
                               session_dir=sessions, thread_id=agent.thread_id[:8])
    assert resumed.thread_id == agent.thread_id
    assert resumed.usage.input_tokens == agent.usage.input_tokens
    assert resumed.chat("what number?") == "it was 42"
    texts = [m.get("content") for m in model.requests[0]]
    assert "remember 42" in texts and "first answer" in texts
    resumed.close()

    silent, _ = agent_for(workspace, [{"content": "x"}], session=False, session_dir=tmp_path / "none")
    silent.run("x")
    assert not (tmp_path / "none").exists()


def test_several_agents_in_threads_do_not_share_state(tmp_path):
    """Each agent sees only its own events, files and cancellation."""
    agents, results, seen = [], {}, {}
    for n in range(4):
        ws = tmp_path / f"ws{n}"
        ws.mkdir()
        steps = [shell(f"echo {n} > mine.txt; sleep {0.3 if n else 5}"), {"content": f"done {n}"}]
        agent, _ = agent_for(ws, steps)
        seen[n] = []
        agent._on_event = seen[n].append  # noqa: SLF001 - per-agent listener for the check
        agents.append(agent)

    def work(n: int) -> None:
        results[n] = agents[n].run(f"task {n}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    # Agent 0 is cancelled while its command runs: once it has written its file (a fixed
    # sleep raced the first model call on a loaded machine and cancelled before the command).
    deadline = time.monotonic() + 10
    while not (tmp_path / "ws0" / "mine.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    agents[0].cancel()  # only agent 0 is cancelled
    for t in threads:
        t.join(10)
    assert results[0].status == "interrupted"
    assert [results[n].final_message for n in (1, 2, 3)] == ["done 1", "done 2", "done 3"]
    for n in range(4):
        assert (tmp_path / f"ws{n}" / "mine.txt").read_text() == f"{n}\n"
        commands = [e.item.command for e in seen[n]
                    if isinstance(e, events.ItemCompleted) and e.item.type == "command_execution"]
        assert commands == [f"echo {n} > mine.txt; sleep {0.3 if n else 5}"]
        assert len({e.thread_id for e in seen[n] if e.type == "thread.started"}) == 1


def test_an_approver_function_answers_for_the_caller(workspace):
    from baseagent import ApprovalAnswer

    asked = []

    def approve(request):
        asked.append((request.command, request.kind, request.prefix))
        return ApprovalAnswer("denied", "not on a Friday") if "rm" in request.command \
            else ApprovalAnswer("approved")

    agent, model = agent_for(workspace, [shell("touch kept.txt"), shell("rm kept.txt"),
                                         shell("ls"), {"content": "Done."}],
                             approval_policy="untrusted", approver=approve)
    result = agent.run("tidy up")
    assert result.ok and (workspace / "kept.txt").exists()
    assert asked == [("touch kept.txt", "unsafe", "touch"), ("rm kept.txt", "unsafe", "rm")]
    approvals = [i for i in result.items if i.type == "approval_request"]
    assert [(a.command, a.decision) for a in approvals] == [("touch kept.txt", "approved"),
                                                            ("rm kept.txt", "denied")]
    declined = [i for i in result.items if i.type == "command_execution"][1]
    assert declined.status == "declined"
    told = [m["content"] for m in model.requests[2] if m["role"] == "tool"][-1]
    assert "Their note: not on a Friday" in told


def test_approvals_through_requires_action_pause_the_turn_before_the_command(workspace):
    agent, model = agent_for(workspace, [
        {"tool_calls": [{"name": "shell", "id": "c1", "arguments": {"command": "touch a.txt"}},
                        {"name": "shell", "id": "c2", "arguments": {"command": "ls"}},
                        {"name": "shell", "id": "c3", "arguments": {"command": "rm -f b"}}]},
        {"content": "Done."}], approval_policy="untrusted", approver="requires_action")
    (workspace / "b").write_text("keep")
    result = agent.run("tidy")
    assert result.status == "requires_action" and not (workspace / "a.txt").exists()
    pending = {c.id: c for c in result.pending_tool_calls}
    assert set(pending) == {"c1", "c3"}  # ls is known safe: it ran
    assert pending["c1"].name == "approval_request"
    assert pending["c1"].arguments["command"] == "touch a.txt"
    assert pending["c1"].arguments["kind"] == "unsafe"
    with pytest.raises(InputError, match="must be approved, approved_for_session, denied"):
        agent.submit_tool_outputs({"c1": "sure", "c3": "denied"})
    result = agent.submit_tool_outputs({"c1": "approved", "c3": "denied: keep b"})
    assert result.ok and result.final_message == "Done."
    assert (workspace / "a.txt").exists() and (workspace / "b").read_text() == "keep"
    decisions = [(i.command, i.decision) for i in result.items if i.type == "approval_request"]
    assert decisions == [("touch a.txt", "approved"), ("rm -f b", "denied")]
    told = {m["tool_call_id"]: m["content"] for m in model.requests[1] if m["role"] == "tool"}
    assert told["c1"].startswith("Exit code: 0") and "Their note: keep b" in told["c3"]

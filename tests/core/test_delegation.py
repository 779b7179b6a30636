"""The delegate tool: a sub-task run by a child agent in the same process, its items nested
under the delegating call, its usage added to the parent's, its limits taken from the
parent's, and cancelled with the parent."""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from baseagent import Agent, ConfigError, events
from baseagent.testing.deterministic import DeterministicClient
from helpers import run_agent

# Seconds per CLI run: each imports litellm, which takes half a minute on a loaded machine.
CLI_TIMEOUT = 180

CHILD_MARK = "You are a sub-agent"


def is_child(messages: list[dict[str, Any]]) -> bool:
    return any(m["role"] == "user" and CHILD_MARK in str(m.get("content")) for m in messages)


def parent_and_child(parent: list[dict], child: list[dict]) -> Callable[[dict, int], Any]:
    """A scripted-server responder: the child's requests (its task carries the sub-agent
    preamble) get the child's steps, the others the parent's."""
    progress = {"parent": 0, "child": 0}
    lock = threading.Lock()

    def respond(body: dict, _index: int) -> dict | None:
        who = "child" if is_child(body["messages"]) else "parent"
        steps = child if who == "child" else parent
        with lock:
            n = progress[who]
            progress[who] += 1
        return steps[n] if n < len(steps) else None

    return respond


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def delegate(task: str, call_id: str = "call_d", **extra: Any) -> dict[str, Any]:
    return {"id": call_id, "name": "delegate", "arguments": {"task": task, **extra}}


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / "config.ini").write_text("[server]\nport = 8080\n")
    return workspace


PARENT = [
    {"tool_calls": [delegate("Read config.ini and report the server port.")],
     "usage": usage(100, 10)},
    {"content": "The server listens on port 8080.", "usage": usage(400, 40)},
]
CHILD = [
    {"tool_calls": [{"id": "call_r", "name": "read_file",
                     "arguments": {"file_path": "config.ini"}}], "usage": usage(200, 20)},
    {"content": "port = 8080 (config.ini, [server])", "usage": usage(300, 30)},
]


def test_child_reads_files_and_answers_with_nested_items_and_summed_usage(
        scripted_server, repo, tmp_path):
    server = scripted_server(parent_and_child(PARENT, CHILD))
    seen: list[Any] = []
    with Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
               cwd=repo, verify=False, delegate=True, session_dir=tmp_path / "sessions",
               on_event=seen.append) as agent:
        result = agent.run("Which port does the server use?")
    assert result.status == "completed", result.error
    assert result.final_message == "The server listens on port 8080."

    # the child had its own context: system prompt, environment, the task; read-only tools
    child_requests = [r for r in server.requests if is_child(r["messages"])]
    assert len(child_requests) == 2
    first = child_requests[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user", "user"]
    assert "Which port" not in json.dumps(first)
    assert "Read config.ini and report the server port." in first[-1]["content"]
    assert [t["function"]["name"] for t in child_requests[0]["tools"]] == \
        ["read_file", "grep_files", "list_dir"]
    parent_requests = [r for r in server.requests if not is_child(r["messages"])]
    assert "delegate" in [t["function"]["name"] for t in parent_requests[0]["tools"]]
    # the child's final message is the delegate call's result
    assert parent_requests[1]["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_d",
        "content": "port = 8080 (config.ini, [server])"}

    # one collab item in the parent's stream, the child's items nested in it
    collab = result.items[0]
    assert isinstance(collab, events.CollabToolCallItem)
    assert (collab.tool, collab.status, collab.sender_thread_id) == \
        ("spawn_agent", "completed", agent.thread_id)
    child_id = collab.receiver_thread_ids[0]
    assert child_id != agent.thread_id
    assert collab.agents_states[child_id].status == "completed"
    assert collab.agents_states[child_id].message == "port = 8080 (config.ini, [server])"
    nested = [(i.id, i.type) for i in collab.items]
    assert nested == [("item_0.item_0", "mcp_tool_call"), ("item_0.item_1", "agent_message")]
    assert collab.items[0].tool == "read_file"
    assert "port = 8080" in collab.items[0].result.content[0]["text"]
    # the nested items arrived as they completed (item.updated), not only at the end
    updates = [len(e.item.items) for e in seen
               if e.type == "item.updated" and e.item.type == "collab_tool_call"]
    assert updates == [0, 1, 2]

    # usage: the child's is on its item and in the parent's totals
    assert (collab.usage.input_tokens, collab.usage.output_tokens) == (500, 50)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (1000, 100)
    turn_completed = [e for e in seen if e.type == "turn.completed"][0]
    assert turn_completed.usage.input_tokens == 1000


def test_cli_delegate_nests_the_child_in_the_jsonl(scripted_server, repo, home):
    server = scripted_server(parent_and_child(PARENT, CHILD))
    run = run_agent(["--no-verify", "--delegate", "-i", "Which port?"], cwd=repo, home=home,
                    api_base=server.api_base, timeout=CLI_TIMEOUT)
    assert run.returncode == 0, run.stderr
    collab = run.completed_items("collab_tool_call")
    assert len(collab) == 1 and collab[0]["status"] == "completed"
    assert [i["type"] for i in collab[0]["items"]] == ["mcp_tool_call", "agent_message"]
    assert collab[0]["usage"] == {"input_tokens": 500, "cached_input_tokens": 0,
                                  "cache_write_input_tokens": 0, "output_tokens": 50,
                                  "reasoning_output_tokens": 0}
    # nothing of the child appears at the parent's top level
    top = [e["item"]["type"] for e in run.of_type("item.completed")]
    assert top == ["collab_tool_call", "agent_message"]
    assert run.events[-1]["usage"]["input_tokens"] == 1000
    # the session record keeps the nested items (resume and export read them)
    record = next((home / ".baseagent" / "sessions").glob("*.jsonl")).read_text()
    assert '"item_0.item_0"' in record


def test_cancelling_the_parent_cancels_the_child(scripted_server, repo, tmp_path):
    """The child runs a slow command; cancelling the parent stops it, kills the command and
    ends both turns, without another model call."""
    server = scripted_server(parent_and_child(
        [{"tool_calls": [delegate("Run the slow check.", tools=["shell"])]},
         {"content": "never reached"}],
        [{"tool_calls": [{"id": "call_s", "name": "shell",
                          "arguments": {"command": "sleep 3 && touch late.txt"}}]},
         {"content": "never reached"}]))
    agent = Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
                  cwd=repo, verify=False, delegate=True, session=False)
    cancelled_at: list[float] = []

    def cancel_once_the_child_runs() -> None:
        deadline = time.monotonic() + 60
        while not any(is_child(r["messages"]) for r in server.requests):
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        time.sleep(0.5)  # the child's command is running now
        cancelled_at.append(time.monotonic())
        agent.cancel()

    threading.Thread(target=cancel_once_the_child_runs, daemon=True).start()
    result = agent.run("check")
    ended_at = time.monotonic()
    agent.close()
    assert result.status == "interrupted"
    assert ended_at - cancelled_at[0] < 2.0  # the 3 s command was not waited for
    collab = result.items[0]
    child_id = collab.receiver_thread_ids[0]
    assert collab.status == "failed" and collab.agents_states[child_id].status == "interrupted"
    assert [i.type for i in collab.items] == ["command_execution"]
    assert collab.items[0].status in ("declined", "failed")
    assert len(server.requests) == 2  # parent 1, child 1: nothing after the cancel
    time.sleep(3.2)
    assert not (repo / "late.txt").exists()  # the child's command was killed


# -- in-process, with a deterministic model ----------------------------------------------------

def agent_for(workspace: Path, steps: list[Any], **kw: Any) -> tuple[Agent, DeterministicClient]:
    model = DeterministicClient(steps)
    kw.setdefault("session", False)
    kw.setdefault("verify", False)
    kw.setdefault("delegate", True)
    return Agent(model_client=model, cwd=workspace, env={"PATH": os.environ["PATH"]}, **kw), model


def read(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "arguments": {"file_path": path}}]}


def test_the_child_spends_the_parents_iterations(repo):
    """max_iterations=4: the parent's first call leaves 3, the child may make 3 (it asked for
    10), spends them all without answering, and the parent has none left."""
    agent, model = agent_for(repo, [
        {"tool_calls": [delegate("look around", max_iterations=10)]},
        read("config.ini"), read("config.ini"), read("config.ini"),
        {"content": "never reached"},
    ], max_iterations=4)
    result = agent.run("go")
    assert model.calls == 4
    assert result.status == "limit" and "max iterations reached (4" in result.error
    collab = result.items[0]
    assert collab.status == "failed"
    state = collab.agents_states[collab.receiver_thread_ids[0]]
    assert state.status == "errored" and "max iterations reached (3" in state.message


def test_the_child_has_its_own_cost_limit(repo):
    cost = {"prompt_tokens": 10, "completion_tokens": 1, "cost_usd": 0.01}
    agent, model = agent_for(repo, [
        {"tool_calls": [delegate("look")]},
        {**read("config.ini"), "usage": cost}, {**read("config.ini"), "usage": cost},
        {"content": "the child could not finish"},
    ], delegate_cost_limit=0.015)
    result = agent.run("go")
    assert result.status == "completed" and model.calls == 4
    tool_result = model.requests[3][-1]["content"]
    assert tool_result.startswith("Error: the sub-agent did not finish (limit): the "
                                  "sub-agent's cost limit ($0.015) is reached")


def test_tools_the_child_may_not_have(repo):
    agent, model = agent_for(repo, [
        {"tool_calls": [delegate("x", tools=["delegate"])]},
        {"tool_calls": [delegate("x", tools=["nope", "shell"])]},
        {"content": "gave up"},
    ])
    assert agent.run("go").ok
    for request in model.requests[1:]:
        assert request[-1]["content"].startswith("Error: a sub-agent cannot be given")
    assert "choose from: shell, read_file, write_file, apply_patch, grep_files, list_dir" in \
        model.requests[2][-1]["content"]


def test_delegate_is_offered_only_when_enabled(repo):
    agent, model = agent_for(repo, [{"content": "hi"}], delegate=False)
    agent.run("hello")
    assert "delegate" not in [t["function"]["name"] for t in model.tools_seen[0]]
    with pytest.raises(ConfigError, match="delegate_tools: unknown tool"):
        agent_for(repo, [], delegate_tools=["read_file", "teleport"])

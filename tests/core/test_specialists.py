"""Named specialists and the planning mode (core/delegation/specialists.py, AgentB's
DelegateToSpecialistTool and PlanningAgent): specialists declared in the config file and in
the library, their tools named as the configuration names them, run by the delegate tool's
machinery (a child loop, its items nested in a collab item, its usage in the parent's), the
planner that works only through them, and AgentB's sub-agent events carrying the real
specialistId."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

from baseagent import Agent, ConfigError, Specialist, agentb, events
from baseagent.config.specialists import SpecialistConfig
from baseagent.core.delegation.specialists import Sources, resolve_tools, unknown_tool_names
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.registry import builtin_tools
from helpers import run_agent, by_conversation
from openapi_service import PetService, document

# Seconds per CLI run (a loaded machine).
CLI_TIMEOUT = 180


def call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id:
        out["id"] = call_id
    return out


def to(specialist: str, sub_task: str, call_id: str = "call_s", **extra: Any) -> dict[str, Any]:
    return call("delegate_to_specialist", call_id, specialist_id=specialist, sub_task=sub_task,
                **extra)


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / "config.ini").write_text("[server]\nport = 8080\n")
    return workspace


# -- what a specialist's tool names mean (pure) -------------------------------------------------

class _Fake:
    """A tool as resolve_tools sees it: a name and a server."""

    def __init__(self, name: str, server: str) -> None:
        self.name, self.server = name, server


SOURCES = Sources(mcp=frozenset({"docs"}), openapi=frozenset({"pets"}))


@pytest.mark.parametrize("refs, expected", [
    (["read"], ["read_file", "grep_files", "list_dir"]),
    (["shell", "read_file", "read"], ["shell", "read_file", "grep_files", "list_dir"]),
    (["none"], []),
    (["docs"], ["mcp__docs__search", "mcp__docs__fetch"]),
    (["pets"], ["listPets", "deletePet"]),
    (["lookup", "plan"], ["lookup", "update_plan"]),
])
def test_tool_names_resolve_in_the_configurations_vocabulary(refs, expected):
    sources = [_Fake("mcp__docs__search", "docs"), _Fake("mcp__docs__fetch", "docs"),
               _Fake("listPets", "pets"), _Fake("deletePet", "pets"),
               _Fake("other", "elsewhere")]
    got = resolve_tools(refs, builtins=builtin_tools(), caller=[_Fake("lookup", "baseagent")],
                        source_tools=sources, sources=SOURCES)
    assert [t.name for t in got] == expected


def test_unknown_tool_names_are_named_with_their_specialist():
    specialists = {"a": SpecialistConfig(description="x", tools=["read", "docs", "pets:admin"]),
                   "b": SpecialistConfig(description="y", tools=["teleport", "lookup",
                                                                 "docs:tag"])}
    assert unknown_tool_names(specialists, SOURCES, ["lookup"]) == ["b: teleport", "b: docs:tag"]


# -- in-process, with a deterministic model -----------------------------------------------------

READER = Specialist(name="reader", description="Reads files and reports what they say.",
                    tools=["read"], prompt="Quote values exactly.", max_iterations=3)
RUNNER = Specialist(name="runner", description="Runs shell commands.", tools=["shell"])


def agent_for(workspace: Path, steps: list[Any], **kw: Any) -> tuple[Agent, DeterministicClient]:
    model = DeterministicClient(steps)
    kw.setdefault("session", False)
    kw.setdefault("verify", False)
    return Agent(model_client=model, cwd=workspace, env={"PATH": os.environ["PATH"]}, **kw), model


def test_the_planner_works_only_through_its_specialists(repo):
    agent, model = agent_for(repo, [
        {"tool_calls": [call("update_plan", plan=[{"step": "find the port",
                                                   "status": "in_progress"}])]},
        {"tool_calls": [to("reader", "Read config.ini and report the port.",
                           required_output_format="just the number")]},
        {"tool_calls": [call("read_file", file_path="config.ini")]},
        {"content": "8080"},
        {"tool_calls": [call("update_plan", plan=[{"step": "find the port",
                                                   "status": "completed"}])]},
        {"content": "The server listens on port 8080."},
    ], planner=True, specialists=[READER, RUNNER])
    agentb = list(agent.stream("Which port does the server use?", format="agentb"))
    assert agentb[-1].type == "thread.run.completed"

    planner_tools = model.tools_seen[0]
    assert names(planner_tools) == ["update_plan", "delegate_to_specialist"]
    schema = planner_tools[1]["function"]["parameters"]
    assert schema["properties"]["specialist_id"]["enum"] == ["reader", "runner"]
    assert schema["required"] == ["specialist_id", "sub_task"]
    description = planner_tools[1]["function"]["description"]
    assert "- reader: Reads files and reports what they say. (tools: read)" in description
    system = model.requests[0][0]["content"]
    assert system.startswith("You are baseagent's planner")
    assert system.endswith("- reader: Reads files and reports what they say.\n"
                           "- runner: Runs shell commands.\n")

    # the specialist: its configured tools, its role and prompt, the task and the format
    child = model.requests[2]
    assert names(model.tools_seen[2]) == ["read_file", "grep_files", "list_dir"]
    assert 'You are the specialist "reader": Reads files' in child[0]["content"]
    assert child[0]["content"].endswith("Quote values exactly.\n")
    assert "Which port" not in json.dumps(child)
    assert "Read config.ini and report the port." in child[-1]["content"]
    assert "Answer in this format: just the number" in child[-1]["content"]
    # its answer is the call's result
    assert model.requests[4][-1] == {"role": "tool", "tool_call_id": "call_s", "content": "8080"}

    started = [e for e in agentb if e.type == "agent.sub_agent.invocation.started"]
    completed = [e for e in agentb if e.type == "agent.sub_agent.invocation.completed"]
    assert len(started) == len(completed) == 1
    assert started[0].data.specialistId == completed[0].data.specialistId == "reader"
    assert started[0].data.subTaskDescription == "Read config.ini and report the port."
    assert completed[0].data.result.success and completed[0].data.result.data == "8080"
    assert completed[0].data.subAgentRunId == started[0].data.subAgentRunId


def test_codex_stream_shows_a_specialist_as_a_collab_item(repo):
    seen: list[Any] = []
    agent, model = agent_for(repo, [
        {"tool_calls": [to("reader", "Read config.ini.")]},
        {"tool_calls": [call("read_file", file_path="config.ini")]},
        {"content": "port = 8080"},
        {"content": "8080."},
    ], specialists=[READER], on_event=seen.append)
    result = agent.run("port?")
    assert result.ok, result.error
    # not in planning mode: the built-in tools (view_image too: the default model sees
    # images), then the specialists' tool
    assert names(model.tools_seen[0]) == ["shell", "read_file", "write_file", "apply_patch",
                                          "grep_files", "list_dir", "update_plan",
                                          "view_image", "delegate_to_specialist"]
    collab = result.items[0]
    assert isinstance(collab, events.CollabToolCallItem)
    assert (collab.status, collab.prompt) == ("completed", "Read config.ini.")
    child = collab.receiver_thread_ids[0]
    assert collab.agents_states[child].message == "port = 8080"
    assert [(i.type, getattr(i, "tool", None)) for i in collab.items] == [
        ("mcp_tool_call", "read_file"), ("agent_message", None)]
    assert [e.item.type for e in seen if e.type == "item.completed"] == \
        ["collab_tool_call", "agent_message"]


def test_generic_delegate_keeps_specialist_id_delegate(repo):
    agent, _model = agent_for(repo, [
        {"tool_calls": [call("delegate", task="look")]},
        {"content": "looked"},
        {"content": "done"},
    ], delegate=True, specialists=[READER])
    agentb = list(agent.stream("go", format="agentb"))
    ids = [e.data.specialistId for e in agentb if e.type.startswith("agent.sub_agent")]
    assert ids == ["delegate", "delegate"]


def test_a_specialist_the_run_does_not_have_is_an_error_result(repo):
    agent, model = agent_for(repo, [
        {"tool_calls": [to("wizard", "do magic")]},
        {"content": "gave up"},
    ], specialists=[READER])
    assert agent.run("go").ok
    result = model.requests[1][-1]["content"]
    assert result.startswith("Error:") and "specialist_id" in result and "'reader'" in result


def test_a_specialists_iterations_are_its_own_and_the_parents(repo):
    """max_iterations=3 for the reader: it stops there, and the parent pays for them."""
    agent, model = agent_for(repo, [
        {"tool_calls": [to("reader", "loop")]},
        *[{"tool_calls": [call("read_file", file_path="config.ini")]}] * 3,
        {"content": "the reader ran out"},
    ], specialists=[READER])
    result = agent.run("go")
    assert result.ok and model.calls == 5
    state = result.items[0].agents_states[result.items[0].receiver_thread_ids[0]]
    assert state.status == "errored" and "max iterations reached (3" in state.message


def test_planner_without_specialists_and_unknown_tools_are_one_line_errors(repo):
    with pytest.raises(ConfigError, match=r"^planner mode needs at least one specialist"):
        agent_for(repo, [], planner=True)
    with pytest.raises(ConfigError, match=r"specialists: unknown tool\(s\) x: teleport"):
        agent_for(repo, [], specialists=[{"name": "x", "description": "d",
                                          "tools": ["teleport"]}])
    with pytest.raises(ConfigError, match="each specialists= entry needs a `name`"):
        agent_for(repo, [], specialists=[{"description": "d"}])
    with pytest.raises(ConfigError, match="specialists.x.description"):
        agent_for(repo, [], specialists={"x": {"tools": ["read"]}})
    with pytest.raises(ConfigError, match="is not a valid name"):
        agent_for(repo, [], specialists={"bad name": {"description": "d"}})
    # a specialist's own model is checked like the run's, before anything runs
    with pytest.raises(ConfigError, match=r"^specialists.a: missing API key for anthropic"):
        Agent(model="openai/x", cwd=repo, session=False, env={"OPENAI_API_KEY": "k"},
              specialists=[Specialist(name="a", description="d",
                                      model="anthropic/claude-sonnet-4-5")])


def test_caller_tools_and_openapi_sources_by_name_and_tag(repo):
    """The planner has none of them; the specialists get what their names stand for: a
    Python tool by its name, a document's operations by the source's name or one tag."""
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        return f"{ticket}: flaky test"

    with PetService("k") as service:
        agent, model = agent_for(repo, [
            {"tool_calls": [to("admin", "delete pet 1", "c1")]},
            {"tool_calls": [call("deletePet", petId=1)]},
            {"content": "deleted"},
            {"tool_calls": [to("all", "tickets", "c2")]},
            {"content": "nothing"},
            {"content": "done"},
        ], planner=True, tools=[lookup],
            openapi={"pets": {"spec": document(f"{service.url}/v1")}},
            specialists={"admin": {"description": "Pet admin", "tools": ["pets:admin"]},
                         "all": {"description": "Everything",
                                 "tools": ["lookup", "pets", "read_file"]}})
        try:
            result = agent.run("clean up")
        finally:
            agent.close()
        sent = service.requests
    assert result.ok, result.error
    assert names(model.tools_seen[0]) == ["update_plan", "delegate_to_specialist"]
    assert names(model.tools_seen[1]) == ["deletePet"]
    assert names(model.tools_seen[4]) == ["lookup", "listPets", "createPet", "getPet",
                                          "deletePet", "explode", "whoami", "slow",
                                          "read_file"]
    assert [(r["method"], r["path"]) for r in sent] == [("DELETE", "/v1/pets/1")]


# -- the library over HTTP: a specialist with its own model ------------------------------------


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


SCRIPTS = {
    "": [{"tool_calls": [to("reader", "Read config.ini and report the port.")],
          "usage": usage(100, 10)},
         {"content": "The server listens on port 8080.", "usage": usage(400, 40)}],
    "reader": [{"tool_calls": [call("read_file", "call_r", file_path="config.ini")],
                "usage": usage(200, 20)},
               {"content": "port = 8080", "usage": usage(300, 30)}],
}


def test_a_specialist_with_its_own_model_counts_in_the_threads_usage(scripted_server, repo,
                                                                      tmp_path):
    server = scripted_server(by_conversation(SCRIPTS))
    with Agent(model="openai/planner-model", api_base=server.api_base, api_key="sk-test-dummy",
               cwd=repo, verify=False, planner=True, session_dir=tmp_path / "sessions",
               specialists=[Specialist(name="reader", description="Reads files.",
                                       tools=["read"], model="openai/small-model")]) as agent:
        result = agent.run("Which port?")
    assert result.status == "completed", result.error
    assert result.final_message == "The server listens on port 8080."
    models = [(body["model"], "You are the specialist" in json.dumps(body["messages"][0]))
              for body in server.requests]
    assert models == [("planner-model", False), ("small-model", True), ("small-model", True),
                      ("planner-model", False)]
    collab = result.items[0]
    assert (collab.usage.input_tokens, collab.usage.output_tokens) == (500, 50)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (1000, 100)


# -- the CLI: [specialists.NAME] in the config file, --planner ---------------------------------

CONFIG = """\
[specialists.reader]
description = "Reads files and reports what they say."
tools = ["read"]
prompt = "Quote values exactly."
"""


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_cli_planner_with_specialists_from_the_config_file(scripted_server, repo, home, tmp_path,
                                                           wire):
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    server = scripted_server(by_conversation(SCRIPTS))
    model, api_base, env = ("openai/scripted", server.api_base, None) if wire == "openai" \
        else ("anthropic/claude-sonnet-4-5-20250929", server.url,
              {"ANTHROPIC_API_KEY": "sk-ant-test-dummy"})
    run = run_agent(["--config", str(config), "--planner", "--no-verify", "--event-format",
                     "agentb", "-i", "Which port?"], cwd=repo, home=home, api_base=api_base,
                    model=model, env_extra=env, timeout=CLI_TIMEOUT, parse=False)
    assert run.returncode == 0, run.stderr
    stream = [json.loads(line) for line in run.stdout.splitlines()]
    for line in stream:
        agentb.parse_agentb_event(line)  # every line is one of AgentB's events
    assert stream[-1]["type"] == "thread.run.completed"
    sub = [e["data"] for e in stream if e["type"].startswith("agent.sub_agent")]
    assert [d["specialistId"] for d in sub] == ["reader", "reader"]
    assert sub[0]["subTaskDescription"] == "Read config.ini and report the port."
    assert sub[1]["result"] == {**sub[1]["result"], "success": True, "data": "port = 8080"}
    first = server.requests[0]
    tools = [t.get("name") or t["function"]["name"] for t in first["tools"]]
    assert tools == ["update_plan", "delegate_to_specialist"]


def test_cli_codex_stream_and_the_planner_without_specialists(scripted_server, repo, home,
                                                              tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    server = scripted_server(by_conversation(SCRIPTS))
    run = run_agent(["--config", str(config), "--planner", "--no-verify", "--json", "-i",
                     "Which port?"], cwd=repo, home=home, api_base=server.api_base,
                    timeout=CLI_TIMEOUT)
    assert run.returncode == 0, run.stderr
    collab = run.completed_items("collab_tool_call")
    assert len(collab) == 1 and collab[0]["status"] == "completed"
    assert collab[0]["prompt"] == "Read config.ini and report the port."
    assert [i["type"] for i in collab[0]["items"]] == ["mcp_tool_call", "agent_message"]
    assert run.events[-1]["usage"]["input_tokens"] == 1000

    empty = tmp_path / "empty.toml"
    empty.write_text("")
    failed = run_agent(["--config", str(empty), "--planner", "-i", "x"], cwd=repo, home=home,
                       api_base=server.api_base, timeout=CLI_TIMEOUT, parse=False)
    assert failed.returncode == 2 and failed.stdout == ""
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and "planner mode needs at least one specialist" in lines[0]

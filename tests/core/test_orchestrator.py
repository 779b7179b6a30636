"""Toolsets as objects (compose/toolset.py), tool providers (tools/provider.py) and the toolset
orchestrator (compose/orchestrator.py): toolsets from built-ins, Python tools, providers and an
OpenAPI document (a real local service), a large one split by the model once and cached on
disk, the second run making no model call."""
from __future__ import annotations

import json

import pytest

from baseagent import Agent, ConfigError, Tool, ToolProvider, Toolset, ToolsetOrchestrator
from baseagent.compose.orchestrator import read_answer, settle, source_hash
from baseagent.testing.deterministic import DeterministicClient
from baseagent.testing.scripted_server import ScriptedServer
from openapi_service import PetService, document


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def lookup(ticket: str) -> str:
    """Read a ticket."""
    return f"ticket {ticket}: flaky test"


class Tracker(ToolProvider):
    name = "tracker"

    def __init__(self) -> None:
        self.closed = False

    def get_tools(self):
        def shell(command: str) -> str:
            """The tracker's own shell (clashes with the built-in one)."""
            return f"tracker ran {command}"

        return [lookup, shell]

    def close(self) -> None:
        self.closed = True


class Broken:  # a provider by shape alone, which fails
    name = "broken"

    def get_tools(self):
        raise RuntimeError("the tracker is down")


def test_toolsets_and_providers_join_an_agent(workspace):
    tracker = Tracker()
    model = DeterministicClient([
        {"tool_calls": [call("lookup", ticket="ENG-1"), call("tracker__shell", command="ls")]},
        {"content": "done"}])
    events = []
    agent = Agent(model_client=model, cwd=workspace, session=False, verify=False,
                  enabled_toolsets=["shell"], on_event=events.append,
                  tools=[Toolset("reading", "Look around", builtins=["read"]), tracker, Broken()])
    try:
        result = agent.run("triage")
        notices = [e.message for e in events if e.type == "error"]
    finally:
        agent.close()
    offered = [t["function"]["name"] for t in model.tools_seen[0]]
    # the toolset's built-ins join the one enabled_toolsets keeps; the provider's tools
    # follow, its clashing one renamed; the broken provider is a notice
    assert offered == ["shell", "read_file", "grep_files", "list_dir", "lookup",
                       "tracker__shell"]
    calls = [i for i in result.items if i.type == "mcp_tool_call"]
    assert [(i.tool, i.status, i.result.content[0]["text"]) for i in calls] == [
        ("lookup", "completed", "ticket ENG-1: flaky test"),
        ("shell", "completed", "tracker ran ls")]
    assert result.ok
    assert tracker.closed  # Agent.close() closed the provider
    assert any("tool provider 'broken' failed: RuntimeError: the tracker is down" in n
               for n in notices), notices


def test_bad_toolsets_are_one_line():
    with pytest.raises(ConfigError, match="unknown tool or toolset 'reed'"):
        Toolset("x", builtins=["reed"])
    with pytest.raises(ConfigError, match="a name is 1-64 letters"):
        Toolset("has space")
    with pytest.raises(ConfigError, match=r"toolset x: openapi.api.spec: Field required"):
        Toolset("x", openapi={"api": {"spce": "y"}})
    with pytest.raises(ConfigError, match="tools= takes functions, Tool objects, toolsets"):
        Agent(model_client=DeterministicClient([]), session=False, tools=[42])


def _many(count: int) -> list:
    tools = []
    for n in range(count):
        def fn(x: int = 0, n=n) -> str:
            return f"tool {n}"
        fn.__name__ = f"t{n}"
        fn.__doc__ = f"Tool number {n}: {'reads' if n % 2 else 'writes'} things."
        tools.append(fn)
    return tools


def test_a_large_toolset_is_split_by_the_model_once_then_from_the_cache(tmp_path):
    """Through the library over HTTP: the scripted server is the model; the second
    orchestrator (a second run) reads the cache and sends no request."""
    answer = {"groups": [
        {"name": "Readers", "description": "Tools that read.", "tools": ["t1", "t3", "t5"]},
        {"name": "writers", "description": "Tools that write.",
         "tools": ["t0", "t2", "t4", "t99"]}]}  # t99 does not exist; t6 is missing
    toolsets = [Toolset("big", "Numbered tools", tools=_many(7)),
                Toolset("small", "Two tools", tools=_many(2))]
    cache = tmp_path / "cache"
    runs = []
    with ScriptedServer([{"content": "Here:\n```json\n" + json.dumps(answer) + "\n```"}]) \
            as server:
        for _ in range(2):
            with ToolsetOrchestrator(toolsets, model="openai/demo", api_base=server.api_base,
                                     api_key="dummy", toolset_max_tools=3,
                                     cache_dir=cache, env={}) as orchestrator:
                built = orchestrator.toolsets()
                runs.append(([(t.name, t.description, [x.name for x in t.tools])
                              for t in built], orchestrator.notices))
            assert len(server.requests) == 1  # the first run asked; the second did not
        request = server.requests[0]
    (first, notices), (second, again) = runs
    assert first == second == [
        ("big_readers", "Tools that read.", ["t1", "t3", "t5"]),
        ("big_writers", "Tools that write.", ["t0", "t2", "t4"]),
        ("big_other", "Numbered tools", ["t6"]),
        ("small", "Two tools", ["t0", "t1"])]
    assert "unknown tool 't99' left out" in " ".join(notices)
    assert again == []
    asked = request["messages"][-1]["content"]
    assert "Split these 7 tools of the 'big' toolset (Numbered tools)" in asked
    assert "at most 3 tools per group" in asked and "- t6: Tool number 6: writes things." in asked
    assert len(list(cache.glob("*.json"))) == 1


def test_splits_depend_on_the_tools_and_the_limit(tmp_path):
    tools = [Toolset("a", tools=_many(5)).fixed_tools()]
    first = source_hash(tools[0], 3)
    assert first == source_hash(Toolset("renamed", tools=_many(5)).fixed_tools(), 3)
    assert first != source_hash(tools[0], 4)
    assert first != source_hash(Toolset("a", tools=_many(6)).fixed_tools()[:5][::-1], 3)
    # an unreadable answer: an in-order split and a notice, nothing cached (asked again)
    model = DeterministicClient([{"content": "I would group them by purpose."},
                                {"content": "still no JSON"}])
    for _ in range(2):
        orchestrator = ToolsetOrchestrator([Toolset("a", tools=_many(5))], model_client=model,
                                           toolset_max_tools=2, cache_dir=tmp_path,
                                           env={})
        built = orchestrator.toolsets()
        assert [(t.name, [x.name for x in t.tools]) for t in built] == [
            ("a_part_1", ["t0", "t1"]), ("a_part_2", ["t2", "t3"]), ("a_part_3", ["t4"])]
        assert orchestrator.notices == ["toolset 'a': the model's grouping could not be read; "
                                        "split in order"]
    assert model.calls == 2 and not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize("answer, groups, problems", [
    ({"groups": [{"name": "A b!", "tools": ["x", "y"]}, {"name": "c", "tools": ["z"]}]},
     [("a_b", ["x", "y"]), ("c", ["z"])], []),
    ({"groups": [{"name": "a", "tools": ["x", "x", "y", "z"]}]},
     [("a_1", ["x", "y"]), ("a_2", ["z"])], ["x is in two groups: kept in the first",
                                              "group a has 3 tools: cut in order"]),
    ({"groups": [{"name": "a", "tools": ["x"]}]}, [("a", ["x"]), ("other", ["y", "z"])],
     ["2 tool(s) in no group: put in 'other'"]),
    ({"nothing": 1}, [("part_1", ["x", "y"]), ("part_2", ["z"])],
     ["the answer has no groups"]),
])
def test_settle_puts_every_tool_in_exactly_one_group(answer, groups, problems):
    got, found = settle(answer, ["x", "y", "z"], 2)
    assert [(g.name, g.tools) for g in got] == groups
    assert found == problems


def test_read_answer_finds_the_json():
    assert read_answer('Sure!\n```json\n{"groups": []}\n```') == {"groups": []}
    assert read_answer("no json here") is None
    assert read_answer("[1, 2]") is None


def test_toolsets_by_openapi_tag_from_a_real_service(workspace, tmp_path):
    with PetService("k") as service:
        declared = [Toolset("pets", "The pets API", by_tag=True,
                            openapi={"pets": {"spec": f"{service.url}/openapi.json",
                                              "exclude": ["slow"]}}),
                    Toolset("files", "Read files", builtins=["read"])]
        with ToolsetOrchestrator(declared, model_client=DeterministicClient([]),
                                 cache_dir=tmp_path, env={}) as orchestrator:
            built = {t.name: t for t in orchestrator.toolsets()}
            assert {n: [x.name for x in t.tools] for n, t in built.items()} == {
                "pets_admin": ["deletePet"], "pets_pets": ["listPets", "createPet", "getPet"],
                "pets_other": ["explode", "whoami"], "files": ["read_file", "grep_files",
                                                              "list_dir"]}
            assert built["pets_pets"].metadata == {"source": "pets", "tag": "pets"}
            # a built toolset handed to an agent: its tools work while the orchestrator is open
            model = DeterministicClient([{"tool_calls": [call("getPet", petId=1)]},
                                         {"content": "Felix"}])
            agent = Agent(model_client=model, cwd=workspace, session=False, verify=False,
                          enabled_toolsets=[], tools=[orchestrator.toolset("pets_pets"),
                                                      built["files"]])
            try:
                result = agent.run("who is pet 1?")
            finally:
                agent.close()
    assert [t["function"]["name"] for t in model.tools_seen[0]] == [
        "read_file", "grep_files", "list_dir", "listPets", "createPet", "getPet"]
    item = next(i for i in result.items if i.type == "mcp_tool_call")
    assert (item.server, item.tool, item.status) == ("pets", "getPet", "completed")
    assert '"name": "Felix"' in item.result.content[0]["text"]
    assert isinstance(built["files"].tools[0], Tool)

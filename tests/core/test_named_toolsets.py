"""Named toolsets of the configuration (`[toolsets.NAME]`, config/toolsets.py): loaded from
the file, checked against the other names (one line each), opened in the one vocabulary
(core/delegation/specialists.py) wherever a list of tool names is read, and used in-process by the
library: the top agent's `enabled_toolsets` and a specialist's `tools`. The CLI end to end
is tests/cli/test_toolsets.py."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent, ConfigError, ToolProvider
from baseagent.config.load import load_settings, settings_from_options
from baseagent.config.toolsets import ToolsetConfig
from baseagent.core.delegation.specialists import Sources, resolve_tools, unknown_refs
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.registry import builtin_tools
from baseagent.tools.toolsets import builtin_part, expand_named
from openapi_service import PetService, document


def call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, **({"id": call_id} if call_id else {})}


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def load(tmp_path: Path, text: str, profile: str | None = None):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_settings({}, env={}, config_file=path, profile=profile)


# -- loading ------------------------------------------------------------------------------

def test_toolset_tables_load_and_merge_like_the_other_tables(tmp_path):
    settings = load(tmp_path, """\
tools = ["readers", "shell"]
[toolsets.readers]
description = "  Read code and the pet store  "
tools = ["read", " pets:pets "]
[openapi.pets]
spec = "pets.json"
[profiles.more]
toolsets = { readers = { description = "Only reading" }, planners = { tools = ["plan"] } }
""")
    assert settings.toolsets == {"readers": ToolsetConfig(
        description="Read code and the pet store", tools=["read", "pets:pets"])}
    assert settings.enabled_toolsets == ["readers", "shell"]
    # a profile adds a toolset and overrides one key of another, as with [mcp_servers]
    chosen = load(tmp_path, (tmp_path / "config.toml").read_text(), profile="more")
    assert chosen.toolsets["readers"].description == "Only reading"
    assert chosen.toolsets["readers"].tools == ["read", "pets:pets"]
    assert chosen.toolsets["planners"].tools == ["plan"]


@pytest.mark.parametrize("options, message", [
    ({"enabled_toolsets": ["readerz"]},
     "enabled_toolsets (tools): unknown tool or toolset 'readerz' (choose from read, edit, "
     "shell, plan, read_file, write_file, apply_patch, grep_files, list_dir, update_plan, "
     "view_image, none, readers)"),
    ({"disabled_toolsets": ["readerz"]}, "disabled_toolsets (disabled_tools): unknown tool"),
    ({"toolsets": {"read": {"tools": ["shell"]}}},
     "toolsets: read: a built-in tool or group has that name too; rename the toolset"),
    ({"toolsets": {"pets": {"tools": ["read"]}}},
     "toolsets: pets: [openapi.pets] has that name too; rename the toolset"),
    ({"toolsets": {"both": {"tools": ["readers", "shell"]}}},
     "toolsets: both: names the toolset 'readers' (toolsets do not nest"),
    ({"toolsets": {"empty": {"tools": []}}}, "toolsets.empty.tools: List should have at least"),
    ({"toolsets": {"blank": {"tools": ["read", " "]}}}, "toolsets.blank.tools: a tool name is empty"),
    ({"toolsets": {"x": {"tools": ["read"], "model": "m"}}}, "toolsets.x.model: unknown key"),
    ({"toolsets": {"a b": {"tools": ["read"]}}}, "'a b' is not a valid name"),
])
def test_bad_toolsets_are_one_line_naming_the_key(options, message):
    base = {"openapi": {"pets": {"spec": "pets.json"}},
            "toolsets": {"readers": {"tools": ["read"]}}}
    merged = {**base, **options, "toolsets": {**base["toolsets"], **options.get("toolsets", {})}}
    with pytest.raises(ConfigError) as info:
        settings_from_options(merged)
    text = str(info.value)
    assert message in text and "\n" not in text, text


def test_an_assigned_list_is_checked_against_the_toolsets_too():
    settings = settings_from_options({"toolsets": {"readers": {"tools": ["read"]}}})
    settings.enabled_toolsets = ["readers"]
    with pytest.raises(ValueError, match="unknown tool or toolset 'writers'"):
        settings.enabled_toolsets = ["writers"]


# -- the vocabulary (pure) ------------------------------------------------------------------

class _Fake:
    def __init__(self, name: str, server: str) -> None:
        self.name, self.server = name, server


NAMED = {"readers": ["read", "pets:pets"], "ops": ["shell", "docs"]}
SOURCES = Sources(mcp=frozenset({"docs"}), openapi=frozenset({"pets"}), toolsets=NAMED)


def test_a_toolset_opens_into_its_names_wherever_names_are_read():
    assert expand_named(["plan", "readers", "ops"], NAMED) == [
        "plan", "read", "pets:pets", "shell", "docs"]
    assert builtin_part(["readers", "write_file"], NAMED) == ["read", "write_file"]
    assert builtin_part(["ops"], {"ops": ["docs"]}) == []  # sources only: no built-in tool
    assert unknown_refs(["readers", "teleport", "docs:tag", "lookup"], SOURCES,
                        ["lookup"]) == ["teleport", "docs:tag"]


def test_resolve_tools_takes_a_toolset_name_in_order_each_tool_once():
    sources = [_Fake("mcp__docs__search", "docs"), _Fake("other", "elsewhere")]
    got = resolve_tools(["ops", "read_file", "readers"], builtins=builtin_tools(), caller=[],
                        source_tools=sources, sources=SOURCES)
    # pets:pets stands for no tool here (no operation of that document is up)
    assert [t.name for t in got] == ["shell", "mcp__docs__search", "read_file", "grep_files",
                                     "list_dir"]


# -- in the library, with a real local OpenAPI service ----------------------------------------

def agent_for(workspace: Path, steps: list[Any], **kw: Any) -> tuple[Agent, DeterministicClient]:
    model = DeterministicClient(steps)
    return Agent(model_client=model, cwd=workspace, env={"PATH": os.environ["PATH"]},
                 session=False, verify=False, **kw), model


def test_the_top_agent_gets_what_its_toolsets_hold(workspace):
    """`enabled_toolsets` names a toolset: its built-in names and its sources' tools (one
    tag of the document), not the rest of the document; the caller's own tools (a provider
    here) stay; a disabled toolset removes its tools from what the rest gives."""
    class Vet(ToolProvider):
        name = "vet"

        def get_tools(self):
            def checkup(pet: str) -> str:
                """Book a checkup."""
                return "booked"

            return [checkup]

    with PetService("k") as service:
        spec = {"spec": document(f"{service.url}/v1")}
        agent, model = agent_for(workspace, [
            {"tool_calls": [call("listPets", limit=1)]}, {"content": "Felix"}],
            openapi={"pets": spec}, enabled_toolsets=["pet_reader", "plan"], tools=[Vet()],
            toolsets={"pet_reader": {"description": "Reads the pet store",
                                     "tools": ["read", "pets:pets"]}})
        with agent:
            result = agent.run("list one pet")
        sent = [(r["method"], r["path"]) for r in service.requests]
        assert result.ok, result.error
        assert names(model.tools_seen[0]) == ["read_file", "grep_files", "list_dir",
                                              "update_plan", "listPets", "createPet", "getPet",
                                              "checkup"]
        assert sent == [("GET", "/v1/pets")]

        agent, model = agent_for(workspace, [{"content": "ok"}], openapi={"pets": spec},
                                 disabled_toolsets=["admin"],
                                 toolsets={"admin": {"tools": ["pets:admin", "shell"]}})
        with agent:
            agent.run("x")
    offered = names(model.tools_seen[0])
    assert "deletePet" not in offered and "shell" not in offered
    assert {"read_file", "listPets", "getPet", "whoami"} <= set(offered)


def test_a_specialist_names_a_toolset_and_an_unknown_name_is_one_error(workspace):
    def lookup(ticket: str) -> str:
        """Look a ticket up."""
        return f"{ticket}: flaky"

    agent, model = agent_for(workspace, [
        {"tool_calls": [call("delegate_to_specialist", "c1", specialist_id="triage",
                             sub_task="look up ENG-1")]},
        {"tool_calls": [call("lookup", ticket="ENG-1")]},
        {"content": "ENG-1 is flaky"}, {"content": "done"}],
        planner=True, tools=[lookup],
        toolsets={"tickets": {"tools": ["lookup", "read"]}},
        specialists={"triage": {"description": "Triage", "tools": ["tickets", "plan"]}})
    with agent:
        result = agent.run("triage")
    assert result.ok, result.error
    assert names(model.tools_seen[1]) == ["lookup", "read_file", "grep_files", "list_dir",
                                          "update_plan"]

    with pytest.raises(ConfigError) as info:
        agent_for(workspace, [], toolsets={"tickets": {"tools": ["lookup", "teleport"]}})
    assert str(info.value) == (
        "toolsets: unknown tool(s) tickets: lookup; tickets: teleport (use built-in tools or "
        "groups, [mcp_servers] or [openapi] names, SOURCE:TAG, or your own tools' names)")

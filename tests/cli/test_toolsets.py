"""Named toolsets of the config file through the real CLI (`[toolsets.NAME]`, docs/TOOLS.md):
`--tools NAME` for the top agent, a specialist naming one, `baseagent toolsets list` and
`baseagent toolsets split NAME` (one model call against the scripted server, then the
cache: the second invocation makes no request), with a real local OpenAPI service
(tests/openapi_service.py). Loading and the library in-process: core/test_named_toolsets.py."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Callable

from helpers import run_agent, by_conversation
from mcp_helpers import free_port
from openapi_service import PetService

# Seconds per CLI run (a loaded machine).
CLI_TIMEOUT = 180
READ = ["read_file", "grep_files", "list_dir"]
PETS = ["listPets", "createPet", "getPet"]  # the operations tagged `pets`


def call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, **({"id": call_id} if call_id else {})}


def offered(request: dict[str, Any]) -> list[str]:
    """The tool names of one request, on either wire."""
    return [t.get("name") or t["function"]["name"] for t in request.get("tools", [])]


def config(tmp_path: Path, service: PetService, more: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f"""\
[openapi.pets]
spec = "{service.url}/openapi.json"

[toolsets.pet_reader]
description = "Reads the code and the pet store"
tools = ["read", "pets:pets"]
{more}""")
    return path


def one_line_error(run: Any) -> str:
    assert run.returncode == 2 and run.stdout == "", (run.returncode, run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


# -- the top agent: --tools NAME ------------------------------------------------------------

def test_tools_names_a_toolset_and_the_agent_gets_only_its_tools(scripted_server, workspace,
                                                                 home, tmp_path):
    with PetService("k") as service:
        path = config(tmp_path, service)
        model = scripted_server([{"tool_calls": [call("listPets", limit=1)]},
                                 {"content": "The first pet is Felix."}])
        run = run_agent(["--config", str(path), "--tools", "pet_reader", "--no-verify", "--json",
                         "-i", "name one pet"], cwd=workspace, home=home,
                        api_base=model.api_base, timeout=CLI_TIMEOUT)
        sent = [(r["method"], r["path"]) for r in service.requests]
    assert run.returncode == 0, run.stderr
    # its built-in group and the one tag of the document: not shell, not deletePet, ...
    assert offered(model.requests[0]) == READ + PETS
    assert sent == [("GET", "/v1/pets")]
    assert run.completed_items("agent_message")[-1]["text"] == "The first pet is Felix."

    failed = run_agent(["--config", str(path), "--tools", "pet_readr", "-i", "x"],
                       cwd=workspace, home=home, api_base=model.api_base, timeout=CLI_TIMEOUT,
                       parse=False)
    line = one_line_error(failed)
    assert "enabled_toolsets (tools): unknown tool or toolset 'pet_readr'" in line
    assert line.endswith("none, pet_reader)")
    assert len(model.requests) == 2  # the refused run asked nothing


# -- a specialist names a toolset (planner, Anthropic's wire) ----------------------------------


def test_a_specialists_tools_name_a_toolset(scripted_server, workspace, home, tmp_path):
    with PetService("k") as service:
        path = config(tmp_path, service, """
[specialists.keeper]
description = "Knows the pet store."
tools = ["pet_reader", "plan"]
""")
        model = scripted_server(by_conversation({
            "": [{"tool_calls": [call("delegate_to_specialist", "c1", specialist_id="keeper",
                                      sub_task="Get pet 1 and say its name.")]},
                 {"content": "Pet 1 is Felix."}],
            "keeper": [{"tool_calls": [call("getPet", "c2", petId=1)]},
                       {"content": "Felix"}]}))
        run = run_agent(["--config", str(path), "--planner", "--no-verify", "--json", "-i",
                         "who is pet 1?"], cwd=workspace, home=home, api_base=model.url,
                        model="anthropic/claude-sonnet-4-5-20250929",
                        env_extra={"ANTHROPIC_API_KEY": "sk-ant-test-dummy"},
                        timeout=CLI_TIMEOUT)
        sent = [(r["method"], r["path"]) for r in service.requests]
    assert run.returncode == 0, run.stderr
    assert offered(model.requests[0]) == ["update_plan", "delegate_to_specialist"]
    assert "keeper: Knows the pet store. (tools: pet_reader, plan)" in json.dumps(
        model.requests[0]["tools"])
    assert offered(model.requests[1]) == READ + PETS + ["update_plan"]
    assert sent == [("GET", "/v1/pets/1")]
    collab = run.completed_items("collab_tool_call")
    assert len(collab) == 1 and collab[0]["status"] == "completed"


# -- baseagent toolsets list ---------------------------------------------------------------------

def test_toolsets_list_resolves_each_toolset_with_its_sources_up(workspace, home, tmp_path):
    gone = f"http://127.0.0.1:{free_port()}/openapi.json"  # nobody answers
    with PetService("k") as service:
        path = config(tmp_path, service, f"""
[toolsets.admin]
tools = ["pets:admin", "shell", "pets:admin"]

[toolsets.parked]
description = "A document switched off and one that is down"
tools = ["old", "gone"]

[openapi.old]
spec = "{service.url}/openapi.json"
enabled = false

[openapi.gone]
spec = "{gone}"
""")
        listed = run_agent(["toolsets", "list", "--json", "--config", str(path)], cwd=workspace,
                           home=home, timeout=CLI_TIMEOUT, parse=False)
        text = run_agent(["--config", str(path), "toolsets", "list"], cwd=workspace,
                         home=home, timeout=CLI_TIMEOUT, parse=False)
        called = list(service.requests)
    assert listed.returncode == 1, listed.stderr  # a source failed to start
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["name"], r["tools"]) for r in rows] == [
        ("pet_reader", READ + PETS), ("admin", ["deletePet", "shell"]), ("parked", [])]
    assert rows[0] == {"name": "pet_reader", "description": "Reads the code and the pet store",
                       "names": ["read", "pets:pets"], "tools": READ + PETS, "max_tools": 30,
                       "count": 6, "over_limit": False}
    assert "toolset parked: [openapi.old] is disabled" in listed.stderr
    assert "gone" in listed.stderr and "continuing without" in listed.stderr
    assert called == []  # listing calls no operation

    assert text.returncode == 1
    assert text.stdout.splitlines()[:3] == [
        "pet_reader (6 tool(s)): Reads the code and the pet store",
        "  names: read, pets:pets",
        "  tools: read_file, grep_files, list_dir, listPets, createPet, getPet"]
    assert "admin (2 tool(s))" in text.stdout and "  tools: (none)" in text.stdout


def test_toolsets_list_refuses_a_name_that_means_nothing(workspace, home, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[toolsets.ops]\ntools = ["shell", "docs", "pets:admin"]\n')
    run = run_agent(["toolsets", "list", "--config", str(path)], cwd=workspace, home=home,
                    timeout=CLI_TIMEOUT, parse=False)
    assert one_line_error(run) == (
        "baseagent: error: toolsets: unknown tool(s) ops: docs; ops: pets:admin (use built-in "
        "tools or groups, [mcp_servers] or [openapi] names, SOURCE:TAG, or your own tools' "
        "names)")
    task = run_agent(["--config", str(path), "-i", "x"], cwd=workspace, home=home,
                     api_base="http://127.0.0.1:9/v1", timeout=CLI_TIMEOUT, parse=False)
    assert "toolsets: unknown tool(s) ops: docs" in one_line_error(task)

    empty = tmp_path / "empty.toml"
    empty.write_text("")
    none = run_agent(["toolsets", "list", "--config", str(empty)], cwd=workspace, home=home,
                     timeout=CLI_TIMEOUT, parse=False)
    assert (none.returncode, none.stdout) == (
        0, "no toolsets configured (add [toolsets.NAME] tables to the config file)\n")


# -- baseagent toolsets split NAME -----------------------------------------------------------------

GROUPS = {"groups": [
    {"name": "Looking", "description": "Look at pets and files.",
     "tools": ["listPets", "getPet", "read_file", "grep_files"]},
    {"name": "changing", "description": "Change the store.", "tools": ["createPet", "deletePet"]},
    {"name": "rest", "description": "Everything else.",
     "tools": ["list_dir", "explode", "whoami", "slow"]}]}


def test_toolsets_split_asks_the_model_once_then_reads_the_cache(scripted_server, workspace,
                                                                  home, tmp_path):
    with PetService("k") as service:
        path = config(tmp_path, service, """
[toolsets.everything]
description = "The whole pet store and reading"
tools = ["pets", "read"]
""")
        path.write_text("toolset_max_tools = 4\n" + path.read_text())
        model = scripted_server([{"content": "Here you are:\n```json\n" + json.dumps(GROUPS)
                                  + "\n```"}])
        first = run_agent(["toolsets", "split", "everything", "--config", str(path)],
                          cwd=workspace, home=home, api_base=model.api_base,
                          timeout=CLI_TIMEOUT, parse=False)
        second = run_agent(["toolsets", "split", "everything", "--json", "--config", str(path)],
                           cwd=workspace, home=home, api_base=model.api_base,
                           timeout=CLI_TIMEOUT, parse=False)
        small = run_agent(["toolsets", "split", "pet_reader", "--max-tools", "6", "--config",
                           str(path)], cwd=workspace, home=home, api_base=model.api_base,
                          timeout=CLI_TIMEOUT, parse=False)
    assert first.returncode == 0, first.stderr
    # the one request: through the run's model settings, naming the tools and the limit
    assert len(model.requests) == 1
    request = model.requests[0]
    assert request["model"] == "scripted" and "tools" not in request
    ask = request["messages"][-1]["content"]
    assert "Split these 10 tools of the 'everything' toolset (The whole pet store and " \
           "reading) into groups of related tools, at most 4 tools per group" in ask
    assert "- deletePet: " in ask and "- read_file: " in ask
    lines = first.stdout.splitlines()
    assert lines[0].startswith("everything: 10 tools, more than toolset_max_tools (4): 3 "
                               "groups (asked the model, cached: ")
    assert lines[1:] == [
        "everything_looking (4): Look at pets and files.",
        "  listPets, getPet, read_file, grep_files",
        "everything_changing (2): Change the store.",
        "  createPet, deletePet",
        "everything_rest (4): Everything else.",
        "  list_dir, explode, whoami, slow"]
    cached = list((home / ".baseagent" / "toolsets").glob("*.json"))
    assert len(cached) == 1 and str(cached[0]) in lines[0]

    # the second invocation reads the cache: no request, the same groups
    assert second.returncode == 0, second.stderr
    assert len(model.requests) == 1
    report = json.loads(second.stdout)
    assert (report["cached"], report["split"], report["count"]) == (True, True, 10)
    assert [(g["name"], g["tools"]) for g in report["groups"]] == [
        ("everything_looking", ["listPets", "getPet", "read_file", "grep_files"]),
        ("everything_changing", ["createPet", "deletePet"]),
        ("everything_rest", ["list_dir", "explode", "whoami", "slow"])]

    # a toolset within the limit is not split, and asks nothing
    assert small.returncode == 0, small.stderr
    assert small.stdout.splitlines() == [
        "pet_reader: 6 tool(s), no more than toolset_max_tools (6): not split",
        "pet_reader (6): Reads the code and the pet store",
        "  read_file, grep_files, list_dir, listPets, createPet, getPet"]
    assert len(model.requests) == 1


def test_toolsets_split_failures_are_one_line_or_an_uncached_split(scripted_server, workspace,
                                                                    home, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('toolset_max_tools = 2\n[toolsets.all]\ntools = ["read", "edit"]\n')
    unknown = run_agent(["toolsets", "split", "every", "--config", str(path)], cwd=workspace,
                        home=home, timeout=CLI_TIMEOUT, parse=False)
    assert one_line_error(unknown) == "baseagent: error: unknown toolset 'every' (toolsets: all)"
    no_key = run_agent(["toolsets", "split", "all", "--config", str(path), "--model",
                        "anthropic/claude-sonnet-4-5"], cwd=workspace, home=home,
                       timeout=CLI_TIMEOUT, parse=False, env_extra={"ANTHROPIC_API_KEY": ""})
    assert "missing API key for anthropic" in one_line_error(no_key)

    model = scripted_server([{"content": "I would rather not group them."}])
    prose = run_agent(["toolsets", "split", "all", "--config", str(path)], cwd=workspace,
                      home=home, api_base=model.api_base, timeout=CLI_TIMEOUT, parse=False)
    assert prose.returncode == 1
    assert "the model's grouping could not be read; split in order" in prose.stderr
    assert prose.stdout.splitlines()[1:] == [
        "all_part_1 (2)", "  read_file, grep_files", "all_part_2 (2)", "  list_dir, write_file",
        "all_part_3 (1)", "  apply_patch"]
    assert not (home / ".baseagent" / "toolsets").exists() or \
        not list((home / ".baseagent" / "toolsets").glob("*.json"))

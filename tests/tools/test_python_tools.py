"""Python functions as tools in the library: schemas, calls, failures, events.

In-process with the deterministic model client (milliseconds), and once through real
litellm and HTTP against the scripted server.
"""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from baseagent import Agent, ConfigError, PythonTool, tool
from baseagent.output.jsonl import event_to_line
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError, ToolResult


class Lookup(BaseModel):
    ticket: str = Field(description="ticket id, e.g. ENG-12")
    verbose: bool = False


TICKETS = {"ENG-12": "Fix the flaky login test"}


@tool
def lookup_ticket(args: Lookup) -> str:
    """Read a ticket from the tracker."""
    if args.ticket not in TICKETS:
        raise ToolError(f"no ticket {args.ticket}")
    return TICKETS[args.ticket]


def add(a: int, b: Annotated[int, Field(description="second addend")] = 1) -> int:
    """Add two integers."""
    return a + b


@tool(name="where_am_i", description="The workspace directory.")
def cwd_of(ctx: ToolContext) -> str:
    return str(ctx.cwd)


async def shout(text: str, mode: Literal["upper", "title"] = "upper") -> dict[str, Any]:
    """Shout the text back (async)."""
    await asyncio.sleep(0)
    return {"text": text.upper() if mode == "upper" else text.title()}


def broken(x: int) -> str:
    """A tool with a bug."""
    return str(1 // x)


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def agent_with(workspace: Path, steps: list[Any], tools: list[Any], **kw: Any):
    model = DeterministicClient(steps)
    events: list[Any] = []
    agent = Agent(model_client=model, cwd=workspace, session=False, verify=False,
                  env={"PATH": os.environ["PATH"]}, tools=tools, on_event=events.append, **kw)
    return agent, model, events


def test_functions_become_tools_with_schemas_from_their_arguments(workspace):
    agent, model, _ = agent_with(workspace, [{"content": "ok"}],
                                 [lookup_ticket, add, cwd_of, shout])
    agent.run("nothing")
    specs = {t["function"]["name"]: t["function"] for t in model.tools_seen[0]}
    assert list(specs)[-4:] == ["lookup_ticket", "add", "where_am_i", "shout"]
    assert specs["lookup_ticket"]["description"] == "Read a ticket from the tracker."
    assert specs["lookup_ticket"]["parameters"] == {
        "type": "object", "additionalProperties": False, "required": ["ticket"],
        "properties": {"ticket": {"type": "string", "description": "ticket id, e.g. ENG-12"},
                       "verbose": {"type": "boolean", "default": False}}}
    assert specs["add"]["parameters"]["properties"] == {
        "a": {"type": "integer"},
        "b": {"type": "integer", "default": 1, "description": "second addend"}}
    assert specs["add"]["parameters"]["required"] == ["a"]
    assert specs["where_am_i"] == {"name": "where_am_i", "description": "The workspace directory.",
                                   "parameters": {"type": "object", "properties": {},
                                                  "additionalProperties": False}}
    assert specs["shout"]["parameters"]["properties"]["mode"]["enum"] == ["upper", "title"]
    assert lookup_ticket(Lookup(ticket="ENG-12")) == "Fix the flaky login test"  # still callable
    assert isinstance(lookup_ticket, PythonTool) and lookup_ticket.__name__ == "lookup_ticket"


def test_python_tools_run_and_fail_cleanly(workspace):
    agent, model, events = agent_with(workspace, [
        calls(("lookup_ticket", {"ticket": "ENG-12"}), ("add", {"a": 2, "b": 40}),
              ("where_am_i", {}), ("shout", {"text": "hi there", "mode": "title"}),
              ("lookup_ticket", {"ticket": "ENG-99"}), ("broken", {"x": 0}),
              ("add", {"a": "two"}), ("add", {"a": 1, "c": 3})),
        {"content": "all done"}], [lookup_ticket, add, cwd_of, shout, broken])
    result = agent.run("use the tools")
    assert result.ok and result.final_message == "all done"
    items = [i for i in result.items if i.type == "mcp_tool_call"]
    assert [(i.server, i.tool, i.status) for i in items] == [
        ("baseagent", "lookup_ticket", "completed"), ("baseagent", "add", "completed"),
        ("baseagent", "where_am_i", "completed"), ("baseagent", "shout", "completed"),
        ("baseagent", "lookup_ticket", "failed"), ("baseagent", "broken", "failed"),
        ("baseagent", "add", "failed"), ("baseagent", "add", "failed")]
    texts = [i.result.content[0]["text"] if i.result else i.error.message for i in items]
    assert texts[:4] == ["Fix the flaky login test", "42", str(workspace),
                         '{\n  "text": "Hi There"\n}']
    assert texts[4] == "Error: no ticket ENG-99"
    assert texts[5] == "Error: broken failed: ZeroDivisionError: integer division or modulo by zero"
    assert texts[6].startswith("Error: invalid arguments for add: a: Input should be a valid")
    assert texts[7].startswith("Error: invalid arguments for add: c: Extra inputs")
    # every result went back to the model, paired with its call
    tool_messages = [m for m in model.requests[1] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == texts
    # and the JSONL line is the Codex item kind consumers already show
    line = json.loads(event_to_line([e for e in events if e.type == "item.completed"][0]))
    assert line["item"]["type"] == "mcp_tool_call" and line["item"]["server"] == "baseagent"
    assert line["item"]["arguments"] == {"ticket": "ENG-12", "verbose": False}


def test_tool_results_and_objects_pass_through(workspace):
    class Echo:
        """Any object with the Tool protocol's attributes is a tool (caller-run tools)."""

        name, description, item_type, server = "echo", "Echo.", "mcp_tool_call", "mine"
        tool_name = "echo"

        def parameters(self) -> dict:
            return {"type": "object", "properties": {"v": {"type": "string"}}}

        def parse(self, data: dict) -> dict:
            return data

        def run(self, args: dict, ctx: ToolContext) -> ToolResult:
            return ToolResult(output=f"echo {args['v']}")

        def planned_changes(self, args: Any, ctx: ToolContext) -> list:
            return []

    def raw(n: int) -> ToolResult:
        """Returns a ToolResult of its own."""
        return ToolResult(output=f"n={n}", success=n > 0)

    agent, _, _ = agent_with(workspace, [calls(("echo", {"v": "x"}), ("raw", {"n": 0})),
                                         {"content": "ok"}], [Echo(), raw])
    echo, raw_item = agent.run("go").items[:2]
    assert (echo.server, echo.tool, echo.result.content[0]["text"]) == ("mine", "echo", "echo x")
    assert raw_item.status == "failed" and raw_item.error.message == "n=0"


def test_tool_names_must_not_clash(workspace):
    def shell(command: str) -> str:
        """My own shell."""
        return command

    with pytest.raises(ConfigError, match="two tools are named 'shell'"):
        Agent(model_client=DeterministicClient([]), cwd=workspace, tools=[shell])
    agent = Agent(model_client=DeterministicClient([]), cwd=workspace, tools=[shell],
                  disabled_toolsets=["shell"], session=False)
    assert [t.name for t in agent._prepared.registry.tools()][-1] == "shell"
    with pytest.raises(ConfigError, match="tools= takes functions, Tool objects"):
        Agent(model_client=DeterministicClient([]), cwd=workspace, tools=["shell"])
    def spread(*values: int) -> int:
        return sum(values)

    with pytest.raises(ConfigError, match=r"\*args/\*\*kwargs"):
        Agent(model_client=DeterministicClient([]), cwd=workspace, tools=[spread])


def test_a_python_tool_through_litellm_and_http(scripted_server, workspace):
    server = scripted_server([calls(("add", {"a": 20, "b": 22})), {"content": "42 it is"}])
    with Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
               cwd=workspace, session=False, verify=False, tools=[add],
               enabled_toolsets=["read"], tool_choice="add") as agent:
        result = agent.run("add 20 and 22")
    assert result.ok and result.final_message == "42 it is"
    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == \
        ["read_file", "grep_files", "list_dir", "add"]
    assert first["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert [m["content"] for m in second["messages"] if m["role"] == "tool"] == ["42"]

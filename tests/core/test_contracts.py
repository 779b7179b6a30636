"""The two contracts other code plugs into, held to what they declare.

- A tool (tools/tool.py `Tool`): every kind of tool the agent has satisfies it, and an
  object that leaves hooks out gets their defaults in one place (`adopt`).
- A sink (emitting/interface.py `EventListener`): every sink and listener class satisfies it,
  and an object with only `emit` gets the defaults in one place (`listening`).
- Nothing else looks for a tool's or a listener's members with getattr/hasattr: the code
  calls the declared hooks.
"""
from __future__ import annotations

import ast
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from baseagent.output import events as ev
from baseagent.emitting.interface import HOOKS as SINK_HOOKS
from baseagent.emitting.interface import EventListener, listening
from baseagent.output.emitter import Emitter
from baseagent.tools import tool as contract
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import Tool, ToolResult, adopt
from helpers import REPO

SRC = REPO / "src" / "baseagent"


def declared_members(protocol: type) -> set[str]:
    """The members a Protocol class declares itself: annotations, methods, properties."""
    own = {name for name, value in vars(protocol).items()
           if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    return own | {name for name in vars(protocol).get("__annotations__", {})
                  if not name.startswith("_")}


# -- tools -------------------------------------------------------------------------------------

def every_kind_of_tool() -> dict[str, Any]:
    from baseagent.core.delegation.delegate import delegate_tool
    from baseagent.mcp.tools import McpTool
    from baseagent.openapi.operations import Operation
    from baseagent.openapi.source import OpenApiTool
    from baseagent.tools.external import ExternalTool
    from baseagent.tools.python_tool import PythonTool
    from baseagent.tools.registry import BUILTIN_TOOLS, builtin_tools

    def add(a: int, b: int = 1) -> int:
        """Add two integers."""
        return a + b

    kinds: dict[str, Any] = dict(zip(BUILTIN_TOOLS, builtin_tools(BUILTIN_TOOLS)))
    kinds["python function"] = PythonTool(add)
    kinds["mcp"] = McpTool(name="mcp__s__t", server="s", tool="t", description="A tool.",
                           schema={"type": "object", "properties": {}},
                           call=lambda _tool, _args, _ctx: ToolResult(output="ok"))
    op = Operation(name="svc_get", operation_id="get", method="get", path="/", description="Get.",
                   schema={"type": "object", "properties": {}})
    kinds["openapi"] = OpenApiTool(SimpleNamespace(name="svc"), op)  # type: ignore[arg-type]
    kinds["external"] = ExternalTool("lookup", "Look it up.")
    kinds["delegate"] = delegate_tool()
    return kinds


def test_the_tool_contract_lists_every_member_it_declares():
    assert set(contract.REQUIRED_MEMBERS) | set(contract.HOOKS) == declared_members(Tool)
    assert not set(contract.REQUIRED_MEMBERS) & set(contract.HOOKS)


@pytest.mark.parametrize("kind", list(every_kind_of_tool()))
def test_every_kind_of_tool_satisfies_the_contract(kind, tmp_path):
    tool = every_kind_of_tool()[kind]
    assert isinstance(tool, Tool)  # nominally: each kind subclasses it
    assert Tool in type(tool).__mro__
    assert adopt(tool) is tool
    assert tool.item_type in contract.ITEM_KINDS
    assert isinstance(tool.name, str) and tool.name and isinstance(tool.tool_name, str)
    assert isinstance(tool.description, str) and isinstance(tool.server, str)
    assert tool.parameters().get("type") == "object"
    ctx = ToolContext(cwd=tmp_path)
    args = _sample_arguments(tool)
    assert isinstance(tool.planned_changes(args, ctx), list)
    assert isinstance(tool.named_changes(args, ctx), list)


def _sample_arguments(tool: Any) -> Any:
    samples = {"shell": {"command": "true"}, "read_file": {"file_path": "a.txt"},
               "write_file": {"file_path": "a.txt", "content": "x"},
               "apply_patch": {"input": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch"},
               "grep_files": {"pattern": "x"}, "list_dir": {"dir_path": "."},
               "update_plan": {"plan": [{"step": "look", "status": "pending"}]}, "add": {"a": 1}, "delegate": {"task": "look"},
               "view_image": {"path": "a.png"}}
    return tool.parse(samples.get(tool.name, {}))


def test_file_tools_name_what_they_touch(tmp_path):
    kinds = every_kind_of_tool()
    ctx = ToolContext(cwd=tmp_path)
    write = kinds["write_file"]
    args = _sample_arguments(write)
    assert [c["kind"] for c in write.planned_changes(args, ctx)] == ["add"]
    assert write.named_changes(args, ctx)[0]["path"].endswith("a.txt")
    patch = kinds["apply_patch"]
    args = _sample_arguments(patch)
    # apply_patch names no more than it plans: the contract's default
    assert patch.named_changes(args, ctx) == patch.planned_changes(args, ctx)
    assert [c["kind"] for c in patch.planned_changes(args, ctx)] == ["add"]


class Minimal:
    """A caller's tool object with the required members only (no hooks)."""

    name, description, item_type, server = "echo", "Echo.", "mcp_tool_call", "mine"

    def parameters(self) -> dict:
        return {"type": "object", "properties": {}}

    def parse(self, data: dict) -> dict:
        return data

    def run(self, args: dict, ctx: ToolContext) -> ToolResult:
        return ToolResult(output="echo")


def test_an_object_without_hooks_gets_the_defaults(tmp_path):
    tool = adopt(Minimal())
    ctx = ToolContext(cwd=tmp_path)
    assert isinstance(tool, Tool) and tool.name == "echo" and tool.tool_name == "echo"
    assert tool.planned_changes({}, ctx) == [] and tool.named_changes({}, ctx) == []
    assert tool.run({}, ctx).output == "echo"


def test_an_object_with_some_hooks_keeps_its_own(tmp_path):
    class Planning(Minimal):
        tool_name = "echo-own"

        def planned_changes(self, args: Any, ctx: ToolContext) -> list:
            return [{"path": "p", "kind": "add"}]

    tool = adopt(Planning())
    ctx = ToolContext(cwd=tmp_path)
    assert tool.tool_name == "echo-own"
    assert tool.planned_changes({}, ctx) == [{"path": "p", "kind": "add"}]
    assert tool.named_changes({}, ctx) == [{"path": "p", "kind": "add"}]  # default: the plan


def test_an_object_without_a_required_member_is_no_tool():
    members = {k: v for k, v in vars(Minimal).items() if k != "run"}
    with pytest.raises(TypeError, match="is not a Tool: it has no run$"):
        adopt(type("NoRun", (), members)())
    with pytest.raises(TypeError, match="tools= takes functions, Tool objects"):
        from baseagent.tools.python_tool import as_tool

        as_tool("shell")


def test_the_registry_holds_every_tool_to_the_contract(tmp_path):
    from baseagent.tools.registry import ToolRegistry

    registry = ToolRegistry([Minimal()])
    (tool,) = registry.tools()
    assert isinstance(tool, Tool)
    call = registry.prepare("echo", "{}")
    assert call.named_changes(ToolContext(cwd=tmp_path)) == []


# -- sinks -------------------------------------------------------------------------------------

def every_sink() -> dict[str, Any]:
    from baseagent.agent_stream import Collect, Forward
    from baseagent.core.delegation.delegate import _Nest
    from baseagent.records.recorder import SessionRecorder
    from baseagent.output.agentb import AgentBMapper, AgentBSink
    from baseagent.output.jsonl import JsonlSink
    from baseagent.output.pretty import PrettySink

    return {"jsonl": JsonlSink(io.BytesIO()), "pretty": PrettySink(io.StringIO()),
            "agentb": AgentBSink(JsonlSink(io.BytesIO())), "agentb mapper": AgentBMapper(print),
            "recorder": SessionRecorder, "collect": Collect(), "forward": Forward(print),
            "nest": _Nest(lambda _payload: None, "child")}


def test_the_sink_interface_lists_every_hook_it_declares():
    assert set(SINK_HOOKS) | {"emit", "failure"} == declared_members(EventListener)


@pytest.mark.parametrize("name", list(every_sink()))
def test_every_sink_satisfies_the_interface(name):
    sink = every_sink()[name]
    if isinstance(sink, type):  # classes that need files to be made
        assert EventListener in sink.__mro__
        return
    assert EventListener in type(sink).__mro__
    assert isinstance(sink, EventListener) and listening(sink) is sink


def test_the_sinks_the_cli_makes_satisfy_the_interface(monkeypatch):
    from baseagent import runner

    monkeypatch.setattr(runner.sys.stdout, "isatty", lambda: True, raising=False)
    sink = runner.make_sink(json_output=False)
    assert isinstance(sink, EventListener)


def test_a_listener_with_only_emit_gets_the_defaults():
    got: list[Any] = []

    class OnlyEmit:
        def emit(self, event: ev.ThreadEvent) -> None:
            got.append(event)

    listener = listening(OnlyEmit())
    assert isinstance(listener, EventListener)
    for hook in ("detail", "on_write_error", "headed", "bind_usage", "waiting",
                 "stop_waiting", "close"):
        assert callable(getattr(listener, hook))
    assert listener.failure is None
    emitter = Emitter([OnlyEmit()])
    emitter.turn_started()
    emitter.detail("item_0", "diff")  # no detail hook: nothing happens
    assert [e.type for e in got] == ["turn.started"]


def test_a_listener_keeps_the_hooks_it_has():
    details: list[Any] = []

    class Detailing:
        def emit(self, event: ev.ThreadEvent) -> None:
            pass

        def detail(self, item_id: str, text: str) -> None:
            details.append(text)

    Emitter([Detailing()]).detail("item_0", "diff")
    assert details == ["diff"]
    with pytest.raises(TypeError, match="no emit"):
        listening(object())


# -- no probing --------------------------------------------------------------------------------

# The one place each contract looks for an object's members: its own adapter.
ADAPTERS = {("tools/tool.py", "adopt"), ("tools/tool.py", "_Adopted"),
            ("emitting/interface.py", "listening"), ("emitting/interface.py", "_Adopted")}
PROBED = ("tool", "listener", "sink")


def probes() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scopes: list[tuple[ast.AST, str]] = [
            (node, node.name) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and node.args):
                continue
            target = ast.unparse(node.args[0]).split(".")[-1].lstrip("_")
            if target not in PROBED:
                continue
            inside = {name for scope, name in scopes
                      if scope.lineno <= node.lineno <= (scope.end_lineno or scope.lineno)}
            if not any((rel, name) in ADAPTERS for name in inside):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_probes_tools_or_sinks_for_their_members():
    assert probes() == []


def test_the_runner_and_the_output_package_probe_nothing():
    """runner.py and output/ call the declared hooks; only the adapter looks."""
    for path in [SRC / "runner.py", *sorted((SRC / "output").glob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(SRC).as_posix()
        for line in text.splitlines():
            if ("getattr(" in line or "hasattr(" in line) and rel != "output/emitter.py":
                # a stream wrapper's own attributes (output/redact.py) are not a sink's hooks
                assert rel == "output/redact.py" and "self._target" in line, f"{rel}: {line}"


# -- one name for one thing ------------------------------------------------------------------

def test_one_turn_status_and_one_configuration_error():
    import baseagent.agent_result
    import baseagent.core.loop
    import baseagent.llm.errors
    from baseagent.errors import ConfigError
    from baseagent.llm.local_server import check_local_server

    assert baseagent.agent_result.Status is baseagent.core.loop.Status
    assert not any(isinstance(value, type) and issubclass(value, Exception)
                   and "config" in name.lower() for name, value in vars(baseagent.llm.errors).items())
    with pytest.raises(ConfigError, match="no local model server answers"):
        check_local_server("http://127.0.0.1:9/v1", "openai/m")

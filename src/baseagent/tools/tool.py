"""What the registry needs of a tool, whatever it is built from.

Built-in tools are modules (NAME, DESCRIPTION, Args, ITEM_TYPE, run; see tools/base.py) and
are adapted by ModuleTool. Other sources (Python functions, MCP servers, OpenAPI operations,
tools the caller runs) implement the same protocol, so every tool goes through the same
argument validation, output cap, redaction and event mapping.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from baseagent.tools.base import ToolContext, ToolResult

# The event item kinds a tool call can appear as (output/events.py).
ITEM_KINDS = ("command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "todo_list")
# The `server` of the mcp_tool_call items of tools that are part of the agent itself.
BUILTIN_SERVER = "baseagent"


class ToolArgumentsError(Exception):
    """The model's arguments do not fit the tool's schema; the message tells it what to fix."""


@runtime_checkable
class Tool(Protocol):
    """name: what the model calls; server/tool_name: how an mcp_tool_call item names it
    (an MCP server's own name for the tool may differ from the collision-free `name`)."""

    name: str
    description: str
    item_type: str
    server: str

    @property
    def tool_name(self) -> str: ...

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (what the model sees)."""

    def parse(self, data: dict[str, Any]) -> Any:
        """Validated arguments, or ToolArgumentsError."""

    def run(self, args: Any, ctx: ToolContext) -> ToolResult: ...

    def planned_changes(self, args: Any, ctx: ToolContext) -> list[dict[str, str]]:
        """The files a file-changing call means to touch (its `item.started`)."""


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model's JSON schema as tools send it: no titles, no extra properties."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("additionalProperties", False)
    return schema


def describe_validation_error(name: str, exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors())
    return f"invalid arguments for {name}: {problems}"


def check_json_arguments(name: str, schema: dict[str, Any],
                         data: dict[str, Any]) -> dict[str, Any]:
    """Arguments checked against a JSON schema that did not come from a pydantic model (an
    MCP tool's inputSchema, an OpenAPI operation's parameters): the data, or
    ToolArgumentsError saying what to fix. A schema jsonschema cannot use checks nothing
    (the other side will say)."""
    import jsonschema

    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError:
        return data
    errors = sorted(validator_class(schema).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in errors[:5])
        raise ToolArgumentsError(f"invalid arguments for {name}: {problems}")
    return data


class ModelTool:
    """A tool whose arguments are a pydantic model (built-in modules, Python functions)."""

    def __init__(self, *, name: str, description: str, args_model: type[BaseModel],
                 runner: Any, item_type: str = "mcp_tool_call", server: str = BUILTIN_SERVER,
                 planner: Any = None, namer: Any = None,
                 parameters: dict[str, Any] | None = None) -> None:
        """`parameters`: the JSON schema the model sees, when it must be written by hand (the
        shape models are trained on); default: generated from `args_model`."""
        self.name = name
        self.description = description.strip()
        self.item_type = item_type
        self.server = server
        self.args_model = args_model
        self._run = runner
        self._plan = planner
        self._name = namer
        self._schema = parameters if parameters is not None else schema_of(args_model)

    @property
    def tool_name(self) -> str:
        return self.name

    def parameters(self) -> dict[str, Any]:
        return self._schema

    def parse(self, data: dict[str, Any]) -> Any:
        try:
            return self.args_model.model_validate(data)
        except ValidationError as exc:
            raise ToolArgumentsError(describe_validation_error(self.name, exc)) from None

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return self._run(args, ctx)

    def planned_changes(self, args: Any, ctx: ToolContext) -> list[dict[str, str]]:
        return self._plan(args, ctx) if self._plan is not None else []

    def named_changes(self, args: Any, ctx: ToolContext) -> list[dict[str, str]]:
        """The files the call names even when it will not change them (a refused path)."""
        return self._name(args, ctx) if self._name is not None else self.planned_changes(args, ctx)


def module_tool(module: ModuleType) -> ModelTool:
    """A built-in tool module (NAME, DESCRIPTION, Args, ITEM_TYPE, run[, planned_changes,
    named_changes, PARAMETERS])."""
    return ModelTool(name=module.NAME, description=module.DESCRIPTION, args_model=module.Args,
                     runner=module.run, item_type=module.ITEM_TYPE,
                     planner=getattr(module, "planned_changes", None),
                     namer=getattr(module, "named_changes", None),
                     parameters=getattr(module, "PARAMETERS", None))

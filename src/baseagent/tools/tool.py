"""The one contract of a tool, whatever it is built from: every member and hook is here.

A tool is an object with the members of `Tool` below. The registry (tools/registry.py) is
all that calls them, so every tool goes through the same argument validation, output cap,
redaction and event mapping. What implements it:

- built-in tools (shell.py, read_file.py, ...): one module each, ending in
  `TOOL = ModelTool(...)` naming its hooks; `tools/registry.py` `builtin_tools()` reads them;
- Python functions: `tools/python_tool.py` `PythonTool` (a ModelTool);
- MCP servers' tools: `mcp/tools.py` `McpTool`; OpenAPI operations: `openapi/source.py`
  `OpenApiTool`; tools the caller runs: `tools/external.py` `ExternalTool`; the sub-agent
  tool: `core/delegation/delegate.py`;
- any other object a library caller passes in `Agent(tools=[...])`: `adopt()` below is the
  one place it meets the contract (it gets the defaults of the hooks it leaves out).

Each of those subclasses `Tool` and so inherits the defaults of the hooks it does not
override. Tools never print, never touch the message history and know nothing about
events: they report through the returned ToolResult and, while they run, through
`ctx.progress`. Everything a tool may know about its run is on ToolContext
(tools/context.py, above this module: its `shell()` runs the shell tool).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from baseagent.tools.context import ToolContext

# The event item kinds a tool call can appear as (output/events.py).
ITEM_KINDS = ("command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "todo_list")
# The `server` of the mcp_tool_call items of tools that are part of the agent itself.
BUILTIN_SERVER = "baseagent"
# Defaults of the per-run knobs below (the settings layer passes the configured values).
DEFAULT_SHELL_TIMEOUT_MS = 120_000
# A search that takes longer than this is too broad to be useful to the model anyway.
DEFAULT_GREP_TIMEOUT_S = 30.0
# Where `ToolContext.log()` writes (the caller attaches a handler to see it).
TOOL_LOG = logging.getLogger("baseagent.tools")


class ToolError(Exception):
    """Raised by a tool for an expected failure; the message goes to the model verbatim."""


class ToolArgumentsError(Exception):
    """The model's arguments do not fit the tool's schema; the message tells it what to fix."""


@runtime_checkable
class Tool(Protocol):
    """What the registry needs of a tool. Members without a default must be provided;
    the hooks with one (`tool_name`, `planned_changes`, `named_changes`) are inherited by
    subclasses and filled in by `adopt()` for other objects."""

    # What the model calls it (unique in a run) and the description it reads.
    name: str
    description: str
    # The event item kind its calls appear as (one of ITEM_KINDS).
    item_type: str
    # The `server` of its mcp_tool_call items (BUILTIN_SERVER for the agent's own tools).
    server: str

    @property
    def tool_name(self) -> str:
        """How an mcp_tool_call item names the tool: an MCP server's own name for it may
        differ from the collision-free `name`. Default: `name`."""
        return self.name

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (what the model sees)."""
        ...

    def parse(self, data: dict[str, Any]) -> Any:
        """The validated arguments, or ToolArgumentsError saying what to fix."""
        ...

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        """Do the call. ToolError for an expected failure (its message goes to the model);
        any other exception becomes an error result too. Poll `ctx.cancelled` in long work."""
        ...

    def planned_changes(self, args: Any, ctx: ToolContext) -> list[dict[str, str]]:
        """The files a file-changing call means to touch (its `item.started`); `[{"path",
        "kind"}]`. Default: none."""
        return []

    def named_changes(self, args: Any, ctx: ToolContext) -> list[dict[str, str]]:
        """The files the call names even when it will not change them (a refused path):
        what a failed file_change item reports. Default: `planned_changes`."""
        return self.planned_changes(args, ctx)


# The members every tool provides, and the hooks `Tool` gives a default (tests hold these
# to the protocol).
REQUIRED_MEMBERS = ("name", "description", "item_type", "server", "parameters", "parse", "run")
HOOKS = ("tool_name", "planned_changes", "named_changes")


def adopt(obj: Any) -> Tool:
    """A caller's tool object held to the contract: a `Tool` (by subclass or by having every
    member) as it is; an object that leaves some hooks out, wrapped so that it gets their
    defaults. This is the one place an object's members are looked for; nothing calls a
    tool's hook on faith. Checked here, when the agent is built, not at the call: TypeError
    naming the tool and what is wrong when a required member is missing (a `Tool` subclass
    that leaves `parameters`, `parse` or `run` to the protocol has none), `name` or
    `description` is not text, `item_type` is not one of ITEM_KINDS, or `parameters()` is
    not a JSON schema object."""
    missing = [member for member in REQUIRED_MEMBERS if not _provides(obj, member)]
    label = _label(obj)
    if missing:
        raise TypeError(f"{label} is not a Tool: it has no {', '.join(missing)}")
    problem = _malformed(obj)
    if problem is not None:
        raise TypeError(f"{label} is not a usable Tool: {problem}")
    if isinstance(obj, Tool):
        return obj
    return _Adopted(obj)


def _provides(obj: Any, member: str) -> bool:
    """Whether `obj` has `member` of its own: a method a `Tool` subclass inherits from the
    protocol unchanged is only the protocol's stub (it would answer None)."""
    try:
        value = getattr(obj, member)
    except Exception:  # noqa: BLE001 - a property that raises provides nothing
        return False
    if member in ("parameters", "parse", "run"):
        own = getattr(type(obj), member, None)
        return own is not getattr(Tool, member) or member in vars(obj)
    return value is not None


def _label(obj: Any) -> str:
    try:
        name = getattr(obj, "name", None)
    except Exception:  # noqa: BLE001
        name = None
    return f"tool {name!r} ({type(obj).__name__})" if isinstance(name, str) and name \
        else type(obj).__name__


def _malformed(obj: Any) -> str | None:
    if not isinstance(obj.name, str) or not obj.name.strip():
        return f"its name must be non-empty text, not {obj.name!r}"
    if not isinstance(obj.description, str):
        return f"its description must be text, not {type(obj.description).__name__}"
    if obj.item_type not in ITEM_KINDS:
        return f"item_type {obj.item_type!r} is not one of {', '.join(ITEM_KINDS)}"
    if not isinstance(obj.server, str):
        return f"server must be text, not {type(obj.server).__name__}"
    if not callable(obj.parse) or not callable(obj.run):
        return "parse and run must be callable"
    try:
        schema = obj.parameters()
    except Exception as exc:  # noqa: BLE001 - reported as the tool's fault
        return f"parameters() raised {type(exc).__name__}: {exc}"
    if not isinstance(schema, dict):
        return f"parameters() must return a JSON schema object, not {type(schema).__name__}"
    return None


class _Adopted(Tool):
    """An object with the required members and some of the hooks (see `adopt`)."""

    def __init__(self, obj: Any) -> None:
        self.tool = obj
        self.name, self.description = obj.name, obj.description
        self.item_type, self.server = obj.item_type, obj.server
        self.parameters, self.parse, self.run = obj.parameters, obj.parse, obj.run
        self._tool_name = obj.tool_name if hasattr(obj, "tool_name") else obj.name
        if hasattr(obj, "planned_changes"):
            self.planned_changes = obj.planned_changes  # type: ignore[method-assign]
        if hasattr(obj, "named_changes"):
            self.named_changes = obj.named_changes  # type: ignore[method-assign]

    @property
    def tool_name(self) -> str:
        return self._tool_name

    def __repr__(self) -> str:
        return repr(self.tool)


@dataclass
class ToolResult:
    """What a tool hands back: text for the model, success flag, and the event item payload.

    ``item`` holds the fields of the event item beyond id/type (e.g. ``command``,
    ``exit_code`` for shell; ``changes`` for file edits). The registry fills in a status.
    ``attachments``: content parts (OpenAI `text` and `image_url`) for the model to see
    that a tool message cannot carry on every wire (an image: view_image); the loop adds
    them as one user message after the step's tool messages.
    """

    output: str
    success: bool = True
    item: dict[str, Any] = field(default_factory=dict)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    # The tool's own data about the call (AgentB's IToolResult.metadata): it reaches
    # `agent.tool.execution.completed` (`result.metadata`, beside `itemId`), never the model
    # nor the Codex JSONL. JSON-like values.
    metadata: dict[str, Any] = field(default_factory=dict)


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


class ModelTool(Tool):
    """A tool whose arguments are a pydantic model (built-in tools, Python functions).
    `planner` and `namer` are its `planned_changes` and `named_changes` hooks, when it has
    them."""

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
        self._schema = parameters

    def parameters(self) -> dict[str, Any]:
        if self._schema is None:  # made on first use: importing a tool module stays cheap
            self._schema = schema_of(self.args_model)
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
        return self._name(args, ctx) if self._name is not None \
            else super().named_changes(args, ctx)

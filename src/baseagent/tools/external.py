"""Tools the caller runs: a name, a description and a JSON schema, no implementation.

The model sees them like any other tool. When it calls one, the registry validates the
arguments against the declared schema (jsonschema) as it does for every tool; a valid call
is not run here: the turn stops with status `requires_action`, and the caller submits the
output (core/loop.py). An invalid call goes back to the model as an error, like any other.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from baseagent.errors import InputError
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import Tool, ToolArgumentsError, ToolError, ToolResult

# What providers accept as a function name (OpenAI's rule, the strictest common one).
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
# The `server` of the mcp_tool_call item of a call the caller runs.
EXTERNAL_SERVER = "external"


class ExternalTool(Tool):
    """A tool declared by the caller and run by the caller.

    `parameters` is the JSON schema of the arguments (an object schema); it is checked
    when the tool is declared, so a broken schema is an InputError before anything runs.
    """

    item_type = "mcp_tool_call"
    server = EXTERNAL_SERVER

    def __init__(self, name: str, description: str = "",
                 parameters: Mapping[str, Any] | None = None) -> None:
        import jsonschema

        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise InputError(f"external tool name {name!r} must be 1-64 letters, digits, "
                             "'_' or '-'")
        if not isinstance(description, str):
            raise InputError(f"the description of external tool {name!r} must be a string")
        schema = dict(parameters) if parameters is not None \
            else {"type": "object", "properties": {}}
        if schema.get("type") != "object":
            raise InputError(f"the parameters of external tool {name!r} must be a JSON "
                             "schema of type 'object'")
        validator_class = jsonschema.validators.validator_for(schema)
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise InputError(f"the parameters of external tool {name!r} are not a valid JSON "
                             f"schema: {exc.message}") from None
        self.name = name
        self.description = description.strip()
        self._schema = schema
        self._validator = validator_class(schema)

    def parameters(self) -> dict[str, Any]:
        return self._schema

    def parse(self, data: dict[str, Any]) -> dict[str, Any]:
        errors = sorted(self._validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}"
                for e in errors[:5])
            raise ToolArgumentsError(f"invalid arguments for {self.name}: {problems}")
        return data

    def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        # The loop hands external calls to the caller; reaching this is a wiring mistake.
        raise ToolError(f"{self.name} is run by the caller, not by the agent")

    def __repr__(self) -> str:
        return f"ExternalTool({self.name!r})"


def external_tool(spec: "ExternalTool | Mapping[str, Any]") -> ExternalTool:
    """An ExternalTool from itself, `{name, description, parameters}`, or an OpenAI function
    tool spec `{"type": "function", "function": {...}}`."""
    if isinstance(spec, ExternalTool):
        return spec
    if not isinstance(spec, Mapping):
        raise InputError(f"an external tool must be an ExternalTool or a mapping, got "
                         f"{type(spec).__name__}")
    if spec.get("type") == "function" and isinstance(spec.get("function"), Mapping):
        spec = spec["function"]
    unknown = sorted(set(spec) - {"name", "description", "parameters"})
    if unknown:
        raise InputError(f"unknown key(s) in external tool {spec.get('name')!r}: "
                         f"{', '.join(unknown)}")
    return ExternalTool(spec.get("name"), spec.get("description", ""),  # type: ignore[arg-type]
                        spec.get("parameters"))


def external_tools(specs: Iterable["ExternalTool | Mapping[str, Any]"]) -> list[ExternalTool]:
    tools = [external_tool(s) for s in specs]
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"external tools declared twice: {', '.join(duplicates)}")
    return tools


def load_external_tools(text: str, source: str) -> list[ExternalTool]:
    """The CLI's --external-tools FILE: a JSON list of tool specs."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise InputError(f"{source} must hold a JSON list of tool specs "
                         "({name, description, parameters})")
    return external_tools(data)


def is_external(tool: Any) -> bool:
    return isinstance(tool, ExternalTool)

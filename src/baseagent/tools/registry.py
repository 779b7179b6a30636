"""Tool specs for the model and dispatch of its calls.

The registry is the one place that turns whatever the model sent (invalid JSON, an unknown
tool, arguments that break the schema, a tool that raises) into a ToolResult with the error
text, so the model always gets an answer it can act on and the loop never crashes on a call.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ValidationError

from baseagent.tools.base import ToolContext, ToolError, ToolResult

# Stable order: the tool list is part of the cached request prefix.
DEFAULT_TOOLS = ("shell", "read_file", "write_file", "apply_patch", "grep_files", "list_dir")
# Safety net on what any tool returns to the model (~10K tokens); tools trim their own first.
MAX_MODEL_OUTPUT_CHARS = 40_000
# Largest arguments a call may carry (characters of JSON). A model's whole output is at most
# ~128K tokens (~0.5 MB), so anything bigger is a runaway; parsing, validating and showing
# it would cost tens of times its size in memory.
MAX_ARGUMENT_CHARS = 1 << 20


@dataclass
class PreparedCall:
    """A tool call whose arguments parsed and validated, or the error explaining why not."""

    name: str
    raw_arguments: str
    module: ModuleType | None = None
    args: BaseModel | None = None
    error: str | None = None

    @property
    def item_type(self) -> str:
        return self.module.ITEM_TYPE if self.module is not None else "mcp_tool_call"

    def planned_changes(self, ctx: Any) -> list[dict[str, str]]:
        """The files a file-changing call means to touch, for its `item.started` (a module's
        optional `planned_changes(args, ctx)`); the outcome is in the completed item."""
        plan = getattr(self.module, "planned_changes", None)
        if plan is None or self.args is None:
            return []
        try:
            return plan(self.args, ctx)
        except Exception:  # noqa: BLE001 - a path the OS refuses fails in execute(), clearly
            return []

    def arguments_for_display(self) -> Any:
        if self.args is not None:
            return self.args.model_dump(mode="json", exclude_none=True)
        if len(self.raw_arguments) > MAX_ARGUMENT_CHARS:
            return {"omitted": f"{len(self.raw_arguments)} characters"}
        try:
            return json.loads(self.raw_arguments)
        except (TypeError, ValueError):
            return self.raw_arguments


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("additionalProperties", False)
    return schema


class ToolRegistry:
    def __init__(self, names: tuple[str, ...] = DEFAULT_TOOLS) -> None:
        self._modules: dict[str, ModuleType] = {}
        for name in names:
            module = importlib.import_module(f"baseagent.tools.{name}")
            self._modules[module.NAME] = module
        self._specs = [
            {"type": "function",
             "function": {"name": m.NAME, "description": m.DESCRIPTION.strip(),
                          "parameters": _schema(m.Args)}}
            for m in self._modules.values()
        ]

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI function-tool specs, built once so every request sends identical bytes."""
        return self._specs

    def prepare(self, name: str, raw_arguments: str) -> PreparedCall:
        call = PreparedCall(name=name, raw_arguments=raw_arguments)
        module = self._modules.get(name)
        if module is None:
            call.error = (f"unknown tool {name!r}; available tools: "
                          f"{', '.join(self._modules)}")
            return call
        call.module = module
        if len(raw_arguments) > MAX_ARGUMENT_CHARS:
            call.error = (f"the arguments of {name} are {len(raw_arguments)} characters, over "
                          f"the limit of {MAX_ARGUMENT_CHARS}; split the work into smaller "
                          f"calls (e.g. write a large file in parts with apply_patch)")
            return call
        try:
            data = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except ValueError as exc:
            call.error = (f"invalid JSON in the arguments of {name}: {exc}. Send the arguments "
                          f"as one JSON object matching the tool's schema.")
            return call
        if not isinstance(data, dict):
            call.error = f"the arguments of {name} must be a JSON object, got {type(data).__name__}"
            return call
        try:
            call.args = module.Args.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors())
            call.error = f"invalid arguments for {name}: {problems}"
        return call

    def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolResult:
        """Run a prepared call; every failure becomes an error result, never an exception."""
        if call.error is not None or call.module is None or call.args is None:
            return ToolResult(output=f"Error: {call.error}", success=False)
        try:
            result = call.module.run(call.args, ctx)
        except ToolError as exc:
            result = ToolResult(output=f"Error: {exc}", success=False)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - a tool bug must not end the run
            result = ToolResult(output=f"Error: {call.name} failed: {type(exc).__name__}: {exc}",
                                success=False)
        if not result.output:
            result.output = "(no output)" if result.success else "Error: the tool failed silently"
        result.output = _cap(result.output)
        return result


def _cap(text: str) -> str:
    if len(text) <= MAX_MODEL_OUTPUT_CHARS:
        return text
    from baseagent.tools.output_buffer import truncate_middle

    return truncate_middle(text, MAX_MODEL_OUTPUT_CHARS)

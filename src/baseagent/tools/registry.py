"""Tool specs for the model and dispatch of its calls.

The registry is the one place that turns whatever the model sent (invalid JSON, an unknown
tool, arguments that break the schema, a tool that raises) into a ToolResult with the error
text, so the model always gets an answer it can act on and the loop never crashes on a call.
It holds Tool objects (tools/tool.py, the one tool contract) from any source in a fixed order.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

from pydantic import BaseModel

from baseagent.tools.context import ToolContext
from baseagent.tools.tool import (BUILTIN_SERVER, Tool, ToolArgumentsError, ToolError, ToolResult,
                                  adopt)

# Stable order: the tool list is part of the cached request prefix.
DEFAULT_TOOLS = ("shell", "read_file", "write_file", "apply_patch", "grep_files", "list_dir",
                 "update_plan")
# Built-in tools offered only where they apply, after the default ones: view_image to a
# model that sees images (compose/tools.py select_tools). Any run may name them.
OPTIONAL_TOOLS = ("view_image",)
BUILTIN_TOOLS = DEFAULT_TOOLS + OPTIONAL_TOOLS
# The built-in tools that never change the workspace: no checkpoint is taken before them.
# Any other tool may (a command, a file edit, an MCP server's or the caller's function).
READ_ONLY_TOOLS = ("read_file", "grep_files", "list_dir", "update_plan", "view_image")
# Safety net on what any tool returns to the model (~10K tokens); tools trim their own first.
MAX_MODEL_OUTPUT_CHARS = 40_000
# How the output caps set in tokens (tool_output_max_tokens, tool_output_limits) become
# characters: the usual ~4 characters per token of English and code, no tokenizer needed.
CHARS_PER_TOKEN = 4
# Largest arguments a call may carry (characters of JSON). A model's whole output is at most
# ~128K tokens (~0.5 MB), so anything bigger is a runaway; parsing, validating and showing
# it would cost tens of times its size in memory.
MAX_ARGUMENT_CHARS = 1 << 20


def builtin_tools(names: Iterable[str] = DEFAULT_TOOLS) -> list[Tool]:
    """The built-in tools: each module's `TOOL` (tools/tool.py ModelTool)."""
    return [importlib.import_module(f"baseagent.tools.{name}").TOOL for name in names]


@dataclass
class PreparedCall:
    """A tool call whose arguments parsed and validated, or the error explaining why not."""

    name: str
    raw_arguments: str
    tool: Tool | None = None
    args: Any = None
    error: str | None = None

    @property
    def item_type(self) -> str:
        return self.tool.item_type if self.tool is not None else "mcp_tool_call"

    @property
    def server(self) -> str:
        return self.tool.server if self.tool is not None else BUILTIN_SERVER

    @property
    def tool_name(self) -> str:
        return self.tool.tool_name if self.tool is not None else self.name

    def planned_changes(self, ctx: ToolContext) -> list[dict[str, str]]:
        """The files a file-changing call means to touch, for its `item.started`; the
        outcome is in the completed item."""
        if self.tool is None or self.args is None:
            return []
        try:
            return self.tool.planned_changes(self.args, ctx)
        except Exception:  # noqa: BLE001 - a path the OS refuses fails in execute(), clearly
            return []

    def named_changes(self, ctx: ToolContext) -> list[dict[str, str]]:
        """The files the call names even when it may not change them (a refused path): the
        path a failed file_change item reports (the tool's `named_changes`)."""
        if self.tool is None or self.args is None:
            return []
        try:
            return self.tool.named_changes(self.args, ctx)
        except Exception:  # noqa: BLE001 - as for the plan: the item shows no path then
            return []

    def arguments_for_display(self) -> Any:
        if isinstance(self.args, BaseModel):
            return self.args.model_dump(mode="json", exclude_none=True)
        if self.args is not None:
            return self.args
        if len(self.raw_arguments) > MAX_ARGUMENT_CHARS:
            return {"omitted": f"{len(self.raw_arguments)} characters"}
        try:
            return json.loads(self.raw_arguments)
        except (TypeError, ValueError, RecursionError):
            return self.raw_arguments


SpecShape = Callable[[dict[str, Any]], dict[str, Any]]


@runtime_checkable
class ToolExecutor(Protocol):
    """How a validated call runs (`Agent(tool_executor=...)`; core/parts.py). The registry
    calls it inside its own guard: whatever it raises becomes the call's error result, and
    what it returns is capped like any tool's output."""

    def execute(self, tool: Tool, args: Any, ctx: ToolContext) -> ToolResult: ...


class DirectExecutor:
    """The default: the tool's own run()."""

    def execute(self, tool: Tool, args: Any, ctx: ToolContext) -> ToolResult:
        return tool.run(args, ctx)


DIRECT = DirectExecutor()


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] | None = None,
                 shape: SpecShape | None = None,
                 executor: ToolExecutor | None = None) -> None:
        """`shape` rewrites each spec as the prompt profile sends it (prompts/profiles.py:
        compact descriptions); the tools themselves are the same. `executor` runs each
        validated call (default: the tool's own run())."""
        self._tools: dict[str, Tool] = {}
        self.shape = shape
        self.executor: ToolExecutor = executor or DIRECT
        for given in builtin_tools() if tools is None else tools:
            tool = adopt(given)
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool
        self._specs = [
            (shape or _as_is)({"type": "function",
                               "function": {"name": t.name, "description": t.description,
                                            "parameters": t.parameters()}})
            for t in self._tools.values()
        ]

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI function-tool specs, built once so every request sends identical bytes."""
        return self._specs

    def prepare(self, name: str, raw_arguments: str) -> PreparedCall:
        call = PreparedCall(name=name, raw_arguments=raw_arguments)
        tool = self._tools.get(name)
        if tool is None:
            call.error = (f"unknown tool {name!r}; available tools: "
                          f"{', '.join(self._tools)}")
            return call
        call.tool = tool
        if len(raw_arguments) > MAX_ARGUMENT_CHARS:
            call.error = (f"the arguments of {name} are {len(raw_arguments)} characters, over "
                          f"the limit of {MAX_ARGUMENT_CHARS}; split the work into smaller "
                          f"calls (e.g. write a large file in parts with apply_patch)")
            return call
        try:
            data = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except (ValueError, RecursionError) as exc:  # too deep a nesting
            call.error = (f"invalid JSON in the arguments of {name}: {exc}. Send the arguments "
                          f"as one JSON object matching the tool's schema.")
            return call
        if not isinstance(data, dict):
            call.error = f"the arguments of {name} must be a JSON object, got {type(data).__name__}"
            return call
        try:
            call.args = tool.parse(data)
        except ToolArgumentsError as exc:
            call.error = str(exc)
        return call

    def repair(self, name: str, raw_arguments: str) -> tuple[str, str] | None:
        """Arguments that are not valid JSON, read the way the model meant them
        (llm/lenient_json.py) with the tool's schema: (strict JSON text, a note for the
        tool result saying what was repaired), or None when they are valid JSON already,
        the tool is unknown, or no reading fits the schema."""
        tool = self._tools.get(name)
        if tool is None or len(raw_arguments) > MAX_ARGUMENT_CHARS or not raw_arguments.strip():
            return None
        try:
            json.loads(raw_arguments)
            return None
        except (ValueError, RecursionError):
            pass
        from baseagent.llm import lenient_json

        try:
            read = lenient_json.loads(raw_arguments, tool.parameters())
        except ValueError:
            return None
        if not isinstance(read.value, dict):
            return None
        try:
            tool.parse(read.value)
        except ToolArgumentsError:
            return None
        return (json.dumps(read.value, ensure_ascii=False),
                f"Note: the arguments were not valid JSON ({read.error}); {read.repaired}. "
                f"{lenient_json.strict_form_hint()}.")

    def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolResult:
        """Run a prepared call; every failure becomes an error result, never an exception."""
        if call.error is not None or call.tool is None:
            return self._finish(ToolResult(output=f"Error: {call.error}", success=False), ctx)
        limit = output_limit(call.tool.name, ctx.settings if ctx is not None else None)
        if limit is not None:
            ctx = dataclasses.replace(ctx, output_max_chars=limit)
        if ctx is not None and call.tool not in builtin_tools(READ_ONLY_TOOLS):
            ctx.before_change()  # the turn's checkpoint, before its first change
        try:
            result = self.executor.execute(call.tool, call.args, ctx)
        except ToolError as exc:
            result = ToolResult(output=f"Error: {exc}", success=False)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - a tool bug must not end the run
            result = ToolResult(output=f"Error: {call.name} failed: {type(exc).__name__}: {exc}",
                                success=False)
        if not isinstance(result, ToolResult):
            result = ToolResult(output=f"Error: {call.name} returned "
                                       f"{type(result).__name__}, not a ToolResult",
                                success=False)
        if not result.output:
            result.output = "(no output)" if result.success else "Error: the tool failed silently"
        return self._finish(result, ctx, limit)

    @staticmethod
    def _finish(result: ToolResult, ctx: ToolContext | None,
                limit: int | None = None) -> ToolResult:
        """What every result goes through before the model sees it: redaction, then the cap."""
        if ctx is not None:  # the run's secrets never reach the model (ToolContext.redact)
            result.output = ctx.redact(result.output)
            for part in result.attachments:
                if isinstance(part.get("text"), str):
                    part["text"] = ctx.redact(part["text"])
        result.output = _cap(result.output, limit or MAX_MODEL_OUTPUT_CHARS)
        return result


def output_limit(name: str, settings: Any) -> int | None:
    """The output cap of tool `name`, in characters, when the settings set one
    (tool_output_limits[name], else tool_output_max_tokens); None: the tool's own."""
    if settings is None:
        return None
    tokens = settings.tool_output_limits.get(name, settings.tool_output_max_tokens)
    return None if tokens is None else tokens * CHARS_PER_TOKEN


def _as_is(spec: dict[str, Any]) -> dict[str, Any]:
    return spec


def _cap(text: str, max_chars: int = MAX_MODEL_OUTPUT_CHARS) -> str:
    if len(text) <= max_chars:
        return text
    from baseagent.tools.output_buffer import truncate_middle

    return truncate_middle(text, max_chars)

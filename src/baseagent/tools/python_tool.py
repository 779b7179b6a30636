"""Python functions as tools: `Agent(tools=[fn])`, or `@tool` on the function.

    from pydantic import BaseModel, Field
    from baseagent import Agent, tool

    class Lookup(BaseModel):
        ticket: str = Field(description="ticket id, e.g. ENG-12")

    @tool
    def lookup_ticket(args: Lookup) -> str:
        "Read a ticket from the tracker."
        return tracker.get(args.ticket).text

    def add(a: int, b: int = 1) -> int:        # type hints are enough
        "Add two integers."
        return a + b

    Agent(tools=[lookup_ticket, add])

The arguments' JSON schema comes from the pydantic model (one parameter annotated with a
BaseModel subclass) or from the type-hinted parameters (`Annotated[int, Field(...)]` adds
descriptions); the description from the docstring. A parameter annotated `ToolContext`
receives the run's context (cwd, environment, cancellation) and is not part of the
schema. Return text, or anything JSON-serialisable (sent as JSON), or a ToolResult. A
raised exception (or ToolError) becomes an error result for the model; the run goes on.
The call appears as an `mcp_tool_call` item of server "baseagent", like the read-only
built-in tools.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import json
import typing
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, create_model

from baseagent.tools.context import ToolContext
from baseagent.tools.tool import BUILTIN_SERVER, ModelTool, Tool, ToolResult, adopt


class PythonTool(ModelTool):
    """A function made into a tool; still callable as the plain function."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None,
                 description: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"a tool must be a function, got {type(fn).__name__}")
        self.fn = fn
        tool_name = name or getattr(fn, "__name__", "")
        if not tool_name or not all(c.isalnum() or c in "_-" for c in tool_name):
            raise ValueError(f"{tool_name!r} is not a usable tool name (letters, digits, _ and -)")
        text = description if description is not None else (inspect.getdoc(fn) or "")
        self._binding = _Binding.of(fn, tool_name)
        super().__init__(name=tool_name, description=text or f"Run {tool_name}.",
                         args_model=self._binding.model, runner=self._invoke,
                         item_type="mcp_tool_call", server=BUILTIN_SERVER)
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"PythonTool({self.name!r})"

    def _invoke(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        value = self._binding.call(args, ctx)
        if inspect.isawaitable(value):
            value = _await(value)
        return as_result(value)


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None,
         description: str | None = None) -> Any:
    """Decorator: `@tool` or `@tool(name=..., description=...)` makes a PythonTool."""
    if fn is not None:
        return PythonTool(fn, name=name, description=description)
    return lambda f: PythonTool(f, name=name, description=description)


def as_tool(obj: Any) -> Tool:
    """What `Agent(tools=[...])` accepts: a Tool object (tools/tool.py `adopt`), or a
    function to wrap."""
    try:
        return adopt(obj)
    except TypeError:
        if _meant_as_tool(obj):
            raise  # what the tool object lacks, named
        if callable(obj):
            return PythonTool(obj)
    raise TypeError(f"tools= takes functions, Tool objects, toolsets or tool providers, "
                    f"got {type(obj).__name__}")


def _meant_as_tool(obj: Any) -> bool:
    """A Tool subclass, or an object with most of a tool's members: one to hold to the
    contract (a plain function is wrapped instead)."""
    if isinstance(obj, type):
        return False
    if Tool in type(obj).__mro__:
        return True
    return sum(hasattr(obj, m) for m in ("name", "description", "item_type", "server",
                                         "parameters", "parse")) >= 3


def as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult(output="(no output)")
    if isinstance(value, str):
        return ToolResult(output=value)
    if isinstance(value, BaseModel):
        return ToolResult(output=value.model_dump_json(indent=2))
    try:
        return ToolResult(output=json.dumps(value, indent=2, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return ToolResult(output=str(value))


class _Binding:
    """How the validated arguments reach the function: as one model, or as keywords."""

    def __init__(self, model: type[BaseModel], whole: str | None, context: str | None,
                 fn: Callable[..., Any]) -> None:
        self.model = model
        self.whole = whole
        self.context = context
        self.fn = fn

    @classmethod
    def of(cls, fn: Callable[..., Any], name: str) -> "_Binding":
        signature = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:  # noqa: BLE001 - unresolvable forward references: use raw annotations
            hints = {}
        context = None
        fields: dict[str, Any] = {}
        models: list[tuple[str, type[BaseModel]]] = []
        for pname, param in signature.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
            annotation = hints.get(pname, param.annotation)
            if annotation is ToolContext:
                context = pname
                continue
            if annotation is inspect.Parameter.empty:
                annotation = Any
            if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
                models.append((pname, annotation))
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        if len(models) == 1 and len(fields) == 1:
            return cls(models[0][1], models[0][0], context, fn)
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"),
                             **fields)
        return cls(model, None, context, fn)

    def call(self, args: BaseModel, ctx: ToolContext) -> Any:
        extra = {self.context: ctx} if self.context else {}
        if self.whole is not None:
            return self.fn(**{self.whole: args}, **extra)
        values = {field: getattr(args, field) for field in type(args).model_fields}
        return self.fn(**values, **extra)


def _await(awaitable: Any) -> Any:
    """Run an async tool to completion from the (synchronous) loop thread, also when the
    caller's thread already runs an event loop."""

    async def wrap() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrap())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, wrap()).result()

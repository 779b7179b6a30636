"""Named specialists: the `delegate_to_specialist` tool, what each specialist's tool names
mean, and the planner's system prompt.

A specialist is run by the same machinery as the generic `delegate` tool
(core/delegation/delegate.py `Delegation`: a child Loop composed by compose/loops.py `child_loop`,
its items nested in the call's `collab_tool_call` item, its usage and iterations counted
in the parent's). What differs is who chooses the tools: the configuration, not the
delegating model. A specialist's tools come from the run's pool: every built-in tool, the
caller's Python tools and the tools of the run's MCP servers and OpenAPI documents,
whether or not the top agent itself has them (in planning mode it has none of them).

Tool names of a specialist (`tools = [...]`), in the configuration's own vocabulary:
- a built-in tool or toolset group (tools/toolsets.py: read, edit, shell, plan, none);
- an `[mcp_servers.NAME]` or `[openapi.NAME]` name: every tool that source offers;
- `NAME:TAG`: the operations of the `[openapi.NAME]` document with that tag;
- the name of one of the caller's tools (`Agent(tools=[...])`);
- a `[toolsets.NAME]` name (config/toolsets.py): every name that toolset lists.
The same vocabulary says what a named toolset stands for wherever it is used (the top
agent's `tools`, `baseagent toolsets list`): `resolve_tools`, `unknown_refs`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from baseagent.config.specialists import SpecialistConfig
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, Tool, ToolError, ToolResult

NAME = "delegate_to_specialist"

DESCRIPTION = """\
Hand a self-contained sub-task to one of the specialists below and get its final answer
back. A specialist starts with an empty context: it sees only `sub_task` (include every
path, name, value and earlier finding it needs), works in the same workspace with its own
tools, and answers with its findings. Choose the specialist by its description.

Specialists (specialist_id: what it does; its tools):
"""


class _SubTask(BaseModel):
    """The arguments' base: `task` is what the call's item shows as the sub-task."""

    @property
    def task(self) -> str:
        return str(getattr(self, "sub_task"))


def specialist_tool(specialists: Mapping[str, SpecialistConfig],
                    tool_names: Mapping[str, Sequence[str]]) -> ModelTool:
    """The tool, for these specialists: its description lists them (with the tools each
    one has, `tool_names`), and `specialist_id` only takes their names."""
    ids = tuple(specialists)
    args_model = create_model(
        "DelegateToSpecialistArgs", __base__=_SubTask,
        specialist_id=(Literal[ids],  # type: ignore[valid-type]
                       Field(description="Which specialist runs the sub-task.")),
        sub_task=(str, Field(min_length=1, description="The sub-task, complete and "
                                                       "self-contained.")),
        required_output_format=(str | None, Field(
            None, description="Optional: the shape of answer you need back (e.g. 'a JSON "
                              "object with fields x and y', 'a bulleted list').")))
    lines = [f"- {name}: {spec.description} (tools: "
             f"{', '.join(tool_names.get(name, ())) or 'none'})"
             for name, spec in specialists.items()]
    return ModelTool(name=NAME, description=DESCRIPTION + "\n".join(lines), args_model=args_model,
                     runner=_run, item_type="collab_tool_call")


def _run(args: Any, ctx: ToolContext) -> ToolResult:
    if ctx.delegate is None:
        raise ToolError("specialists are not available in this run")
    return ctx.delegate.run_specialist(args.specialist_id, args.sub_task,
                                       args.required_output_format, ctx)


def planner_prompt(base: str, specialists: Mapping[str, SpecialistConfig]) -> str:
    """The planner's system prompt: `base` (prompts/system.py PLANNER_PROMPT) and one line
    per specialist. Byte-stable for a given configuration (it is the cached prefix)."""
    return base + "".join(f"- {name}: {spec.description}\n"
                          for name, spec in specialists.items())


@dataclass(frozen=True)
class Sources:
    """The names the configuration gives the run's tool sources, and its named toolsets
    (each name's own list of names)."""

    mcp: frozenset[str] = frozenset()
    openapi: frozenset[str] = frozenset()
    toolsets: Mapping[str, Sequence[str]] = field(default_factory=dict)


def unknown_refs(refs: Iterable[str], sources: Sources, caller: Iterable[str]) -> list[str]:
    """The names in `refs` that mean nothing in this run (a toolset's are looked into)."""
    from baseagent.tools.toolsets import expand_named, vocabulary

    known = set(vocabulary()) | sources.mcp | sources.openapi | set(caller)
    bad = []
    for ref in expand_named(refs, sources.toolsets):
        source, _, tag = ref.partition(":")
        if not (ref in known or (tag and source in sources.openapi)) and ref not in bad:
            bad.append(ref)
    return bad


def unknown_tool_names(specialists: Mapping[str, SpecialistConfig], sources: Sources,
                       caller: Iterable[str]) -> list[str]:
    """`specialist: name` for every tool name a specialist gives that means nothing in this
    run (empty: all known)."""
    caller = list(caller)
    return [f"{name}: {ref}" for name, spec in specialists.items()
            for ref in unknown_refs(spec.tools or (), sources, caller)]


def unknown_toolset_names(sources: Sources, caller: Iterable[str]) -> list[str]:
    """`toolset: name` for every name a `[toolsets.NAME]` lists that means nothing here."""
    caller = list(caller)
    return [f"{name}: {ref}" for name, refs in sources.toolsets.items()
            for ref in unknown_refs(refs, sources, caller)]


def resolve_tools(refs: Iterable[str], *, builtins: Sequence[Tool], caller: Sequence[Tool],
                  source_tools: Sequence[Tool], sources: Sources) -> list[Tool]:
    """The tools names stand for (a specialist's, a named toolset's), in the order named (a
    group in the registry's order, a toolset's names in its order), each once. A source
    that failed to start stands for nothing."""
    from baseagent.tools.toolsets import GROUPS, NONE, expand_named, vocabulary

    by_name = {t.name: t for t in builtins}
    caller_by_name = {t.name: t for t in caller}
    toolsets = set(vocabulary())
    chosen: dict[str, Tool] = {}
    for ref in expand_named(refs, sources.toolsets):
        source, _, tag = ref.partition(":")
        if ref in toolsets:
            found = [by_name[n] for n in GROUPS.get(ref, (ref,) if ref != NONE else ())
                     if n in by_name]
        elif ref in sources.mcp or ref in sources.openapi:
            found = [t for t in source_tools if t.server == ref]
        elif tag and source in sources.openapi:
            found = [t for t in source_tools if t.server == source and tag in _tags(t)]
        else:
            found = [caller_by_name[ref]] if ref in caller_by_name else []
        for tool in found:
            chosen.setdefault(tool.name, tool)
    return list(chosen.values())


def source_refs(refs: Iterable[str], sources: Sources) -> list[str]:
    """Of `refs` (toolsets opened), those naming a tool source or one of its tags."""
    from baseagent.tools.toolsets import expand_named

    return [ref for ref in expand_named(refs, sources.toolsets)
            if ref in sources.mcp or ref in sources.openapi
            or (":" in ref and ref.partition(":")[0] in sources.openapi)]


def _tags(tool: Tool) -> tuple[str, ...]:
    """An OpenAPI operation's tags (other tools have none)."""
    from baseagent.openapi.source import OpenApiTool

    return tuple(tool.op.tags) if isinstance(tool, OpenApiTool) else ()

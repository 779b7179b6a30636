"""The composition root's tools: which tools a run gets and in what order (built-ins the
toolsets leave, delegate, specialists, the caller's), the long-lived tool sources, and the
tools settled once those sources are up."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from baseagent.cancellation import CancelToken
from baseagent.config.settings import AgentConfig
from baseagent.errors import ConfigError

if TYPE_CHECKING:
    from baseagent.compose.builder import Prepared
    from baseagent.core.delegation.specialists import Sources
    from baseagent.prompts.profiles import PromptProfile
    from baseagent.tools.sources import ToolSources
    from baseagent.tools.tool import Tool
    from baseagent.compose.toolset import Gathered


def select_tools(settings: AgentConfig, extra: Sequence[Any] = (),
                 profile: PromptProfile | None = None, escalation: bool = False,
                 builtins: Sequence[str] = (), vision: bool | None = None) -> list[Tool]:
    """The run's fixed tools, in their stable order (the tool list is part of the cached
    prompt prefix): the built-in tools the toolsets leave (tools/toolsets.py), `delegate`
    when enabled, then the caller's tools in the order given (Python functions become PythonTools; Tool objects,
    such as caller-run or delegate tools, are taken as they are). The one place a new kind
    of fixed tool joins the run; long-lived sources add theirs in settle_tools(). `builtins`:
    built-in names the caller's toolsets ask for, offered even where the toolsets setting
    leaves them out. `vision` (the model's, from litellm's map; None: unknown): view_image
    is among the default tools of the full profile only for a model known to see images,
    as Codex offers it; named by the user, it is there for any model, and refuses every
    call when the model is known not to see images."""
    from baseagent.tools.registry import BUILTIN_TOOLS, builtin_tools
    from baseagent.tools.toolsets import builtin_names
    from baseagent.tools.view_image import NAME as VIEW_IMAGE

    if settings.planner:
        return planner_tools(settings)
    enabled, disabled = builtin_selection(settings)
    if enabled is None and profile is not None and profile.tools is not None:
        enabled = list(profile.tools)  # the profile's tools, unless the user named some
    if enabled is not None and builtins:
        enabled = [*enabled, *builtins]
    optional = (VIEW_IMAGE,) if vision is True else ()
    chosen = builtin_tools(builtin_names(enabled, disabled, optional))
    if escalation:  # the shell whose calls may ask to leave the sandbox (tools/approval.py)
        from baseagent.tools.shell import ESCALATABLE_TOOL

        chosen = [ESCALATABLE_TOOL if t.name == "shell" else t for t in chosen]
    if vision is False:
        from baseagent.tools.view_image import REFUSING_TOOL

        chosen = [REFUSING_TOOL if t.name == VIEW_IMAGE else t for t in chosen]
    if settings.delegate:
        from baseagent.core.delegation.delegate import delegate_tool

        unknown = sorted(set(settings.delegate_tools) - set(BUILTIN_TOOLS))
        if unknown:
            raise ConfigError(f"delegate_tools: unknown tool(s) {', '.join(unknown)}")
        chosen.append(delegate_tool())
    if settings.specialists:
        chosen.append(_specialist_tool(settings))
    if extra:  # python_tool imports asyncio: only when there are caller's tools
        from baseagent.tools.python_tool import as_tool
    try:
        chosen += [as_tool(obj) for obj in extra]
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    seen: set[str] = set()
    for tool in chosen:
        if tool.name in seen:
            raise ConfigError(f"two tools are named {tool.name!r}: rename one "
                              "(or leave the built-in one out with disabled_toolsets)")
        seen.add(tool.name)
    return chosen


def builtin_selection(settings: AgentConfig) -> tuple[list[str] | None, list[str]]:
    """The settings' enabled and disabled lists as built-in names: a `[toolsets.NAME]` in
    them stands for the built-in tools and groups it lists (its sources are filtered in
    `top_source_tools`)."""
    from baseagent.tools.toolsets import builtin_part

    named = named_toolsets(settings)
    enabled = settings.enabled_toolsets
    return (None if enabled is None else builtin_part(enabled, named),
            builtin_part(settings.disabled_toolsets, named))


def named_toolsets(settings: AgentConfig) -> dict[str, list[str]]:
    """Each `[toolsets.NAME]` of the settings and the names it lists."""
    return {name: list(table.tools) for name, table in settings.toolsets.items()}


def top_source_tools(settings: AgentConfig, tools: Sequence[Tool]) -> list[Tool]:
    """The tool sources' tools the top agent gets: all of them, unless `tools` (enabled)
    names a `[toolsets.NAME]`: then, of the configured sources' tools, those the named
    toolsets hold; minus those of a toolset in `disabled_tools`. Naming built-in tools alone
    leaves the sources as they are, and the caller's own (a library Toolset's tables, its
    providers) are never filtered here."""
    from baseagent.core.delegation.specialists import resolve_tools

    named = settings.toolsets
    out = list(tools)
    if not named:
        return out
    sources = source_names(settings)
    configured = sources.mcp | sources.openapi

    def held(names: list[str]) -> set[str]:
        return {t.name for t in resolve_tools(names, builtins=[], caller=[],
                                              source_tools=out, sources=sources)}

    enabled = [n for n in settings.enabled_toolsets or () if n in named]
    if enabled:
        kept = held(enabled)
        out = [t for t in out if t.name in kept or t.server not in configured]
    disabled = [n for n in settings.disabled_toolsets if n in named]
    if disabled:
        dropped = held(disabled)
        out = [t for t in out if t.name not in dropped]
    return out


def check_named_toolsets(settings: AgentConfig, caller: Sequence[str] = ()) -> None:
    """A ConfigError naming every name a `[toolsets.NAME]` lists that means nothing in this
    run (`caller`: the names of the caller's own tools)."""
    from baseagent.core.delegation.specialists import unknown_toolset_names

    bad = unknown_toolset_names(source_names(settings), caller)
    if bad:
        raise ConfigError(f"toolsets: unknown tool(s) {'; '.join(bad)} (use built-in tools "
                          "or groups, [mcp_servers] or [openapi] names, SOURCE:TAG, or your "
                          "own tools' names)")


def planner_tools(settings: AgentConfig) -> list[Tool]:
    """Planning mode's tools (AgentB's PlanningAgent): the plan and the specialists, nothing
    else; the built-in tools, the caller's and the sources' are the specialists' to use.
    Without a specialist there is nobody to work through: a ConfigError."""
    from baseagent.tools.registry import builtin_tools

    if not settings.specialists:
        raise ConfigError("planner mode needs at least one specialist: declare "
                          "[specialists.NAME] in the config file or pass "
                          "Agent(specialists=[...])")
    return [*builtin_tools(["update_plan"]), _specialist_tool(settings)]


def _specialist_tool(settings: AgentConfig) -> Tool:
    from baseagent.core.delegation.specialists import specialist_tool

    return specialist_tool(settings.specialists, {
        name: spec.tools if spec.tools is not None else settings.delegate_tools
        for name, spec in settings.specialists.items()})


def specialist_pool(settings: AgentConfig, extra: Sequence[Any] = (),
                    escalation: bool = False) -> list[Tool]:
    """The fixed tools specialists may be given: every built-in tool (whatever the top
    agent's toolsets) and the caller's tools. A specialist's tool name that means nothing
    here nor among the tool sources is a ConfigError naming it."""
    from baseagent.core.delegation.specialists import unknown_tool_names
    from baseagent.tools.registry import DEFAULT_TOOLS, builtin_tools

    pool = builtin_tools()
    if escalation:
        from baseagent.tools.shell import ESCALATABLE_TOOL

        pool = [ESCALATABLE_TOOL if t.name == "shell" else t for t in pool]
    if extra:
        from baseagent.tools.python_tool import as_tool

        try:
            pool += [as_tool(obj) for obj in extra]
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
    clash = [t.name for t in pool[len(DEFAULT_TOOLS):] if t.name in DEFAULT_TOOLS]
    if clash:
        raise ConfigError(f"two tools are named {clash[0]!r}: rename yours (specialists "
                          "name built-in tools by their names)")
    bad = unknown_tool_names(settings.specialists, source_names(settings),
                             [t.name for t in pool])
    if bad:
        raise ConfigError(f"specialists: unknown tool(s) {'; '.join(bad)} (use built-in tools "
                          "or groups, [mcp_servers] or [openapi] names, SOURCE:TAG, or your "
                          "own tools' names)")
    return pool


def caller_names(extra: Sequence[Any]) -> list[str]:
    """The names the caller's tools (functions, Tool objects) are offered under."""
    from baseagent.tools.python_tool import as_tool

    try:
        return [as_tool(obj).name for obj in extra]
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None


def source_names(settings: AgentConfig) -> Sources:
    """What the settings' tool names may mean (core/delegation/specialists.py `Sources`): their MCP
    servers, OpenAPI documents and named toolsets."""
    from baseagent.core.delegation.specialists import Sources

    return Sources(mcp=frozenset(settings.mcp_servers), openapi=frozenset(settings.openapi),
                   toolsets=named_toolsets(settings))


def specialist_settings(settings: AgentConfig) -> dict[str, AgentConfig]:
    """The settings of each specialist with a model other than the run's: the run's, with
    that model (same api_base and key)."""
    return {name: settings.model_copy(update={"model": spec.model})
            for name, spec in settings.specialists.items()
            if spec.model is not None and spec.model != settings.model}


def tool_sources(settings: AgentConfig, env: Mapping[str, str],
                 given: Gathered | None = None) -> tuple[ToolSources, list[str]]:
    """The long-lived tool sources of the settings and of the caller's toolsets and
    providers (`given`), not started yet, and the secret values their configuration holds
    (to redact)."""
    from baseagent.tools.sources import ToolSources
    from baseagent.tools.tool import Tool
    from baseagent.compose.toolset import make_sources

    mcp, openapi = dict(settings.mcp_servers), dict(settings.openapi)
    providers: list[Any] = []
    if given is not None:
        for kind, mine, theirs in (("mcp_servers", mcp, given.mcp_servers),
                                   ("openapi", openapi, given.openapi)):
            for name, table in theirs.items():
                if name in mine and mine[name] != table:
                    raise ConfigError(f"{kind}.{name} is configured and also given by a "
                                      "toolset, with other settings: rename one")
                mine[name] = table
        providers = given.providers
    sources, secrets = make_sources(mcp, openapi, providers, env, settings.cwd)
    return ToolSources(sources), secrets


def settle_tools(prepared: Prepared, cancelled: CancelToken) -> list[str]:
    """Wait for the tool sources and fix the run's tools for good (the registry every
    request sends). Returns one-line notices: sources that failed, a tool_choice that names
    no tool."""
    if not prepared.sources:
        return []
    from baseagent.tools.registry import ToolRegistry

    notices = prepared.sources.wait(cancelled)
    taken = {t.name for t in prepared.tools} | {t.name for t in prepared.pool}
    prepared.source_tools = prepared.sources.tools(taken)
    if not prepared.settings.planner:  # the planner's sources are its specialists' alone
        top = top_source_tools(prepared.settings, prepared.source_tools)
        prepared.registry = ToolRegistry([*prepared.tools, *top],
                                         shape=prepared.profile.shape)
    choice = prepared.tool_choice
    if choice is not None and not is_tool_choice_mode(choice) and \
            choice not in {t.name for t in prepared.registry.tools()}:
        notices.append(f"tool_choice {choice!r} is not a tool of this run; the model chooses "
                       "freely (auto)")
        prepared.tool_choice = None
    return notices


def is_tool_choice_mode(choice: str) -> bool:
    from baseagent.tools.toolsets import TOOL_CHOICE_MODES

    return choice in TOOL_CHOICE_MODES


def tool_settings(settings: AgentConfig) -> AgentConfig:
    """The settings a tool may read (ToolContext.settings): the run's, without the API key."""
    return settings.model_copy(update={"api_key": None}) if settings.api_key else settings


def builtin_tool_names() -> tuple[str, ...]:
    from baseagent.tools.registry import DEFAULT_TOOLS

    return DEFAULT_TOOLS

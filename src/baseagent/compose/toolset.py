"""A named toolset (AgentB's IToolSet): built-in groups, Python tools, tool providers, MCP
servers and OpenAPI documents (or some of their tags) under one name and description.

    Toolset("tickets", "Read and triage the tracker's tickets",
            builtins=["read"], tools=[lookup_ticket, TrackerProvider()],
            openapi={"jira": {"spec": "https://jira/openapi.json", "include": ["issues"]}})

A toolset is given to an agent like a tool (`Agent(tools=[toolset, fn, ...])`): its parts
join the run (built-ins it names are offered even where `enabled_toolsets` leaves them out,
its sources start with the agent's and close with it). The orchestrator
(compose/orchestrator.py) builds toolsets from several of them, splitting one too large for an
agent into groups, and hands back toolsets whose parts are all ready Tool objects, which
are given to agents the same way. `tools/toolsets.py` stays the names of the built-in
groups (read, edit, shell, plan).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from baseagent.config.sources import SOURCE_NAME, McpServerConfig, OpenApiConfig
from baseagent.errors import ConfigError

if TYPE_CHECKING:
    from baseagent.tools.sources import ToolSource
    from baseagent.tools.tool import Tool


@dataclass
class Toolset:
    """name: 1-64 letters, digits, `_` or `-` (it can name a specialist's tools). builtins:
    names of tools/toolsets.py (groups or single tools). tools: functions, Tool objects,
    tool providers (tools/provider.py). mcp_servers / openapi: tables as in the config file
    (`[mcp_servers.NAME]`, `[openapi.NAME]`; `include` picks tags). by_tag: the orchestrator
    makes one toolset per OpenAPI tag (AgentB's byTag). A bad part is a ConfigError."""

    name: str
    description: str = ""
    builtins: Sequence[str] = ()
    tools: Sequence[Any] = ()
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)
    openapi: Mapping[str, Any] = field(default_factory=dict)
    by_tag: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from baseagent.tools.toolsets import check_toolsets

        if not isinstance(self.name, str) or not SOURCE_NAME.match(self.name):
            raise ConfigError(f"toolset {self.name!r}: a name is 1-64 letters, digits, "
                              "'_' or '-'")
        try:
            self.builtins = tuple(check_toolsets(self.builtins))
        except ValueError as exc:
            raise ConfigError(f"toolset {self.name}: {exc}") from None
        self.tools = tuple(self.tools)
        self.mcp_servers = {n: _table(self.name, "mcp_servers", n, McpServerConfig, t)
                            for n, t in self.mcp_servers.items()}
        self.openapi = {n: _table(self.name, "openapi", n, OpenApiConfig, t)
                        for n, t in self.openapi.items()}

    def fixed_tools(self) -> list[Tool]:
        """Its ready tools: the built-in ones it names, then functions and Tool objects
        (providers and tables are sources: `sources()`)."""
        from baseagent.tools.python_tool import as_tool
        from baseagent.tools.provider import is_provider
        from baseagent.tools.registry import builtin_tools
        from baseagent.tools.toolsets import builtin_names

        chosen = builtin_tools(builtin_names(self.builtins)) if self.builtins else []
        try:
            return chosen + [as_tool(obj) for obj in self.tools if not is_provider(obj)]
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"toolset {self.name}: {exc}") from None

    def providers(self) -> list[Any]:
        from baseagent.tools.provider import is_provider

        return [obj for obj in self.tools if is_provider(obj)]

    def sources(self, env: Mapping[str, str], cwd: Path) -> tuple[list[ToolSource], list[str]]:
        """Its long-lived sources (not started) and the secrets their tables hold."""
        return make_sources(self.mcp_servers, self.openapi, self.providers(), env, cwd)


def make_sources(mcp_servers: Mapping[str, McpServerConfig],
                 openapi: Mapping[str, OpenApiConfig], providers: Sequence[Any],
                 env: Mapping[str, str], cwd: Path) -> tuple[list[Any], list[str]]:
    """The ToolSources of MCP tables, OpenAPI tables and providers (the enabled ones), and
    the secret values their configuration holds (to redact): the one place they are made."""
    sources: list[Any] = []
    secrets: list[str] = []
    servers = {n: c for n, c in mcp_servers.items() if c.enabled}
    if servers:
        from baseagent.mcp.launch import secret_values
        from baseagent.mcp.servers import McpServers

        sources.append(McpServers(servers, env=env, cwd=cwd))
        for config in servers.values():
            secrets += secret_values(config, env)
    for name, document in openapi.items():
        if document.enabled:
            from baseagent.openapi.source import OpenApiSource

            source = OpenApiSource(name, document, env)
            sources.append(source)
            secrets += source.secrets
    if providers:
        from baseagent.tools.provider import ProviderSource

        sources += [ProviderSource(provider) for provider in providers]
    return sources, secrets


@dataclass
class Gathered:
    """What `Agent(tools=[...])` holds, sorted by how it joins the run."""

    fixed: list[Any] = field(default_factory=list)  # functions and Tool objects, in order
    builtins: list[str] = field(default_factory=list)  # built-in names toolsets ask for
    providers: list[Any] = field(default_factory=list)
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    openapi: dict[str, OpenApiConfig] = field(default_factory=dict)
    toolsets: list[Toolset] = field(default_factory=list)


def gather(objects: Sequence[Any]) -> Gathered:
    """Sort the caller's `tools=`: toolsets are opened into their parts, providers become
    sources, a built-in Tool object (from an orchestrated toolset) is asked for by name."""
    from baseagent.tools.provider import is_provider
    from baseagent.tools.registry import builtin_tools

    builtin = {id(tool): tool.name for tool in builtin_tools()}
    out = Gathered()

    def add(obj: Any) -> None:
        if isinstance(obj, Toolset):
            out.toolsets.append(obj)
            out.builtins += list(obj.builtins)
            for part in obj.tools:
                add(part)
            for kind, tables in (("mcp_servers", obj.mcp_servers), ("openapi", obj.openapi)):
                mine = getattr(out, kind)
                for name, table in tables.items():
                    if name in mine and mine[name] != table:
                        raise ConfigError(f"toolset {obj.name}: {kind}.{name} is also given "
                                          "elsewhere with other settings")
                    mine[name] = table
        elif id(obj) in builtin:
            out.builtins.append(builtin[id(obj)])
        elif is_provider(obj):
            out.providers.append(obj)
        else:
            out.fixed.append(obj)

    for obj in objects:
        add(obj)
    return out


def _table(toolset: str, kind: str, name: str, model: type, table: Any) -> Any:
    if isinstance(table, model):
        return table
    if not SOURCE_NAME.match(str(name)):
        raise ConfigError(f"toolset {toolset}: {kind}.{name}: a name is 1-64 letters, "
                          "digits, '_' or '-'")
    try:
        return model.model_validate(table)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"toolset {toolset}: {kind}.{name}{'.' + where if where else ''}: "
                          f"{first['msg']}") from None

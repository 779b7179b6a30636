"""`baseagent mcp list`: the configured servers, started for real, and the tools they offer.

Starting them is the point: it shows what a run would get (a typo in a command, a token
that is not set, a server that hangs) without spending a model call.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from baseagent.config.settings import AgentConfig


@dataclass
class ServerReport:
    name: str
    transport: str
    target: str
    enabled: bool
    status: str  # ready | failed | disabled
    error: str = ""
    tools: list[dict[str, str]] = field(default_factory=list)


def list_servers(settings: AgentConfig, env: Mapping[str, str]) -> list[ServerReport]:
    """Start every enabled server, list its tools under the names a run would give them,
    stop them all."""
    from baseagent.mcp.servers import McpServers
    from baseagent.tools.toolsets import builtin_names, builtin_part

    enabled = {n: c for n, c in settings.mcp_servers.items() if c.enabled}
    servers = McpServers(enabled, env=env, cwd=settings.cwd)
    try:
        servers.wait(lambda: False)
        named = {name: table.tools for name, table in settings.toolsets.items()}
        enabled = settings.enabled_toolsets
        taken = set(builtin_names(None if enabled is None else builtin_part(enabled, named),
                                  builtin_part(settings.disabled_toolsets, named)))
        tools = servers.tools(taken)
        connections = {c.name: c for c in servers.connections}
    finally:
        servers.close()
    reports = []
    for name, config in settings.mcp_servers.items():
        target = config.url or " ".join([config.command or "", *config.args])
        report = ServerReport(name, config.transport, target, config.enabled,
                              "disabled" if not config.enabled else "ready")
        connection = connections.get(name)
        if connection is not None and connection.state == "failed":
            report.status, report.error = "failed", connection.error
        report.tools = [{"tool": t.tool_name, "name": t.name,
                         "description": t.description.splitlines()[0] if t.description else ""}
                        for t in tools if t.server == name]
        reports.append(report)
    return reports


def render(reports: list[ServerReport]) -> str:
    if not reports:
        return "no MCP servers configured (add [mcp_servers.NAME] tables to the config file)\n"
    lines = []
    for r in reports:
        state = r.status if r.status != "failed" else f"failed: {r.error}"
        count = f", {len(r.tools)} tool(s)" if r.status == "ready" else ""
        lines.append(f"{r.name} ({r.transport}: {r.target}): {state}{count}")
        width = max((len(t["tool"]) for t in r.tools), default=0)
        for t in r.tools:
            lines.append(f"  {t['tool']:<{width}}  as {t['name']}  {t['description']}".rstrip())
    return "\n".join(lines) + "\n"


def render_json(reports: list[ServerReport]) -> str:
    return "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in reports)


def exit_code(reports: list[ServerReport]) -> int:
    """1 when an enabled server failed to start (so scripts can check a config)."""
    return 1 if any(r.status == "failed" for r in reports) else 0


__all__ = ["ServerReport", "exit_code", "list_servers", "render", "render_json"]

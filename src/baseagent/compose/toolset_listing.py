"""`baseagent toolsets list` and `baseagent toolsets split NAME`: the configuration's named
toolsets (`[toolsets.NAME]`, config/toolsets.py), what each stands for, and the
orchestrator's split of one larger than `toolset_max_tools`.

As `baseagent mcp list` does, the tool sources a toolset names are started for real
(servers launch, documents load) and closed again: the listing shows the tools a run or a
specialist would get (names resolved by core/delegation/specialists.py, the one vocabulary), with no
model call. The split is compose/orchestrator.py's: one model call with the run's model
settings, cached on disk under the hash of the tools and the limit, so the next `split` (or
the next orchestrator) makes no request.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from baseagent.config.settings import AgentConfig
from baseagent.errors import ConfigError


@dataclass
class ToolsetReport:
    """One toolset: its names as configured and the tools they resolve to."""

    name: str
    description: str
    names: list[str]
    tools: list[str]
    max_tools: int

    @property
    def over_limit(self) -> bool:
        return len(self.tools) > self.max_tools


@dataclass
class Listing:
    reports: list[ToolsetReport]
    # One line each: a source that failed to start, one that is disabled.
    notices: list[str] = field(default_factory=list)
    # The resolved Tool objects of each toolset (what a split is asked about).
    tools: dict[str, list[Any]] = field(default_factory=dict)
    # A source failed to start (its tools are missing from the lists).
    failed: bool = False


@dataclass
class SplitReport:
    toolset: str
    description: str
    max_tools: int
    count: int
    split: bool  # more tools than max_tools: the groups are the orchestrator's
    cached: bool  # the groups were read from the cache: no model call
    cache_file: str
    groups: list[dict[str, Any]]
    notices: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """A split was needed and is not cached (the model's call or answer failed: the
        groups are an in-order split)."""
        return self.split and not Path(self.cache_file).is_file()


def list_toolsets(settings: AgentConfig, env: Mapping[str, str],
                  only: str | None = None) -> Listing:
    """Every toolset (or `only` that one): its sources started, its names resolved, the
    sources closed. A name that means nothing is a ConfigError naming it."""
    from baseagent.compose.tools import check_named_toolsets, source_names
    from baseagent.core.delegation.specialists import resolve_tools, source_refs
    from baseagent.tools.registry import BUILTIN_TOOLS, builtin_tools
    from baseagent.tools.sources import ToolSources
    from baseagent.compose.toolset import make_sources

    check_named_toolsets(settings)
    tables = {name: table for name, table in settings.toolsets.items()
              if only is None or name == only}
    sources = source_names(settings)
    used = {ref.partition(":")[0] for table in tables.values()
            for ref in source_refs(table.tools, sources)}
    notices = []
    for name, table in tables.items():
        for source in dict.fromkeys(r.partition(":")[0] for r in source_refs(table.tools, sources)):
            for kind, configs in (("mcp_servers", settings.mcp_servers),
                                  ("openapi", settings.openapi)):
                if source in configs and not configs[source].enabled:
                    notices.append(f"toolset {name}: [{kind}.{source}] is disabled "
                                   "(enabled = false): it stands for no tool")
    made, _secrets = make_sources(
        {n: c for n, c in settings.mcp_servers.items() if n in used},
        {n: c for n, c in settings.openapi.items() if n in used}, [], env, settings.cwd)
    running = ToolSources(made)
    builtins = builtin_tools(BUILTIN_TOOLS)
    try:
        failures = running.wait(lambda: False)
        source_tools = running.tools({t.name for t in builtins})
    finally:
        running.close()
    listing = Listing([], notices + failures, failed=bool(failures))
    for name, table in tables.items():
        tools = resolve_tools(table.tools, builtins=builtins, caller=[],
                              source_tools=source_tools, sources=sources)
        listing.tools[name] = tools
        listing.reports.append(ToolsetReport(name, table.description, list(table.tools),
                                             [t.name for t in tools],
                                             settings.toolset_max_tools))
    return listing


def split_toolset(settings: AgentConfig, env: Mapping[str, str], name: str,
                  cache_dir: Path, model_client: Any = None) -> SplitReport:
    """The groups of toolset `name`: itself when it is small enough, else the
    orchestrator's split (from the cache, else one model call, cached). A bad model string
    or key is a ConfigError before the call; a failed call is a notice and an in-order
    split (`SplitReport.failed`)."""
    from baseagent.compose.orchestrator import ToolsetOrchestrator, source_hash
    from baseagent.compose.toolset import Toolset

    if name not in settings.toolsets:
        known = ", ".join(settings.toolsets) or "none: add [toolsets.NAME] tables to the " \
                                                "config file"
        raise ConfigError(f"unknown toolset {name!r} (toolsets: {known})")
    listing = list_toolsets(settings, env, only=name)
    tools = listing.tools[name]
    description = settings.toolsets[name].description
    limit = settings.toolset_max_tools
    path = cache_dir / f"{source_hash(tools, limit)}.json"
    report = SplitReport(name, description, limit, len(tools), len(tools) > limit,
                         path.is_file(), str(path), [], listing.notices)
    if not report.split:
        report.cached = False
        report.groups = [{"name": name, "description": description,
                          "tools": [t.name for t in tools]}]
        return report
    if not report.cached and model_client is None:
        from baseagent.compose.checks import preflight

        preflight(settings, env)
    orchestrator = ToolsetOrchestrator([Toolset(name, description, tools=tools)],
                                       config=settings, env=env, cache_dir=cache_dir,
                                       model_client=model_client)
    with orchestrator:
        built = orchestrator.toolsets()
    report.notices += orchestrator.notices
    report.groups = [{"name": t.name, "description": t.description,
                      "tools": [tool.name for tool in t.tools]} for t in built]
    return report


def render(listing: Listing) -> str:
    if not listing.reports:
        return "no toolsets configured (add [toolsets.NAME] tables to the config file)\n"
    lines = []
    for r in listing.reports:
        about = f": {r.description}" if r.description else ""
        lines.append(f"{r.name} ({len(r.tools)} tool(s)){about}")
        lines.append(f"  names: {', '.join(r.names)}")
        lines.append(f"  tools: {', '.join(r.tools) or '(none)'}")
        if r.over_limit:
            lines.append(f"  more than toolset_max_tools ({r.max_tools}): its groups are "
                         f"`baseagent toolsets split {r.name}`")
    return "\n".join(lines) + "\n"


def render_json(listing: Listing) -> str:
    return "".join(json.dumps({**asdict(r), "count": len(r.tools),
                               "over_limit": r.over_limit}, ensure_ascii=False) + "\n"
                   for r in listing.reports)


def render_split(report: SplitReport) -> str:
    if not report.split:
        head = (f"{report.toolset}: {report.count} tool(s), no more than toolset_max_tools "
                f"({report.max_tools}): not split")
    else:
        how = "read from the cache" if report.cached else (
            "the model's answer could not be used: split in order, not cached"
            if report.failed else "asked the model, cached")
        head = (f"{report.toolset}: {report.count} tools, more than toolset_max_tools "
                f"({report.max_tools}): {len(report.groups)} groups ({how}: "
                f"{report.cache_file})")
    lines = [head]
    for group in report.groups:
        about = f": {group['description']}" if group["description"] else ""
        lines.append(f"{group['name']} ({len(group['tools'])}){about}")
        lines.append(f"  {', '.join(group['tools']) or '(none)'}")
    return "\n".join(lines) + "\n"


def render_split_json(report: SplitReport) -> str:
    data = {k: v for k, v in asdict(report).items() if k != "notices"}
    return json.dumps(data, ensure_ascii=False) + "\n"


__all__ = ["Listing", "SplitReport", "ToolsetReport", "list_toolsets", "render",
           "render_json", "render_split", "render_split_json", "split_toolset"]

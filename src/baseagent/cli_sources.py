"""The commands on the config's tool sources: `mcp list` (the MCP servers) and `toolsets`
(list, split NAME).

cli.py adds `commands` to the app; the work is mcp/listing.py's and compose/toolset_listing.py's.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from baseagent.cli_common import API_BASE, MODEL, fail_usage, run_flags

# This module's groups, added to the app by cli.py.
commands = typer.Typer()

mcp_app = typer.Typer(help="MCP servers configured in [mcp_servers.NAME] tables.",
                      no_args_is_help=True)
commands.add_typer(mcp_app, name="mcp")


@mcp_app.command("list")
def mcp_list(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per server."),
) -> None:
    """Start each configured server, show its status and tools, stop it (exit 1 if one
    failed to start)."""
    import os

    from baseagent.config.load import ConfigError, load_settings
    from baseagent.mcp import listing

    try:
        root = ctx.find_root().params
        settings = load_settings({}, config_file=root.get("config"), profile=root.get("profile"))
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None
    reports = listing.list_servers(settings, os.environ)
    sys.stdout.write(listing.render_json(reports) if as_json else listing.render(reports))
    raise typer.Exit(listing.exit_code(reports))


toolsets_app = typer.Typer(
    help="Named toolsets of the config file ([toolsets.NAME]: built-in tools or groups, "
         "[mcp_servers] and [openapi] names, SOURCE:TAG), used by name in --tools and in a "
         "specialist's tools.",
    epilog="Examples: baseagent toolsets list --json; baseagent toolsets split github "
           "-m openai/gpt-4.1",
    no_args_is_help=True)
commands.add_typer(toolsets_app, name="toolsets",
                   short_help="Named toolsets: baseagent toolsets [list|split NAME]")


def _toolset_settings(ctx: typer.Context, **flags: Any) -> Any:
    """The settings of a toolsets command: the root's run flags (`baseagent -m M toolsets
    split X`), the command's own over them, the root's --config and --profile."""
    from baseagent.config.load import ConfigError, load_settings

    root = ctx.find_root().params
    merged = {**run_flags(root), "cwd": root.get("cwd"),
              **{k: v for k, v in flags.items() if v is not None}}
    try:
        return load_settings(merged, config_file=root.get("config"), profile=root.get("profile"))
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None


def _notices(lines: list[str]) -> None:
    for line in lines:
        print(f"baseagent: {line}", file=sys.stderr)


@toolsets_app.command("list", short_help="Each toolset and the tools it resolves to.")
def toolsets_list(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per toolset."),
) -> None:
    """Each toolset: its description, its names and the tools they resolve to (the sources
    it names are started to see; exit 1 if one failed to start)."""
    import os

    from baseagent.compose import toolset_listing
    from baseagent.errors import ConfigError

    settings = _toolset_settings(ctx)
    try:
        listing = toolset_listing.list_toolsets(settings, os.environ)
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None
    sys.stdout.write(toolset_listing.render_json(listing) if as_json
                     else toolset_listing.render(listing))
    _notices(listing.notices)
    raise typer.Exit(1 if listing.failed else 0)


@toolsets_app.command("split", short_help="The groups the model splits a large toolset into (cached).")
def toolsets_split(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="A [toolsets.NAME] of the config file."),
    model: Optional[str] = MODEL,
    api_base: Optional[str] = API_BASE,
    max_tools: Optional[int] = typer.Option(None, "--max-tools", help="toolset_max_tools: split a toolset with more tools than this [30]."),
    as_json: bool = typer.Option(False, "--json", help="The groups as one JSON object."),
) -> None:
    """The groups the orchestrator splits a toolset larger than toolset_max_tools into:
    one model call (the run's model settings), cached under ~/.baseagent/toolsets/ by the
    hash of the tools, so asking again makes no call (exit 1 if the model's split failed)."""
    import os

    from baseagent.compose import toolset_listing
    from baseagent.errors import ConfigError

    settings = _toolset_settings(ctx, model=model, api_base=api_base,
                                 toolset_max_tools=max_tools)
    cache_dir = Path.home() / ".baseagent" / "toolsets"
    try:
        report = toolset_listing.split_toolset(settings, os.environ, name, cache_dir)
    except ConfigError as exc:
        raise fail_usage(str(exc)) from None
    sys.stdout.write(toolset_listing.render_split_json(report) if as_json
                     else toolset_listing.render_split(report))
    _notices(report.notices)
    raise typer.Exit(1 if report.failed else 0)


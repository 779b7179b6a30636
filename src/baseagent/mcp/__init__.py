"""MCP servers as tool sources (docs/TOOLS.md): Codex's `[mcp_servers.NAME]` keys, the
official `mcp` SDK (the `mcp` extra), one background event loop per agent.

Importing this package is cheap: the SDK is imported on the servers' own thread when they
start, so `--help` and runs without MCP servers never load it.
"""

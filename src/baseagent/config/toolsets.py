"""Named toolsets of the configuration: `[toolsets.NAME]` tables (docs/TOOLS.md, "Toolsets
in the config file").

A toolset is a name for a list of tool names in the configuration's one vocabulary (the
one a specialist's `tools` uses, core/delegation/specialists.py): built-in tools and groups,
`[mcp_servers.NAME]` servers, `[openapi.NAME]` documents or `NAME:TAG` for one tag of a
document (and, in the library, the caller's own tools). It is used by name: in `tools`
(`--tools NAME`, `enabled_toolsets`) for the top agent, in a specialist's `tools`, and by
`baseagent toolsets list | split NAME`. Plain descriptions here; the settings check the
names against each other (config/settings.py), core/ says what they stand for.

The library's `Toolset` object (compose/toolset.py) is the other form: it carries its own
parts (functions, providers, tables); this one only names parts the configuration has.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from baseagent.config.sources import check_source_name


class ToolsetConfig(BaseModel):
    """One `[toolsets.NAME]` table."""

    model_config = ConfigDict(extra="forbid")

    description: str = Field("", description="What its tools are for (listed; shown to "
                                             "the model when the toolset is split)")
    tools: list[str] = Field(
        ..., min_length=1, description="Built-in tools or groups, MCP server names, OpenAPI "
        "source names (or SOURCE:TAG), the caller's tool names")

    @field_validator("description", mode="after")
    @classmethod
    def _trim(cls, value: str) -> str:
        return value.strip()

    @field_validator("tools", mode="after")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        cleaned = [name.strip() for name in value]
        if not all(cleaned):
            raise ValueError("a tool name is empty")
        return cleaned


def check_toolsets_table(toolsets: Mapping[str, ToolsetConfig], builtin: Sequence[str],
                         mcp: Sequence[str], openapi: Sequence[str]) -> None:
    """ValueError for the first name that would mean two things: a toolset named like a
    built-in tool or group, or like a tool source; a toolset naming another (they do not
    nest)."""
    for name in toolsets:
        check_source_name(name)
        for kind, names in (("a built-in tool or group", builtin),
                            (f"[mcp_servers.{name}]", mcp), (f"[openapi.{name}]", openapi)):
            if name in names:
                raise ValueError(f"{name}: {kind} has that name too; rename the toolset")
    for name, table in toolsets.items():
        nested = [ref for ref in table.tools if ref in toolsets]
        if nested:
            raise ValueError(f"{name}: names the toolset {nested[0]!r} (toolsets do not "
                             "nest: list its tools instead)")

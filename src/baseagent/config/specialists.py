"""Named specialists: `[specialists.NAME]` in a config file, `Agent(specialists=[...])` in
the library (docs/AGENTB.md, "Specialists and the planner").

A specialist is a sub-agent with a name, a description the delegating model reads, its own
tools (named as the configuration already names them: built-in tools and toolset groups,
`[mcp_servers.NAME]` servers, `[openapi.NAME]` documents or `NAME:TAG` for one tag of a
document, the caller's Python tools), and optionally its own model, prompt and iteration
limit. Plain descriptions here; core/delegation/specialists.py runs them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from baseagent.config.sources import check_source_name
from baseagent.errors import ConfigError


class SpecialistConfig(BaseModel):
    """One `[specialists.NAME]` table."""

    model_config = ConfigDict(extra="forbid")

    description: str = Field(..., min_length=1,
                             description="What it is good at (the delegating model reads it)")
    tools: list[str] | None = Field(
        None, description="Built-in tools or groups, MCP server names, OpenAPI source names "
                          "(or SOURCE:TAG), the caller's tool names; None: delegate_tools")
    model: str | None = Field(None, description="Its model (default: the run's)")
    prompt: str | None = Field(None, description="Added to its system prompt")
    max_iterations: int | None = Field(
        None, ge=1, description="Model calls per sub-task (default: delegate_max_iterations)")

    @field_validator("description", "model", "prompt", mode="after")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return None if value is None else value.strip()


@dataclass
class Specialist:
    """The library's form of a specialist: `Agent(specialists=[Specialist(...)])` (a dict
    with the same keys works too)."""

    name: str
    description: str
    tools: list[str] | None = None
    model: str | None = None
    prompt: str | None = None
    max_iterations: int | None = None


def check_specialist_names(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """Names become enum values of a tool argument and thread labels: the source-name rule."""
    for name in value:
        check_source_name(name)
    return value


def specialist_tables(value: Any) -> Any:
    """`specialists=[Specialist(...) | {name, ...}]` as the settings' mapping of name to table
    (a mapping is taken as it is). Two with one name, or one without a name: ConfigError."""
    if isinstance(value, Mapping) or value is None:
        return value
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ConfigError("specialists= takes a list of Specialist objects or dicts, or a "
                          "mapping of name to table")
    tables: dict[str, Any] = {}
    for entry in value:
        if isinstance(entry, Specialist):
            data = {k: v for k, v in asdict(entry).items() if v is not None}
        elif isinstance(entry, Mapping):
            data = dict(entry)
        else:
            raise ConfigError(f"specialists=: a {type(entry).__name__} is not a Specialist "
                              "or a dict")
        name = data.pop("name", None)
        if not name:
            raise ConfigError("each specialists= entry needs a `name`")
        if name in tables:
            raise ConfigError(f"specialists=: two specialists are named {name!r}")
        tables[str(name)] = data
    return tables

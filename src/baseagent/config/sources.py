"""The configuration tables of tool sources outside the agent: `[mcp_servers.NAME]` and
`[openapi.NAME]` (docs/TOOLS.md).

Plain pydantic descriptions, kept apart from the code that runs them (baseagent.mcp,
baseagent.openapi) so that reading a config file never imports an SDK. The MCP keys and
their defaults are Codex's, so a Codex `config.toml` table works here unchanged.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Server and document names become part of tool names (`mcp__NAME__tool`), which providers
# restrict to these characters; Codex applies the same rule to server names.
SOURCE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Codex's defaults: 10 s to start (initialize + tools/list), 60 s per tool call.
DEFAULT_STARTUP_TIMEOUT_SEC = 10.0
DEFAULT_TOOL_TIMEOUT_SEC = 60.0
DEFAULT_OPENAPI_TIMEOUT_SEC = 30.0

_STDIO_KEYS = ("args", "env", "env_vars", "cwd")
_HTTP_KEYS = ("bearer_token_env_var", "http_headers", "env_http_headers")


def check_source_name(name: str) -> str:
    if not SOURCE_NAME.match(name):
        raise ValueError(f"{name!r} is not a valid name: use 1-64 letters, digits, '_' or '-'")
    return name


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")


class McpServerConfig(_Table):
    """One MCP server: a command started over stdio, or a streamable HTTP URL."""

    # stdio
    command: str | None = Field(None, description="Executable that starts the server (stdio)")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="Variables set for the server")
    env_vars: list[str] = Field(
        default_factory=list, description="Variables passed through from the agent's environment")
    cwd: Path | None = Field(None, description="Working directory of the server process")
    # streamable HTTP
    url: str | None = Field(None, description="Streamable HTTP endpoint")
    bearer_token_env_var: str | None = Field(
        None, description="Variable whose value is sent as `Authorization: Bearer ...`")
    http_headers: dict[str, str] = Field(default_factory=dict)
    env_http_headers: dict[str, str] = Field(
        default_factory=dict, description="Header name -> variable holding its value")
    # both
    startup_timeout_sec: float = Field(DEFAULT_STARTUP_TIMEOUT_SEC, gt=0)
    tool_timeout_sec: float = Field(DEFAULT_TOOL_TIMEOUT_SEC, gt=0)
    enabled: bool = True
    enabled_tools: list[str] | None = Field(None, description="Only these of its tools")
    disabled_tools: list[str] = Field(default_factory=list, description="Leave these out")

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServerConfig":
        if (self.command is None) == (self.url is None):
            raise ValueError("give `command` (a stdio server) or `url` (a streamable HTTP "
                             "server), exactly one")
        given = self.model_fields_set
        wrong = _HTTP_KEYS if self.command is not None else _STDIO_KEYS
        misplaced = [key for key in wrong if key in given]
        if misplaced:
            kind = "a stdio server (`command`)" if self.command is not None \
                else "a streamable HTTP server (`url`)"
            raise ValueError(f"{', '.join(misplaced)} do(es) not apply to {kind}")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        return self

    @property
    def transport(self) -> Literal["stdio", "streamable_http"]:
        return "stdio" if self.command is not None else "streamable_http"


class OpenApiAuth(_Table):
    """How calls authenticate: a header (or query parameter) whose value comes from an
    environment variable, so the secret never sits in the config file."""

    type: Literal["bearer", "api_key"] = "bearer"
    env: str = Field(..., min_length=1, description="Variable holding the token or key")
    # bearer: Authorization: Bearer <value>; api_key: <header>: <value> (or ?<query>=<value>)
    header: str | None = None
    query: str | None = None

    @model_validator(mode="after")
    def _placement(self) -> "OpenApiAuth":
        if self.header is not None and self.query is not None:
            raise ValueError("auth takes `header` or `query`, not both")
        if self.type == "bearer" and self.query is not None:
            raise ValueError("a bearer token goes in a header, not `query`")
        return self

    @property
    def header_name(self) -> str | None:
        if self.query is not None:
            return None
        return self.header or ("Authorization" if self.type == "bearer" else "X-API-Key")


class OpenApiConfig(_Table):
    """One OpenAPI 3 document whose operations become tools."""

    spec: str | dict[str, Any] = Field(
        ..., description="Path or http(s) URL of the document (the library may pass it parsed)")
    base_url: str | None = Field(None, description="Overrides the document's `servers`")
    auth: OpenApiAuth | None = None
    include: list[str] = Field(
        default_factory=list, description="Only operations with these operationIds or tags")
    exclude: list[str] = Field(default_factory=list, description="Leave these out")
    timeout_sec: float = Field(DEFAULT_OPENAPI_TIMEOUT_SEC, gt=0)
    enabled: bool = True
    mode: Literal["operations", "generic", "both"] = Field(
        "operations", description="operations: one tool per operation; generic: one "
        "`http_request` tool limited to the document's servers (AgentB's genericOpenApi); "
        "both: the two")

    @model_validator(mode="after")
    def _urls(self) -> "OpenApiConfig":
        if self.base_url is not None and not re.match(r"^https?://", self.base_url):
            raise ValueError(f"base_url must start with http:// or https://, "
                             f"got {self.base_url!r}")
        return self

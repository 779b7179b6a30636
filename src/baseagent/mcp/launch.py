"""What a server is started or reached with: its environment, its HTTP headers, and which
of those values are secrets (redacted from every event, record and stderr line).

Everything is resolved from the environment the agent was handed, once, when the agent is
made; nothing here reads os.environ.
"""
from __future__ import annotations

from collections.abc import Mapping

from baseagent.config.sources import McpServerConfig
from baseagent.credentials import is_secret_name

# Codex's default environment for stdio servers (rmcp-client): enough to find programs and a
# home, nothing that looks like a credential. More comes from `env_vars` and `env`.
DEFAULT_ENV_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "__CF_USER_TEXT_ENCODING",
                    "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")
# Set in every stdio server's environment so the agent can find its process (and the
# processes it starts) when it must kill them at once (tools/procs.py).
MARKER_VAR = "BASEAGENT_MCP_SERVER"
# Header names whose values are credentials whatever the variable they came from.
_SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"}


class LaunchError(Exception):
    """The server cannot be started as configured (a variable it needs is not set)."""


def server_env(config: McpServerConfig, env: Mapping[str, str], marker: str) -> dict[str, str]:
    names = [*DEFAULT_ENV_VARS, *config.env_vars]
    out = {name: env[name] for name in names if name in env}
    out.update(config.env)
    out[MARKER_VAR] = marker
    return out


def http_headers(config: McpServerConfig, env: Mapping[str, str]) -> dict[str, str]:
    headers = dict(config.http_headers)
    for header, var in config.env_http_headers.items():
        if env.get(var):  # Codex: only when the variable is set and not empty
            headers[header] = env[var]
    if config.bearer_token_env_var is not None:
        token = env.get(config.bearer_token_env_var)
        if not token:
            raise LaunchError(f"bearer_token_env_var {config.bearer_token_env_var} is not set")
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = f"Bearer {token}"
    return headers


def secret_values(config: McpServerConfig, env: Mapping[str, str]) -> list[str]:
    """Values this server's configuration hands over that must never be shown."""
    values = [v for k, v in config.env.items() if is_secret_name(k)]
    values += [env[name] for name in config.env_vars if name in env and is_secret_name(name)]
    values += [v for k, v in config.http_headers.items() if k.lower() in _SECRET_HEADERS
               or is_secret_name(k.replace("-", "_"))]
    values += [env[var] for var in config.env_http_headers.values() if env.get(var)]
    if config.bearer_token_env_var and env.get(config.bearer_token_env_var):
        values.append(env[config.bearer_token_env_var])
    return values

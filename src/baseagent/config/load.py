"""Resolve the configuration from the layers: flags > env vars > the chosen profile >
the rest of the TOML file > defaults.

Kept apart from the models (config/settings.py) so they stay a plain description of the
knobs. Two readers of the same layers: the CLI's (`load_settings`, a `Settings`) and the
library's (`load_agent_config` and `agent_config_from_options`, an `AgentConfig`). The
library refuses the CLI's own options when its caller names them, and leaves them unread
when it meets them in the config file or a BASEAGENT_* variable: those are shared with the
CLI, where they mean something.

Profiles are Codex's: `[profiles.NAME]` tables in the file, each holding any setting keys,
chosen by `--profile NAME` (the caller's `profile` argument), else BASEAGENT_PROFILE, else
the file's top-level `profile = "NAME"`. The chosen table is a layer of its own, just above
the rest of the file; the others are never read.
"""
from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any, Mapping, TypeVar

from pydantic import ValidationError

from baseagent.config.settings import AgentConfig, CliOptions, Settings
from baseagent.errors import ConfigError

ENV_PREFIX = "BASEAGENT_"
DEFAULT_CONFIG_PATH = Path("~/.baseagent/config.toml")
# Config-file (and BASEAGENT_*) names that read better than the Settings field they set.
ALIASES = {"tools": "enabled_toolsets", "disabled_tools": "disabled_toolsets"}
# Tables of named entries: a later layer adds entries and overrides single keys of an
# entry (`--config mcp_servers.docs.enabled=false`), as Codex merges them.
TABLE_KEYS = ("mcp_servers", "openapi", "toolsets", "specialists")
# Codex's profiles: the top-level key naming the default one, the table of them, and the
# variable that picks one (between the flag and the file's default).
PROFILE_KEY = "profile"
PROFILES_KEY = "profiles"
PROFILE_ENV = ENV_PREFIX + "PROFILE"
# Flat tables a later layer merges into key by key (BASEAGENT_STORAGE=sqlite keeps the
# file's `[storage] path`); a string stands for the table's `kind`.
MERGED_TABLES = ("storage",)


__all__ = ["ConfigError", "agent_config_from_options", "load_agent_config", "load_settings",
           "settings_from_options"]

Config = TypeVar("Config", bound=AgentConfig)


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """BASEAGENT_<FIELD> for every settings field (and alias); list fields take
    comma-separated values, table fields (mcp_servers, openapi) JSON."""
    layer: dict[str, Any] = {}
    names = [(name, name) for name in Settings.model_fields]
    names += [(alias, target) for alias, target in ALIASES.items()]
    for env_name, name in names:
        raw = env.get(ENV_PREFIX + env_name.upper())
        if raw is None or raw == "":
            continue
        kind = str(Settings.model_fields[name].annotation)
        if kind.startswith("list[str]"):
            layer[name] = [part.strip() for part in raw.split(",") if part.strip()]
        elif kind.startswith("dict["):
            try:
                layer[name] = json.loads(raw)
            except ValueError as exc:
                raise ConfigError(f"{ENV_PREFIX}{env_name.upper()} is not JSON: {exc}") from None
        else:
            layer[name] = raw
    return layer


def _apply_aliases(data: dict[str, Any], where: str) -> dict[str, Any]:
    out = dict(data)
    for alias, target in ALIASES.items():
        if alias in out:
            if target in out:
                raise ConfigError(f"{where}: give `{alias}` or `{target}`, not both")
            out[target] = out.pop(alias)
    return out


def _read_toml(path: Path | None, explicit: bool) -> dict[str, Any] | None:
    """The file's tables as read (None: no file), or a ConfigError saying why not."""
    if path is None:
        return None
    if not path.exists():
        if explicit:
            raise ConfigError(f"config file not found: {path}")
        return None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc


def _settings_table(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(data) - set(Settings.model_fields) - set(ALIASES))
    if unknown:
        raise ConfigError(f"unknown key(s) in {where}: {', '.join(unknown)}")
    return _apply_aliases(dict(data), where)


def _toml_layers(path: Path | None, explicit: bool, env: Mapping[str, str],
                 profile: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's settings and the chosen profile's, as two layers. The profile is
    `profile` (a flag, the library's argument), else BASEAGENT_PROFILE, else the file's
    `profile` key; one that the file does not define is an error, as in Codex."""
    if profile is not None and not profile.strip():
        raise ConfigError("the profile name is empty (--profile NAME)")
    path = path.expanduser() if path is not None else None
    read = _read_toml(path, explicit)
    data = dict(read or {})
    default = data.pop(PROFILE_KEY, None)
    profiles = data.pop(PROFILES_KEY, {})
    if default is not None and not isinstance(default, str):
        raise ConfigError(f"{PROFILE_KEY} in {path} must be a profile name (a string)")
    if not isinstance(profiles, dict) or not all(isinstance(t, dict)
                                                 for t in profiles.values()):
        raise ConfigError(f"{PROFILES_KEY} in {path} must hold tables: [profiles.NAME]")
    base = _settings_table(data, str(path))
    # Every profile's keys are checked (a typo shows now, not the day it is chosen).
    tables = {name: _settings_table(table, f"[profiles.{name}] of {path}")
              for name, table in profiles.items()}
    name = profile or env.get(PROFILE_ENV) or default
    if not name:
        return base, {}
    if name not in tables:
        raise ConfigError(_unknown_profile(name, path, sorted(tables), read is not None))
    return base, tables[name]


def _unknown_profile(name: str, path: Path | None, known: list[str], exists: bool) -> str:
    if not exists:
        return f"unknown profile {name!r}: there is no config file at {path}"
    defined = ", ".join(known) if known else "none"
    return f"unknown profile {name!r} (profiles in {path}: {defined})"


def _describe(exc: ValidationError) -> str:
    """One line naming each bad key. Whole tables (an MCP server's, which may hold secrets
    in `env`) are never echoed back: only scalar inputs are quoted."""
    parts = []
    shown_as = {target: f"{target} ({alias})" for alias, target in ALIASES.items()}
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "settings"
        where = shown_as.get(where, where)
        if err["type"] == "extra_forbidden":
            parts.append(f"{where}: unknown key")
            continue
        message = err["msg"].removeprefix("Value error, ")
        value = err.get("input")
        shown = "" if isinstance(value, (dict, list, tuple)) or err["type"] == "value_error" \
            else f" (got {value!r})"
        parts.append(f"{where}: {message}{shown}")
    return "invalid configuration: " + "; ".join(parts)


def load_settings(
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
    profile: str | None = None,
) -> Settings:
    """The CLI's: merge the layers and validate once; every failure becomes a ConfigError.
    `profile` is `--profile NAME` (a [profiles.NAME] table of the file)."""
    return settings_from_options(_layers(flags, env, config_file, profile))


def with_person_present(settings: Settings) -> Settings:
    """Where a person is at the terminal (the interactive session, a one-shot run on a
    TTY): commands run in `workspace-write` and may ask to leave it (`on-request`), unless
    the flags, the environment or the config file chose otherwise. Headless runs keep the
    defaults of the settings (full access, nobody asked): a harness has nobody to ask.
    Off Linux, where no mode confines commands, the defaults stay as they are."""
    from baseagent.sandbox.policy import platform_supported

    chosen = settings.model_fields_set
    defaults = (("sandbox", "workspace-write"), ("approval_policy", "on-request"))
    if not platform_supported():  # no sandbox to run in, nor to leave (README, Platforms)
        defaults = ()
    updates = {key: value for key, value in defaults if key not in chosen}
    return settings.model_copy(update=updates) if updates else settings


def load_agent_config(
    options: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
    profile: str | None = None,
) -> AgentConfig:
    """The library's (`Agent.from_config`): the same layers, except that a CLI option among
    `options` is refused and one in the file or the environment is left unread."""
    refuse_cli_options(options)
    merged = _layers(options, env, config_file, profile)
    for name in CliOptions.model_fields:
        merged.pop(name, None)
    return _validate(AgentConfig, merged)


def _layers(flags: Mapping[str, Any], env: Mapping[str, str] | None,
            config_file: Path | None, profile: str | None = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    explicit = config_file is not None
    base, chosen = _toml_layers(config_file or DEFAULT_CONFIG_PATH, explicit, env, profile)
    layers: dict[str, Any] = {}
    for layer in (base, chosen, _env_layer(env),
                  {k: v for k, v in flags.items() if v is not None}):
        _merge(layers, layer)
    return layers


def _merge(into: dict[str, Any], layer: Mapping[str, Any]) -> None:
    for key, value in layer.items():
        old = into.get(key)
        if key in MERGED_TABLES:
            value = {"kind": value} if isinstance(value, str) else value
            if isinstance(old, dict) and isinstance(value, Mapping):
                into[key] = {**old, **value}
                continue
        if key in TABLE_KEYS and isinstance(old, dict) and isinstance(value, Mapping):
            into[key] = {**old, **{name: {**old.get(name, {}), **table}
                                   if isinstance(table, Mapping) else table
                                   for name, table in value.items()}}
        else:
            into[key] = value


def settings_from_options(options: Mapping[str, Any]) -> Settings:
    """Validate explicit options as the CLI's Settings, with no other layer."""
    return _validate(Settings, options)


def agent_config_from_options(options: Mapping[str, Any]) -> AgentConfig:
    """Validate explicit options (the library's keyword arguments) with no other layer; a
    CLI option is refused by name rather than validated and ignored, and so is a profile
    (a table of the config file, which these options do not read)."""
    refuse_cli_options(options)
    if PROFILE_KEY in options:
        raise ConfigError("invalid configuration: profile: profiles are tables of the config "
                          "file; use Agent.from_config(profile=...)")
    return _validate(AgentConfig, options)


def refuse_cli_options(options: Mapping[str, Any]) -> None:
    """A ConfigError naming each CLI-only option in `options` and what to use instead: an
    Agent has no stdout and no output file, so it could only ignore them."""
    named = [name for name in options if name in CliOptions.model_fields]
    if named:
        raise ConfigError("invalid configuration: " + "; ".join(
            f"{name}: a command-line option, which an Agent cannot honour "
            f"({CliOptions.LIBRARY_WAY[name]})" for name in named))


def _validate(model: type[Config], options: Mapping[str, Any]) -> Config:
    try:
        return model.model_validate(_apply_aliases(dict(options), "options"))
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None

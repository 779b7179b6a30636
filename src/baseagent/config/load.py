"""Resolve Settings from the four layers: flags > env vars > TOML file > defaults.

Kept apart from the Settings model so the model stays a plain description of the knobs.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from baseagent.config.defaults import Settings
from baseagent.errors import ConfigError

ENV_PREFIX = "BASEAGENT_"
DEFAULT_CONFIG_PATH = Path("~/.baseagent/config.toml")


__all__ = ["ConfigError", "load_settings", "settings_from_options"]


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """BASEAGENT_<FIELD> for every settings field; list fields take comma-separated values."""
    layer: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        raw = env.get(ENV_PREFIX + name.upper())
        if raw is None or raw == "":
            continue
        layer[name] = raw.split(",") if field.annotation == list[str] else raw
    return layer


def _toml_layer(path: Path | None, explicit: bool) -> dict[str, Any]:
    if path is None:
        return {}
    path = path.expanduser()
    if not path.exists():
        if explicit:
            raise ConfigError(f"config file not found: {path}")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"unknown key(s) in {path}: {', '.join(unknown)}")
    return data


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "settings"
        parts.append(f"{where}: {err['msg']} (got {err.get('input')!r})")
    return "invalid configuration: " + "; ".join(parts)


def load_settings(
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Merge the layers and validate once; every failure becomes a ConfigError."""
    env = os.environ if env is None else env
    explicit = config_file is not None
    layers: dict[str, Any] = {}
    layers.update(_toml_layer(config_file or DEFAULT_CONFIG_PATH, explicit))
    layers.update(_env_layer(env))
    layers.update({k: v for k, v in flags.items() if v is not None})
    return settings_from_options(layers)


def settings_from_options(options: Mapping[str, Any]) -> Settings:
    """Validate explicit options (the library's keyword arguments) with no other layer."""
    try:
        return Settings.model_validate(dict(options))
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None

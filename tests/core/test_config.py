"""Settings resolution: flags > env > TOML > defaults, and one clear error for bad input."""
from __future__ import annotations

from pathlib import Path

import pytest

from baseagent.config.settings import DEFAULT_MODEL
from baseagent.config.load import ConfigError, load_settings
from helpers import run_agent


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_defaults_when_nothing_is_set(tmp_path):
    s = load_settings({}, env={}, config_file=write_toml(tmp_path, ""))
    assert s.model == DEFAULT_MODEL and s.max_iterations == 200 and s.sandbox == "danger-full-access"


@pytest.mark.parametrize("flags, env, toml, expected", [
    ({}, {}, 'model = "toml/m"', "toml/m"),
    ({}, {"BASEAGENT_MODEL": "env/m"}, 'model = "toml/m"', "env/m"),
    ({"model": "flag/m"}, {"BASEAGENT_MODEL": "env/m"}, 'model = "toml/m"', "flag/m"),
    ({"model": None}, {"BASEAGENT_MODEL": "env/m"}, "", "env/m"),  # unset flag falls through
])
def test_precedence(tmp_path, flags, env, toml, expected):
    s = load_settings(flags, env=env, config_file=write_toml(tmp_path, toml))
    assert s.model == expected


def test_env_values_are_validated_and_converted(tmp_path):
    s = load_settings({}, env={"BASEAGENT_MAX_ITERATIONS": "7", "BASEAGENT_COST_LIMIT": "0.5",
                               "BASEAGENT_ENV_STRIP": "A_*,B"},
                      config_file=write_toml(tmp_path, ""))
    assert (s.max_iterations, s.cost_limit, s.env_strip) == (7, 0.5, ["A_*", "B"])


@pytest.mark.parametrize("flags, env, toml, fragment", [
    ({"max_iterations": 0}, {}, "", "max_iterations"),
    ({}, {"BASEAGENT_SANDBOX": "yolo"}, "", "sandbox"),
    ({}, {}, "bogus_key = 1", "unknown key(s)"),
    ({}, {}, "model = [", "cannot read config file"),
    ({}, {}, "cost_limit = -1", "cost_limit"),
])
def test_bad_configuration_is_one_clear_error(tmp_path, flags, env, toml, fragment):
    with pytest.raises(ConfigError) as info:
        load_settings(flags, env=env, config_file=write_toml(tmp_path, toml))
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_explicit_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings({}, env={}, config_file=tmp_path / "absent.toml")


def test_bad_config_file_exits_2_with_one_line(tmp_path):
    (tmp_path / "home").mkdir()
    bad = write_toml(tmp_path, "max_iterations = 'many'")
    run = run_agent(["-i", "x", "--config", str(bad)], cwd=tmp_path, home=tmp_path / "home",
                    parse=False)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "max_iterations" in lines[0], run.stderr

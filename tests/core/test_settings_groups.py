"""The configuration split by component: the library's AgentConfig (one group per component)
and the CLI's own options, with Settings, the CLI's model, made of both.

What the split must keep: every field in exactly one group; the same defaults, constraints
and resolved values as the one flat model before it (`settings_before_split.json`, taken
from the model at the commit before the split; a deliberate change to a default updates
that file). What it adds: the library refuses an option only the CLI can honour, by name,
instead of validating and ignoring it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent, AgentConfig, ConfigError, Settings
from baseagent.config.load import (agent_config_from_options, load_agent_config,
                                   load_settings, settings_from_options)
from baseagent.config.settings import AGENT_GROUPS, CliOptions
from baseagent.testing.deterministic import DeterministicClient

SNAPSHOT = json.loads((Path(__file__).parent / "settings_before_split.json").read_text())
# A value of each CLI-only option that the CLI takes.
CLI_VALUES: dict[str, Any] = {"json_output": True, "event_format": "agentb",
                              "output_last_message": "/tmp/last-message.txt"}


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


# -- one field, one group --------------------------------------------------------------------

def test_every_field_sits_in_exactly_one_group():
    groups = [*AGENT_GROUPS, CliOptions]
    owners: dict[str, list[str]] = {}
    for group in groups:
        for name in group.model_fields:
            owners.setdefault(name, []).append(group.__name__)
    assert {name: where for name, where in owners.items() if len(where) > 1} == {}
    assert set(owners) == set(Settings.model_fields)
    library = {name for group in AGENT_GROUPS for name in group.model_fields}
    assert set(AgentConfig.model_fields) == library
    assert AgentConfig.__bases__ == tuple(reversed(AGENT_GROUPS))  # the two lists in step
    assert list(AgentConfig.model_fields) == [
        name for group in AGENT_GROUPS for name in group.model_fields]
    assert library.isdisjoint(CliOptions.model_fields)


def test_the_cli_options_are_exactly_the_ones_with_a_library_way():
    assert set(CliOptions.LIBRARY_WAY) == set(CliOptions.model_fields) == set(CLI_VALUES)


def test_settings_is_an_agent_config_with_flat_access(tmp_path):
    settings = settings_from_options({"cwd": tmp_path, "compaction_threshold": 0.5,
                                      "event_format": "agentb"})
    assert isinstance(settings, AgentConfig)
    assert (settings.compaction_threshold, settings.event_format) == (0.5, "agentb")
    for group in AGENT_GROUPS:
        assert isinstance(settings, group)
    settings.max_retries = 3  # assignment still validated, whichever group owns the field
    with pytest.raises(ValueError):
        settings.max_retries = -1


# -- nothing else changed --------------------------------------------------------------------

# Settings added since the snapshot was taken, with their defaults (the snapshot's cases
# set none of them).
ADDED_SINCE = {"approval_policy": "never", "toolset_max_tools": 30, "verbose": False,
               "specialists": {}, "planner": False, "all_tools_failed": "continue",
               "toolsets": {}, "checkpoints": True,
               "retry_schedule": "exponential", "retry_linear_delay": 10.0,
               "retry_max_total_wait": 600.0, "tool_output_max_tokens": None,
               "tool_output_limits": {}, "attempts": 1, "attempts_parallel": "auto",
               "attempts_temperature": 0.7, "first_byte_timeout": None,
               "repair_temperature": 0.7, "repair_candidates": 3,
               "storage": {"kind": "jsonl",
                           "path": str(Path.home() / ".baseagent" / "sessions.db")}}
# Keys added since to the tables' models ($defs), with their defaults.
ADDED_TABLE_KEYS = {("OpenApiConfig", "mode"): "operations"}
# The schemas of the tables those settings added (`$defs`), and the setting that added each
# (None: a table model of a mapping setting, whose default is {}).
ADDED_DEFS = {"storage": "StorageConfig", None: "SpecialistConfig", "toolsets": "ToolsetConfig"}


@pytest.mark.parametrize("case", SNAPSHOT["cases"], ids=lambda c: json.dumps(c["input"])[:60])
def test_resolved_values_are_those_of_the_flat_model(case):
    given = {**case["input"], "cwd": "/", "session_dir": "/s"}
    dump = _before_additions(Settings.model_validate(given).model_dump(mode="json"))
    assert {k: dump.pop(k) for k in ADDED_SINCE} == ADDED_SINCE
    assert dump == case["dump"]
    library = {k: v for k, v in given.items() if k not in CliOptions.model_fields}
    expected = {k: v for k, v in case["dump"].items() if k not in CliOptions.model_fields}
    dump = _before_additions(AgentConfig.model_validate(library).model_dump(mode="json"))
    assert {k: dump.pop(k) for k in ADDED_SINCE} == ADDED_SINCE
    assert dump == expected


def _before_additions(dump: dict[str, Any]) -> dict[str, Any]:
    """A dump without the table keys added since (each at its default)."""
    for (model, key), default in ADDED_TABLE_KEYS.items():
        assert model == "OpenApiConfig"
        for table in (dump.get("openapi") or {}).values():
            assert table.pop(key) == default
    return dump


def test_fields_defaults_and_constraints_are_those_of_the_flat_model():
    before = {k: v for k, v in SNAPSHOT["schema"].items() if k != "description"}
    now = {k: v for k, v in Settings.model_json_schema().items() if k != "description"}
    added = {name: now["properties"].pop(name) for name in ADDED_SINCE}
    tables = {key: now["$defs"][key[0]]["properties"].pop(key[1]) for key in ADDED_TABLE_KEYS}
    assert {key: prop["default"] for key, prop in tables.items()} == ADDED_TABLE_KEYS
    defs = {name: now["$defs"].pop(model) for name, model in ADDED_DEFS.items()}
    assert now == before
    # a default made by a factory (a table: {}) is not in the schema: the model has it
    made = Settings().model_dump(mode="json")
    assert {name: prop["default"] if "default" in prop else made[name]
            for name, prop in added.items() if name not in defs} == \
        {name: value for name, value in ADDED_SINCE.items() if name not in defs}
    assert {key: field.get("default") for key, field in
            defs["storage"]["properties"].items()} == {"kind": "jsonl", "path": None}

def test_the_moving_defaults_still_follow_the_process():
    config = AgentConfig()
    assert config.cwd == Path.cwd().resolve()
    assert config.session_dir == (Path.home() / ".baseagent" / "sessions").resolve()


# -- the library refuses what it cannot honour -----------------------------------------------

@pytest.mark.parametrize("name", sorted(CLI_VALUES))
def test_agent_refuses_each_cli_option_by_name(workspace, name):
    with pytest.raises(ConfigError) as info:
        Agent(model_client=DeterministicClient([]), cwd=workspace, session=False,
              **{name: CLI_VALUES[name]})
    message = str(info.value)
    assert f"{name}: a command-line option" in message, message
    assert CliOptions.LIBRARY_WAY[name] in message and "\n" not in message


@pytest.mark.parametrize("name", sorted(CLI_VALUES))
def test_from_config_refuses_each_cli_option_by_name(tmp_path, workspace, name):
    with pytest.raises(ConfigError, match=f"{name}: a command-line option"):
        Agent.from_config(model_client=DeterministicClient([]), cwd=workspace, env={},
                          config_file=write_toml(tmp_path, ""), **{name: CLI_VALUES[name]})


def test_every_cli_option_named_is_listed_in_one_error():
    with pytest.raises(ConfigError) as info:
        agent_config_from_options({"model": "openai/x", **CLI_VALUES})
    assert all(f"{name}: a command-line option" in str(info.value) for name in CLI_VALUES)


def test_a_refused_cli_option_is_the_same_error_as_an_unknown_keyword(workspace):
    with pytest.raises(ConfigError, match="no_such_setting: unknown key"):
        Agent(model_client=DeterministicClient([]), cwd=workspace, no_such_setting=1)


def test_cli_options_in_the_shared_file_and_env_are_left_unread_by_the_library(tmp_path,
                                                                             workspace):
    toml = write_toml(tmp_path, 'event_format = "agentb"\njson_output = true\n'
                                'max_iterations = 9\n')
    env = {"BASEAGENT_OUTPUT_LAST_MESSAGE": str(tmp_path / "last.txt"),
           "BASEAGENT_MODEL": "openai/from-env"}
    config = load_agent_config({"cwd": workspace}, env=env, config_file=toml)
    assert type(config) is AgentConfig
    assert (config.max_iterations, config.model) == (9, "openai/from-env")
    agent = Agent.from_config(model_client=DeterministicClient([]), cwd=workspace, env=env,
                              config_file=toml, session=False)
    assert not hasattr(agent.settings, "event_format")
    agent.close()


def test_an_unknown_key_in_the_file_is_still_an_error_for_the_library(tmp_path):
    with pytest.raises(ConfigError, match="unknown key"):
        load_agent_config({}, env={}, config_file=write_toml(tmp_path, "bogus = 1"))


# -- the CLI still takes them ----------------------------------------------------------------

def test_the_cli_takes_its_options_from_flags_env_and_file(tmp_path):
    flags = load_settings(CLI_VALUES, env={}, config_file=write_toml(tmp_path, ""))
    assert (flags.json_output, flags.event_format, str(flags.output_last_message)) == \
        (True, "agentb", CLI_VALUES["output_last_message"])
    env = {"BASEAGENT_EVENT_FORMAT": "agentb", "BASEAGENT_JSON_OUTPUT": "true"}
    from_env = load_settings({}, env=env, config_file=write_toml(tmp_path, ""))
    assert (from_env.event_format, from_env.json_output) == ("agentb", True)
    from_file = load_settings({}, env={}, config_file=write_toml(
        tmp_path, 'event_format = "agentb"\noutput_last_message = "out.txt"\n'))
    assert (from_file.event_format, from_file.output_last_message) == ("agentb",
                                                                       Path("out.txt"))


def test_the_cli_still_validates_its_options(tmp_path):
    with pytest.raises(ConfigError, match="event_format"):
        load_settings({"event_format": "xml"}, env={}, config_file=write_toml(tmp_path, ""))


def test_agent_from_settings_takes_the_clis_settings(workspace):
    settings = settings_from_options({"cwd": workspace, "record_session": False,
                                      "verify": False, "event_format": "agentb"})
    agent = Agent.from_settings(settings, model_client=DeterministicClient(
        [{"content": "done"}]), env={"PATH": os.environ["PATH"]})
    try:
        assert agent.run("x").final_message == "done"
    finally:
        agent.close()

"""Codex's profiles in config.toml: `[profiles.NAME]` tables chosen by `--profile NAME`
(the loader's `profile` argument), BASEAGENT_PROFILE or the file's top-level `profile`.
Precedence: flags > env > the chosen profile > the rest of the file > defaults. Through the
real loader (config/load.py) and the library's `Agent.from_config`."""
from __future__ import annotations

from pathlib import Path

import pytest

from baseagent.config.load import ConfigError, load_agent_config, load_settings
from baseagent.config.settings import DEFAULT_MODEL

CONFIG = """\
model = "file/m"
max_iterations = 30
cost_limit = 2.0

[mcp_servers.docs]
url = "https://docs.example/mcp"
enabled = false

[profiles.fast]
model = "fast/m"
max_iterations = 5
tools = ["read"]

[profiles.fast.mcp_servers.docs]
enabled = true

[profiles.deep]
model = "deep/m"
reasoning_effort = "high"
"""


def write(tmp_path: Path, text: str = CONFIG) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_no_profile_chosen_reads_the_file_alone(tmp_path):
    s = load_settings({}, env={}, config_file=write(tmp_path))
    assert (s.model, s.max_iterations, s.reasoning_effort) == ("file/m", 30, None)
    assert s.mcp_servers["docs"].enabled is False


def test_the_chosen_profile_sits_above_the_file(tmp_path):
    s = load_settings({}, env={}, config_file=write(tmp_path), profile="fast")
    assert (s.model, s.max_iterations) == ("fast/m", 5)
    assert s.enabled_toolsets == ["read"]          # the alias works inside a profile
    assert s.cost_limit == 2.0                     # the rest of the file still applies
    docs = s.mcp_servers["docs"]                   # tables merge key by key
    assert docs.enabled is True and docs.url == "https://docs.example/mcp"
    other = load_settings({}, env={}, config_file=write(tmp_path), profile="deep")
    assert (other.model, other.max_iterations, other.reasoning_effort) == \
        ("deep/m", 30, "high")                     # the other profile is never read


@pytest.mark.parametrize("flags, env, expected", [
    ({}, {}, ("fast/m", 5)),
    ({}, {"BASEAGENT_MODEL": "env/m"}, ("env/m", 5)),
    ({"model": "flag/m", "max_iterations": 9}, {"BASEAGENT_MODEL": "env/m"}, ("flag/m", 9)),
    ({}, {"BASEAGENT_MAX_ITERATIONS": "7"}, ("fast/m", 7)),
])
def test_env_and_flags_beat_the_profile(tmp_path, flags, env, expected):
    s = load_settings(flags, env=env, config_file=write(tmp_path), profile="fast")
    assert (s.model, s.max_iterations) == expected


def test_which_profile_flag_then_env_then_the_files_default(tmp_path):
    path = write(tmp_path, 'profile = "deep"\n' + CONFIG)
    assert load_settings({}, env={}, config_file=path).model == "deep/m"
    assert load_settings({}, env={"BASEAGENT_PROFILE": "fast"}, config_file=path).model == "fast/m"
    assert load_settings({}, env={"BASEAGENT_PROFILE": "fast"}, config_file=path,
                         profile="deep").model == "deep/m"


def test_the_default_config_path_is_read_for_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".baseagent").mkdir()
    write(tmp_path / ".baseagent")
    assert load_settings({}, env={}, profile="deep").model == "deep/m"


@pytest.mark.parametrize("text, profile, message", [
    (CONFIG, "fsat", r"^unknown profile 'fsat' \(profiles in .*config\.toml: deep, fast\)$"),
    ('model = "x"\n', "fast", r"^unknown profile 'fast' \(profiles in .*: none\)$"),
    ('profile = "gone"\n' + CONFIG, None, r"^unknown profile 'gone' "),
    (CONFIG, "  ", r"^the profile name is empty"),
    ("[profiles.bad]\nmax_iteration = 3\n", "bad",
     r"^unknown key\(s\) in \[profiles\.bad\] of .*: max_iteration$"),
    ("[profiles.bad]\nprofile = \"bad\"\n", "bad", r"^unknown key\(s\) in \[profiles\.bad\]"),
    ("profiles = 3\n", None, r"^profiles in .* must hold tables: \[profiles\.NAME\]$"),
    ("profile = 3\n", None, r"^profile in .* must be a profile name"),
    ("[profiles.bad]\nmax_iterations = 0\n", "bad", r"^invalid configuration: max_iterations"),
])
def test_a_bad_profile_is_one_clear_line(tmp_path, text, profile, message):
    with pytest.raises(ConfigError, match=message) as info:
        load_settings({}, env={}, config_file=write(tmp_path, text), profile=profile)
    assert "\n" not in str(info.value)


def test_a_profile_with_no_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.baseagent/config.toml
    with pytest.raises(ConfigError, match=r"^unknown profile 'fast': there is no config file "
                                          r"at .*config\.toml$"):
        load_settings({}, env={}, profile="fast")
    assert load_settings({}, env={}).model == DEFAULT_MODEL  # none asked: no file is fine


def test_a_bad_key_in_an_unchosen_profile_is_still_refused(tmp_path):
    """A typo in a profile shows when the file is read, not the day the profile is used."""
    with pytest.raises(ConfigError, match=r"\[profiles\.x\]"):
        load_settings({}, env={}, config_file=write(tmp_path, "[profiles.x]\nbogus = 1\n"))


def test_the_library_reads_profiles_and_leaves_cli_options_unread(tmp_path):
    path = write(tmp_path, CONFIG + 'json_output = true\n')
    config = load_agent_config({}, env={}, config_file=path, profile="fast")
    assert (config.model, config.max_iterations) == ("fast/m", 5)
    with pytest.raises(ConfigError, match="unknown profile 'nope'"):
        load_agent_config({}, env={}, config_file=path, profile="nope")


def test_agent_from_config_profile_runs_with_the_profiles_model(tmp_path, scripted_server):
    """`Agent.from_config(profile=...)` end to end: the profile's model and API base are the
    ones the request reaches (the file's own point nowhere)."""
    from baseagent import Agent

    server = scripted_server([{"content": "done from the profile"}])
    path = write(tmp_path, f"""\
model = "openai/file-model"
api_base = "http://127.0.0.1:9/v1"

[profiles.local]
model = "openai/profile-model"
api_base = "{server.api_base}"
verify = false
""")
    ws = tmp_path / "ws"
    ws.mkdir()
    agent = Agent.from_config(config_file=path, profile="local", env={"OPENAI_API_KEY": "x"},
                              cwd=str(ws), session=False)
    result = agent.run("hello")
    assert result.final_message == "done from the profile"
    assert [r["model"] for r in server.requests] == ["profile-model"]
    with pytest.raises(ConfigError, match="unknown profile 'remote'"):
        Agent.from_config(config_file=path, profile="remote", env={})


def test_agent_constructor_points_to_from_config_for_a_profile(tmp_path):
    from baseagent import Agent

    with pytest.raises(ConfigError, match=r"profile: .*Agent\.from_config\(profile=\.\.\.\)"):
        Agent(profile="fast", cwd=str(tmp_path), session=False)


def test_the_config_example_profile_loads(tmp_path, monkeypatch):
    """docs/config.example.toml's parked profile is valid and changes what it says."""
    from helpers import REPO

    monkeypatch.setenv("HOME", str(tmp_path))
    example = REPO / "docs" / "config.example.toml"
    plain = load_settings({}, env={}, config_file=example)
    local = load_settings({}, env={}, config_file=example, profile="local")
    assert (plain.oss, plain.prompt_profile) == (False, "auto")
    assert (local.oss, local.prompt_profile, local.max_iterations) == (True, "compact", 60)

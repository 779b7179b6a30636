"""docs/config.example.toml, loaded through the real loader (config/load.py), so the sample
README links to cannot drift from the settings: it names every key (set, or commented out
with an example), each set key holds its default, each commented example is valid on its
own, and its tool-source tables name every key of theirs and are parked."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from baseagent.config.load import ALIASES, load_settings
from baseagent.config.settings import Settings
from baseagent.config.sources import McpServerConfig, OpenApiAuth, OpenApiConfig
from baseagent.config.specialists import SpecialistConfig
from baseagent.config.toolsets import ToolsetConfig
from helpers import REPO

EXAMPLE = REPO / "docs" / "config.example.toml"
TEXT = EXAMPLE.read_text(encoding="utf-8")
# A commented-out example key: `# key = value` at the start of a line (prose never is).
COMMENTED = re.compile(r"^# ([a-z_]+) = (.*)$", re.MULTILINE)
SET = re.compile(r"^([a-z_]+) = ", re.MULTILINE)
TABLES = ("mcp_servers", "openapi", "toolsets", "specialists")
# The name the file uses for a setting: its alias where the loader has one.
FILE_NAME = {target: alias for alias, target in ALIASES.items()}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    """`~` in the file and the defaults resolve against the same private HOME."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def load(text: str, tmp_path: Path) -> Settings:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings({}, env={}, config_file=path)


def names_in(text: str) -> set[str]:
    return set(SET.findall(text)) | {name for name, _ in COMMENTED.findall(text)}


def top_level(text: str) -> str:
    return text.split("\n[", 1)[0]


def sections(prefix: str) -> str:
    """The text of every table under `prefix` (`[mcp_servers.x]`, `[openapi.y.auth]`...)."""
    parts = re.split(r"^(?=\[)", TEXT, flags=re.MULTILINE)
    return "".join(p for p in parts if p.startswith(f"[{prefix}"))


def test_it_loads_through_the_real_loader_and_changes_no_setting(tmp_path):
    loaded = load(TEXT, tmp_path)
    defaults = Settings()
    for name in Settings.model_fields:
        if name in TABLES:
            continue
        assert getattr(loaded, name) == getattr(defaults, name), \
            f"{FILE_NAME.get(name, name)} in {EXAMPLE.name} is not its default"


def test_it_names_every_setting():
    named = names_in(top_level(TEXT))
    missing = [FILE_NAME.get(name, name) for name in Settings.model_fields
               if name not in TABLES and FILE_NAME.get(name, name) not in named]
    assert not missing, f"{EXAMPLE.name} lacks {missing}"
    unknown = named - {FILE_NAME.get(n, n) for n in Settings.model_fields}
    assert not unknown, f"{EXAMPLE.name} names what is no setting: {sorted(unknown)}"


@pytest.mark.parametrize("line", [m.group(0) for m in COMMENTED.finditer(TEXT)])
def test_each_commented_example_is_valid_alone(tmp_path, line):
    """Uncommented where it stands, each example loads and sets its key."""
    name = COMMENTED.match(line).group(1)
    active = re.sub(r"\s+#.*$", "", line.removeprefix("# "))
    before = load(TEXT, tmp_path)
    after = load(TEXT.replace(line + "\n", active + "\n", 1), tmp_path)
    assert after != before, f"uncommenting {line!r} changed nothing"
    if line in top_level(TEXT):
        target = ALIASES.get(name, name)
        assert getattr(after, target) != getattr(Settings(), target)


@pytest.mark.parametrize("prefix, models", [
    ("mcp_servers", (McpServerConfig,)),
    ("openapi", (OpenApiConfig, OpenApiAuth)),
])
def test_the_tool_source_tables_name_every_key(prefix, models):
    named = names_in(sections(prefix))
    nested = {"auth"}  # a table of its own: [openapi.NAME.auth]
    for model in models:
        missing = sorted(set(model.model_fields) - named - nested)
        assert not missing, f"{EXAMPLE.name}: [{prefix}.*] lacks {missing}"


def test_the_example_sources_are_parked(tmp_path):
    loaded = load(TEXT, tmp_path)
    sources = [*loaded.mcp_servers.values(), *loaded.openapi.values()]
    assert {type(s) for s in sources} == {McpServerConfig, OpenApiConfig}
    assert {s.transport for s in loaded.mcp_servers.values()} == {"stdio", "streamable_http"}
    assert all(source.enabled is False for source in sources)


def test_a_misspelt_key_in_it_is_one_line_naming_the_key(tmp_path):
    """What the file's header promises: the loader refuses an unknown key by name."""
    from baseagent.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^unknown key\(s\) in .*: max_iteration$"):
        load(TEXT.replace("max_iterations = 200", "max_iteration = 200"), tmp_path)


def test_the_commented_specialists_load_and_name_every_key(tmp_path):
    """The specialists are commented out (a declared one is offered to the model);
    uncommented, they load and name every key of a specialist."""
    start = TEXT.index("#  [specialists.")
    end = TEXT.find("\n# --", start)  # up to the next section
    block = TEXT[start:end if end >= 0 else None]
    active = re.sub(r"^#  ?", "", block, flags=re.MULTILINE)
    loaded = load(TEXT + "\n" + active, tmp_path)
    assert set(loaded.specialists) == {"reader", "pet_admin"}
    assert loaded.specialists["pet_admin"].tools == ["pets:admin", "read_file"]
    assert set(SpecialistConfig.model_fields) <= set(SET.findall(active))
    assert load(TEXT, tmp_path).specialists == {}


def test_the_commented_toolset_loads_names_every_key_and_resolves(tmp_path):
    """Uncommented, the sample toolset loads, names every key of a toolset, and each of its
    names means something in the file (the parked sources it names stand for no tool)."""
    from baseagent.compose.tools import check_named_toolsets

    start = TEXT.index("#  [toolsets.")
    end = TEXT.index("\n# --", start)
    active = re.sub(r"^#  ?", "", TEXT[start:end], flags=re.MULTILINE)
    loaded = load(TEXT + "\n" + active, tmp_path)
    assert loaded.toolsets == {"pet_reader": ToolsetConfig(
        description="Reads the code and the pet store.", tools=["read", "pets:pets", "time"])}
    assert set(ToolsetConfig.model_fields) <= set(SET.findall(active))
    check_named_toolsets(loaded)
    assert load(TEXT, tmp_path).toolsets == {}

"""docs/TOOLS.md's configuration examples load through the real loader, and the stdio
servers they start are commands a newcomer has after README's install (no `uvx`: uv is
not a dependency). Whether mcp-server-time then works as a server is tests/sources/test_mcp.py's
business; this holds the documentation to what is installed."""
from __future__ import annotations

import os
import re
import shutil
import sysconfig
from pathlib import Path

import pytest

from baseagent.config.load import load_settings
from helpers import REPO

DOCS = REPO / "docs"


def toml_blocks(path: Path) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL)


def installed(command: str) -> bool:
    """On PATH, or in this environment's scripts directory (where `pip install` puts
    console scripts, on PATH once the environment is activated)."""
    path = os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")])
    return shutil.which(command, path=path) is not None


@pytest.mark.parametrize("doc", ["TOOLS.md", "config.example.toml"])
def test_the_stdio_servers_of_the_examples_are_installed_by_the_test_extra(tmp_path, doc):
    texts = toml_blocks(DOCS / doc) if doc.endswith(".md") else \
        [(DOCS / doc).read_text(encoding="utf-8")]
    commands = []
    for n, text in enumerate(texts):
        config = tmp_path / f"{n}.toml"
        config.write_text(text, encoding="utf-8")
        settings = load_settings({}, env={}, config_file=config)
        commands += [server.command for server in settings.mcp_servers.values()
                     if server.command is not None]
    assert commands, f"{doc} should show a stdio server"
    missing = [c for c in commands if not installed(c)]
    assert not missing, f"{doc} starts {missing}, which README's install does not provide"


def test_the_cli_form_in_tools_md_names_the_same_server():
    text = (DOCS / "TOOLS.md").read_text(encoding="utf-8")
    assert "uvx mcp-server-time" not in text.replace('`command = "uvx"`', "")
    assert 'mcp_servers.time={command="mcp-server-time"' in text

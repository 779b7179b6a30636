"""mkdocs hooks: pages made from the code at build time, so they cannot drift.

- `index.md` is README.md (its `docs/` links made relative to the site);
- `reference/cli.md` is the CLI's own `--help` for the main command and every subcommand
  (typer renders it; the same text `baseagent --help` prints);
- `reference/config.md` lists every setting of `config/settings.py` with its type, default
  and description, group by group (the models the loader validates).

Nothing is written into docs/: the pages are generated files of this build only.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
# The subcommands whose --help the reference shows, in the order a reader meets them.
COMMANDS = [[], ["chat"], ["exec"], ["sessions"], ["sessions", "list"], ["export"],
            ["batch"], ["mcp"], ["toolsets"]]


def _readme() -> str:
    """README as the site's home page: its links into docs/ made relative to the site, and
    other files of the repository (not pages of the site) named instead of linked."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")

    def link(match: re.Match[str]) -> str:
        label, target = match.group(1), match.group(2)
        if re.match(r"[a-z]+://|#", target):
            return match.group(0)
        if target.startswith("docs/"):
            return f"[{label}]({target[5:]})"
        path = target.partition("#")[0]
        return label if label == f"`{path}`" else f"{label} (`{path}`)"

    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", link, text)


def _help(args: list[str]) -> str:
    env = dict(os.environ, COLUMNS="100", TERM="dumb", NO_COLOR="1",
               PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, str(ROOT / "agent.py"), *args, "--help"],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    return done.stdout.rstrip()


def cli_reference() -> str:
    parts = ["# CLI reference\n",
             "Generated from the CLI itself at every docs build (`baseagent ... --help`).\n"]
    for args in COMMANDS:
        title = " ".join(["baseagent", *args])
        parts.append(f"## `{title}`\n\n```text\n{_help(args)}\n```\n")
    return "\n".join(parts)


def config_reference() -> str:
    sys.path.insert(0, str(ROOT / "src"))
    from baseagent.config import settings as s  # noqa: PLC0415 (the hook's own import)

    groups = [s.ModelOptions, s.RetryOptions, s.RunOptions, s.PromptOptions, s.ToolOptions,
              s.DelegationOptions, s.CompactionOptions, s.SandboxOptions, s.SessionOptions,
              s.CliOptions]
    parts = ["# Configuration reference\n",
             "Generated from `src/baseagent/config/settings.py` at every docs build. Each key "
             "goes in `~/.baseagent/config.toml` (or `--config FILE`), as `BASEAGENT_<KEY>` in "
             "the environment, or as a keyword of `baseagent.Agent`; the CLI's own options "
             "(the last table) are refused by the library. `docs/config.example.toml` is a "
             "file to copy.\n"]
    for group in groups:
        doc = (group.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        parts.append(f"## {group.__name__}\n\n{doc}\n\n| key | type | default | meaning |\n"
                     "|---|---|---|---|")
        for name, field in group.model_fields.items():
            if name not in group.__annotations__:
                continue  # inherited: listed with its own group
            kind = str(field.annotation).replace("typing.", "").replace("|", "\\|")
            kind = re.sub(r"<class '([\w.]+)'>", r"\1", kind)
            default = "computed" if field.default_factory is not None else repr(field.default)
            meaning = (field.description or "").replace("|", "\\|").replace("\n", " ")
            parts.append(f"| `{name}` | `{kind}` | `{default}` | {meaning} |")
        parts.append("")
    return "\n".join(parts)


def on_files(files, config):  # noqa: ANN001 (mkdocs' hook signature)
    files.append(File.generated(config, "index.md", content=_readme()))
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    files.append(File.generated(config, "reference/config.md", content=config_reference()))
    return files

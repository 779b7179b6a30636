"""The environment context message: where the agent is, and the repository's AGENTS.md.

Built once per run and sent as the first user message, so it stays part of the stable
request prefix (the date is here, not in the system prompt, for the same reason).
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path

AGENTS_MD_MAX_BYTES = 32 * 1024  # Codex caps the joined AGENTS.md text at 32 KiB
LISTING_MAX_ENTRIES = 40  # a shallow look at the workspace; the model lists more itself
GIT_TIMEOUT_S = 3  # a wedged git (network filesystem, lock) must not delay the first request
_SKIP = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache",
         ".pytest_cache"}


def find_git_root(cwd: Path) -> Path | None:
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return None


def collect_agents_md(cwd: Path) -> str:
    """AGENTS.override.md else AGENTS.md from the git root down to cwd, joined and capped."""
    root = find_git_root(cwd)
    chain = [cwd] if root is None else [cwd, *cwd.parents][: len(cwd.relative_to(root).parts) + 1]
    texts: list[str] = []
    for directory in reversed(chain):
        for name in ("AGENTS.override.md", "AGENTS.md"):
            candidate = directory / name
            if candidate.is_file():
                try:
                    text = candidate.read_text(encoding="utf-8", errors="replace").strip()
                except OSError:
                    text = ""
                if text:
                    texts.append(text)
                break
    joined = "\n\n".join(texts)
    encoded = joined.encode("utf-8")
    if len(encoded) > AGENTS_MD_MAX_BYTES:
        joined = encoded[:AGENTS_MD_MAX_BYTES].decode("utf-8", errors="ignore")
    return joined


def _git_status(cwd: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", "status", "--short", "--branch"], cwd=cwd, capture_output=True,
            text=True, timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL, errors="replace",
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    if proc.returncode != 0:
        return "not a git repository"
    lines = proc.stdout.strip().splitlines()
    if len(lines) > 21:
        lines = lines[:21] + [f"... and {len(lines) - 21} more changed paths"]
    return "\n".join(lines) or "clean"


def _listing(cwd: Path) -> str:
    try:
        entries = sorted(os.scandir(cwd), key=lambda e: e.name)
    except OSError as exc:
        return f"(cannot list: {exc.strerror})"
    names = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
             for e in entries if e.name not in _SKIP]
    more = len(names) - LISTING_MAX_ENTRIES
    shown = names[:LISTING_MAX_ENTRIES]
    if more > 0:
        shown.append(f"... {more} more")
    return "\n".join(shown) or "(empty)"


def environment_context(cwd: Path, shell: str = "bash", today: _dt.date | None = None) -> str:
    """`shell` is the user's login shell as the entry point read it ($SHELL)."""
    today = today or _dt.date.today()
    parts = [
        "<environment_context>",
        f"  <cwd>{cwd}</cwd>",
        f"  <os>{platform.system()} {platform.release()}</os>",
        f"  <shell>{Path(shell).name}</shell>",
        f"  <date>{today.isoformat()}</date>",
        f"  <git_status>\n{_git_status(cwd)}\n  </git_status>",
        f"  <workspace_listing>\n{_listing(cwd)}\n  </workspace_listing>",
        "</environment_context>",
    ]
    text = "\n".join(parts)
    agents = collect_agents_md(cwd)
    if agents:
        text += f"\n\n# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{agents}\n</INSTRUCTIONS>"
    return text

"""The environment context message: where the agent is, and the repository's AGENTS.md.

Built once per run and sent as the first user message, so it stays part of the stable
request prefix (the date is here, not in the system prompt, for the same reason).
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import stat
from collections.abc import Mapping
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
                text = read_instructions(candidate, AGENTS_MD_MAX_BYTES).strip()
                if text:
                    texts.append(text)
                break
    joined = "\n\n".join(texts)
    encoded = joined.encode("utf-8")
    if len(encoded) > AGENTS_MD_MAX_BYTES:
        joined = encoded[:AGENTS_MD_MAX_BYTES].decode("utf-8", errors="ignore")
    return joined


# Pseudo-file systems: their "files" are the kernel's view of processes and devices (an
# AGENTS.md linked to /proc/self/environ would hand the agent's environment to the model).
_PSEUDO_ROOTS = ("/proc/", "/sys/", "/dev/")


def read_instructions(path: Path, max_bytes: int) -> str:
    """At most `max_bytes` of an instruction file, if it is a regular file with content on a
    real file system; "" otherwise. Bounded, so a huge (or sparse) file costs nothing."""
    real = os.path.realpath(path)
    if real.startswith(_PSEUDO_ROOTS):
        return ""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        st = os.fstat(fd)
        # Kernel-generated files report size 0; an empty file has nothing to say either.
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return ""
        chunks: list[bytes] = []
        left = max_bytes
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="ignore" if left <= 0 else "replace")


def _git_status(cwd: Path, env: Mapping[str, str]) -> str:
    """`git status`, run confined and with the repository's program-naming settings off
    (tools/confined.py): the workspace's configuration is the model's to write."""
    from baseagent.tools.confined import run_git

    proc = run_git(["status", "--short", "--branch"], cwd=cwd, env=env, timeout=GIT_TIMEOUT_S)
    if proc is None:
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


def environment_context(cwd: Path, shell: str = "bash", today: _dt.date | None = None,
                        env: Mapping[str, str] | None = None) -> str:
    """`shell` is the user's login shell as the entry point read it ($SHELL); `env` the
    environment the run's commands get (git runs with it: no secrets)."""
    today = today or _dt.date.today()
    parts = [
        "<environment_context>",
        f"  <cwd>{cwd}</cwd>",
        f"  <os>{platform.system()} {platform.release()}</os>",
        f"  <shell>{Path(shell).name}</shell>",
        f"  <date>{today.isoformat()}</date>",
        f"  <git_status>\n{_git_status(cwd, env or {})}\n  </git_status>",
        f"  <workspace_listing>\n{_listing(cwd)}\n  </workspace_listing>",
        "</environment_context>",
    ]
    text = "\n".join(parts)
    agents = collect_agents_md(cwd)
    if agents:
        text += f"\n\n# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{agents}\n</INSTRUCTIONS>"
    return text

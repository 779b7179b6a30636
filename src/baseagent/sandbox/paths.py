"""Which paths inside the writable roots stay read-only: one definition for every writer.

The commands' mount namespace (policy.Policy.supervisor_args: a read-only bind mount over
each one that exists) and the file tools (tools/paths.py: write_file, apply_patch, and so
the loop's prose writes, which are write_file calls) read the same list, so no writer can
put a hook or a `core.fsmonitor` where the user's next `git status` runs it.

What is protected (Codex's rule, taken a little further for the file tools):
- `NAME` directly inside every writable root, for each name in PROTECTED_NAMES (`.git`),
  whether it exists or not: the file tools may not make a repository's metadata either (a
  command may, with `git init`: a mount needs something to cover);
- the `.git` of the repository the workspace is in (the workspace may be a subdirectory);
- for a `.git` file (a worktree, a submodule), the directory it names and that
  directory's common dir; for a `.git` symlink, where it leads.

Paths are compared resolved (symlinks followed), so a symlink in the workspace that points
into `.git` is refused like `.git` itself.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

# Inside a writable root, what stays read-only for every writer: the repository's metadata,
# whose hooks and config the agent's own git and the user's would run.
PROTECTED_NAMES = (".git",)
# A `.git` file longer than this is not a `gitdir:` pointer (read no further).
MAX_GITFILE_BYTES = 4096


def protected_paths(roots: Iterable[Path], git_root: Path | None) -> list[Path]:
    """Every protected path for these writable roots (as they are now) and the workspace's
    repository root, resolved, each once, in a stable order. Paths that do not exist are
    included (the file tools refuse to create them); see the module docstring."""
    found: list[Path] = []
    candidates = [Path(root) / name for root in roots for name in PROTECTED_NAMES]
    if git_root is not None:
        candidates.append(Path(git_root) / ".git")
    for candidate in candidates:
        for path in [candidate, *git_paths(candidate)]:
            real = Path(os.path.realpath(path))
            if real not in found:
                found.append(real)
    return found


def git_paths(dotgit: Path) -> list[Path]:
    """What makes up the repository `dotgit` names: the directory itself; for a `.git` file
    (`gitdir: DIR`), the file, DIR and DIR's common dir (a worktree's main repository); for
    a symlink, where it leads. Nothing when it does not exist."""
    try:
        st = os.lstat(dotgit)
    except OSError:
        return []
    if stat.S_ISDIR(st.st_mode):
        return [dotgit]
    if stat.S_ISLNK(st.st_mode):
        real = Path(os.path.realpath(dotgit))
        return [real] if real.is_dir() else []
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_GITFILE_BYTES:
        return []
    try:
        text = dotgit.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [dotgit]
    paths = [dotgit]
    if text.startswith("gitdir:"):
        gitdir = Path(os.path.realpath(dotgit.parent / text[7:].strip()))
        paths.append(gitdir)
        try:
            common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
            paths.append(Path(os.path.realpath(gitdir / common)))
        except OSError:
            pass
    return paths


def within(path: Path, directory: Path) -> bool:
    """Whether `path` is `directory` or lies beneath it (both as given: resolve first)."""
    return path == directory or directory in path.parents


def protecting(real: Path, protected: Sequence[Path]) -> Path | None:
    """The protected path that `real` (a resolved path) is, or lies beneath; None if none."""
    return next((p for p in protected if within(real, p)), None)

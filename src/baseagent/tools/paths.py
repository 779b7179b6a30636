"""Path resolution and sandbox checks shared by every file tool.

One place decides whether a path may be written, so write_file and apply_patch (and the
loop's prose writes, which are write_file calls) cannot drift apart on what
`workspace-write` and `read-only` mean. What stays read-only inside the writable roots
(`.git`) is defined once, in sandbox/paths.py, for these tools and the commands' mounts.
Paths are checked resolved (symlinks followed), and the write itself goes to the directory
that was checked (`held_parent`), so a symlink swapped in meanwhile cannot redirect it.
"""
from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from baseagent.sandbox.paths import protecting, within
from baseagent.tools.approval import ask_to_write
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError

# Why the protected paths stay read-only, as the model reads it.
PROTECTED_WHY = ("the repository's metadata, whose config and hooks name programs git runs "
                 "(the user's next `git status` would run them)")


def writable_roots(ctx: ToolContext) -> list[Path]:
    """Where workspace-write may write: the workspace, its extra roots and the temp dirs
    (the same list the kernel enforces, sandbox/policy.py)."""
    return list(ctx.policy().writable)


def check_path(path: str) -> None:
    """Refuse what no system call can take, with the reason, before anything uses it."""
    if not path:
        raise ToolError("path must not be empty")
    if "\0" in path:
        raise ToolError(f"path {path!r} contains a NUL byte")


def resolve_read(ctx: ToolContext, path: str) -> Path:
    """Reads are allowed anywhere in every mode: the sandbox protects the disk, not secrets."""
    check_path(path)
    return ctx.resolve(path)


def resolve_write(ctx: ToolContext, path: str) -> Path:
    """Resolve a path the tool is about to create, change or delete, enforcing the sandbox:
    read-only refuses every write; workspace-write refuses what resolves (symlinks
    followed) outside the writable roots or into a protected path (`.git`)."""
    check_path(path)
    target = ctx.resolve(path)
    if ctx.sandbox == "read-only":
        raise ToolError(f"sandbox is read-only: refusing to write {path}")
    if ctx.sandbox == "workspace-write":
        policy = ctx.policy()
        real = Path(os.path.realpath(target))
        if not policy.allows_write(target):
            raise ToolError(
                f"sandbox is workspace-write: {path} resolves to {real}, "
                f"outside the workspace {ctx.cwd} and its writable roots"
            )
        guarded = protecting(real, policy.protected_paths())
        if guarded is not None:
            via = f" (it resolves to {real})" if real != Path(os.path.normpath(target)) else ""
            raise ToolError(
                f"sandbox is workspace-write: refusing to write {path}{via}: {guarded} stays "
                f"read-only, for commands and file tools alike: it is {PROTECTED_WHY}. "
                "Leave it to the user."
            )
    return target


def confirm_writes(ctx: ToolContext, tool: str, targets: Sequence[Path]) -> list[Path]:
    """Under approval policy `untrusted`: writes (paths resolved, symlinks followed) that
    leave the workspace or go into a protected path wait for the user's yes, one question
    for the call (Codex asks before a patch outside the workspace). Returns the resolved
    paths the user allowed; ToolError when declined or when nobody can answer. Other
    policies ask nothing (the sandbox mode decides)."""
    if not _asks(ctx):
        return []
    reasons: list[str] = []
    asked: list[Path] = []
    for target in targets:
        real = Path(os.path.realpath(target))
        reason = _question(ctx, real)
        if reason is not None and real not in asked:
            reasons.append(reason)
            asked.append(real)
    if not asked:
        return []
    assert ctx.approvals is not None
    what = f"{tool} " + " ".join(shlex.quote(str(p)) for p in asked)
    verdict = ask_to_write(ctx.approvals, what, str(ctx.cwd), "; ".join(reasons))
    if not verdict.run:
        told = f" Their note: {verdict.note}" if verdict.note else ""
        raise ToolError(
            f"approval policy untrusted: this write needs the user's yes and did not get it "
            f"({'; '.join(reasons)}).{told} Nothing was written. Do not try it another way; "
            "keep to the workspace, or ask the user in your answer."
        )
    return asked


def recheck(ctx: ToolContext, path: Path, allowed: Sequence[Path]) -> None:
    """Just before a write or a delete of `path` (the name as planned): the same checks on
    where it is now (its directory resolved again), so that a symlink swapped in after the
    check cannot carry the change into .git or, under `untrusted`, past the question.
    `allowed`: what the user said yes to (confirm_writes)."""
    now = Path(os.path.realpath(path.parent)) / path.name
    resolve_write(ctx, str(now))
    real = Path(os.path.realpath(now))
    if _asks(ctx) and real not in allowed and _question(ctx, real) is not None:
        raise ToolError(f"refusing to change {path}: it resolves to {real} now, not where "
                        "it was checked")


def _asks(ctx: ToolContext) -> bool:
    return ctx.approvals is not None and ctx.approvals.policy == "untrusted"


def _question(ctx: ToolContext, real: Path) -> str | None:
    """Why a write to `real` (resolved) waits for a yes under `untrusted`, or None."""
    guarded = protecting(real, ctx.policy().protected_paths())
    if guarded is not None:
        return f"{real} is in {guarded}, {PROTECTED_WHY}"
    workspace = Path(os.path.realpath(ctx.cwd))
    if not within(real, workspace):
        return f"{real} is outside the workspace {workspace}"
    return None


@contextmanager
def held_parent(real: Path) -> Iterator[Path]:
    """The directory `real` (a resolved path, already checked) goes in, created if missing
    and held open while the caller writes: yields the path to write `real`'s name through
    (`/proc/self/fd/N/NAME`), so a directory renamed or a symlink swapped in since the
    check cannot carry the write elsewhere. ToolError when the directory is no longer
    where the check saw it. Where /proc is missing, `real` itself."""
    parent = real.parent
    if os.path.realpath(parent) != str(parent):  # before mkdir makes anything there
        raise ToolError(f"refusing to write {real}: its directory changed since the check "
                        f"(it now resolves to {os.path.realpath(parent)}); nothing was "
                        "written")
    parent.mkdir(parents=True, exist_ok=True)
    o_path = getattr(os, "O_PATH", 0)  # Linux's; elsewhere (macOS) no /proc to write through
    if not o_path or not os.path.isdir("/proc/self/fd"):
        yield real  # the check before stands alone
        return
    try:
        fd = os.open(parent, o_path | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ToolError(f"cannot open {parent}: {exc.strerror or exc}") from None
    try:
        try:
            now = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            yield real  # /proc does not show it: the check before stands alone
            return
        if now != parent:
            raise ToolError(f"refusing to write {real}: its directory changed while it was "
                            f"being written (it is now {now}); nothing was written")
        yield Path(f"/proc/self/fd/{fd}") / real.name
    finally:
        os.close(fd)


def display_path(ctx: ToolContext, path: Path) -> str:
    """Workspace-relative when inside it (what the model wrote), absolute otherwise."""
    try:
        return str(path.relative_to(ctx.cwd))
    except ValueError:
        return str(path)


def event_path(ctx: ToolContext, path: str | Path) -> str:
    """The absolute path an event item shows for a changed file, as Codex's file_change
    items do: resolved against the workspace, `..` folded, symlinks left as named."""
    return os.path.normpath(ctx.resolve(str(path)))


def stat_regular(path: Path, on_directory: str) -> os.stat_result:
    """The stat of a regular file the model asked to read, or ToolError saying why not
    (`on_directory`: what to say when it is a directory). A FIFO or a device would block or
    never end, so only regular files pass."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolError(f"file not found: {path}") from None
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{path} is a directory{on_directory}")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{path} is not a regular file")
    return st

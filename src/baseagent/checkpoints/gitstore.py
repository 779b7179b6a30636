"""Snapshots of a git repository's working tree as hidden commits (Codex's ghost commits).

A snapshot is `git add -A` into a temporary index (GIT_INDEX_FILE, seeded with a copy of
the user's index so that unchanged files are not hashed again), `write-tree`, and a
commit of that tree kept reachable under `refs/baseagent/checkpoints/<thread>` (each
snapshot's parent is the previous one, so one ref keeps a thread's snapshots from git's
garbage collection). The user's index, HEAD, branches and stash are never touched.
Ignored files are not recorded (as with git itself); submodules and embedded repositories
are left out.

Every git command runs with the program-naming settings of the repository overridden
(tools/confined.py `git_argv`: no hooks, no fsmonitor, no filters, no pager) and with
`--git-dir`/`--work-tree` given, so neither the repository's configuration nor the
environment can point it at another tree. Git writes objects here (so it is not the
read-only confined run of tools/confined.py), but runs nothing of the repository's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from baseagent.checkpoints.manifest import Entry, Manifest, safe_path
from baseagent.tools.confined import GIT_ENV, git_argv

# How long one git command may take (a large repository's first hash of new files).
GIT_TIMEOUT_S = 120.0
# Settings that decide what a snapshot records, held to the file system's truth whatever
# the repository says; and no automatic maintenance after our writes.
SNAPSHOT_SETTINGS = ("core.symlinks=true", "core.fileMode=true", "gc.auto=0",
                     "maintenance.auto=false", "advice.addEmbeddedRepo=false",
                     "core.splitIndex=false", "index.sparse=false", "commit.gpgSign=false",
                     "gpg.program=false")
# Who the hidden commits are by (no user identity is read or needed).
IDENTITY = {"GIT_AUTHOR_NAME": "baseagent", "GIT_AUTHOR_EMAIL": "baseagent@localhost",
            "GIT_COMMITTER_NAME": "baseagent", "GIT_COMMITTER_EMAIL": "baseagent@localhost"}
REF_PREFIX = "refs/baseagent/checkpoints/"
MODES = {"100644": "file", "100755": "exec", "120000": "link"}


class GitError(Exception):
    """A git command failed (its message says which and why)."""


class TooBig(Exception):
    """The workspace holds more than a checkpoint takes (the message says how much)."""


def find_repository(cwd: Path, env: Mapping[str, str]) -> tuple[Path, Path] | None:
    """(work tree root, git dir) of the repository `cwd` is in, or None: not in one, git
    missing, or a repository whose work tree does not hold `cwd` (core.worktree set
    elsewhere)."""
    if shutil.which("git", path=env.get("PATH")) is None:
        return None
    probe = cwd
    while not (probe / ".git").exists():  # rev-parse would read any parent's config first
        if probe.parent == probe:
            return None
        probe = probe.parent
    try:
        out = _run(["rev-parse", "--show-toplevel", "--absolute-git-dir"], cwd=cwd, env=env,
                   filters=()).decode("utf-8", "surrogateescape").splitlines()
    except GitError:
        return None
    if len(out) != 2:
        return None
    root, git_dir = Path(out[0]).resolve(), Path(out[1]).resolve()
    if root != probe.resolve() or not (cwd.resolve() == root or root in cwd.resolve().parents):
        return None
    return root, git_dir


class GitStore:
    """One thread's snapshots of the repository at `root`."""

    kind = "git"

    def __init__(self, root: Path, git_dir: Path, thread_id: str, env: Mapping[str, str],
                 max_files: int, max_bytes: int) -> None:
        self.root = root
        self.git_dir = git_dir
        self.ref = REF_PREFIX + thread_id
        self._env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._filters: list[str] | None = None

    # -- snapshots -------------------------------------------------------------------------

    def snapshot(self, keep: bool = True) -> dict[str, str]:
        """The working tree now: {"id": tree, "commit": ...} (a commit only when `keep`,
        then reachable from the thread's ref). TooBig when the untracked files exceed the
        bounds; GitError when git fails."""
        self._check_layout()
        scratch = Path(tempfile.mkdtemp(prefix="baseagent-index-"))
        try:
            index = scratch / "index"
            real = self._git_path("index")
            if real.is_file():
                shutil.copyfile(real, index)
            env = {"GIT_INDEX_FILE": str(index)}
            self._check_size(env)
            self.git(["add", "-A", "--ignore-errors", "--", "."], env=env, ok=(0, 1))
            tree = self.git(["write-tree"], env=env).decode().strip()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        snap = {"id": tree}
        if keep:
            parent = self._resolve(self.ref)
            args = ["commit-tree", "--no-gpg-sign", tree, "-m", "baseagent checkpoint"]
            if parent:
                args += ["-p", parent]
            commit = self.git(args, env=IDENTITY).decode().strip()
            self.git(["update-ref", "-m", "baseagent checkpoint", self.ref, commit])
            snap["commit"] = commit
        return snap

    def manifest(self, snap: Mapping[str, str]) -> Manifest:
        out = self.git(["ls-tree", "-r", "-z", "--full-tree", snap["id"]])
        files: Manifest = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            mode, _type, oid = meta.decode().split()
            path = raw_path.decode("utf-8", "surrogateescape")
            if mode in MODES and safe_path(path):  # 160000: a submodule, left out
                files[path] = Entry(MODES[mode], oid)  # type: ignore[arg-type]
        return files

    def head(self) -> str | None:
        return self._resolve("HEAD")

    # -- contents --------------------------------------------------------------------------

    def contents(self, oids: Sequence[str]) -> dict[str, bytes]:
        """The stored bytes of these objects (as the repository holds them)."""
        wanted = list(dict.fromkeys(oids))
        if not wanted:
            return {}
        out = self.git(["cat-file", "--batch"], input="".join(f"{o}\n" for o in wanted).encode())
        found: dict[str, bytes] = {}
        at = 0
        for oid in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            at = end + 1
            if len(header) < 3 or header[1] == b"missing":
                continue
            size = int(header[2])
            found[oid] = out[at:at + size]
            at += size + 1
        return found

    def checkout_bytes(self, path: str, entry: Entry) -> bytes:
        """What a checkout writes at `path` for this entry: the stored bytes with the
        repository's line-ending conversion (no filter program runs)."""
        if entry.kind == "link":
            return self.contents([entry.oid])[entry.oid]
        return self.git(["cat-file", "--filters", f"--path={path}", entry.oid])

    # -- git -------------------------------------------------------------------------------

    def git(self, args: list[str], *, env: Mapping[str, str] | None = None,
            input: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:  # noqa: A002
        if self._filters is None:
            self._filters = self._list_filters()
        return _run(["--git-dir", str(self.git_dir), "--work-tree", str(self.root), *args],
                    cwd=self.root, env={**self._env, **(env or {})}, filters=self._filters,
                    input=input, ok=ok)

    def _list_filters(self) -> list[str]:
        try:
            out = _run(["--git-dir", str(self.git_dir), "config", "--name-only",
                        "--get-regexp", r"^filter\."], cwd=self.root, env=self._env,
                       filters=(), ok=(0, 1))
        except GitError:
            return []
        names: list[str] = []
        for key in out.decode("utf-8", "replace").splitlines():
            name = key.strip()[len("filter."):].rpartition(".")[0]
            if name and name not in names:
                names.append(name)
        return names

    def _git_path(self, name: str) -> Path:
        out = self.git(["rev-parse", "--git-path", name]).decode("utf-8", "surrogateescape")
        path = Path(out.strip())
        return path if path.is_absolute() else self.root / path

    def _resolve(self, name: str) -> str | None:
        out = self.git(["rev-parse", "-q", "--verify", f"{name}^{{commit}}"], ok=(0, 1))
        return out.decode().strip() or None

    def _check_layout(self) -> None:
        """GitError when a directory git writes into here is a symlink: the agent writes
        outside any sandbox, and a repository the model made could lead it elsewhere."""
        objects = self.git_dir / "objects"
        places = [self.git_dir, objects, self.git_dir / "refs",
                  *(self.git_dir / "refs" / "baseagent" / p for p in ("", "checkpoints"))]
        try:
            places += [objects / name for name in os.listdir(objects) if len(name) == 2]
        except OSError:
            pass
        for place in places:
            if os.path.islink(place):
                raise GitError(f"{place} is a symbolic link: no checkpoint is written "
                               "through it")

    def _check_size(self, env: Mapping[str, str]) -> None:
        """TooBig when the files git would hash anew (untracked, not ignored) are more
        than the bounds: a checkpoint of a tree of build outputs is not one to keep."""
        out = self.git(["ls-files", "-z", "--others", "--exclude-standard"], env=env)
        count = total = 0
        for raw in out.split(b"\0"):
            if not raw:
                continue
            count += 1
            try:
                total += os.lstat(self.root / os.fsdecode(raw)).st_size
            except OSError:
                continue
            if count > self.max_files or total > self.max_bytes:
                raise TooBig(too_big(count, total, self.max_files, self.max_bytes,
                                     "untracked files (not ignored)"))


def too_big(count: int, total: int, max_files: int, max_bytes: int, what: str) -> str:
    over = f"more than {max_files:,} {what}" if count > max_files \
        else f"more than {max_bytes // (1 << 20):,} MiB of {what}"
    return f"the workspace has {over}"


def _run(args: list[str], *, cwd: Path, env: Mapping[str, str], filters: Sequence[str],
         input: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:  # noqa: A002
    argv = git_argv(args, filters)
    argv[1:1] = [part for setting in SNAPSHOT_SETTINGS for part in ("-c", setting)]
    try:
        proc = subprocess.run(argv, cwd=cwd, env={**env, **GIT_ENV}, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0] if args else ''}: {exc}") from None
    if proc.returncode not in ok:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {' '.join(a for a in args if not a.startswith('/'))[:80]} "
                       f"failed: {detail[-1] if detail else f'exit {proc.returncode}'}")
    return proc.stdout

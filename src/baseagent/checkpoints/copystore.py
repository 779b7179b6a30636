"""Snapshots of a workspace that is not a git repository: copies in the session's directory.

Each file's bytes are kept once, by their SHA-256 (`objects/`), and a snapshot is a
manifest of paths (`snapshots/<id>.json`, its id the hash of its content, so two
snapshots of the same tree have the same id). A file unchanged since the last snapshot
(same size, mtime, ctime and inode) is not read again. Directories named in `SKIP_DIRS`
(virtual environments, dependency and cache trees) are neither recorded nor restored.
Everything is private to the user (0700 directories, 0600 files): a workspace's `.env`
is copied too.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from baseagent.checkpoints.gitstore import TooBig, too_big
from baseagent.checkpoints.manifest import Entry, Manifest, safe_path
from baseagent.fsutil import atomic_write

# Trees that are rebuilt, not written by hand: never part of a checkpoint.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox"})
CHUNK = 1 << 20


class CopyStore:
    """One thread's snapshots of the directory `root`, kept under `directory`."""

    kind = "copy"

    def __init__(self, root: Path, directory: Path, max_files: int, max_bytes: int) -> None:
        self.root = root
        self.directory = directory
        self.max_files = max_files
        self.max_bytes = max_bytes
        # path → (size, mtime_ns, ctime_ns, inode, digest) of files already hashed.
        self._seen: dict[str, tuple[int, int, int, int, str]] = {}
        # The last snapshot taken without keeping it (its manifest, for the comparison).
        self._unsaved: tuple[str, Manifest] | None = None

    def snapshot(self, keep: bool = True) -> dict[str, str]:
        """The directory now: {"id": ...}; its files' bytes are stored when `keep`. TooBig
        past the bounds."""
        files = self._scan()
        manifest: Manifest = {}
        for rel, (kind, st) in files.items():
            digest = self._digest(rel, kind, st, keep)
            if digest is not None:
                manifest[rel] = Entry(kind, digest)  # type: ignore[arg-type]
        text = json.dumps({p: [e.kind, e.oid] for p, e in sorted(manifest.items())},
                          separators=(",", ":"))
        snap_id = hashlib.sha256(text.encode()).hexdigest()
        if keep:
            path = self.directory / "snapshots" / f"{snap_id}.json"
            if not path.exists():
                private_dir(path.parent)
                atomic_write(path, text.encode(), 0o600)
        else:
            self._unsaved = (snap_id, manifest)
        return {"id": snap_id}

    def manifest(self, snap: Mapping[str, str]) -> Manifest:
        unsaved = self._unsaved
        if unsaved is not None and unsaved[0] == snap["id"]:
            return dict(unsaved[1])
        data = json.loads((self.directory / "snapshots" / f"{snap['id']}.json").read_bytes())
        return {p: Entry(k, o) for p, (k, o) in data.items() if safe_path(p)}

    def head(self) -> str | None:
        return None

    def contents(self, oids: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for oid in dict.fromkeys(oids):
            try:
                found[oid] = self._object(oid).read_bytes()
            except OSError:
                continue
        return found

    def checkout_bytes(self, path: str, entry: Entry) -> bytes:
        return self._object(entry.oid).read_bytes()

    # -- internals -------------------------------------------------------------------------

    def _object(self, oid: str) -> Path:
        if len(oid) != 64 or not all(c in "0123456789abcdef" for c in oid):
            raise OSError(f"not an object id: {oid!r}")
        return self.directory / "objects" / oid[:2] / oid[2:]

    def _scan(self) -> dict[str, tuple[str, os.stat_result]]:
        """Every file and symlink under the root (not following links), bounded."""
        found: dict[str, tuple[str, os.stat_result]] = {}
        total = 0
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                entries = list(os.scandir(self.root / rel_dir if rel_dir else self.root))
            except OSError:
                continue
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if entry.name not in SKIP_DIRS:
                        stack.append(rel)
                    continue
                if stat.S_ISLNK(st.st_mode):
                    kind = "link"
                elif stat.S_ISREG(st.st_mode):
                    kind = "exec" if st.st_mode & 0o100 else "file"
                    total += st.st_size
                else:
                    continue  # sockets, FIFOs, devices: nothing to keep
                if not safe_path(rel):
                    continue
                found[rel] = (kind, st)
                if len(found) > self.max_files or total > self.max_bytes:
                    raise TooBig(too_big(len(found), total, self.max_files, self.max_bytes,
                                         "files"))
        return found

    def _digest(self, rel: str, kind: str, st: os.stat_result, keep: bool) -> str | None:
        key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        seen = self._seen.get(rel)
        if seen is not None and seen[:4] == key and kind != "link" \
                and (not keep or self._object(seen[4]).exists()):
            return seen[4]
        path = self.root / rel
        try:
            if kind == "link":
                data = os.fsencode(os.readlink(path))
            else:
                data = _read_file(path)
        except OSError:
            return None  # gone or unreadable since the scan: not recorded
        digest = hashlib.sha256(data).hexdigest()
        if keep:
            target = self._object(digest)
            if not target.exists():
                private_dir(target.parent)
                _put(target, data)
        if kind != "link":
            self._seen[rel] = (*key, digest)
        return digest


def _read_file(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        return handle.read()


def _put(target: Path, data: bytes) -> None:
    """Store an object: whole or not at all (a temporary name, then a rename), without the
    fsync of fsutil.atomic_write (hundreds of files on a first checkpoint; an object lost
    to a power cut only costs that checkpoint)."""
    temp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW,
                 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def private_dir(path: Path) -> None:
    """`path` and the parents it lacks, made private to the user (0700 each)."""
    if path.is_dir():
        return
    if not path.parent.is_dir():
        private_dir(path.parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass

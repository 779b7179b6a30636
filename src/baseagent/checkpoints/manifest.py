"""What a snapshot of the workspace is, whichever store holds it: a manifest of the files
(path → kind and content id), and the changes between two manifests.

Directories are not recorded (as in git): a file's path implies its parents. A path in a
manifest is relative to the store's root, with `/` separators, and never leaves it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["file", "exec", "link"]
ChangeKind = Literal["add", "delete", "update"]


@dataclass(frozen=True)
class Entry:
    """One file of a snapshot: a regular file (`exec`: with the execute bit) or a symbolic
    link (its content is the target), and the id of its content in the store."""

    kind: Kind
    oid: str


Manifest = dict[str, Entry]


@dataclass(frozen=True)
class Change:
    """A path that differs between two snapshots (`add`: only in the later one)."""

    path: str
    kind: ChangeKind
    before: Entry | None
    after: Entry | None


def changes(before: Manifest, after: Manifest) -> list[Change]:
    """What differs from `before` to `after`, by path."""
    found: list[Change] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        kind: ChangeKind = "add" if old is None else "delete" if new is None else "update"
        found.append(Change(path, kind, old, new))
    return found


def safe_path(path: str) -> bool:
    """Whether a manifest path stays inside the root and out of a repository's metadata
    (a manifest read from a repository is data the model may have shaped)."""
    if not path or path.startswith("/") or "\0" in path:
        return False
    parts = path.split("/")
    return all(p not in ("", ".", "..") for p in parts) and ".git" not in parts

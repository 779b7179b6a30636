"""What a line of the session attaches: `@path` mentions of workspace files, and image
files dropped or pasted onto the line (a terminal pastes their path).

`@src/app.py` sends the file's text with the instruction (bounded; a file outside the
workspace, a binary or an unreadable one is named, never sent); `@shot.png`, or a pasted
`/home/me/Desktop/shot.png` (quoted or with escaped spaces, as terminals drop them), goes
with the instruction as an image for vision models. `MentionCompleter` completes `@` words
from the workspace as the person types (prompt_toolkit).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

# core/turn_input.IMAGE_TYPES by suffix: the images a model may be sent.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
# How much of one mentioned file, and of all of them, goes with an instruction.
MAX_FILE_BYTES = 100_000
MAX_TOTAL_BYTES = 400_000
# The completer looks at no more than this many entries of the workspace per keystroke.
MAX_SCAN = 5_000
MAX_COMPLETIONS = 50
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                          ".mypy_cache", ".pytest_cache", "dist", "build"})

MENTION = re.compile(r"(?<!\S)@(\S+)")
# A dropped path: quoted, or a word with backslash-escaped spaces.
DROPPED = re.compile(r"'([^']+)'|\"([^\"]+)\"|((?:\\ |\S)+)")


@dataclass
class Attached:
    text: str
    images: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one line each, for the person


def attach(line: str, workspace: Path) -> Attached:
    """The instruction this line sends (its text, then the mentioned files' text) and the
    images it attaches."""
    root = workspace.resolve()
    images: list[Path] = []
    notes: list[str] = []
    blocks: list[str] = []
    total = 0
    seen: set[Path] = set()
    for match in MENTION.finditer(line):
        name = match.group(1).rstrip(".,;:!?)")
        path = (root / name).resolve()
        if path in seen:
            continue
        if not path.is_relative_to(root):
            notes.append(f"@{name}: outside the workspace, not attached")
            continue
        if not path.is_file():
            continue  # an @word that names no file: left as text (an email, a handle)
        seen.add(path)
        if path.suffix.lower() in IMAGE_SUFFIXES:
            images.append(path)
            notes.append(f"attached @{name} (image)")
            continue
        block, why = _file_block(name, path, MAX_TOTAL_BYTES - total)
        if block is None:
            notes.append(f"@{name}: {why}, not attached")
            continue
        total += len(block)
        blocks.append(block)
        notes.append(f"attached @{name} ({why})")
    for path in _dropped_images(line, root):
        if path not in seen:
            seen.add(path)
            images.append(path)
            notes.append(f"attached {path.name} (image)")
    text = line
    if blocks:
        text = line.rstrip() + "\n\nThe files I mentioned, as they are now:\n\n" + \
            "\n\n".join(blocks)
    return Attached(text, images, notes)


def _file_block(name: str, path: Path, room: int) -> tuple[str | None, str]:
    try:
        size = path.stat().st_size
        if size > min(MAX_FILE_BYTES, room):
            return None, f"{size:,} bytes is too large to attach (the agent can read it)"
        data = path.read_bytes()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    if b"\0" in data:
        return None, "a binary file"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    return f"<file path=\"{name}\">\n{text}{'' if text.endswith(chr(10)) else chr(10)}</file>", \
        f"{len(data):,} bytes"


def _dropped_images(line: str, root: Path) -> Iterator[Path]:
    """Image files named by a word of the line as an absolute path (or ~/..., file://...):
    what a terminal pastes when a file is dropped on it. A relative name is a word of the
    sentence; `@name` attaches it."""
    for match in DROPPED.finditer(line):
        word = next(g for g in match.groups() if g is not None)
        if word.startswith("@"):
            continue
        word = word.replace("\\ ", " ")
        if word.startswith("file://"):
            word = word[len("file://"):]
        if not word.lower().endswith(IMAGE_SUFFIXES):
            continue
        path = Path(word).expanduser()
        if not path.is_absolute():  # a word of the sentence (`fix logo.png`): @logo.png asks
            continue
        try:
            if path.is_file():
                yield path.resolve()
        except OSError:
            continue


def workspace_files(root: Path, prefix: str) -> list[str]:
    """Workspace paths for `@prefix`: the entries of the directory the prefix names (a
    directory with a trailing /), then files deeper down whose name starts with the
    prefix's last part; bounded (MAX_SCAN entries looked at)."""
    head, _, tail = prefix.rpartition("/")
    base = (root / head).resolve() if head else root
    found: list[str] = []
    if not base.is_relative_to(root.resolve()) or not base.is_dir():
        return found
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith(tail) and (tail.startswith(".") or not entry.name.startswith(".")):
            rel = f"{head}/{entry.name}" if head else entry.name
            found.append(rel + ("/" if entry.is_dir(follow_symlinks=False) else ""))
    if not head and tail:
        scanned = 0
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
            scanned += len(files) + len(dirs)
            if directory != str(root):
                rel_dir = os.path.relpath(directory, root)
                found.extend(f"{rel_dir}/{name}" for name in sorted(files)
                             if name.startswith(tail))
            if scanned > MAX_SCAN or len(found) >= MAX_COMPLETIONS:
                break
    return found[:MAX_COMPLETIONS]


def completer(workspace: Callable[[], Path]) -> Any:
    """A prompt_toolkit completer of `@` words from the current workspace."""
    from prompt_toolkit.completion import Completer, Completion

    class MentionCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterator[Any]:
            word = document.get_word_before_cursor(WORD=True)
            if not word.startswith("@"):
                return
            for rel in workspace_files(workspace(), word[1:]):
                yield Completion("@" + rel, start_position=-len(word), display=rel)

    return MentionCompleter()

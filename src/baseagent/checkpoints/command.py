"""`baseagent diff [THREAD]` and `baseagent undo [THREAD]`: a recorded thread's checkpoints
from the command line (cli.py parses the flags; this finds the thread and words the
outcome). Without THREAD: the newest thread with checkpoints in this workspace."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from baseagent.checkpoints.thread import LOG_NAME, CheckpointError, Checkpoints

EXIT_REFUSED = 1


class NoThread(Exception):
    """THREAD names no thread with checkpoints (or names several); a usage error."""


@dataclass
class Outcome:
    """What to print (stdout), what to say on stderr, and the exit code."""

    out: str = ""
    err: str = ""
    code: int = 0


def find_thread(session_dir: Path, cwd: Path, thread: str | None) -> Path:
    """The checkpoint directory of `thread` (an id or a unique prefix), or of the newest
    thread whose workspace is `cwd`."""
    root = session_dir / "checkpoints"
    dirs = [d for d in root.iterdir() if (d / LOG_NAME).is_file()] if root.is_dir() else []
    if thread:
        matches = [d for d in dirs if d.name == thread] or \
            [d for d in dirs if d.name.startswith(thread)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NoThread(f"no checkpoints of a thread {thread} in {root}")
        raise NoThread(f"{thread} names {len(matches)} threads: give more of the id")
    here = str(cwd.resolve())
    mine = [d for d in dirs if _workspace(d) == here]
    if not mine:
        raise NoThread(f"no thread has checkpoints in {here} (name one by its id; "
                       "`baseagent sessions` lists them)")
    return max(mine, key=lambda d: (d / LOG_NAME).stat().st_mtime)


def diff(directory: Path, env: Mapping[str, str], session: bool, stat: bool) -> Outcome:
    try:
        result = Checkpoints.existing(directory, directory.name, env).diff(session)
    except CheckpointError as exc:
        return Outcome(err=str(exc), code=EXIT_REFUSED)
    text = result.summary() if stat else str(result)
    return Outcome(out=f"thread {directory.name}: {text}\n")


def undo(directory: Path, env: Mapping[str, str]) -> Outcome:
    try:
        done = Checkpoints.existing(directory, directory.name, env).undo()
    except CheckpointError as exc:  # UndoRefused among them: nothing was changed
        return Outcome(err=str(exc), code=EXIT_REFUSED)
    return Outcome(out=f"thread {directory.name}: {done}\n")


def _workspace(directory: Path) -> str | None:
    try:
        return json.loads((directory / LOG_NAME).read_text(encoding="utf-8")).get("workspace")
    except (OSError, ValueError):
        return None

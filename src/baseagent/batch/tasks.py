"""The task file of a batch: one JSON object per line, parsed and checked before anything runs.

A line is `{"id", "instruction", "workspace", "setup", "check", "model", "metadata",
"attempts"}` with
only `instruction` required; hermes-agent's `{"prompt": ...}` lines are read as they are.
Every problem (bad JSON, a missing instruction, a duplicate id, a workspace that does not
exist) is found here and reported with its line number, so a batch never starts on a file
it would stop halfway through.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baseagent.errors import InputError

KNOWN_KEYS = frozenset({"id", "instruction", "prompt", "workspace", "setup", "check", "model",
                        "metadata", "attempts"})
# A task's own `attempts` at most (as the `attempts` setting).
MAX_ATTEMPTS = 16
# Ids used as directory names as they are; anything else gets a readable, unique slug.
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class TaskFileError(InputError):
    """The task file cannot be used: the message names the line."""


@dataclass(frozen=True)
class Task:
    """One task of a batch. `index` is its 0-based position in the file (hermes'
    prompt_index); `key` is the directory name of its workspace and records."""

    id: str
    instruction: str
    index: int
    workspace: Path | None = None
    setup: str | None = None
    check: str | None = None
    model: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # The task's own --attempts (None: the batch's).
    attempts: int | None = None

    @property
    def key(self) -> str:
        return task_key(self.id)

    def to_dict(self) -> dict[str, Any]:
        """What travels to a worker (plain data: pickled for processes, serialised for Ray)."""
        return {"id": self.id, "instruction": self.instruction, "index": self.index,
                "workspace": str(self.workspace) if self.workspace else None,
                "setup": self.setup, "check": self.check, "model": self.model,
                "metadata": self.metadata, "attempts": self.attempts}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Task":
        workspace = data.get("workspace")
        return cls(id=data["id"], instruction=data["instruction"], index=data["index"],
                   workspace=Path(workspace) if workspace else None, setup=data.get("setup"),
                   check=data.get("check"), model=data.get("model"),
                   metadata=dict(data.get("metadata") or {}), attempts=data.get("attempts"))


def task_key(task_id: str) -> str:
    """A directory name for the id: the id itself when it is a plain name, otherwise its
    safe characters plus a short hash (so `a/b` and `a_b` never share a directory)."""
    if _SAFE_ID.fullmatch(task_id) and task_id not in (".", ".."):
        return task_id
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id).strip("._-")[:60] or "task"
    return f"{slug}-{hashlib.sha256(task_id.encode('utf-8')).hexdigest()[:10]}"


def parse_task_line(data: Any, number: int, base: Path) -> Task:
    """One decoded line (1-based `number`); relative workspaces resolve against `base`."""
    where = f"line {number}"
    if not isinstance(data, dict):
        raise TaskFileError(f"{where}: a task must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise TaskFileError(f"{where}: unknown key(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(KNOWN_KEYS))})")
    instruction = data.get("instruction", data.get("prompt"))
    if "instruction" in data and "prompt" in data:
        raise TaskFileError(f"{where}: give either instruction or prompt, not both")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskFileError(f"{where}: instruction (or hermes' prompt) must be a non-empty string")
    raw_id = data.get("id", number)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or str(raw_id).strip() == "":
        raise TaskFileError(f"{where}: id must be a non-empty string or an integer")
    for name in ("setup", "check", "model", "workspace"):
        value = data.get(name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise TaskFileError(f"{where}: {name} must be a non-empty string")
    attempts = data.get("attempts")
    if attempts is not None and (isinstance(attempts, bool) or not isinstance(attempts, int)
                                 or not 1 <= attempts <= MAX_ATTEMPTS):
        raise TaskFileError(f"{where}: attempts must be an integer from 1 to {MAX_ATTEMPTS}")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise TaskFileError(f"{where}: metadata must be an object")
    workspace = None
    if data.get("workspace"):
        workspace = (base / Path(data["workspace"]).expanduser()).resolve()
        if not workspace.is_dir():
            raise TaskFileError(f"{where}: workspace is not a directory: {workspace}")
    return Task(id=str(raw_id), instruction=instruction, index=number - 1, workspace=workspace,
                setup=data.get("setup"), check=data.get("check"),
                model=data["model"].strip() if data.get("model") else None, metadata=metadata,
                attempts=attempts)


def load_tasks(path: Path) -> list[Task]:
    """Every task of the file, in order. Blank lines are skipped (they keep their number, so a
    missing id is always the line number the user sees in an editor)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskFileError(f"task file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"cannot read task file {path}: {exc}") from None
    base = path.resolve().parent
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    keys: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise TaskFileError(f"line {number}: invalid JSON: {exc}") from None
        task = parse_task_line(data, number, base)
        if task.id in seen:
            raise TaskFileError(f"line {number}: duplicate id {task.id!r} "
                                f"(first on line {seen[task.id]})")
        if task.key in keys:  # a slugged id that equals another task's plain id
            raise TaskFileError(f"line {number}: id {task.id!r} would share the directory "
                                f"of id {keys[task.key]!r}")
        seen[task.id] = number
        keys[task.key] = task.id
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"task file {path} holds no task")
    return tasks

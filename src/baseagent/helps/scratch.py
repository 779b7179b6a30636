"""A scratch copy of the workspace where the probe's candidates are tested.

The search with the tests (helps/probe.py) draws several candidates a round; none of them
touches the workspace until one is chosen. Each is written into a copy of the workspace
made once a turn (caches left out, as core/verification/attempts.py copies), over the files to change,
and the task's test command runs there as the model's commands run, with the copy as their
workspace (TurnContext.run_in_copy). The copy is removed when the turn ends.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from baseagent.core.verification.attempts import _NOT_COMPARED, copy_workspace
from baseagent.helps.contract import TurnContext
from baseagent.helps.test_report import TestReport, read_report
from baseagent.helps.test_time import looping_report

# A workspace larger than this is not copied for the search (the probe goes on without it).
MAX_SCRATCH_BYTES = 64 * 1024 * 1024
# The test output kept for reading its counts.
_MAX_OUTPUT = 1024 * 1024


class ScratchError(Exception):
    """The workspace cannot be copied (too large, unreadable)."""


class Scratch:
    def __init__(self) -> None:
        self._root: Path | None = None
        self._copy: Path | None = None

    def test(self, ctx: TurnContext, files: dict[str, str], command: str, timeout_s: float,
             reference: float | None = None, fresh: bool = False) -> tuple[bool, TestReport]:
        """`files` (workspace-relative) written into the copy, then `command` run there:
        (whether it exited 0, what it said). `fresh`: the copy taken again from the
        workspace as it is now. ScratchError when the workspace cannot be copied."""
        copy = self._ready(ctx, fresh)
        for name, content in files.items():
            path = (copy / name).resolve()
            if not path.is_relative_to(copy.resolve()):
                raise ScratchError(f"{name} is outside the workspace")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        code, output = ctx.run_in_copy(command, copy, timeout_s)
        if code is None:
            return False, looping_report(timeout_s, reference)
        return code == 0, read_report(output[-_MAX_OUTPUT:])

    def close(self) -> None:
        root, self._root, self._copy = self._root, None, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    def _ready(self, ctx: TurnContext, fresh: bool) -> Path:
        if self._copy is not None and not fresh:
            return self._copy
        self.close()
        self._root, self._copy = copy_of(ctx.cwd, "baseagent-search-")
        return self._copy


def copy_of(cwd: Path, prefix: str) -> tuple[Path, Path]:
    """A copy of the workspace in a new temporary directory named with `prefix`: (that
    directory, to remove when done; the copy in it). ScratchError when the workspace is too
    large or cannot be copied (nothing is left behind then)."""
    check_size(cwd)
    root = Path(tempfile.mkdtemp(prefix=prefix))
    copy = root / (cwd.name or "workspace")
    try:
        copy_workspace(cwd, copy)
    except (OSError, shutil.Error) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise ScratchError(str(exc)) from None
    return root, copy


def check_size(root: Path) -> None:
    """ScratchError when the workspace is larger than MAX_SCRATCH_BYTES (caches left out)."""
    total = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _NOT_COMPARED]
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
            if total > MAX_SCRATCH_BYTES:
                raise ScratchError(f"the workspace is larger than "
                                   f"{MAX_SCRATCH_BYTES // 2**20} MiB")

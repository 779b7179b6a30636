"""Checkpoints: the workspace recorded before a turn first changes it, so a turn can be
looked at (`diff`) and taken back (`undo`).

    from baseagent.checkpoints import Checkpoints
    cp = Checkpoints(thread_id=..., workspace=Path("."), directory=..., env=os.environ)
    cp.begin("fix the test"); cp.before_change(); ...; cp.end()
    print(cp.diff()); print(cp.undo())

In a git repository a snapshot is a hidden commit under `refs/baseagent/checkpoints/`
(gitstore.py: the user's index, branches and stash are never touched); elsewhere, copies
in the session's directory (copystore.py). thread.py keeps a thread's log and does diff
and undo; restore.py writes files back; render.py draws the diff. The Agent owns one per
thread (`Agent.diff()`, `Agent.undo()`), the interactive session has `/diff` and `/undo`,
the command line `baseagent diff` and `baseagent undo`. docs/CHECKPOINTS.md.
"""
from baseagent.checkpoints.render import FileDiff
from baseagent.checkpoints.thread import (CheckpointError, Checkpoints, Diff, Undone,
                                          UndoRefused, discard)

__all__ = ["CheckpointError", "Checkpoints", "Diff", "FileDiff", "Undone", "UndoRefused",
           "discard"]

"""The apply_patch engine: parse (parser), locate (matcher), compute and write (apply).

Kept apart from the tool module so the format rules can be tested and reused without the
tool plumbing, and so each step stays small enough to read in one sitting.
"""
from __future__ import annotations

from baseagent.tools.patch.apply import Plan, commit, plan_patch
from baseagent.tools.patch.parser import (
    AddFile,
    Chunk,
    DeleteFile,
    Hunk,
    PatchError,
    UpdateFile,
    parse_patch,
    parse_patch_with_notes,
)

__all__ = [
    "AddFile", "Chunk", "DeleteFile", "Hunk", "PatchError", "Plan", "UpdateFile",
    "commit", "parse_patch", "parse_patch_with_notes", "plan_patch",
]

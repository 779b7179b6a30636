"""apply_patch: the model's way to create, edit, move and delete files with one patch.

The patch is all-or-nothing: every path is cleared by the sandbox and every hunk located in
memory before the first byte is written, so a failed call leaves the tree as it was and the
model can simply resend a corrected patch.

Event item: ``{"changes": [{"path", "kind"}]}`` in patch order, paths absolute (as Codex's
are). A move is reported as ``update`` of the destination followed by ``delete`` of the
source, so a consumer that mirrors the tree from the events ends up right. A patch that
does not apply (it does not parse, a hunk does not match, the sandbox refuses a path) leaves
every file untouched and its item ends ``failed``, still listing the files it named.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from baseagent.sandbox.policy import confine
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolError, ToolResult
from baseagent.tools.patch import (AddFile, DeleteFile, commit, parse_patch,
                                   parse_patch_with_notes, plan_patch)
from baseagent.tools.diff import render_diff
from baseagent.tools.paths import (confirm_writes, display_path, event_path, recheck,
                                   resolve_write)

NAME = "apply_patch"
ITEM_TYPE = "file_change"
DESCRIPTION = """\
Create, edit, move or delete files by applying a patch. The patch is applied all-or-nothing:
if any part fails, no file is changed; fix the patch and send it again whole.

Format:
*** Begin Patch
*** Add File: path/to/new_file.py
+every line of the new file, each prefixed with +
*** Delete File: path/to/obsolete.py
*** Update File: path/to/file.py
*** Move to: path/to/renamed.py      (optional, rename the updated file)
@@ def enclosing_function():          (optional, a line above the change to locate it)
 unchanged context line (prefix: one space)
-line to remove
+line to add
*** End Patch

Rules:
- Paths are relative to the working directory (absolute paths also work).
- In an Update, give about 3 unchanged context lines above and below each change, copied
  exactly. Start every further change in the same file with its own @@ line. If the
  context is not unique, put the enclosing class or function on the @@ line (several @@
  lines in a row narrow it down further). Do not put line numbers on @@ lines.
- Add `*** End of File` after a change that must match the very end of the file.
- A standard unified diff (--- a/path, +++ b/path, @@ -1,3 +1,4 @@) is accepted too.
"""


class Args(BaseModel):
    input: str = Field(
        description="The entire patch text, from '*** Begin Patch' to '*** End Patch'.")


SUCCESS_HEADER = "Success. Updated the following files:"
# Models trained on the non-atomic reference would otherwise resend only the failed part.
NOTHING_CHANGED = ("The patch was not applied and no file was changed; fix the problem and "
                   "send the whole patch again.")
# The reference lists added, then modified, then deleted files.
_SUMMARY_ORDER = {"A": 0, "M": 1, "D": 2}


def planned_changes(args: Args, ctx: ToolContext) -> list[dict[str, str]]:
    """The files the patch names, absolute (none if it does not parse); whether it applies
    shows in the completed item."""
    try:
        hunks = parse_patch(args.input)
    except ToolError:
        return []
    changes: list[dict[str, str]] = []
    for hunk in hunks:  # paths as the patch wrote them; made absolute below
        if isinstance(hunk, AddFile):
            changes.append({"path": hunk.path, "kind": "add"})
        elif isinstance(hunk, DeleteFile):
            changes.append({"path": hunk.path, "kind": "delete"})
        elif hunk.move_to:
            changes += [{"path": hunk.move_to, "kind": "update"},
                        {"path": hunk.path, "kind": "delete"}]
        else:
            changes.append({"path": hunk.path, "kind": "update"})
    return _absolute(ctx, changes)


def _absolute(ctx: ToolContext, changes: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{**change, "path": event_path(ctx, change["path"])} for change in changes]


def run(args: Args, ctx: ToolContext) -> ToolResult:
    targets = []

    def resolve(path: str):
        targets.append(resolve_write(ctx, path))
        return targets[-1]

    try:
        hunks, repairs = parse_patch_with_notes(args.input)
        plan = plan_patch(hunks, resolve)
        # Under `untrusted`, paths outside the workspace or in .git: the user's yes first.
        allowed = confirm_writes(ctx, NAME, targets)
    except ToolError as exc:
        raise ToolError(f"{exc}\n{NOTHING_CHANGED}") from exc
    # Under the kernel sandbox, so no path can be swapped outside the roots after planning,
    # and each path looked at again just before it changes (into .git, past the question);
    # commit's own errors say whether the rollback restored everything.
    confine(ctx.policy(), lambda: commit(plan, lambda path: recheck(ctx, path, allowed)))
    lines = [SUCCESS_HEADER]
    for letter, path in sorted(plan.summary, key=lambda entry: _SUMMARY_ORDER[entry[0]]):
        lines.append(f"{letter} {path}")
    diff = "".join(render_diff(display_path(ctx, slot.path), slot.original, slot.data)
                   for slot in plan.slots.values())
    lines += [f"Note: {repair}." for repair in repairs]
    return ToolResult(output="\n".join(lines) + "\n",
                      item={"changes": _absolute(ctx, plan.changes), "diff": diff})


# The tool as the registry sees it (tools/tool.py).
TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=run,
                 item_type=ITEM_TYPE, planner=planned_changes)

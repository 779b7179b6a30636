"""A thread's checkpoints: the workspace recorded before each turn first changes it, and
at the turn's end; what a turn (or the thread) changed; undoing the last turn.

The turn's owner (agent.py) calls `begin()` when a turn starts, `before_change()` before
every tool call that may change the workspace (tools/registry.py, through
`ToolContext.before_change`; only the first of a turn records anything) and `end()` when
the turn is over. The log of a thread's checkpoints is `log.json` in
`<session_dir>/checkpoints/<thread>/` (with the copies, outside a git repository), so
`baseagent undo THREAD` in another process finds them; a thread that is not recorded keeps
its log in memory and its copies in a temporary directory removed on `close()`.

Undo restores the turn's start only when the workspace is exactly as the turn left it:
any file changed since (by a person, an editor, another thread) makes it refuse and say
which, so a checkpoint never costs anyone work done outside the agent. Work that was in
the workspace before the turn (uncommitted or not) is part of what is restored.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baseagent.checkpoints import restore
from baseagent.checkpoints.copystore import CopyStore, private_dir
from baseagent.checkpoints.gitstore import GitError, GitStore, TooBig, find_repository
from baseagent.checkpoints.manifest import Change, changes
from baseagent.checkpoints.render import FileDiff, file_diff
from baseagent.errors import BaseAgentError

# Bounds of what one checkpoint records (beyond them the turn runs without one, and says
# so): outside git every file counts; in a repository the untracked, not ignored ones.
MAX_FILES = 20_000
MAX_BYTES = 100 * 1024 * 1024
LOG_NAME = "log.json"
LOG_VERSION = 1
# How many paths a refusal names before "and N more".
SHOWN_PATHS = 12
# A label is the first line of the turn's instruction, this long at most.
LABEL_CHARS = 60


class CheckpointError(BaseAgentError):
    """No checkpoint to act on, or one that cannot be read (the message says which)."""


class UndoRefused(CheckpointError):
    """Undo would lose work: files changed since the turn ended (`paths`), or the turn's end
    state is unknown. Nothing was changed."""

    def __init__(self, message: str, paths: list[str] | None = None) -> None:
        super().__init__(message)
        self.paths = paths or []


@dataclass
class Diff:
    """What a turn (or the thread's turns) changed: `files` one per path, `text` the
    unified diff, `turns` the turns it covers, `notes` what a reader should know (files
    changed since outside the agent, a turn that could not be checkpointed)."""

    title: str
    files: list[FileDiff] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(f.text for f in self.files)

    def summary(self) -> str:
        lines = [self.title]
        lines += [f"  {f.summary()}" for f in self.files]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary() + ("\n\n" + self.text if self.files else "")


@dataclass
class Undone:
    """What undo did: the turn it undid and each path it put back."""

    turn: int
    label: str
    changes: list[Change]
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        verbs = {"add": "recreated", "delete": "removed", "update": "restored"}
        lines = [f"undid turn {self.turn} “{self.label}”: the workspace is as it was before it"
                 + (f" ({len(self.changes)} file{'s' * (len(self.changes) != 1)})"
                    if self.changes else "")]
        lines += [f"  {verbs[c.kind]:<9} {c.path}" for c in self.changes]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


class Checkpoints:
    """The checkpoints of one thread in one workspace."""

    def __init__(self, *, thread_id: str, workspace: Path, directory: Path | None,
                 env: Mapping[str, str], enabled: bool = True, turns: int = 0,
                 max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> None:
        """`directory`: where the log and copies are kept (None: in memory and a temporary
        directory); `turns`: how many turns the thread had before (a resumed one);
        `enabled` False: nothing is recorded (a read-only run), the rest still reads the
        log."""
        self.thread_id = thread_id
        self.workspace = workspace
        self.enabled = enabled
        self._directory = directory
        self._temp: Path | None = None
        self._temp_cleanup: weakref.finalize | None = None
        self._env = dict(env)
        self._max = (max_files, max_bytes)
        self._lock = threading.Lock()
        self._store: Any = None
        self._log = self._read_log()
        self._turn = max(turns, max((t["turn"] for t in self._log["turns"]), default=0))
        self._current: dict[str, Any] | None = None  # the running turn's record
        self._tried = False  # the running turn tried to record its start already
        self._note: str | None = None
        self._label = ""

    @classmethod
    def existing(cls, directory: Path, thread_id: str, env: Mapping[str, str]) -> "Checkpoints":
        """A recorded thread's checkpoints (`baseagent undo`/`diff`); CheckpointError when
        it has none."""
        if not (directory / LOG_NAME).is_file():
            raise CheckpointError(f"thread {thread_id} has no checkpoints")
        log = json.loads((directory / LOG_NAME).read_text(encoding="utf-8"))
        return cls(thread_id=thread_id, workspace=Path(log["workspace"]), directory=directory,
                   env=env, enabled=False)

    # -- the turn ----------------------------------------------------------------------------

    def begin(self, instruction: str, continued: bool = False) -> None:
        """A turn starts (`continued`: a paused turn goes on; its checkpoint stays)."""
        with self._lock:
            if continued and self._current is not None:
                return
            self._turn += 1
            self._current = None
            self._tried = False
            self._note = None
            line = (instruction.strip().splitlines() or [""])[0]
            self._label = line if len(line) <= LABEL_CHARS else line[:LABEL_CHARS - 1] + "…"

    def before_change(self) -> None:
        """A tool call that may change the workspace is about to run: the first of the turn
        records the workspace. Never raises: a workspace that cannot be recorded is a note
        (`note`), and the turn goes on without a checkpoint."""
        if not self.enabled or self._tried:
            return
        with self._lock:
            if self._tried:
                return
            self._tried = True
            record: dict[str, Any] = {"turn": self._turn, "label": self._label,
                                      "time": time.time(), "before": None, "after": None,
                                      "head_before": None, "head_after": None,
                                      "skipped": None, "undone": False}
            try:
                store = self._open_store()
                record["before"] = store.snapshot()
                record["head_before"] = store.head()
            except TooBig as exc:
                record["skipped"] = str(exc)
                self._note = (f"no checkpoint for this turn: {exc} (a checkpoint takes at "
                              f"most {self._max[0]:,} files, {self._max[1] >> 20} MiB); undo "
                              "cannot reach back past this turn")
            except Exception as exc:  # noqa: BLE001 - a checkpoint never stops a turn
                record["skipped"] = f"it could not be recorded: {exc}"
                self._note = f"no checkpoint for this turn: {record['skipped']}"
            self._current = record
            self._log["turns"].append(record)
            try:
                self._save()
            except OSError as exc:
                self._note = f"the checkpoint log could not be written: {exc}"

    def end(self, paused: bool = False) -> None:
        """The turn is over (or paused for the caller: its end state is recorded now and
        again when it goes on). A turn that changed nothing leaves no checkpoint."""
        with self._lock:
            record = self._current
            if record is None or record["before"] is None:
                return
            try:
                store = self._open_store()
                after = store.snapshot()
                record["after"] = after
                record["head_after"] = store.head()
            except Exception as exc:  # noqa: BLE001 - as at the start: a note, never a stop
                record["after"] = None
                self._note = f"the end of this turn could not be recorded: {exc}"
            if not paused:
                self._current = None
                if record["after"] is not None and record["after"]["id"] == record["before"]["id"] \
                        and record["head_after"] == record["head_before"]:
                    self._log["turns"].remove(record)  # it changed nothing
            try:
                self._save()
            except OSError as exc:
                self._note = f"the checkpoint log could not be written: {exc}"

    @property
    def note(self) -> str | None:
        """Why the last turn has no checkpoint (too big, git failed), else None."""
        return self._note

    @note.setter
    def note(self, text: str | None) -> None:
        self._note = text

    # -- what changed ------------------------------------------------------------------------

    def diff(self, session: bool = False) -> Diff:
        """What the last turn that changed the workspace changed (`session`: every turn of
        the thread not undone, from the first one's start to the last one's end)."""
        turns = self._live()
        if not turns:
            undone = any(t.get("undone") for t in self._log["turns"])
            return Diff("nothing to show: every turn that changed the workspace is undone"
                        if undone else "no turn of this thread has changed the workspace",
                        notes=self._skipped_notes(0))
        chosen = turns if session else turns[-1:]
        first, last = chosen[0], chosen[-1]
        store = self._open_store()
        before = store.manifest(first["before"])
        # A turn with no recorded end is shown up to now: its contents are kept for that.
        now = store.snapshot(keep=last["after"] is None)
        end = last["after"] or now
        after = store.manifest(end)
        found = changes(before, after)
        contents = store.contents([e.oid for c in found for e in (c.before, c.after) if e])
        files = [file_diff(c, contents) for c in found]
        count = f"{len(files)} file{'s' * (len(files) != 1)}"
        if session:
            title = (f"turns {first['turn']} to {last['turn']} of this thread changed {count}"
                     if len(chosen) > 1 else f"turn {first['turn']} changed {count}")
        else:
            title = f"turn {last['turn']} “{last['label']}” changed {count}"
        result = Diff(title, files, [t["turn"] for t in chosen])
        if last["after"] is None:
            result.notes.append(f"turn {last['turn']} has not finished: shown up to now")
        elif now["id"] != end["id"]:
            since = [c.path for c in changes(after, store.manifest(now))]
            if since:
                result.notes.append("changed since, outside the agent: " + _names(since))
        result.notes += self._skipped_notes(first["turn"])
        return result

    # -- undo --------------------------------------------------------------------------------

    def undo(self) -> Undone:
        """Put the workspace back as it was before the last turn that changed it (not undone
        yet). UndoRefused, with nothing changed, when that would lose work."""
        with self._lock:
            turns = self._live()
            if not turns:
                undone = any(t.get("undone") for t in self._log["turns"])
                skipped = self._skipped_notes(0)
                raise CheckpointError(
                    "nothing to undo: " + ("every turn that changed the workspace is undone "
                                           "already" if undone else "no turn of this thread "
                                           "has changed the workspace")
                    + (f" ({'; '.join(skipped)})" if skipped else ""))
            record = turns[-1]
            if self._current is not None:
                raise UndoRefused(f"turn {record['turn']} is paused for tool outputs: finish it "
                                  "(submit_tool_outputs) before undoing it")
            if record["after"] is None:
                raise UndoRefused(
                    f"turn {record['turn']} has no recorded end (it is still running, or its "
                    "process ended mid-turn): files changed since could not be told from the "
                    "turn's own, so nothing was undone")
            store = self._open_store()
            if os.path.realpath(store.root) != str(store.root):
                raise UndoRefused(f"the workspace {store.root} is now reached through a "
                                  f"symbolic link (to {os.path.realpath(store.root)}): undo "
                                  "writes nowhere else, so nothing was undone")
            after = store.manifest(record["after"])
            before = store.manifest(record["before"])
            plan = changes(after, before)
            now = store.snapshot(keep=False)
            since: list[str] = []
            if now["id"] != record["after"]["id"]:
                since = [c.path for c in changes(after, store.manifest(now))]
            touched = {c.path for c in plan}
            clash = [p for p in since if p in touched]
            if clash:
                later = self._skipped_notes(record["turn"])
                raise UndoRefused(
                    f"cannot undo turn {record['turn']} “{record['label']}”: files it "
                    "changed have changed since it ended"
                    + (" (" + "; ".join(later) + ")" if later else ", outside the agent")
                    + f": {_names(clash)}. Undo would lose those changes, so nothing was "
                      "changed; put them back as the turn left them, or keep a copy "
                      "elsewhere first.", clash)
            problems = restore.apply(store.root, plan, store.checkout_bytes)
            record["undone"] = True
            record["undone_time"] = time.time()
            self._save()
            done = Undone(record["turn"], record["label"], plan)
            if since:
                done.notes.append(f"left as they are: {_names(since)} (changed since the turn "
                                  "ended, and not by it)")
            if problems:
                done.notes.append("not put back: " + "; ".join(problems))
            else:
                check = store.manifest(store.snapshot(keep=False))
                off = [p for p in touched if check.get(p) != before.get(p)]
                if off:
                    done.notes.append("not as before the turn after undo (changed while undo "
                                      f"ran?): {_names(sorted(off))}")
            if record.get("head_after") != record.get("head_before") and record["head_before"]:
                done.notes.append(
                    f"the turn also moved HEAD from {record['head_before'][:12]} to "
                    f"{(record['head_after'] or 'nothing')[:12]} (a commit or a checkout): undo "
                    "put the files back, not the branch or the index "
                    f"(`git reset --soft {record['head_before'][:12]}` moves the branch back)")
            return done

    def close(self) -> None:
        if self._temp_cleanup is not None:
            self._temp_cleanup()
            self._temp_cleanup = None
        self._temp = None

    # -- internals ---------------------------------------------------------------------------

    def _live(self) -> list[dict[str, Any]]:
        return [t for t in self._log["turns"]
                if t["before"] is not None and not t.get("undone")]

    def _skipped_notes(self, after_turn: int) -> list[str]:
        return [f"turn {t['turn']} has no checkpoint: {t['skipped']}" for t in self._log["turns"]
                if t.get("skipped") and t["turn"] > after_turn and not t.get("undone")]

    def _open_store(self) -> Any:
        if self._store is not None:
            return self._store
        files, size = self._max
        log = self._log
        if log.get("store") != "copy":
            found = find_repository(self.workspace, self._env)
            if found is not None and (log.get("store") is None or str(found[0]) == log["root"]):
                self._store = GitStore(found[0], found[1], self.thread_id, self._env, files, size)
            elif log.get("store") == "git":
                raise CheckpointError(f"the repository {log['root']} these checkpoints are in "
                                      "is gone")
        if self._store is None:
            self._store = CopyStore(self.workspace, self._copies(), files, size)
        log.update(store=self._store.kind, root=str(self._store.root))
        return self._store

    def _copies(self) -> Path:
        if self._directory is not None:
            return self._directory
        if self._temp is None:
            self._temp = Path(tempfile.mkdtemp(prefix="baseagent-checkpoints-"))
            # An agent its caller never closes (a library user, a test) must not leave its
            # copies behind: the directory goes when this object is collected or at exit.
            self._temp_cleanup = weakref.finalize(self, shutil.rmtree, str(self._temp),
                                                  ignore_errors=True)
        return self._temp

    def _read_log(self) -> dict[str, Any]:
        fresh = {"version": LOG_VERSION, "thread_id": self.thread_id,
                 "workspace": str(self.workspace), "turns": []}
        if self._directory is None:
            return fresh
        try:
            log = json.loads((self._directory / LOG_NAME).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return fresh
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"the checkpoint log of thread {self.thread_id} cannot be "
                                  f"read: {exc}") from None
        if log.get("version") != LOG_VERSION or not isinstance(log.get("turns"), list):
            raise CheckpointError(f"the checkpoint log of thread {self.thread_id} is not one "
                                  "this version reads")
        return log

    def _save(self) -> None:
        if self._directory is None:
            return
        from baseagent.fsutil import atomic_write

        private_dir(self._directory)
        atomic_write(self._directory / LOG_NAME,
                     json.dumps(self._log, indent=1).encode("utf-8"), 0o600)


def discard(directory: Path, env: Mapping[str, str]) -> str | None:
    """Delete a thread's checkpoints (`sessions rm`): its directory, and when they were kept
    in the workspace's repository, the ref that kept them reachable (git's own gc then drops
    the objects). What was removed, in words; None when the thread had none."""
    if not directory.is_dir():
        return None
    said = f"its checkpoints in {directory}"
    try:
        log = json.loads((directory / LOG_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log = {}
    root = log.get("root") if isinstance(log, dict) and log.get("store") == "git" else None
    try:  # the log is a file on disk: its root may name anything, or nothing a path can be
        found = find_repository(Path(root), env) \
            if isinstance(root, str) and Path(root).is_dir() else None
    except (OSError, ValueError):
        found = None
    if found is not None and str(found[0]) == root:
        store = GitStore(found[0], found[1], directory.name, env, 0, 0)
        try:
            store.git(["update-ref", "-d", store.ref])
            said += f" and {store.ref} in {root}"
        except (GitError, OSError) as exc:
            said += f" (the ref {store.ref} in {root} stays: {exc})"
    shutil.rmtree(directory, ignore_errors=True)
    return said


def _names(paths: list[str]) -> str:
    shown = ", ".join(paths[:SHOWN_PATHS])
    return shown + (f" and {len(paths) - SHOWN_PATHS} more" if len(paths) > SHOWN_PATHS else "")

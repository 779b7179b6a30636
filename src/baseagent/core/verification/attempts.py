"""`--attempts N`: N independent attempts at a turn, each in its own copy of the workspace,
and the one with the best evidence applied to the real workspace.

The loop never knows: each attempt is a whole turn of baseagent's own loop (core/loop.py)
over a plain copy of the workspace, with its own history, client and tool context, built by
the composition root (`compose.loops.attempt_loop`). This module sits above the loop, as the
`AgentLoop` the Agent runs (core/parts.py):

1. the real workspace is listed (a digest per file), and copied N times;
2. each attempt runs its turn in its copy, one after another or at once
   (`attempts_parallel`); its events go to the thread's one stream, each item renumbered in
   the thread's order and opened by a `reasoning` item "attempt k of N";
3. each attempt is judged by evidence taken from outside the loop: the test command the
   task or AGENTS.md names (core/verification/evidence.py `named_test_command`), run again in its copy
   and read by helps/test_report.py (exit code, tests passed and failed); then its turn's
   `verification` (evidence beats statement) and how it ended; ties go to the smaller change;
4. the winner's changes (files added, updated, deleted; nothing else) are applied to the
   real workspace, unless the real workspace changed meanwhile (then nothing is applied
   and the turn fails, naming the copy that holds the winner); its conversation becomes the
   thread's, its answer is repeated as the turn's last `agent_message`, and the turn's end
   (`turn.completed.attempts`) says which attempt won and why. docs/ATTEMPTS.md.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baseagent.emitting import events as engine
from baseagent.core.verification.evidence import named_test_command, repository_notes
from baseagent.helps.test_report import read_report
from baseagent.emitting.interface import EventListener

# Directories never compared nor applied: the repository's own store, and caches and
# environments that tools rebuild (copied along where they help a test run; see _NOT_COPIED).
_NOT_COMPARED = frozenset({".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache",
                           ".ruff_cache", ".tox", ".nox", "node_modules", ".venv", "venv"})
# Caches not worth copying at all.
_NOT_COPIED = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
# A workspace larger than this is not copied N times (the turn fails and says so).
MAX_WORKSPACE_BYTES = 512 * 1024 * 1024
# Files larger than this count as one changed "line" per KiB when sizing a change.
_DIFF_BYTES = 1024 * 1024
# The test command's output kept for reading its counts.
_MAX_TEST_OUTPUT = 1024 * 1024


class AttemptsError(Exception):
    """The workspace cannot be copied or compared (too large, unreadable)."""


def runs_in_parallel(setting: str, *, oss: bool, api_base: str | None,
                     shared_client: bool) -> bool:
    """`attempts_parallel`: on / off, or auto: one after another on a local server (--oss,
    an api_base on this machine: one slot, so concurrent attempts only queue and time out)
    and with a caller's model client (one object, not known to be thread-safe); at once
    otherwise."""
    if setting != "auto":
        return setting == "on"
    if oss or shared_client:
        return False
    from baseagent.llm.route import on_this_machine

    # Local servers serve one request at a time (llama-server's single slot, Ollama's).
    return not on_this_machine(api_base)


# -- the workspace ---------------------------------------------------------------------------

def listing(root: Path) -> dict[str, str]:
    """Each file under `root` (relative POSIX path) with a digest of its content (a symlink
    by its target), skipping the directories never compared."""
    files: dict[str, str] = {}
    total = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _NOT_COMPARED)
        for name in names:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                files[rel] = "link:" + os.readlink(path)
                continue
            if not path.is_file():
                continue
            total += path.stat().st_size
            if total > MAX_WORKSPACE_BYTES:
                raise AttemptsError(f"the workspace is larger than "
                                    f"{MAX_WORKSPACE_BYTES // 2**20} MiB: not copied for attempts")
            files[rel] = _digest(path)
    return files


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            sha.update(block)
    return sha.hexdigest()


def copy_workspace(root: Path, dest: Path) -> None:
    """A plain copy of the workspace (symlinks as links), caches left out."""
    shutil.copytree(root, dest, symlinks=True,
                    ignore=lambda _dir, names: [n for n in names if n in _NOT_COPIED])


@dataclass(frozen=True)
class Change:
    path: str
    kind: str  # add | update | delete (Codex's file_change kinds)


def changes_between(before: Mapping[str, str], after: Mapping[str, str]) -> list[Change]:
    """What turned `before` into `after` (two listings), in path order."""
    out = [Change(p, "add") for p in after if p not in before]
    out += [Change(p, "update") for p in after if p in before and after[p] != before[p]]
    out += [Change(p, "delete") for p in before if p not in after]
    return sorted(out, key=lambda c: c.path)


def change_size(base: Path, copy: Path, changes: Sequence[Change]) -> int:
    """Lines added and removed over the changed files (a large or binary file: its size in
    KiB), to break ties: the smaller change wins."""
    size = 0
    for change in changes:
        old = _lines(base / change.path) if change.kind != "add" else []
        new = _lines(copy / change.path) if change.kind != "delete" else []
        if old is None or new is None:
            size += max(1, _size(base / change.path) // 1024, _size(copy / change.path) // 1024)
            continue
        size += sum(1 for line in difflib.ndiff(old, new) if line[:1] in "+-")
    return size


def _lines(path: Path) -> list[str] | None:
    try:
        if path.is_symlink():
            return [os.readlink(path)]
        if path.stat().st_size > _DIFF_BYTES:
            return None
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def apply_changes(copy: Path, real: Path, changes: Sequence[Change]) -> None:
    """Put the copy's version of each changed file in the real workspace (nothing else)."""
    for change in changes:
        target = real / change.path
        if change.kind == "delete":
            if target.is_symlink() or target.exists():
                target.unlink()
            continue
        source = copy / change.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or (target.exists() and not target.is_file()):
            target.unlink()
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)


# -- judging ---------------------------------------------------------------------------------

@dataclass
class TestRun:
    command: str
    exit_code: int | None  # None: timed out or could not start
    passed: int | None
    failed: int

    def as_dict(self) -> dict[str, Any]:
        return {"command": self.command, "exit_code": self.exit_code, "passed": self.passed,
                "failed": self.failed}


def run_tests(command: str, cwd: Path, env: Mapping[str, str], timeout: float,
              sandbox: str = "workspace-write", network: bool = False) -> TestRun:
    """The task's test command run in an attempt's copy as the model's commands run there
    (the run's sandbox mode, the copy its workspace; under the supervisor, everything it
    started killed when it returns), read for its counts. Exit code None: it timed out or
    could not start."""
    from baseagent.tools.confined import run_confined

    done = run_confined(["/bin/sh", "-c", command], cwd=cwd, env=env, timeout=timeout,
                        mode=sandbox, network=network)
    if done is None:
        return TestRun(command, None, None, 0)
    report = read_report((done.stdout + done.stderr)[-_MAX_TEST_OUTPUT:])
    return TestRun(command, done.returncode, report.passed, report.failed)


@dataclass
class Attempt:
    """One attempt: where it ran, how its turn ended, and its evidence."""

    number: int
    copy: Path
    status: str = "failed"
    final_message: str | None = None
    error: str | None = None
    verification: Mapping[str, Any] | None = None
    tests: TestRun | None = None
    changes: list[Change] = field(default_factory=list)
    size: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)

    def rank(self) -> tuple[Any, ...]:
        """Higher is better: tests that pass (exit 0), then more tests passed and fewer
        failed, then an answer verified by evidence, then a turn that completed, then the
        smaller change, then the earlier attempt."""
        tests = self.tests
        return (tests is not None and tests.exit_code == 0,
                tests.passed if tests is not None and tests.passed is not None else -1,
                -(tests.failed if tests is not None else 0),
                bool(self.verification) and self.verification.get("by") == "evidence",
                self.status == "completed", -self.size, -self.number)

    def summary(self) -> dict[str, Any]:
        return {"attempt": self.number, "status": self.status,
                "verification": dict(self.verification) if self.verification else None,
                "tests": self.tests.as_dict() if self.tests is not None else None,
                "changes": [{"path": c.path, "kind": c.kind} for c in self.changes],
                "changed_lines": self.size}


def why(winner: Attempt, others: Sequence[Attempt]) -> str:
    """The reason the winner was applied, in one line."""
    tests = winner.tests
    if tests is not None and tests.exit_code == 0:
        reason = f"its tests passed ({tests.command}"
        reason += f": {tests.passed} passed)" if tests.passed is not None else ")"
    elif tests is not None and tests.passed is not None:
        reason = f"most tests passed ({tests.passed} passed, {tests.failed} failed)"
    elif winner.verification and winner.verification.get("by") == "evidence":
        reason = "its answer was verified by evidence"
    elif winner.status == "completed":
        reason = "its turn completed"
    else:
        reason = "no attempt completed; the best kept"
    tied = [o for o in others if o.rank()[:5] == winner.rank()[:5]]
    if any(o.size > winner.size for o in tied):
        reason += f"; the smaller change ({winner.size} lines) among {len(tied) + 1} equal"
    elif tied:
        reason += f"; the first of {len(tied) + 1} equal"
    return reason


# -- the events ------------------------------------------------------------------------------

class _Relay(EventListener):
    """An attempt's listener: its engine events to the thread's emitter, each item id
    renumbered in the thread's order; the attempt's turn start and end are kept back (the
    thread's turn has its own), and read for how it ended. `hold`: buffer the events until
    `flush()` (attempts run at once: each attempt's events stay together in the stream)."""

    run_events = True  # type: ignore[assignment]

    def __init__(self, emitter: Any, lock: threading.Lock, hold: bool) -> None:
        self._emitter = emitter
        self._lock = lock
        self._hold = hold
        self._held: list[tuple[str, Any, bool]] = []  # (kind, payload, fresh id)
        self._ids: dict[str, str] = {}
        self.ended: engine.TurnEnded | None = None

    # the EventListener hooks the Emitter calls
    def emit(self, _event: Any) -> None:
        """Codex events: the thread's emitter maps the relayed engine events itself."""

    def detail(self, item_id: str, text: str) -> None:
        self._out("detail", (self._id(item_id), text))

    def run_event(self, event: Any) -> None:
        if isinstance(event, engine.TurnEnded):
            self.ended = event
            return
        if isinstance(event, (engine.ThreadStarted, engine.TurnStarted, engine.RunFailed,
                              engine.TurnCancelling)):
            return
        if isinstance(event, (engine.ItemStarted, engine.ItemUpdated, engine.ItemCompleted)):
            event = dataclasses.replace(event, item=dataclasses.replace(
                event.item, id=self._id(event.item.id)))
        elif isinstance(event, (engine.ToolStarted, engine.ToolFinished,
                                engine.OutputSubmitted)):
            event = dataclasses.replace(event, item_id=self._id(event.item_id))
        self._out("send", event)

    def say(self, text: str) -> None:
        """A `reasoning` item of the thread's own (the attempt's marker)."""
        item = engine.TextItem(id="", kind="reasoning", text=text)
        self._out("send", engine.ItemCompleted(item), fresh=True)

    def _id(self, item_id: str) -> str:
        """The thread's id for the attempt's item (held events keep theirs until flush)."""
        if self._hold:
            return item_id
        with self._lock:
            if item_id not in self._ids:
                self._ids[item_id] = self._emitter.new_item_id()
            return self._ids[item_id]

    def _out(self, kind: str, payload: Any, fresh: bool = False) -> None:
        if self._hold:
            self._held.append((kind, payload, fresh))
            return
        with self._lock:
            if fresh:
                payload = _with_id(payload, self._emitter.new_item_id())
            self._deliver(kind, payload)

    def flush(self) -> None:
        """Send what was held, numbering its items now (in the stream's order)."""
        with self._lock:
            held, self._held, self._hold = self._held, [], False
        for kind, payload, fresh in held:
            if kind == "detail":
                self._deliver(kind, (self._id(payload[0]), payload[1]))
                continue
            if fresh:
                payload = _with_id(payload, self._emitter.new_item_id())
            elif isinstance(payload, (engine.ItemStarted, engine.ItemUpdated,
                                      engine.ItemCompleted)):
                payload = _with_id(payload, self._id(payload.item.id))
            elif isinstance(payload, (engine.ToolStarted, engine.ToolFinished,
                                      engine.OutputSubmitted)):
                payload = dataclasses.replace(payload, item_id=self._id(payload.item_id))
            self._deliver(kind, payload)

    def _deliver(self, kind: str, payload: Any) -> None:
        if kind == "detail":
            self._emitter.detail(*payload)
        else:
            self._emitter.send(payload)


def _with_id(event: Any, item_id: str) -> Any:
    return dataclasses.replace(event, item=dataclasses.replace(event.item, id=item_id))


# -- the loop --------------------------------------------------------------------------------

# make(number, cwd, listener, history) -> (a Loop, its client, whether the client is shared)
MakeAttempt = Callable[[int, Path, Any, list[dict[str, Any]]], tuple[Any, Any, bool]]


class Attempts:
    """The AgentLoop of a thread with `attempts` > 1 (core/parts.py): each turn is run N
    times in copies of the workspace, and the best is applied. A paused turn (a resumed
    thread's) continues on the thread's own loop."""

    def __init__(self, inner: Any, *, count: int, parallel: bool, make: MakeAttempt,
                 cwd: Path, client: Any, emitter: Any, session: Any, env: Mapping[str, str],
                 cancelled: Any, thread_id: str, test_timeout: float,
                 sandbox: str = "workspace-write", network: bool = False) -> None:
        self._inner = inner
        self.history: list[dict[str, Any]] = inner.history
        self.count = count
        self.parallel = parallel
        self._make = make
        self._cwd = cwd
        self._client = client
        self._emitter = emitter
        self._session = session
        self._env = env
        self._cancelled = cancelled
        self._thread_id = thread_id
        self._test_timeout = test_timeout
        self._sandbox = sandbox
        self._network = network
        self._lock = threading.Lock()

    @property
    def paused(self) -> Any:
        return self._inner.paused

    def continue_turn(self, outputs: Mapping[str, str]) -> Any:
        return self._inner.continue_turn(outputs)

    def run_turn(self, turn: Any) -> Any:
        from baseagent.core.loop import TurnInput, TurnOutcome

        if isinstance(turn, str):
            turn = TurnInput(turn)
        if self.paused is not None:
            raise RuntimeError("the turn is waiting for tool outputs: continue_turn() first")
        totals = self._client.totals
        cost_before = totals.cost_usd
        self._emitter.send(engine.TurnStarted(turn_id=str(uuid.uuid4()),
                                              thread_id=self._thread_id,
                                              instruction=turn.text))
        scratch: Path | None = None
        keep_scratch = False
        try:
            try:
                base = listing(self._cwd)
                scratch = Path(tempfile.mkdtemp(prefix="baseagent-attempts-"))
                if scratch.resolve().is_relative_to(self._cwd.resolve()):
                    raise AttemptsError(f"the workspace {self._cwd} holds the temporary "
                                        f"directory {scratch.parent}: no copies inside it")
            except (AttemptsError, OSError) as exc:
                return self._end("failed", f"attempts: {exc}")
            attempts = self._run_all(turn, base, scratch)
            if self._cancelled.is_set():
                return self._end("interrupted", f"interrupted ({self._cancelled.reason})")
            winner = max(attempts, key=Attempt.rank)
            reason = why(winner, [a for a in attempts if a is not winner])
            verdict = {"count": self.count, "winner": winner.number, "reason": reason,
                       "parallel": self.parallel, "results": [a.summary() for a in attempts]}
            try:
                if listing(self._cwd) != base:
                    keep_scratch = True
                    return self._end("failed", (
                        f"attempts: the workspace changed while the attempts ran; nothing was "
                        f"applied (attempt {winner.number}, the best, is in {winner.copy})"))
                apply_changes(winner.copy, self._cwd, winner.changes)
            except (AttemptsError, OSError) as exc:
                keep_scratch = True
                return self._end("failed", f"attempts: applying attempt {winner.number} "
                                           f"failed: {exc} (its copy: {winner.copy})")
            self._adopt(winner)
            relay = _Relay(self._emitter, self._lock, hold=False)
            relay.say(f"applied attempt {winner.number} of {self.count}: {reason}"
                      f" ({len(winner.changes)} file(s) changed)")
            if winner.final_message:
                self._emitter.send(engine.ItemCompleted(engine.TextItem(
                    id=self._emitter.new_item_id(), kind="message",
                    text=winner.final_message)))
            if winner.status != "completed":
                error = f"{winner.error or winner.status} (attempt {winner.number} of " \
                        f"{self.count}, applied)"
                self._emitter.send(engine.TurnEnded(winner.status, error=error))  # type: ignore[arg-type]
                return TurnOutcome(winner.status, error=error)  # type: ignore[arg-type]
            totals = self._client.totals
            self._emitter.send(engine.TurnEnded(
                "completed", usage=totals.tokens(),
                cost_usd=round(totals.cost_usd - cost_before, 10) if totals.cost_known
                else None, verification=winner.verification, attempts=verdict))
            return TurnOutcome("completed", final_message=winner.final_message)
        finally:
            if scratch is not None and not keep_scratch:
                shutil.rmtree(scratch, ignore_errors=True)

    def _end(self, status: str, message: str) -> Any:
        from baseagent.core.loop import TurnOutcome

        self._emitter.send(engine.TurnEnded(status, error=message))  # type: ignore[arg-type]
        return TurnOutcome(status, error=message)  # type: ignore[arg-type]

    def _run_all(self, turn: Any, base: Mapping[str, str], scratch: Path) -> list[Attempt]:
        numbers = range(1, self.count + 1)
        relays = {n: _Relay(self._emitter, self._lock, hold=self.parallel) for n in numbers}
        if not self.parallel:
            return [self._one(n, turn, base, scratch, relays[n]) for n in numbers]
        with ThreadPoolExecutor(max_workers=self.count,
                                thread_name_prefix="baseagent-attempt") as pool:
            futures = [pool.submit(self._one, n, turn, base, scratch, relays[n])
                       for n in numbers]
            results = []
            for n, future in zip(numbers, futures):
                results.append(future.result())
                relays[n].flush()  # in attempt order, each attempt's events together
        return results

    def _one(self, number: int, turn: Any, base: Mapping[str, str], scratch: Path,
             relay: _Relay) -> Attempt:
        copy = scratch / f"attempt-{number}" / (self._cwd.name or "workspace")
        attempt = Attempt(number, copy)
        if self._cancelled.is_set():  # the turn was cancelled: no more attempts start
            attempt.status, attempt.error = "interrupted", "not started: cancelled"
            return attempt
        relay.say(f"attempt {number} of {self.count}"
                  + (", at once with the others" if self.parallel else "")
                  + ": in its own copy of the workspace")
        try:
            copy.parent.mkdir(parents=True)
            copy_workspace(self._cwd, copy)
        except OSError as exc:
            attempt.error = f"the workspace could not be copied: {exc}"
            return attempt
        history = [_moved(m, str(self._cwd), str(copy)) for m in self.history]
        start = len(history)
        loop, client, shared = self._make(number, copy, relay, history)
        before = dataclasses.replace(client.totals) if not shared else None
        try:
            outcome = loop.run_turn(turn)
        except Exception as exc:  # noqa: BLE001 - one attempt's failure is not the turn's
            outcome = None
            attempt.error = f"{type(exc).__name__}: {exc}"
        finally:
            if not shared:
                with self._lock:
                    _add(self._client.totals, client.totals, before)
        if outcome is not None:
            attempt.status = outcome.status if outcome.status != "requires_action" \
                else "failed"
            attempt.final_message = outcome.final_message
            attempt.error = outcome.error if outcome.status != "requires_action" else \
                "the attempt paused for tools the caller runs (not offered with attempts)"
        if relay.ended is not None:
            attempt.verification = relay.ended.verification
        attempt.messages = [_moved(m, str(copy), str(self._cwd)) for m in history[start:]]
        try:
            attempt.changes = changes_between(base, listing(copy))
            attempt.size = change_size(self._cwd, copy, attempt.changes)
        except (AttemptsError, OSError) as exc:
            attempt.error = attempt.error or f"the copy could not be read: {exc}"
            attempt.status = "failed"
            return attempt
        command = named_test_command(turn.text, repository_notes(list(history)))
        if command is not None and not self._cancelled.is_set():
            attempt.tests = run_tests(command, copy, self._env, self._test_timeout,
                                      self._sandbox, self._network)
        return attempt

    def _adopt(self, winner: Attempt) -> None:
        """The winner's conversation becomes the thread's (in memory and in its record)."""
        for message in winner.messages:
            self.history.append(message)
            if self._session is not None:
                self._session.message(message)


def _moved(value: Any, old: str, new: str) -> Any:
    """A message (JSON-like) with the workspace's path `old` read as `new` in its text."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, Mapping):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    return value


def _add(into: Any, totals: Any, before: Any) -> None:
    """Add what an attempt's own client used (`totals` - `before`) to the thread's."""
    from baseagent.llm.types import TOKEN_KEYS

    for key in TOKEN_KEYS:
        setattr(into, key, getattr(into, key) + getattr(totals, key) - getattr(before, key))
    into.calls += totals.calls - before.calls
    into.cost_usd += totals.cost_usd - before.cost_usd
    into.cost_known = into.cost_known and totals.cost_known

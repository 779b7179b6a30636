"""The record store: find, read and replay thread records (for resume, sessions, export).

The record (records/recorder.py) is append-only: `message` records extend the history, a
`history` record (compaction) replaces it, `usage` records hold cumulative totals at the end
of each run and assistant `message` records carry the usage of their own call. Replaying it
gives back the exact history the model last saw and the usage spent so far, even when the
previous run was killed before it could write its final `usage` record.

Everything here is strict about corruption in the middle of a file (a resumed conversation
built on a silently damaged history is worse than a clear error) and lenient about the one
thing a kill legitimately leaves behind: a torn last line.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from baseagent.config.settings import AgentConfig
from baseagent.records.pending import Paused
from baseagent.records.recorder import RECORD_SUFFIX
from baseagent.errors import ConfigError
from baseagent.llm.types import UsageTotals

# Thread ids become file names: only characters that cannot climb out of the session dir.
THREAD_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# A prefix shorter than this is too likely to be a typo to resolve silently.
MIN_PREFIX = 4
VALID_ROLES = frozenset({"system", "user", "assistant", "tool"})
# Sent for a tool call whose result never reached the record (the run was killed mid-tool):
# providers reject an assistant tool call without its result.
MISSING_RESULT = "Error: not run: the previous run ended before this tool call finished"


class SessionLoadError(ConfigError):
    """A record that is missing, ambiguous or corrupt; one line for the user (exit code 2)."""


@dataclass
class LoadedSession:
    thread_id: str
    path: Path  # the JSONL file, or the database holding the thread
    history: list[dict[str, Any]]
    usage: UsageTotals
    meta: dict[str, Any] = field(default_factory=dict)  # the first run's
    turns: int = 0
    latest_meta: dict[str, Any] = field(default_factory=dict)  # the last run's settings
    # A turn waiting for the caller's tool outputs (its calls are still open in `history`).
    paused: Paused | None = None
    # The thread's name in its store (a JSONL file's stem), which a resumed run appends to.
    key: str = ""


def _check_id(thread_id: str) -> str:
    if not THREAD_ID_PATTERN.fullmatch(thread_id or ""):
        raise SessionLoadError(f"invalid thread id {thread_id!r}")
    return thread_id


def session_files(session_dir: Path) -> list[Path]:
    """Every record in the directory, most recently written first."""
    if not session_dir.is_dir():
        return []
    files = [p for p in session_dir.glob(f"*{RECORD_SUFFIX}") if p.is_file()]
    return sorted(files, key=lambda p: (p.stat().st_mtime, p.name), reverse=True)


def find_session(session_dir: Path, thread_id: str) -> Path:
    """The record of `thread_id` (or of the one thread whose id starts with it)."""
    _check_id(thread_id)
    exact = session_dir / f"{thread_id}{RECORD_SUFFIX}"
    if exact.is_file():
        return exact
    if len(thread_id) >= MIN_PREFIX:
        matches = [p for p in session_files(session_dir) if p.name.startswith(thread_id)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            names = ", ".join(p.name[: -len(RECORD_SUFFIX)] for p in matches[:5])
            raise SessionLoadError(f"thread id prefix {thread_id!r} is ambiguous: {names}")
    raise SessionLoadError(f"no session record for thread {thread_id} in {session_dir}")


def latest_session(session_dir: Path) -> Path:
    files = session_files(session_dir)
    if not files:
        raise SessionLoadError(f"no session records in {session_dir}")
    return files[0]


def read_strict(path: Path) -> list[dict[str, Any]]:
    """All records; a bad line is corruption unless it is the last one (a torn write)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        raise SessionLoadError(f"no session record at {path}") from None
    except OSError as exc:
        raise SessionLoadError(f"cannot read session record {path}: {exc.strerror}") from None
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    records: list[dict[str, Any]] = []
    for index, (number, line) in enumerate(numbered):
        try:
            record = json.loads(line)
        except ValueError:
            record = _after_torn_write(line)
            if record is None and index == len(numbered) - 1 and records:
                break  # torn last line: the previous run was killed mid-write
            if record is None:
                raise SessionLoadError(
                    f"session record {path} is corrupt: line {number} is not valid JSON"
                ) from None
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            raise SessionLoadError(
                f"session record {path} is corrupt: line {number} is not a record")
        records.append(record)
    return records


# Every record line starts with its kind (records/recorder.py writes it first).
_RECORD_START = '{"kind":'


def _after_torn_write(line: str) -> dict[str, Any] | None:
    """A record glued to the torn line before it (what a resume wrote before torn tails
    were cut on open): the record, without the torn part; None if there is none."""
    start = line.rfind(_RECORD_START)
    if start <= 0:
        return None
    try:
        record = json.loads(line[start:])
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _check_message(message: Any, path: Path | str) -> dict[str, Any]:
    if not isinstance(message, dict) or message.get("role") not in VALID_ROLES:
        raise SessionLoadError(f"session record {path} is corrupt: a message has no valid role")
    return message


def replay_history(records: list[dict[str, Any]], path: Path | str) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for record in records:
        if record["kind"] == "message":
            history.append(_check_message(record.get("message"), path))
        elif record["kind"] == "history":
            messages = record.get("messages")
            if not isinstance(messages, list):
                raise SessionLoadError(
                    f"session record {path} is corrupt: a history snapshot has no messages")
            history = [_check_message(m, path) for m in messages]
    return history


def repair_tool_pairs(history: list[dict[str, Any]],
                      waiting: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Give every assistant tool call a result and drop results whose call is gone.

    A run killed between a tool call and its result leaves a history providers reject;
    the model is better told the call did not run than left with a broken conversation.
    Calls in `waiting` (a paused turn's, at the end of the history) stay open: the caller's
    outputs will answer them.
    """
    repaired: list[dict[str, Any]] = []
    open_calls: list[str] = []

    def close_open(final: bool = False) -> None:
        for call_id in open_calls:
            if not (final and call_id in waiting):
                repaired.append({"role": "tool", "tool_call_id": call_id,
                                 "content": MISSING_RESULT})
        open_calls.clear()

    for message in history:
        if message["role"] == "tool":
            call_id = message.get("tool_call_id")
            if call_id in open_calls:
                open_calls.remove(call_id)
                repaired.append(message)
            continue  # orphan result: its assistant call is not in the history
        close_open()
        repaired.append(message)
        if message["role"] == "assistant":
            open_calls.extend(tc.get("id") for tc in message.get("tool_calls") or []
                              if isinstance(tc, dict) and tc.get("id"))
    close_open(final=True)
    return repaired


def paused_turn(records: list[dict[str, Any]], history: list[dict[str, Any]],
                path: Path | str) -> Paused | None:
    """The last `paused` record, if its calls are still open at the end of the history (a
    run that took the outputs but died before clearing the record has answered them)."""
    last = None
    for record in records:
        if record["kind"] == "paused":
            last = record.get("turn")
    if not last:
        return None
    try:
        paused = Paused.from_record(last)
    except (KeyError, TypeError, ValueError):
        raise SessionLoadError(
            f"session record {path} is corrupt: a paused turn cannot be read") from None
    open_ids = _open_call_ids(history)
    paused.calls = [c for c in paused.calls if c.id in open_ids]
    return paused if paused.calls else None


def _open_call_ids(history: list[dict[str, Any]]) -> set[str]:
    """Ids of the last assistant message's tool calls that have no result after it."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message["role"] == "assistant":
            ids = {tc.get("id") for tc in message.get("tool_calls") or [] if isinstance(tc, dict)}
            answered = {m.get("tool_call_id") for m in history[index + 1:] if m["role"] == "tool"}
            return {i for i in ids - answered if i}
        if message["role"] != "tool":
            return set()
    return set()


def usage_so_far(records: list[dict[str, Any]]) -> UsageTotals:
    """The last cumulative `usage` record plus every call recorded after it (a run killed
    before writing its final `usage` record still counts the calls it made)."""
    totals = UsageTotals()
    for record in records:
        if record["kind"] == "usage":
            totals = UsageTotals.from_record(record)
        elif record["kind"] == "message" and isinstance(record.get("usage"), dict):
            totals.add_record(record["usage"])
    return totals


def load_session(path: Path) -> LoadedSession:
    """A JSONL record, read strictly and replayed."""
    return session_from_records(read_strict(path), path, key=path.name[: -len(RECORD_SUFFIX)])


def session_from_records(records: list[dict[str, Any]], path: Path, *, where: str = "",
                         key: str = "") -> LoadedSession:
    """A thread from its records, whichever store held them: `path` is its file or
    database, `where` names the record in errors (default: `path`), `key` is its name in
    the store (default: its thread id)."""
    where = where or str(path)
    metas = [r for r in records if r["kind"] == "meta"]
    if not metas:
        raise SessionLoadError(f"session record {where} is corrupt: it has no meta record")
    thread_id = str(metas[0].get("thread_id") or "")
    if not THREAD_ID_PATTERN.fullmatch(thread_id):
        raise SessionLoadError(f"session record {where} is corrupt: bad thread id {thread_id!r}")
    replayed = replay_history(records, where)
    paused = paused_turn(records, replayed, where)
    history = repair_tool_pairs(replayed, frozenset(paused.call_ids if paused else ()))
    if not history:
        raise SessionLoadError(f"session record {where} is corrupt: it holds no messages")
    turns = sum(1 for r in records if r["kind"] == "event"
                and isinstance(r.get("event"), dict) and r["event"].get("type") == "turn.started")
    return LoadedSession(thread_id=thread_id, path=path,
                         history=history, usage=usage_so_far(records),
                         meta=metas[0], turns=turns, latest_meta=metas[-1], paused=paused,
                         key=key or thread_id)


def resolve(session_dir: Path, thread_id: str | None, last: bool) -> LoadedSession:
    """`--resume ID` or `--resume-last`: find and load the record, or raise SessionLoadError."""
    path = latest_session(session_dir) if last else find_session(session_dir, thread_id or "")
    return load_session(path)


# Settings a resumed thread keeps from its record unless the caller sets them explicitly:
# the conversation was had with this model, through this endpoint, about this workspace.
RESUMED_SETTINGS = ("model", "api_base", "cwd")


# The CLI's Settings come back as Settings, the library's AgentConfig as an AgentConfig.
Config = TypeVar("Config", bound=AgentConfig)


def settings_for_resume(settings: Config, loaded: LoadedSession,
                        explicit: Any = ()) -> tuple[Config, list[str]]:
    """`settings` with the thread's model, API base and workspace from its record, except
    those named in `explicit` (a flag, a keyword argument); plus one note for each explicit
    value that differs from the record, for the caller to show (stderr, the header).

    Used by every entry point that resumes (the CLI, `exec resume`, `Agent(thread_id=...)`),
    so they all resume the same way. A record written before a setting was recorded (no
    `api_base` in old records) leaves that setting as it is.
    """
    recorded = loaded.latest_meta or loaded.meta
    updates: dict[str, Any] = {}
    notes: list[str] = []
    for name in RESUMED_SETTINGS:
        if name not in recorded:
            continue
        was = recorded[name]
        now = getattr(settings, name)
        if name in explicit:
            if _differs(name, was, now):
                notes.append(f"resuming thread {loaded.thread_id} with {name} {now} "
                             f"(the thread used {was})")
        else:
            updates[name] = was
    if "cwd" in updates and not Path(str(updates["cwd"])).is_dir():
        raise ConfigError(f"thread {loaded.thread_id} worked in {updates['cwd']}, which no "
                          "longer exists; pass --cwd DIR to resume it in another directory")
    if not updates:
        return settings, notes
    resumed = settings.model_copy()
    for name, value in updates.items():
        setattr(resumed, name, value)  # validated (every config group validates assignment)
    return resumed, notes


def _differs(name: str, was: Any, now: Any) -> bool:
    if name == "cwd":
        return was is None or Path(str(was)).resolve() != Path(str(now)).resolve()
    return was != now

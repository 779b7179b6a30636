"""`baseagent sessions list|show|rm|search`: look after the recorded threads, in whichever
store the settings name (storage/: JSONL files in the session dir, or a SQLite database).

Listing is lenient (a damaged record is shown as such, never stops the listing); showing
and resuming use the strict loader in records/replay.py.
"""
from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from baseagent.records.messages import content_text
from baseagent.cost_text import cost_text
from baseagent.core.ids import uuid7_time_ms
from baseagent.records.replay import SessionLoadError, session_from_records, usage_so_far
from baseagent.records.recorder import read_records
from baseagent.storage import MessageStorage, SearchHit, ThreadInfo, location_of
from baseagent.storage.jsonl import JsonlStorage
from baseagent.textsafe import inert_line

# Instruction previews in listings: one terminal line's worth.
PREVIEW_CHARS = 60
# Failure reasons under a listing row.
REASON_CHARS = 300
SECONDS_PER_DAY = 86_400


@dataclass
class SessionSummary:
    thread_id: str
    path: str
    updated: str
    size_bytes: int
    model: str = ""
    cwd: str = ""
    created: str = ""
    turns: int = 0
    last_status: str = ""
    instructions: list[str] = field(default_factory=list)
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    error: str | None = None  # the record itself is damaged
    last_error: str | None = None  # why the last turn failed (its turn.failed message)


def as_storage(storage: MessageStorage | Path) -> MessageStorage:
    """A store, or a session directory taken as the JSONL store it holds."""
    return JsonlStorage(storage) if isinstance(storage, Path) else storage


def instructions_of(records: list[dict[str, Any]]) -> list[str]:
    """Each turn's instruction: the first message recorded after its turn.started event."""
    found, after_turn_start = [], False
    for record in records:
        if record.get("kind") == "event" and (record.get("event") or {}).get("type") \
                == "turn.started":
            after_turn_start = True
        elif record.get("kind") == "message" and after_turn_start:
            message = record.get("message") or {}
            if message.get("role") == "user":  # not a paused turn's continuation
                found.append(content_text(message.get("content")))
            after_turn_start = False
    return found


def summarize(storage: MessageStorage, info: ThreadInfo) -> SessionSummary:
    summary = SessionSummary(
        thread_id=info.thread_id, path=info.location, size_bytes=info.size_bytes,
        updated=_dt.datetime.fromtimestamp(info.updated, _dt.timezone.utc)
        .isoformat(timespec="seconds"))
    try:
        records = storage.load_records(info.thread_id)
    except SessionLoadError as exc:
        summary.error = str(exc)
        try:
            records = storage.load_records(info.thread_id, strict=False)
        except SessionLoadError:
            records = []  # removed while listing
    metas = [r for r in records if r.get("kind") == "meta"]
    if metas:
        summary.model = str(metas[-1].get("model", ""))
        summary.cwd = str(metas[-1].get("cwd", ""))
        summary.created = str(metas[0].get("ts", ""))
    elif summary.error is None:
        summary.error = "no meta record"
    events = [(r.get("event") or {}).get("type") for r in records if r.get("kind") == "event"]
    # A paused turn that was continued started twice; each continuation cleared its pause.
    continuations = sum(1 for r in records if r.get("kind") == "paused" and not r.get("turn"))
    summary.turns = events.count("turn.started") - continuations
    ends = [e for e in events if e in ("turn.completed", "turn.failed", "turn.requires_action")]
    summary.last_status = ends[-1].split(".")[1] if ends else ("running or killed"
                                                              if summary.turns else "")
    if summary.last_status == "failed":
        failures = [(r.get("event") or {}).get("error") or {} for r in records
                    if r.get("kind") == "event" and (r.get("event") or {}).get("type")
                    == "turn.failed"]
        summary.last_error = str(failures[-1].get("message") or "") or None
        if (summary.last_error or "").startswith("interrupted"):  # Ctrl-C, a signal
            summary.last_status = "interrupted"
    summary.instructions = instructions_of(records)
    totals = usage_so_far([r for r in records if isinstance(r.get("kind"), str)])
    summary.input_tokens = totals.input_tokens
    summary.cached_input_tokens = totals.cached_input_tokens
    summary.output_tokens = totals.output_tokens
    summary.cost_usd = round(totals.cost_usd, 6) if totals.cost_known else None
    return summary


def list_sessions(storage: MessageStorage | Path) -> list[SessionSummary]:
    """Every thread, newest first by creation: by id, since UUIDv7 ids are time-ordered;
    an older record with a random (v4) id by the time of its first record."""
    storage = as_storage(storage)
    return sorted((summarize(storage, info) for info in storage.list_threads()),
                  key=_created_ms, reverse=True)


def recent_in(storage: MessageStorage | Path, cwd: Path, limit: int, exclude: str | None = None
              ) -> list[SessionSummary]:
    """The threads recorded in this workspace, most recently written first, at most
    `limit` of them, without `exclude` (the thread in use) and without threads that never
    had a turn: what `/resume` offers. Only the first record of each file (its meta) is
    read to find the workspace; a whole record is read only for the threads offered."""
    storage = as_storage(storage)
    found: list[SessionSummary] = []
    for info in storage.list_threads():  # newest write first
        if len(found) >= limit:
            break
        if exclude is not None and info.thread_id == exclude:
            continue
        if _first_record(storage, info).get("cwd") != str(cwd):
            continue
        summary = summarize(storage, info)
        if summary.turns and summary.error is None:
            found.append(summary)
    return found


def _first_record(storage: MessageStorage, info: ThreadInfo) -> dict[str, Any]:
    """A thread's first record (its meta); of a JSONL file, without reading the rest."""
    try:
        if isinstance(storage, JsonlStorage):
            first = next(read_records(Path(info.location)), {})
        else:
            first = next(iter(storage.load_records(info.thread_id, strict=False)), {})
    except (OSError, SessionLoadError):
        return {}
    return first if first.get("kind") == "meta" else {}


def render_choices(summaries: list[SessionSummary], now: float | None = None) -> list[str]:
    """One numbered line per thread for a person to pick from: number, id (whole: UUIDv7
    ids made within a minute share their first 8 digits), when it was last written, turns,
    and its first instruction."""
    now = time.time() if now is None else now
    lines = []
    for number, summary in enumerate(summaries, 1):
        try:
            written = _dt.datetime.fromisoformat(summary.updated).timestamp()
        except ValueError:
            written = now
        first = summary.instructions[0] if summary.instructions else ""
        turns = f"{summary.turns} turn{'s' if summary.turns != 1 else ''}"
        lines.append(f"{number:>3}. {summary.thread_id}  {_ago(now - written):>8}  "
                     f"{turns:>8}  {_preview(first)}")
    return lines


def _ago(seconds: float) -> str:
    """A duration as people say it: 5s ago, 3m ago, 2h ago, 4d ago."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", SECONDS_PER_DAY), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


def _created_ms(summary: SessionSummary) -> tuple[float, str]:
    ms = uuid7_time_ms(summary.thread_id)
    if ms is None:
        try:
            ms = _dt.datetime.fromisoformat(summary.created).timestamp() * 1000
        except ValueError:
            ms = 0
    return float(ms), summary.thread_id


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """One line of `text` for a person (made inert: a model's escape codes show, never act)."""
    line = inert_line(" ".join(text.split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


WORKSPACE_CHARS = 40


def render_list(summaries: list[SessionSummary]) -> str:
    if not summaries:
        return "no sessions\n"
    rows = [("THREAD ID", "UPDATED", "TURNS", "STATUS", "MODEL", "WORKSPACE",
             "FIRST INSTRUCTION")]
    for s in summaries:
        first = s.instructions[0] if s.instructions else ""
        status = "corrupt" if s.error else s.last_status
        rows.append((s.thread_id, s.updated, str(s.turns), status, s.model,
                     _workspace(s.cwd), _preview(first)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row, summary in zip(rows, [None, *summaries]):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1])
        reason = summary.error or summary.last_error if summary is not None else None
        if reason:  # why it failed, under its row
            lines.append(f"  ↳ {_preview(reason, REASON_CHARS)}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _workspace(cwd: str) -> str:
    """A workspace as the list shows it: under the home directory as ~/..., a long path by
    its last parts."""
    if not cwd:
        return "-"
    home = str(Path.home())
    if cwd == home or cwd.startswith(home + "/"):
        cwd = "~" + cwd[len(home):]
    if len(cwd) > WORKSPACE_CHARS:
        cwd = "…" + cwd[-(WORKSPACE_CHARS - 1):]
    return cwd


def show(storage: MessageStorage | Path, thread_id: str
         ) -> tuple[SessionSummary, list[dict[str, Any]]]:
    """Summary and current history of one thread (strict: a corrupt record is an error)."""
    storage = as_storage(storage)
    key = storage.resolve(thread_id)
    loaded = session_from_records(storage.load_records(key), Path(storage.location),
                                  where=location_of(storage, key), key=key)
    info = next((i for i in storage.list_threads() if i.thread_id == key), None)
    if info is None:  # removed meanwhile
        raise SessionLoadError(f"no session record for thread {key} in {storage.location}")
    return summarize(storage, info), loaded.history


def render_show(summary: SessionSummary, history: list[dict[str, Any]]) -> str:
    lines = [
        f"thread:   {summary.thread_id}",
        f"record:   {summary.path} ({summary.size_bytes} bytes)",
        f"model:    {summary.model}",
        f"cwd:      {summary.cwd}",
        f"created:  {summary.created}",
        f"updated:  {summary.updated}",
        f"turns:    {summary.turns} (last: {summary.last_status or 'none'})",
        *([f"failed:   {summary.last_error}"] if summary.last_error else []),
        f"usage:    {summary.input_tokens} in ({summary.cached_input_tokens} cached), "
        f"{summary.output_tokens} out, {cost_text(summary.cost_usd)}",
        "",
    ]
    for number, text in enumerate(summary.instructions, 1):
        lines.append(f"instruction {number}: {_preview(text)}")
    lines.append("")
    lines.append(f"history ({len(history)} messages):")
    for message in history:
        text = content_text(message.get("content"))
        calls = [tc.get("function", {}).get("name", "?") for tc in message.get("tool_calls") or []]
        suffix = f" -> {', '.join(calls)}" if calls else ""
        lines.append(f"  {message.get('role', '?'):9} {_preview(text)}{suffix}")
    return "\n".join(lines) + "\n"


def summary_json(summary: SessionSummary) -> str:
    return json.dumps(asdict(summary), ensure_ascii=False)


def remove(storage: MessageStorage | Path, thread_ids: list[str],
           checkpoints: Path | None = None, env: Mapping[str, str] | None = None) -> list[str]:
    """Delete these threads' records; every id is resolved before anything is deleted.
    `checkpoints`: the directory that holds the threads' checkpoints (the session dir's
    `checkpoints/`): theirs go too (`env` runs git for a ref kept in a repository)."""
    storage = as_storage(storage)
    keys = [storage.resolve(thread_id) for thread_id in thread_ids]
    return [_delete(storage, key, checkpoints, env) for key in keys]


def prune(storage: MessageStorage | Path, older_than_days: float, now: float | None = None,
          checkpoints: Path | None = None, env: Mapping[str, str] | None = None
          ) -> list[str]:
    """Delete records not written to for `older_than_days` days, and their checkpoints."""
    storage = as_storage(storage)
    cutoff = (time.time() if now is None else now) - older_than_days * SECONDS_PER_DAY
    return [_delete(storage, info.thread_id, checkpoints, env)
            for info in storage.list_threads() if info.updated < cutoff]


def _delete(storage: MessageStorage, thread_id: str, checkpoints: Path | None,
            env: Mapping[str, str] | None) -> str:
    """One thread's record, then its checkpoints; what was removed, in words."""
    from baseagent.checkpoints import discard

    where = storage.delete_thread(thread_id)
    if checkpoints is None or thread_id in ("", ".", "..") or "/" in thread_id:
        return where
    said = discard(checkpoints / thread_id, env or {})
    return f"{where} and {said}" if said else where


def render_hits(hits: list[SearchHit]) -> str:
    """One line per matching message: thread id, when, who, and the text around the match."""
    if not hits:
        return "no matches\n"
    return "".join(f"{hit.thread_id}  {hit.ts[:19]}  {hit.role:9} {inert_line(hit.snippet)}\n"
                   for hit in hits)


def hit_json(hit: SearchHit) -> str:
    return json.dumps(asdict(hit), ensure_ascii=False)

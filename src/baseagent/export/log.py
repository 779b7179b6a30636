"""A session record read for export: the run metadata and every entry in order.

Exports describe everything that happened in the thread, so they walk the linear log of
appended messages (history snapshots written by compaction are kept as entries of their
own), unlike resume, which needs only the history the model last saw.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baseagent.records.replay import (SessionLoadError, THREAD_ID_PATTERN, read_strict,
                                   repair_tool_pairs, usage_so_far)
from baseagent.llm.types import UsageTotals


@dataclass
class Entry:
    """One `message` or `history` record, with the model that was in use when it was written."""

    kind: str
    ts: str
    model: str
    message: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    reasoning: str = ""
    reason: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SessionLog:
    thread_id: str
    model: str
    version: str
    tools: list[dict[str, Any]]
    entries: list[Entry]
    usage: UsageTotals


def read_log(path: Path) -> SessionLog:
    """A JSONL record's log."""
    return log_of(read_strict(path), str(path))


def log_of(records: list[dict[str, Any]], where: str) -> SessionLog:
    """The log of a thread's records, from whichever store (`where` names it in errors)."""
    metas = [r for r in records if r["kind"] == "meta"]
    if not metas or not THREAD_ID_PATTERN.fullmatch(str(metas[0].get("thread_id") or "")):
        raise SessionLoadError(f"session record {where} is corrupt: it has no valid meta record")
    entries: list[Entry] = []
    model = str(metas[0].get("model") or "")
    for record in records:
        ts = str(record.get("ts") or "")
        if record["kind"] == "meta":
            model = str(record.get("model") or model)
        elif record["kind"] == "message" and isinstance(record.get("message"), dict):
            message = record["message"]
            # the message's own reasoning_content; older records kept it beside the message
            reasoning = message.get("reasoning_content") or record.get("reasoning") or ""
            entries.append(Entry("message", ts, model, message=message,
                                 usage=record.get("usage"), reasoning=str(reasoning)))
        elif record["kind"] == "history" and isinstance(record.get("messages"), list):
            entries.append(Entry("history", ts, model, reason=str(record.get("reason") or ""),
                                 messages=record["messages"]))
    tools = next((m["tools"] for m in reversed(metas) if isinstance(m.get("tools"), list)), [])
    return SessionLog(thread_id=str(metas[0]["thread_id"]), model=str(metas[0].get("model", "")),
                      version=str(metas[-1].get("version") or ""), tools=tools,
                      entries=entries, usage=usage_so_far(records))


def linear_messages(log: SessionLog) -> list[dict[str, Any]]:
    """Every message of the thread in the order it was said, tool pairs made whole."""
    return repair_tool_pairs([e.message for e in log.entries if e.kind == "message"])
